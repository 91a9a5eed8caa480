// Shared building blocks of the built-in ResourceDefs: a `defineResource` that fills the
// generic parts (ObjectMeta validation with the kind's name rule, metadata.name/namespace
// field selectors, Name/Age printer columns, ObjectMeta merge keys) so each kind's file holds
// only what upstream's strategy, validation and printer say about that kind.

import {
  ageSince,
  formatQuantity,
  tryParseQuantity,
  fieldForbidden,
  fieldInvalid,
  fieldRequired,
  FIELD_IMMUTABLE,
  isDNS1123Label,
  nameIsDNSSubdomain,
  validateAnnotations,
  validateFinalizers,
  validateLabels,
} from "../../api/index.ts";
import type { NameValidator } from "../../api/index.ts";
import type { FieldCause, KubeObject, ResourceDef, StorageMapping, TableColumn } from "../rest/resource.ts";
import { builtinModelOf, pruneBuiltinFields } from "./builtin-schema.ts";
import { isRecord, jsonEqual } from "../../base/index.ts";

export type Obj = Record<string, unknown>;

/** The project's one object type guard, re-exported for the resource modules. */
export { isRecord };

export const ALL_VERBS: readonly string[] = Object.freeze([
  "create",
  "delete",
  "deletecollection",
  "get",
  "list",
  "patch",
  "update",
  "watch",
]);

/** The value at a dot path ("spec.csi.driver"), undefined when any step is missing. */
export function at(object: unknown, path: string): unknown {
  let current: unknown = object;
  for (const step of path.split(".")) {
    if (!isRecord(current)) return undefined;
    current = current[step];
  }
  return current;
}

/**
 * Clears the field at `path` when its gate is off and the old object (an update's) does not
 * set it already: the shape of upstream's dropDisabledFields for one gated field.
 */
export function dropUnlessUsed(object: Obj, old: Obj | undefined, path: string, enabled: boolean): void {
  if (enabled) return;
  const used = old === undefined ? undefined : at(old, path);
  if (used !== undefined && used !== null) return;
  const steps = path.split(".");
  const last = steps.pop()!;
  const parent = steps.length === 0 ? object : at(object, steps.join("."));
  if (isRecord(parent)) delete parent[last];
}

export function str(value: unknown): string {
  return typeof value === "string" ? value : "";
}

/** The record at `key` of `parent`, created when absent (for defaulting). */
export function child(parent: Obj, key: string): Obj {
  const existing = parent[key];
  if (isRecord(existing)) return existing;
  const created: Obj = {};
  parent[key] = created;
  return created;
}

/** Sets parent[key] = value when the key is absent (undefined or null). */
export function setDefault(parent: Obj, key: string, value: unknown): void {
  if (parent[key] === undefined || parent[key] === null) parent[key] = value;
}

/**
 * Rewrites a quantity in canonical form, as the API server re-encodes every Quantity it
 * decodes ("1024Mi" → "1Gi", 5 → "5"). Malformed values stay for validation to report.
 */
export function canonicalizeQuantity(parent: unknown, key: string): void {
  if (!isRecord(parent)) return;
  const value = parent[key];
  if (typeof value !== "string" && typeof value !== "number") return;
  const quantity = tryParseQuantity(value);
  if (quantity !== undefined) parent[key] = formatQuantity(quantity);
}

/** canonicalizeQuantity over every entry of a ResourceList at `path`. */
export function canonicalizeResourceList(object: unknown, path: string): void {
  const list = at(object, path);
  if (!isRecord(list)) return;
  for (const key of Object.keys(list)) canonicalizeQuantity(list, key);
}

export function metaOf(object: KubeObject): Obj {
  return isRecord(object.metadata) ? object.metadata : {};
}

/** Immutability check of one field: FieldValueInvalid "field is immutable", as ValidateImmutableField. */
export function immutable(field: string, value: unknown, old: unknown): FieldCause[] {
  return jsonEqual(value, old) ? [] : [fieldInvalid(field, value ?? null, FIELD_IMMUTABLE)];
}

export const NAME_COLUMN: TableColumn = Object.freeze({
  name: "Name",
  type: "string",
  format: "name",
  description:
    "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
  priority: 0,
});

export const AGE_COLUMN: TableColumn = Object.freeze({
  name: "Age",
  type: "string",
  description:
    "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
  priority: 0,
});

export function column(
  name: string,
  type: TableColumn["type"],
  description: string,
  priority = 0,
): TableColumn {
  return Object.freeze({ name, type, description, priority });
}

export function nameOf(object: KubeObject): string {
  return str(metaOf(object).name);
}

export function age(object: KubeObject, now: number): string {
  return ageSince(metaOf(object).creationTimestamp, now);
}

/** ObjectMeta validation (ValidateObjectMeta) for a new object of a kind. */
export function validateObjectMeta(
  object: KubeObject,
  namespaced: boolean,
  nameValidator: NameValidator,
): FieldCause[] {
  const meta = metaOf(object);
  const causes: FieldCause[] = [];
  const name = str(meta.name);
  const generateName = str(meta.generateName);
  if (generateName !== "") {
    for (const message of nameValidator(generateName, true)) {
      causes.push(fieldInvalid("metadata.generateName", generateName, message));
    }
  }
  if (name === "") {
    causes.push(fieldRequired("metadata.name", "name or generateName is required"));
  } else {
    for (const message of nameValidator(name, false))
      causes.push(fieldInvalid("metadata.name", name, message));
  }
  const namespace = str(meta.namespace);
  if (namespaced) {
    if (namespace === "") causes.push(fieldRequired("metadata.namespace"));
    else
      for (const message of isDNS1123Label(namespace))
        causes.push(fieldInvalid("metadata.namespace", namespace, message));
  } else if (namespace !== "") {
    causes.push(fieldForbidden("metadata.namespace", "not allowed on this type"));
  }
  causes.push(...validateLabels(meta.labels, "metadata.labels"));
  causes.push(...validateAnnotations(meta.annotations, "metadata.annotations"));
  causes.push(...validateFinalizers(meta.finalizers, "metadata.finalizers"));
  causes.push(...validateOwnerReferences(meta.ownerReferences));
  return causes;
}

function validateOwnerReferences(references: unknown): FieldCause[] {
  if (references === undefined || references === null) return [];
  if (!Array.isArray(references))
    return [fieldInvalid("metadata.ownerReferences", references, "must be a list")];
  const causes: FieldCause[] = [];
  let controllers = 0;
  references.forEach((reference: unknown, i) => {
    const field = `metadata.ownerReferences[${i}]`;
    if (!isRecord(reference)) {
      causes.push(fieldInvalid(field, reference, "must be an object"));
      return;
    }
    if (str(reference.apiVersion) === "")
      causes.push(
        fieldInvalid(`${field}.apiVersion`, reference.apiVersion ?? "", "version must not be empty"),
      );
    if (str(reference.kind) === "")
      causes.push(fieldInvalid(`${field}.kind`, reference.kind ?? "", "kind must not be empty"));
    if (str(reference.name) === "")
      causes.push(fieldInvalid(`${field}.name`, reference.name ?? "", "name must not be empty"));
    if (str(reference.uid) === "")
      causes.push(fieldInvalid(`${field}.uid`, reference.uid ?? "", "uid must not be empty"));
    if (reference.controller === true) controllers++;
  });
  if (controllers > 1) {
    causes.push(
      fieldInvalid(
        "metadata.ownerReferences",
        references,
        "Only one reference can have Controller set to true.",
      ),
    );
  }
  return causes;
}

/** Everything a kind's file says; defineResource() turns it into a ResourceDef. */
export interface KindSpec {
  group: string;
  version: string;
  resource: string;
  kind: string;
  namespaced: boolean;
  shortNames?: readonly string[];
  categories?: readonly string[];
  verbs?: readonly string[];
  subresources?: readonly string[];
  /** Name rule of the kind (default: DNS-1123 subdomain). */
  nameValidator?: NameValidator;
  defaults?(object: Obj): void;
  /** ResourceDef.dropDisabledFields. */
  dropDisabledFields?(object: Obj, old: Obj | undefined): void;
  /** Kind-specific validation of the whole object (create, and the new object of an update). */
  validate?(object: Obj): FieldCause[];
  /** Kind-specific create-only rules besides validate(). */
  validateCreate?(object: Obj): FieldCause[];
  /** Kind-specific update rules (immutability) besides validate(). */
  validateUpdate?(object: Obj, old: Obj): FieldCause[];
  /** /status update rules (default: none beyond metadata). */
  validateStatus?(object: Obj, old: Obj): FieldCause[];
  /** Default: `spec` changed. */
  specChanged?(object: Obj, old: Obj): boolean;
  fieldSelectors?: Readonly<Record<string, (object: KubeObject) => string>>;
  /** Columns including Name (and Age where upstream prints it). */
  columns: readonly TableColumn[];
  row(object: Obj, now: number): unknown[];
  patchStrategies?: ResourceDef["patchStrategies"];
  openAPISchema?: Record<string, unknown>;
  returnDeletedObject?: boolean;
  deleteGracePeriod?: (object: KubeObject, requested: number | undefined) => number;
  /** Create keeps the client's status (nodes). Default false. */
  keepStatusOnCreate?: boolean;
  /** Whether metadata.generation exists for the kind (CRDs and custom resources). Default false. */
  tracksGeneration?: boolean;
  /** Objects stored by another resource, converted (ResourceDef.storage). Default: own storage. */
  storage?: StorageMapping; /** ResourceDef.statusWritableMetadata (default: labels, annotations, finalizers, ownerReferences). */
  statusWritableMetadata?: readonly string[];
  /** ResourceDef.allowUnconditionalUpdate (default true). */
  allowUnconditionalUpdate?: boolean;
  /** ResourceDef.allowCreateOnUpdate (default false). */
  allowCreateOnUpdate?: boolean;
}

export const METADATA_PATCH_STRATEGIES = Object.freeze({
  "metadata.finalizers": { merge: "set" },
  "metadata.ownerReferences": { mergeKey: "uid" },
}) satisfies ResourceDef["patchStrategies"];

function metadataUpdateCauses(object: KubeObject, old: KubeObject): FieldCause[] {
  const meta = metaOf(object);
  const oldMeta = metaOf(old);
  return [
    ...immutable("metadata.name", meta.name, oldMeta.name),
    ...immutable("metadata.namespace", meta.namespace ?? "", oldMeta.namespace ?? ""),
    ...validateLabels(meta.labels, "metadata.labels"),
    ...validateAnnotations(meta.annotations, "metadata.annotations"),
    ...validateFinalizers(meta.finalizers, "metadata.finalizers"),
    ...validateOwnerReferences(meta.ownerReferences),
  ];
}

export function defineResource(spec: KindSpec): ResourceDef {
  const nameValidator = spec.nameValidator ?? nameIsDNSSubdomain;
  const subresources = spec.subresources ?? [];
  const singular = spec.kind.toLowerCase();
  const model = builtinModelOf(spec.group, spec.version, spec.kind);
  const def: ResourceDef = {
    group: spec.group,
    version: spec.version,
    resource: spec.resource,
    singular,
    kind: spec.kind,
    listKind: `${spec.kind}List`,
    namespaced: spec.namespaced,
    shortNames: Object.freeze([...(spec.shortNames ?? [])]),
    categories: Object.freeze([...(spec.categories ?? [])]),
    verbs: Object.freeze([...(spec.verbs ?? ALL_VERBS)]),
    subresources: Object.freeze([...subresources]),
    hasStatus: subresources.includes("status"),
    applyDefaults(object) {
      // Decoding drops fields the kind does not have, before any defaulting.
      if (model !== undefined) pruneBuiltinFields(model, object);
      spec.defaults?.(object);
    },
    ...(spec.dropDisabledFields
      ? {
          dropDisabledFields(object: KubeObject, old: KubeObject | undefined) {
            spec.dropDisabledFields?.(object, old);
          },
        }
      : {}),
    validateCreate(object) {
      return [
        ...validateObjectMeta(object, spec.namespaced, nameValidator),
        ...(spec.validate?.(object) ?? []),
        ...(spec.validateCreate?.(object) ?? []),
      ];
    },
    validateUpdate(object, old) {
      return [
        ...metadataUpdateCauses(object, old),
        ...(spec.validate?.(object) ?? []),
        ...(spec.validateUpdate?.(object, old) ?? []),
      ];
    },
    validateStatusUpdate(object, old) {
      return [...metadataUpdateCauses(object, old), ...(spec.validateStatus?.(object, old) ?? [])];
    },
    specChanged(object, old) {
      return spec.specChanged ? spec.specChanged(object, old) : !jsonEqual(object.spec, old.spec);
    },
    fieldSelectors: Object.freeze({
      "metadata.name": (object: KubeObject) => str(metaOf(object).name),
      ...(spec.namespaced
        ? { "metadata.namespace": (object: KubeObject) => str(metaOf(object).namespace) }
        : {}),
      ...spec.fieldSelectors,
    }),
    tableColumns: Object.freeze([...spec.columns]),
    tableRow: (object, now) => spec.row(object, now),
    patchStrategies: Object.freeze({ ...METADATA_PATCH_STRATEGIES, ...spec.patchStrategies }),
  };
  if (spec.openAPISchema !== undefined) def.openAPISchema = spec.openAPISchema;
  if (spec.returnDeletedObject === true) def.returnDeletedObject = true;
  if (spec.keepStatusOnCreate === true) def.keepStatusOnCreate = true;
  def.tracksGeneration = spec.tracksGeneration === true;
  if (spec.storage !== undefined) def.storage = spec.storage;
  if (spec.statusWritableMetadata !== undefined)
    def.statusWritableMetadata = Object.freeze([...spec.statusWritableMetadata]);
  if (spec.allowUnconditionalUpdate !== undefined)
    def.allowUnconditionalUpdate = spec.allowUnconditionalUpdate;
  if (spec.allowCreateOnUpdate !== undefined) def.allowCreateOnUpdate = spec.allowCreateOnUpdate;
  const grace = spec.deleteGracePeriod;
  if (grace !== undefined) def.deleteGracePeriod = (object, requested) => grace(object, requested);
  return def;
}

/** "<none>" for empty values, as the printers do. */
export function orNone(value: string): string {
  return value === "" ? "<none>" : value;
}

/** Validates an enum-valued field (NotSupported with the sorted list). */
export function oneOf(field: string, value: unknown, supported: readonly string[]): FieldCause[] {
  if (typeof value === "string" && supported.includes(value)) return [];
  return [
    {
      reason: "FieldValueNotSupported",
      message: `Unsupported value: ${JSON.stringify(value ?? "")}: supported values: ${supported.map((s) => JSON.stringify(s)).join(", ")}`,
      field,
    },
  ];
}
