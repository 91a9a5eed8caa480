// apimachinery meta/v1 shapes as they appear on the wire (JSON): ObjectMeta, lists, Status,
// watch events, Tables, label selectors, conditions. Fields are optional exactly where the
// API lets a client omit them; timestamps are RFC 3339 strings, as the server sends them.

export interface TypeMeta {
  apiVersion?: string;
  kind?: string;
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  apiVersion?: string;
  time?: string;
  fieldsType?: string;
  fieldsV1?: Record<string, unknown>;
  subresource?: string;
}

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
  managedFields?: ManagedFieldsEntry[];
}

export interface ListMeta {
  resourceVersion?: string;
  continue?: string;
  remainingItemCount?: number;
}

/** Any list response (`PersistentVolumeList`, …). */
export interface List<T> extends TypeMeta {
  metadata: ListMeta;
  items: T[];
}

export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

/** meta/v1 Status: every error response, and the body of some deletes. */
export interface Status extends TypeMeta {
  metadata?: ListMeta;
  status?: "Success" | "Failure";
  message?: string;
  /** StatusReason, e.g. "NotFound", "AlreadyExists", "Conflict", "Invalid", "Gone". */
  reason?: string;
  details?: StatusDetails;
  code?: number;
}

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";

export interface WatchEvent<T> {
  type: WatchEventType;
  /** The object; a Status for ERROR events. */
  object: T;
}

export interface TableColumnDefinition {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}

export interface TableRow {
  cells: unknown[];
  /** The object (PartialObjectMetadata or full, per includeObject). */
  object?: unknown;
  conditions?: { type: string; status: string; reason?: string; message?: string }[];
}

/** meta.k8s.io/v1 Table: server-side printing for `kubectl get`. */
export interface Table extends TypeMeta {
  metadata: ListMeta;
  columnDefinitions: TableColumnDefinition[];
  rows: TableRow[];
}

export type LabelSelectorOperator = "In" | "NotIn" | "Exists" | "DoesNotExist";

export interface LabelSelectorRequirement {
  key: string;
  operator: LabelSelectorOperator;
  values?: string[];
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

/** meta/v1 Condition (used by CRDs and newer kinds). */
export interface Condition {
  type: string;
  status: "True" | "False" | "Unknown";
  observedGeneration?: number;
  lastTransitionTime: string;
  reason: string;
  message: string;
}

/** DeleteOptions body (propagationPolicy is stored and honoured by the GC controller). */
export interface DeleteOptions extends TypeMeta {
  gracePeriodSeconds?: number;
  preconditions?: { uid?: string; resourceVersion?: string };
  propagationPolicy?: "Orphan" | "Background" | "Foreground";
  dryRun?: string[];
}

/** A resource.Quantity on the wire: a string such as "1Gi" (numbers are accepted on input). */
export type QuantityString = string;

/** An object with metadata, the shape every stored kind shares. */
export interface KubeResource extends TypeMeta {
  metadata: ObjectMeta;
}
