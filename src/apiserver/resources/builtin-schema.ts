// Field knowledge of the built-in kinds, for what kube-apiserver does while decoding a body:
// unknown fields are dropped (they have no place in the Go struct), and reported for
// fieldValidation=Strict (400 `strict decoding error: unknown field "spec.x"`) or Warn. The
// field names come from @kubernetes/client-node's generated models (their attribute type maps
// mirror the upstream OpenAPI schemas), walked structurally: models, arrays, maps.

import * as models from "@kubernetes/client-node";
import { modelDocs } from "./builtin-docs.ts";
import { isRecord } from "../../base/index.ts";

export interface Attribute {
  baseName: string;
  type: string;
  /** The OpenAPI format ("int32", "byte", "date-time", …; "" when none). */
  format: string;
}

const MODELS = new Map<string, unknown>(Object.entries(models));
const attributeCache = new Map<string, ReadonlyMap<string, Attribute> | undefined>();

/** The fields of a client-node model by JSON name, or undefined when it is no model. */
export function attributesOf(modelName: string): ReadonlyMap<string, Attribute> | undefined {
  if (attributeCache.has(modelName)) return attributeCache.get(modelName);
  const model = MODELS.get(modelName);
  let attributes: Map<string, Attribute> | undefined;
  const getter: unknown = typeof model === "function" ? Reflect.get(model, "getAttributeTypeMap") : undefined;
  if (typeof getter === "function") {
    const list: unknown = Reflect.apply(getter, model, []);
    if (Array.isArray(list)) {
      attributes = new Map();
      for (const entry of list) {
        if (isRecord(entry) && typeof entry.baseName === "string" && typeof entry.type === "string") {
          attributes.set(entry.baseName, {
            baseName: entry.baseName,
            type: entry.type,
            format: typeof entry.format === "string" ? entry.format : "",
          });
        }
      }
    }
  }
  attributeCache.set(modelName, attributes);
  return attributes;
}

/** The client-node model of each built-in kind, by "group/version/Kind". */
const ROOT_MODELS: Readonly<Record<string, string>> = {
  "/v1/Namespace": "V1Namespace",
  "/v1/Node": "V1Node",
  "/v1/Pod": "V1Pod",
  "/v1/PersistentVolume": "V1PersistentVolume",
  "/v1/PersistentVolumeClaim": "V1PersistentVolumeClaim",
  "/v1/Secret": "V1Secret",
  "/v1/ConfigMap": "V1ConfigMap",
  "/v1/ServiceAccount": "V1ServiceAccount",
  "/v1/Event": "CoreV1Event",
  "/v1/Binding": "V1Binding",
  "events.k8s.io/v1/Event": "EventsV1Event",
  "storage.k8s.io/v1/StorageClass": "V1StorageClass",
  "storage.k8s.io/v1/CSIDriver": "V1CSIDriver",
  "storage.k8s.io/v1/CSINode": "V1CSINode",
  "storage.k8s.io/v1/VolumeAttachment": "V1VolumeAttachment",
  "storage.k8s.io/v1/CSIStorageCapacity": "V1CSIStorageCapacity",
  "storage.k8s.io/v1/VolumeAttributesClass": "V1VolumeAttributesClass",
  // Same fields at v1beta1 (served for the Kubernetes 1.32 sidecars).
  "storage.k8s.io/v1beta1/VolumeAttributesClass": "V1VolumeAttributesClass",
  "coordination.k8s.io/v1/Lease": "V1Lease",
  "apiextensions.k8s.io/v1/CustomResourceDefinition": "V1CustomResourceDefinition",
  "apps/v1/Deployment": "V1Deployment",
  "apps/v1/DaemonSet": "V1DaemonSet",
  "apps/v1/StatefulSet": "V1StatefulSet",
  "apps/v1/ReplicaSet": "V1ReplicaSet",
  "apps/v1/ControllerRevision": "V1ControllerRevision",
  "batch/v1/Job": "V1Job",
  "batch/v1/CronJob": "V1CronJob",
  "rbac.authorization.k8s.io/v1/Role": "V1Role",
  "rbac.authorization.k8s.io/v1/ClusterRole": "V1ClusterRole",
  "rbac.authorization.k8s.io/v1/RoleBinding": "V1RoleBinding",
  "rbac.authorization.k8s.io/v1/ClusterRoleBinding": "V1ClusterRoleBinding",
  "authentication.k8s.io/v1/SelfSubjectReview": "V1SelfSubjectReview",
  "authentication.k8s.io/v1/TokenRequest": "AuthenticationV1TokenRequest",
  "authentication.k8s.io/v1/TokenReview": "V1TokenReview",
  "authorization.k8s.io/v1/SelfSubjectAccessReview": "V1SelfSubjectAccessReview",
  "authorization.k8s.io/v1/SubjectAccessReview": "V1SubjectAccessReview",
};

/** The model name of a built-in kind, or undefined for kinds this table does not know. */
export function builtinModelOf(group: string, version: string, kind: string): string | undefined {
  return ROOT_MODELS[`${group}/${version}/${kind}`];
}

function join(path: string, key: string): string {
  return path === "" ? key : `${path}.${key}`;
}

function walk(value: unknown, type: string, path: string, unknown: string[], prune: boolean): void {
  const array = /^Array<(.+)>$/.exec(type);
  if (array !== null) {
    if (Array.isArray(value))
      value.forEach((item, i) => walk(item, array[1] ?? "any", `${path}[${i}]`, unknown, prune));
    return;
  }
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map !== null) {
    if (isRecord(value))
      for (const [key, item] of Object.entries(value))
        walk(item, map[1] ?? "any", join(path, key), unknown, prune);
    return;
  }
  const attributes = attributesOf(type);
  if (attributes === undefined || !isRecord(value)) return;
  for (const key of Object.keys(value)) {
    const attribute = attributes.get(key);
    if (attribute === undefined) {
      unknown.push(join(path, key));
      if (prune) delete value[key];
    } else {
      walk(value[key], attribute.type, join(path, key), unknown, prune);
    }
  }
}

/** Paths of the fields a built-in object carries that its kind does not have. */
export function unknownBuiltinFields(modelName: string, object: unknown): string[] {
  const unknown: string[] = [];
  walk(object, modelName, "", unknown, false);
  return unknown;
}

/** Drops the fields a built-in object's kind does not have (as decoding does upstream). */
export function pruneBuiltinFields(modelName: string, object: unknown): void {
  walk(object, modelName, "", [], true);
}

type Schema = Record<string, unknown>;

/** Upstream's OpenAPI package of each API group's types. */
const GROUP_PACKAGES: Readonly<Record<string, string>> = {
  "": "io.k8s.api.core",
  "apiextensions.k8s.io": "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions",
  apps: "io.k8s.api.apps",
  "authentication.k8s.io": "io.k8s.api.authentication",
  "authorization.k8s.io": "io.k8s.api.authorization",
  "coordination.k8s.io": "io.k8s.api.coordination",
  "events.k8s.io": "io.k8s.api.events",
  "rbac.authorization.k8s.io": "io.k8s.api.rbac",
  "storage.k8s.io": "io.k8s.api.storage",
};
const META_PACKAGE = "io.k8s.apimachinery.pkg.apis.meta";
const CORE_PACKAGE = "io.k8s.api.core";

/** apimachinery's meta/v1 types, wherever they are referenced. */
const META_MODELS = new Set([
  "V1ObjectMeta",
  "V1ListMeta",
  "V1LabelSelector",
  "V1LabelSelectorRequirement",
  "V1OwnerReference",
  "V1ManagedFieldsEntry",
  "V1Condition",
  "V1Status",
  "V1StatusDetails",
  "V1StatusCause",
  "V1Preconditions",
  "V1DeleteOptions",
]);

/** core/v1 types that other groups' kinds embed (their nested types are core/v1 as well). */
const CORE_MODELS = new Set([
  "V1ObjectReference",
  "V1EventSource",
  "V1TopologySelectorTerm",
  "V1PersistentVolumeSpec",
  "V1PersistentVolumeClaim",
  "V1PodTemplateSpec",
]);

let modelPackages: Map<string, string> | undefined;

/**
 * The upstream package of every model reachable from a built-in kind: its kind's group's,
 * unless it is a meta/v1 type or a core/v1 type embedded elsewhere (inherited downwards).
 */
function packagesOfModels(): Map<string, string> {
  if (modelPackages !== undefined) return modelPackages;
  const packages = new Map<string, string>();
  const visit = (model: string, inherited: string): void => {
    const pkg = META_MODELS.has(model) ? META_PACKAGE : CORE_MODELS.has(model) ? CORE_PACKAGE : inherited;
    if (packages.has(model)) return;
    packages.set(model, pkg);
    for (const attribute of attributesOf(model)?.values() ?? []) {
      for (const referenced of attribute.type.match(/[A-Z][A-Za-z0-9]+/g) ?? []) {
        if (attributesOf(referenced) !== undefined) visit(referenced, pkg);
      }
    }
  };
  // Core kinds first, so a type shared with another group keeps its core/v1 home.
  const roots = Object.entries(ROOT_MODELS).sort(
    ([a], [b]) => Number(!a.startsWith("/")) - Number(!b.startsWith("/")),
  );
  for (const [key, model] of roots) {
    const group = key.slice(0, key.indexOf("/"));
    visit(model, GROUP_PACKAGES[group] ?? `io.k8s.api.${group.replace(/\.k8s\.io$/, "").replace(/\./g, "")}`);
  }
  modelPackages = packages;
  return packages;
}

/**
 * The component-schema name of a model as upstream publishes it: "V1PersistentVolumeClaimSpec"
 * → "io.k8s.api.core.v1.PersistentVolumeClaimSpec", "V1ObjectMeta" →
 * "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "EventsV1Event" → "io.k8s.api.events.v1.Event".
 * kubectl explain prints the part after the last dot.
 */
export function builtinComponentName(modelName: string): string {
  const match = /^([A-Z][a-z]+)?(V\d+(?:alpha\d+|beta\d+)?)([A-Z].*)$/.exec(modelName);
  if (match === null) return `io.k8s.csikit.${modelName}`;
  const version = (match[2] ?? "").toLowerCase();
  const kind = match[3] ?? "";
  const pkg =
    packagesOfModels().get(modelName) ??
    (match[1] === undefined ? CORE_PACKAGE : `io.k8s.api.${match[1].toLowerCase()}`);
  return `${pkg}.${version}.${kind}`;
}

/** What kubectl explain can print for a value of any shape (its templates need a type). */
const FREE_FORM: Schema = Object.freeze({ type: "object", "x-kubernetes-preserve-unknown-fields": true });

function schemaFor(type: string, format: string, models: Set<string>): Schema {
  const array = /^Array<(.+)>$/.exec(type);
  if (array !== null) return { type: "array", items: schemaFor(array[1] ?? "any", format, models) };
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map !== null)
    return { type: "object", additionalProperties: schemaFor(map[1] ?? "any", format, models) };
  switch (type) {
    case "string":
      return format === "" ? { type: "string" } : { type: "string", format };
    case "Date":
    case "V1MicroTime":
      return { type: "string", format: "date-time" };
    case "number":
      return format === "double"
        ? { type: "number", format }
        : { type: "integer", ...(format === "" ? {} : { format }) };
    case "boolean":
      return { type: "boolean" };
    case "IntOrString":
      // As upstream publishes intstr.IntOrString.
      return { type: "string", format: "int-or-string", "x-kubernetes-int-or-string": true };
    case "object":
    case "any":
      return { ...FREE_FORM };
    default:
      if (attributesOf(type) === undefined) return { ...FREE_FORM };
      models.add(type);
      return { $ref: `#/components/schemas/${builtinComponentName(type)}` };
  }
}

/** A field's schema with its description; a $ref goes inside an allOf, as upstream does. */
function describedField(schema: Schema, description: string): Schema {
  if (description === "") return schema;
  if (typeof schema.$ref === "string") return { description, allOf: [schema] };
  return { ...schema, description };
}

/**
 * OpenAPI v3 component schemas of a built-in kind's model and every model it references, keyed
 * by builtinComponentName(): field names, types and upstream's descriptions.
 */
export function builtinComponentSchemas(modelName: string): Record<string, Schema> {
  const schemas: Record<string, Schema> = {};
  const pending = new Set([modelName]);
  while (pending.size > 0) {
    const [name] = pending;
    if (name === undefined) break;
    pending.delete(name);
    const key = builtinComponentName(name);
    if (schemas[key] !== undefined) continue;
    const model = MODELS.get(name);
    const getter: unknown =
      typeof model === "function" ? Reflect.get(model, "getAttributeTypeMap") : undefined;
    const list: unknown = typeof getter === "function" ? Reflect.apply(getter, model, []) : [];
    const docs = modelDocs(name);
    const properties: Record<string, Schema> = {};
    const referenced = new Set<string>();
    if (Array.isArray(list)) {
      for (const entry of list) {
        if (!isRecord(entry) || typeof entry.baseName !== "string" || typeof entry.type !== "string")
          continue;
        const schema = schemaFor(
          entry.type,
          typeof entry.format === "string" ? entry.format : "",
          referenced,
        );
        properties[entry.baseName] = describedField(schema, docs.fields.get(entry.baseName) ?? "");
      }
    }
    schemas[key] = {
      ...(docs.description === "" ? {} : { description: docs.description }),
      type: "object",
      properties,
    };
    for (const reference of referenced)
      if (schemas[builtinComponentName(reference)] === undefined) pending.add(reference);
  }
  return schemas;
}
