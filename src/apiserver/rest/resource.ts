// The contract between the REST layer (server, handlers, watch, patch) and the per-resource
// definitions (kinds, defaults, validation, printing, discovery). The REST layer is generic:
// everything it knows of a kind comes from a ResourceDef. Built-in kinds are defined under
// resources/; an installed CRD becomes a ResourceDef built from its spec at run time.

import type { KubeObject } from "../storage/types.ts";

export type { KubeObject };

/** One invalid field, as Status.details.causes[] reports it. */
export interface FieldCause {
  /** "FieldValueRequired" | "FieldValueInvalid" | "FieldValueNotSupported" | "FieldValueForbidden" | "FieldValueDuplicate" | "FieldValueTooLong" */
  reason: string;
  message: string;
  /** JSON path as upstream prints it, e.g. "spec.storageClassName", "metadata.name". */
  field: string;
}

export interface TableColumn {
  name: string;
  type: "string" | "integer" | "number" | "boolean" | "date";
  format?: string;
  description: string;
  /** Columns kubectl shows only with -o wide have priority 1. */
  priority: number;
}

export interface ResourceDef {
  group: string; // "" for core
  version: string;
  /** Plural lower-case name, e.g. "persistentvolumes". */
  resource: string;
  singular: string;
  kind: string;
  listKind: string;
  namespaced: boolean;
  shortNames: readonly string[];
  categories: readonly string[];
  verbs: readonly string[];
  /** Subresources served besides the main resource, e.g. ["status"] or ["status", "binding"]. */
  subresources: readonly string[];
  /** Whether the status subresource splits writes (main ignores status, /status changes only status). */
  hasStatus: boolean;

  /** Defaults applied on create (and on update, to the new object), mutating `object`. */
  applyDefaults(object: KubeObject): void;
  /**
   * Upstream strategies' dropDisabledFields, after the defaults: clears the fields of feature
   * gates that are off (--feature-gates, --kubernetes-version), unless `old` (an update's stored
   * object; undefined on create) already uses them, so a downgrade does not erase data.
   */
  dropDisabledFields?(object: KubeObject, old: KubeObject | undefined): void;
  /** Validation of a new object (metadata already defaulted by the REST layer). */
  validateCreate(object: KubeObject): FieldCause[];
  /** Validation of an update of the main resource (immutability rules). */
  validateUpdate(object: KubeObject, old: KubeObject): FieldCause[];
  /** Validation of a /status update. */
  validateStatusUpdate(object: KubeObject, old: KubeObject): FieldCause[];
  /** True when the change from old to object bumps metadata.generation (spec changed). */
  specChanged(object: KubeObject, old: KubeObject): boolean;

  /** Field-selector paths this kind supports, each mapped to the object's value ("" when absent). */
  fieldSelectors: Readonly<Record<string, (object: KubeObject) => string>>;

  /** Server-side printing for `kubectl get` (Table responses). */
  tableColumns: readonly TableColumn[];
  /** One row's cells, aligned with tableColumns (Name first). `now` is ms since epoch for ages. */
  tableRow(object: KubeObject, now: number): unknown[];

  /**
   * Strategic-merge-patch metadata: for each list field path (dot path from the object root with
   * "[]" for list elements, e.g. "spec.containers", "spec.containers[].env", "metadata.finalizers"),
   * how lists merge: { mergeKey: "name" } merges by key; { merge: "set" } merges primitive lists as
   * sets; absent = replace (as upstream for atomic lists).
   */
  patchStrategies: Readonly<Record<string, { mergeKey: string } | { merge: "set" }>>;

  /** OpenAPI v3 schema of the kind (for /openapi/v3 and kubectl), if known. */
  openAPISchema?: Record<string, unknown>;

  /** True for a CRD-backed kind: strategic merge patch is refused (415) as upstream does. Default false. */
  custom?: boolean;
  /** A deprecated CRD version's Warning, sent with every answer (upstream: "<group>/<version> <Kind> is deprecated" unless the CRD words its own). */
  deprecationWarning?: string;
  /** A delete answers the deleted object (pods, serviceaccounts, storageclasses upstream) instead of a Success Status. Default false. */
  returnDeletedObject?: boolean;
  /**
   * Graceful deletion (pods): the grace period in seconds for deleting `object`, given the
   * client's `gracePeriodSeconds` (undefined when unset). > 0 keeps the object with
   * deletionTimestamp = now + grace until a delete with grace 0 (the kubelet's) removes it.
   * Absent = 0 (immediate unless finalizers hold it).
   */
  deleteGracePeriod?(object: KubeObject, requested: number | undefined): number;
  /**
   * Create keeps the client's `status` even though the kind has a status subresource (nodes:
   * the kubelet registers a Node with its status). Default false: status is dropped on create.
   */
  keepStatusOnCreate?: boolean;
  /**
   * Whether the kind carries metadata.generation at all. Upstream sets it only for kinds whose
   * strategy tracks it (CRDs, custom resources; not PVs, PVCs, pods in 1.32, storage kinds…).
   * Default true (generation 1 on create, bumped when specChanged).
   */
  tracksGeneration?: boolean;
  /**
   * The metadata fields a /status write may change (of labels, annotations, finalizers,
   * ownerReferences); the others keep their stored values, as the kind's upstream status
   * strategy does. Default: all four (PVs, PVCs, nodes, namespaces, CRDs). Pods keep
   * ownerReferences; VolumeAttachments (ResetObjectMetaForStatus) and custom resources keep
   * all metadata ([]).
   */
  statusWritableMetadata?: readonly string[];
  /**
   * Whether an update without metadata.resourceVersion is accepted (upstream strategy's
   * AllowUnconditionalUpdate). Default true; false answers 422 "must be specified for an update".
   */
  allowUnconditionalUpdate?: boolean;
  /** Whether a PUT of an absent object creates it (AllowCreateOnUpdate: leases, events). Default false. */
  allowCreateOnUpdate?: boolean;
  /**
   * Storage shared with another resource (events.k8s.io/v1 events live in core/v1 events, as
   * upstream stores one Event in the storage version). Absent = the resource owns its storage.
   * The REST layer keys this resource's objects under `group`/`resource` and passes every
   * object through the conversions on its way to and from the store (storage-view.ts), so both
   * resources read and write the same objects: same resourceVersion, uid, finalizers, deletion.
   */
  storage?: StorageMapping;
}

/** Where a resource's objects are stored, and how its shape converts to the stored one and back. */
export interface StorageMapping {
  /** The storing resource's group ("" for core) and plural resource name. */
  group: string;
  resource: string;
  /** The object in this resource's shape → the stored shape. Must not change `object`. */
  toStorage(object: KubeObject): KubeObject;
  /** A stored object → this resource's shape. Must not change `object` (watch events are shared). */
  fromStorage(object: KubeObject): KubeObject;
}

/** The set of served resources; CRDs add and remove entries at run time. */
export interface ResourceRegistry {
  all(): readonly ResourceDef[];
  /** By group/version/resource. */
  lookup(group: string, version: string, resource: string): ResourceDef | undefined;
  /** Listen for CRD-driven changes (discovery caches, routing). */
  onChange(listener: () => void): void;
}
