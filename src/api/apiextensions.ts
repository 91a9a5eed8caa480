// apiextensions.k8s.io/v1 CustomResourceDefinition and the JSON-Schema subset CRDs carry.

import type { KubeResource } from "./meta.ts";

export interface JSONSchemaProps {
  type?: string;
  format?: string;
  description?: string;
  properties?: Record<string, JSONSchemaProps>;
  additionalProperties?: JSONSchemaProps | boolean;
  items?: JSONSchemaProps;
  required?: string[];
  enum?: unknown[];
  default?: unknown;
  nullable?: boolean;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
  oneOf?: JSONSchemaProps[];
  anyOf?: JSONSchemaProps[];
  allOf?: JSONSchemaProps[];
  not?: JSONSchemaProps;
  "x-kubernetes-preserve-unknown-fields"?: boolean;
  "x-kubernetes-embedded-resource"?: boolean;
  "x-kubernetes-int-or-string"?: boolean;
  "x-kubernetes-list-type"?: string;
  "x-kubernetes-list-map-keys"?: string[];
  "x-kubernetes-map-type"?: string;
  "x-kubernetes-validations"?: {
    rule: string;
    message?: string;
    messageExpression?: string;
    reason?: string;
    fieldPath?: string;
  }[];
  [extension: string]: unknown;
}

export interface CustomResourceColumnDefinition {
  name: string;
  type: string;
  format?: string;
  description?: string;
  priority?: number;
  jsonPath: string;
}

export interface CustomResourceDefinitionVersion {
  name: string;
  served: boolean;
  storage: boolean;
  deprecated?: boolean;
  deprecationWarning?: string;
  schema?: { openAPIV3Schema?: JSONSchemaProps };
  subresources?: {
    status?: Record<string, never> | Record<string, unknown>;
    scale?: { specReplicasPath: string; statusReplicasPath: string; labelSelectorPath?: string };
  };
  additionalPrinterColumns?: CustomResourceColumnDefinition[];
  selectableFields?: { jsonPath: string }[];
}

export interface CustomResourceDefinitionNames {
  plural: string;
  singular?: string;
  shortNames?: string[];
  kind: string;
  listKind?: string;
  categories?: string[];
}

export interface CustomResourceDefinitionSpec {
  group: string;
  names: CustomResourceDefinitionNames;
  scope: "Namespaced" | "Cluster";
  versions: CustomResourceDefinitionVersion[];
  conversion?: { strategy: string; webhook?: Record<string, unknown> };
  preserveUnknownFields?: boolean;
}

export interface CustomResourceDefinitionCondition {
  type: string;
  status: string;
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

export interface CustomResourceDefinitionStatus {
  conditions?: CustomResourceDefinitionCondition[];
  acceptedNames?: CustomResourceDefinitionNames;
  storedVersions?: string[];
}

export interface CustomResourceDefinition extends KubeResource {
  spec: CustomResourceDefinitionSpec;
  status?: CustomResourceDefinitionStatus;
}
