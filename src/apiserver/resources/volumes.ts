// core/v1 persistentvolumes and persistentvolumeclaims (+status): defaults, validation with
// upstream's immutability rules (PV source, PVC spec except requests.storage and
// volumeAttributesClassName of bound claims), printer columns.

import { jsonEqual } from "../../base/index.ts";
import {
  canonicalQuantity,
  compareQuantities,
  fieldForbidden,
  fieldInvalid,
  fieldNotSupported,
  fieldRequired,
  FIELD_IMMUTABLE,
  isDNS1123Label,
  isDNS1123Subdomain,
  parseQuantity,
  tryParseQuantity,
  kubeRelease,
  type KubeFeatureGates,
  type KubeRelease,
} from "../../api/index.ts";
import type { FieldCause, ResourceDef } from "../rest/resource.ts";
import {
  AGE_COLUMN,
  NAME_COLUMN,
  age,
  at,
  canonicalizeResourceList,
  child,
  column,
  defineResource,
  dropUnlessUsed,
  immutable,
  isRecord,
  metaOf,
  nameOf,
  oneOf,
  setDefault,
  str,
} from "./common.ts";
import type { Obj } from "./common.ts";
import { validateCSIDriverName } from "./storage.ts";
import { validateLabelSelectorObject, validateNodeSelector } from "./selector-validation.ts";
import { validateClaimModifyStatus, validateClaimResizeStatus } from "./claim-status.ts";

const ACCESS_MODES = ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"];
const ACCESS_MODE_SHORT: readonly [string, string][] = [
  ["ReadWriteOnce", "RWO"],
  ["ReadOnlyMany", "ROX"],
  ["ReadWriteMany", "RWX"],
  ["ReadWriteOncePod", "RWOP"],
];

/** "RWO,ROX" in upstream's fixed order (GetAccessModesAsString). */
export function accessModesString(modes: unknown): string {
  const list = Array.isArray(modes) ? modes : [];
  return ACCESS_MODE_SHORT.filter(([mode]) => list.includes(mode))
    .map(([, short]) => short)
    .join(",");
}

/** spec.storageClassName, or the beta annotation older objects carry (GetPersistentVolumeClass). */
function storageClassOf(object: Obj): string {
  const annotations = metaOf(object).annotations;
  const beta = isRecord(annotations) ? annotations["volume.beta.kubernetes.io/storage-class"] : undefined;
  if (typeof beta === "string") return beta;
  return str(at(object, "spec.storageClassName"));
}

function validateAccessModes(modes: unknown, field: string): FieldCause[] {
  if (!Array.isArray(modes) || modes.length === 0)
    return [fieldRequired(field, "at least 1 access mode is required")];
  const causes: FieldCause[] = [];
  for (const mode of modes) {
    if (typeof mode !== "string" || !ACCESS_MODES.includes(mode))
      causes.push(fieldNotSupported(field, mode, ACCESS_MODES));
  }
  if (modes.includes("ReadWriteOncePod") && modes.length > 1) {
    causes.push(fieldForbidden(field, "may not use ReadWriteOncePod with other access modes"));
  }
  return causes;
}

function validateStorageClassName(value: unknown, field: string): FieldCause[] {
  if (value === undefined || value === null || value === "") return [];
  const name = str(value);
  return isDNS1123Subdomain(name).map((message) => fieldInvalid(field, value, message));
}

function validateVolumeMode(value: unknown, field: string): FieldCause[] {
  if (value === undefined || value === null) return [];
  return oneOf(field, value, ["Block", "Filesystem"]);
}

function validateStorageQuantity(value: unknown, field: string, positive: boolean): FieldCause[] {
  const quantity = tryParseQuantity(value);
  if (quantity === undefined) {
    return [
      fieldInvalid(
        field,
        value ?? null,
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
      ),
    ];
  }
  if (positive ? quantity.nanos <= 0n : quantity.nanos < 0n) {
    return [
      fieldInvalid(
        field,
        value,
        positive ? "must be greater than zero" : "must be greater than or equal to 0",
      ),
    ];
  }
  return [];
}

// ---- PersistentVolume ------------------------------------------------------------------

/** Keys of a PV spec that are not a volume source. */
const PV_NON_SOURCE_KEYS = new Set([
  "capacity",
  "accessModes",
  "claimRef",
  "persistentVolumeReclaimPolicy",
  "storageClassName",
  "mountOptions",
  "volumeMode",
  "nodeAffinity",
  "volumeAttributesClassName",
]);

function volumeSourceKeys(spec: Obj): string[] {
  return Object.keys(spec).filter(
    (key) => !PV_NON_SOURCE_KEYS.has(key) && spec[key] !== undefined && spec[key] !== null,
  );
}

function validatePVSource(spec: Obj): FieldCause[] {
  const sources = volumeSourceKeys(spec);
  if (sources.length === 0) return [fieldRequired("spec", "must specify a volume type")];
  if (sources.length > 1)
    return [fieldForbidden(`spec.${sources[1] ?? ""}`, "may not specify more than 1 volume type")];
  const causes: FieldCause[] = [];
  const [kind] = sources;
  const source = spec[kind ?? ""];
  if (kind === "csi") {
    causes.push(...validateCSIDriverName(at(source, "driver"), "spec.csi.driver"));
    if (str(at(source, "volumeHandle")) === "") causes.push(fieldRequired("spec.csi.volumeHandle"));
  } else if (kind === "hostPath" || kind === "local") {
    if (str(at(source, "path")) === "") causes.push(fieldRequired(`spec.${kind}.path`));
    if (kind === "local" && !isRecord(spec.nodeAffinity)) {
      causes.push(fieldRequired("spec.nodeAffinity", "Local volume requires node affinity"));
    }
  } else if (kind === "nfs") {
    if (str(at(source, "server")) === "") causes.push(fieldRequired("spec.nfs.server"));
    if (str(at(source, "path")) === "") causes.push(fieldRequired("spec.nfs.path"));
  } else if (!isRecord(source)) {
    causes.push(fieldInvalid(`spec.${kind ?? ""}`, source, "must be an object"));
  }
  return causes;
}

function pvSourceOf(spec: unknown): Obj {
  const source: Obj = {};
  if (!isRecord(spec)) return source;
  for (const key of volumeSourceKeys(spec)) source[key] = spec[key];
  return source;
}

/** PersistentVolume as a server with these gates serves it. */
export function persistentVolumesWith(gates: KubeFeatureGates): ResourceDef {
  // MutablePVNodeAffinity (alpha from 1.35): a set nodeAffinity may change, still validated.
  const affinityMutable = gates.MutablePVNodeAffinity === true;
  return defineResource({
    group: "",
    version: "v1",
    resource: "persistentvolumes",
    kind: "PersistentVolume",
    namespaced: false,
    shortNames: ["pv"],
    subresources: ["status"],
    defaults(object) {
      const spec = child(object, "spec");
      setDefault(spec, "persistentVolumeReclaimPolicy", "Retain");
      setDefault(spec, "volumeMode", "Filesystem");
      setDefault(child(object, "status"), "phase", "Pending");
      canonicalizeResourceList(object, "spec.capacity");
    },
    dropDisabledFields(object, old) {
      dropUnlessUsed(object, old, "spec.volumeAttributesClassName", gates.VolumeAttributesClass === true);
    },
    validate(object) {
      const spec = isRecord(object.spec) ? object.spec : {};
      const causes: FieldCause[] = [...validateAccessModes(spec.accessModes, "spec.accessModes")];
      const capacity = spec.capacity;
      if (!isRecord(capacity) || Object.keys(capacity).length === 0) {
        causes.push(fieldRequired("spec.capacity"));
      } else {
        for (const [resource, value] of Object.entries(capacity)) {
          if (resource !== "storage")
            causes.push(fieldNotSupported(`spec.capacity[${resource}]`, resource, ["storage"]));
          else causes.push(...validateStorageQuantity(value, "spec.capacity[storage]", false));
        }
      }
      causes.push(...validatePVSource(spec));
      causes.push(
        ...oneOf("spec.persistentVolumeReclaimPolicy", spec.persistentVolumeReclaimPolicy, [
          "Delete",
          "Recycle",
          "Retain",
        ]),
      );
      causes.push(...validateStorageClassName(spec.storageClassName, "spec.storageClassName"));
      causes.push(...validateVolumeMode(spec.volumeMode, "spec.volumeMode"));
      if (spec.volumeAttributesClassName !== undefined && spec.volumeAttributesClassName !== null) {
        if (spec.volumeAttributesClassName === "") {
          causes.push(fieldRequired("spec.volumeAttributesClassName", "an empty string is disallowed"));
        } else {
          causes.push(
            ...validateStorageClassName(spec.volumeAttributesClassName, "spec.volumeAttributesClassName"),
          );
        }
        if (!isRecord(spec.csi)) {
          causes.push(fieldRequired("spec.csi", "has to be specified when using volumeAttributesClassName"));
        }
      }
      if (spec.nodeAffinity !== undefined && spec.nodeAffinity !== null) {
        const required = at(spec, "nodeAffinity.required");
        if (required === undefined)
          causes.push(fieldRequired("spec.nodeAffinity.required", "must specify required node constraints"));
        else causes.push(...validateNodeSelector(required, "spec.nodeAffinity.required"));
      }
      return causes;
    },
    validateUpdate(object, old) {
      const causes: FieldCause[] = [];
      const newSource = pvSourceOf(object.spec);
      const oldSource = pvSourceOf(old.spec);
      // A controllerExpandSecretRef may be added to a CSI volume that had none.
      if (
        isRecord(newSource.csi) &&
        isRecord(oldSource.csi) &&
        oldSource.csi.controllerExpandSecretRef === undefined
      ) {
        const csi: Obj = { ...newSource.csi };
        delete csi.controllerExpandSecretRef;
        newSource.csi = csi;
      }
      if (!jsonEqual(newSource, oldSource)) {
        causes.push(
          fieldForbidden(
            "spec.persistentvolumesource",
            "spec.persistentvolumesource is immutable after creation",
          ),
        );
      }
      causes.push(...immutable("volumeMode", at(object, "spec.volumeMode"), at(old, "spec.volumeMode")));
      const oldAffinity = at(old, "spec.nodeAffinity");
      if (!affinityMutable && oldAffinity !== undefined && oldAffinity !== null) {
        causes.push(...immutable("nodeAffinity", at(object, "spec.nodeAffinity"), oldAffinity));
      }
      const oldClass = at(old, "spec.volumeAttributesClassName");
      if (
        oldClass !== undefined &&
        oldClass !== null &&
        at(object, "spec.volumeAttributesClassName") === undefined
      ) {
        causes.push(
          fieldForbidden("spec.volumeAttributesClassName", "update from non-nil value to nil is forbidden"),
        );
      }
      return causes;
    },
    validateStatus(object) {
      const phase = at(object, "status.phase");
      if (phase === undefined) return [];
      return oneOf("status.phase", phase, ["Available", "Bound", "Failed", "Pending", "Released"]);
    },
    specChanged: () => false,
    columns: [
      NAME_COLUMN,
      column(
        "Capacity",
        "string",
        "capacity is the description of the persistent volume's resources and capacity. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity",
      ),
      column(
        "Access Modes",
        "string",
        "accessModes contains all ways the volume can be mounted. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes",
      ),
      column(
        "Reclaim Policy",
        "string",
        "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim. Valid options are Retain (default for manually created PersistentVolumes), Delete (default for dynamically provisioned PersistentVolumes), and Recycle (deprecated). Recycle must be supported by the volume plugin underlying this PersistentVolume. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#reclaiming",
      ),
      column(
        "Status",
        "string",
        "phase indicates if a volume is available, bound to a claim, or released by a claim. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#phase",
      ),
      column(
        "Claim",
        "string",
        "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim. Expected to be non-nil when bound. claim.VolumeName is the authoritative bind between PV and PVC. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding",
      ),
      column("StorageClass", "string", "StorageClass of the pv"),
      column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
      column(
        "Reason",
        "string",
        "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI.",
      ),
      AGE_COLUMN,
      column(
        "VolumeMode",
        "string",
        "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state. Value of Filesystem is implied when not included in spec.",
        1,
      ),
    ],
    row(object, now) {
      const spec = isRecord(object.spec) ? object.spec : {};
      const claimRef = spec.claimRef;
      const claim = isRecord(claimRef) ? `${str(claimRef.namespace)}/${str(claimRef.name)}` : "";
      const phase =
        metaOf(object).deletionTimestamp !== undefined ? "Terminating" : str(at(object, "status.phase"));
      return [
        nameOf(object),
        quantityCell(at(spec, "capacity.storage")),
        accessModesString(spec.accessModes),
        str(spec.persistentVolumeReclaimPolicy),
        phase,
        claim,
        storageClassOf(object),
        str(spec.volumeAttributesClassName) || "<unset>",
        str(at(object, "status.reason")),
        age(object, now),
        str(spec.volumeMode) || "<unset>",
      ];
    },
  });
}

export const persistentVolumes: ResourceDef = persistentVolumesWith(kubeRelease().gates);

/** A quantity as Quantity.String() prints it ("0" when absent). */
function quantityCell(value: unknown): string {
  const quantity = tryParseQuantity(value);
  return quantity === undefined ? "0" : canonicalQuantity(String(value));
}

// ---- PersistentVolumeClaim -------------------------------------------------------------

function validateDataSource(source: unknown, field: string): FieldCause[] {
  if (source === undefined || source === null) return [];
  if (!isRecord(source)) return [fieldInvalid(field, source, "must be an object")];
  const causes: FieldCause[] = [];
  if (str(source.name) === "") causes.push(fieldRequired(`${field}.name`));
  if (str(source.kind) === "") causes.push(fieldRequired(`${field}.kind`));
  const group = str(source.apiGroup);
  if (group === "" && source.kind !== "PersistentVolumeClaim") {
    causes.push(
      fieldInvalid(
        field,
        source.kind ?? "",
        "must be 'PersistentVolumeClaim' when referencing the default apiGroup",
      ),
    );
  }
  if (group !== "") {
    for (const message of isDNS1123Subdomain(group))
      causes.push(fieldInvalid(`${field}.apiGroup`, group, message));
  }
  const namespace = str(source.namespace);
  if (namespace !== "") {
    for (const message of isDNS1123Label(namespace))
      causes.push(fieldInvalid(`${field}.namespace`, namespace, message));
  }
  return causes;
}

/** dataSource and dataSourceRef must agree unless dataSourceRef names another namespace. */
function validateDataSourcePair(spec: Obj): FieldCause[] {
  const source = spec.dataSource;
  const ref = spec.dataSourceRef;
  if (!isRecord(source) || !isRecord(ref)) return [];
  if (str(ref.namespace) !== "") {
    return [
      fieldInvalid(
        "spec",
        "spec.dataSource",
        "may not be specified when dataSourceRef.namespace is specified",
      ),
    ];
  }
  const same = source.apiGroup === ref.apiGroup && source.kind === ref.kind && source.name === ref.name;
  return same ? [] : [fieldInvalid("spec", "spec.dataSource", "must match dataSourceRef")];
}

function requestedStorage(object: Obj): unknown {
  return at(object, "spec.resources.requests.storage");
}

/** PersistentVolumeClaim as a server with these gates serves it. */
export function persistentVolumeClaimsWith(gates: KubeFeatureGates): ResourceDef {
  const resize = gates.RecoverVolumeExpansionFailure === true;
  const modify = gates.VolumeAttributesClass === true;
  return defineResource({
    group: "",
    version: "v1",
    resource: "persistentvolumeclaims",
    kind: "PersistentVolumeClaim",
    namespaced: true,
    shortNames: ["pvc"],
    subresources: ["status"],
    patchStrategies: { "status.conditions": { mergeKey: "type" } },
    defaults(object) {
      const spec = child(object, "spec");
      setDefault(spec, "volumeMode", "Filesystem");
      setDefault(child(object, "status"), "phase", "Pending");
      for (const path of [
        "spec.resources.requests",
        "spec.resources.limits",
        "status.capacity",
        "status.allocatedResources",
      ]) {
        canonicalizeResourceList(object, path);
      }
    },
    dropDisabledFields(object, old) {
      dropUnlessUsed(object, old, "status.allocatedResourceStatuses", resize);
      dropUnlessUsed(object, old, "spec.volumeAttributesClassName", modify);
      dropUnlessUsed(object, old, "status.currentVolumeAttributesClassName", modify);
      dropUnlessUsed(object, old, "status.modifyVolumeStatus", modify);
    },
    validate(object) {
      const spec = isRecord(object.spec) ? object.spec : {};
      const causes: FieldCause[] = [...validateAccessModes(spec.accessModes, "spec.accessModes")];
      causes.push(...validateLabelSelectorObject(spec.selector, "spec.selector"));
      const storage = requestedStorage(object);
      if (storage === undefined || storage === null) causes.push(fieldRequired("spec.resources[storage]"));
      else causes.push(...validateStorageQuantity(storage, "spec.resources[storage]", true));
      causes.push(...validateStorageClassName(spec.storageClassName, "spec.storageClassName"));
      causes.push(...validateVolumeMode(spec.volumeMode, "spec.volumeMode"));
      causes.push(...validateDataSource(spec.dataSource, "spec.dataSource"));
      causes.push(...validateDataSource(spec.dataSourceRef, "spec.dataSourceRef"));
      causes.push(...validateDataSourcePair(spec));
      if (typeof spec.volumeAttributesClassName === "string" && spec.volumeAttributesClassName !== "") {
        causes.push(
          ...validateStorageClassName(spec.volumeAttributesClassName, "spec.volumeAttributesClassName"),
        );
      }
      return causes;
    },
    validateUpdate(object, old) {
      return validateClaimSpecUpdate(object, old);
    },
    validateStatus(object) {
      const causes: FieldCause[] = [];
      const capacity = at(object, "status.capacity");
      if (isRecord(capacity)) {
        for (const [resource, value] of Object.entries(capacity)) {
          causes.push(...validateStorageQuantity(value, `status.capacity[${resource}]`, false));
        }
      }
      const phase = at(object, "status.phase");
      if (phase !== undefined) causes.push(...oneOf("status.phase", phase, ["Bound", "Lost", "Pending"]));
      if (resize) causes.push(...validateClaimResizeStatus(object));
      if (modify) causes.push(...validateClaimModifyStatus(object));
      return causes;
    },
    specChanged: () => false,
    columns: [
      NAME_COLUMN,
      column("Status", "string", "phase represents the current phase of PersistentVolumeClaim."),
      column(
        "Volume",
        "string",
        "volumeName is the binding reference to the PersistentVolume backing this claim.",
      ),
      column("Capacity", "string", "capacity represents the actual resources of the underlying volume."),
      column(
        "Access Modes",
        "string",
        "accessModes contains the actual access modes the volume backing the PVC has. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes-1",
      ),
      column("StorageClass", "string", "StorageClass of the pvc"),
      column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
      AGE_COLUMN,
      column(
        "VolumeMode",
        "string",
        "volumeMode defines what type of volume is required by the claim. Value of Filesystem is implied when not included in claim spec.",
        1,
      ),
    ],
    row(object, now) {
      const spec = isRecord(object.spec) ? object.spec : {};
      const phase =
        metaOf(object).deletionTimestamp !== undefined ? "Terminating" : str(at(object, "status.phase"));
      const volumeName = str(spec.volumeName);
      const bound = volumeName !== "";
      return [
        nameOf(object),
        phase,
        volumeName,
        bound ? quantityCell(at(object, "status.capacity.storage")) : "",
        bound ? accessModesString(at(object, "status.accessModes")) : "",
        storageClassOf(object),
        str(spec.volumeAttributesClassName) || "<unset>",
        age(object, now),
        str(spec.volumeMode) || "<unset>",
      ];
    },
  });
}

export const persistentVolumeClaims: ResourceDef = persistentVolumeClaimsWith(kubeRelease().gates);

const PVC_SPEC_IMMUTABLE =
  "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims";

/** ValidatePersistentVolumeClaimUpdate (RecoverVolumeExpansionFailure on, as in 1.32). */
function validateClaimSpecUpdate(object: Obj, old: Obj): FieldCause[] {
  const causes: FieldCause[] = [];
  const newSpec = structuredClone(isRecord(object.spec) ? object.spec : {});
  const oldSpec = structuredClone(isRecord(old.spec) ? old.spec : {});
  // The PV controller sets volumeName once.
  if (str(oldSpec.volumeName) === "") oldSpec.volumeName = newSpec.volumeName;
  // A class may be set once on a claim that had none (retroactive default StorageClass, or
  // the move from the beta annotation), if it agrees with that annotation.
  const betaClass = betaClassAnnotation(old);
  if (
    (oldSpec.storageClassName === undefined || oldSpec.storageClassName === null) &&
    typeof newSpec.storageClassName === "string" &&
    (betaClass === undefined || betaClass === newSpec.storageClassName)
  ) {
    oldSpec.storageClassName = newSpec.storageClassName;
  }
  const bound = at(object, "status.phase") === "Bound";
  if (bound) {
    const newRequests = at(newSpec, "resources.requests");
    if (isRecord(newRequests)) {
      const oldStorage = at(oldSpec, "resources.requests.storage");
      if (oldStorage === undefined) delete newRequests.storage;
      else newRequests.storage = oldStorage;
    }
  }
  // volumeAttributesClassName is compared on its own below.
  if (oldSpec.volumeAttributesClassName === undefined) delete newSpec.volumeAttributesClassName;
  else newSpec.volumeAttributesClassName = oldSpec.volumeAttributesClassName;
  if (!jsonEqual(normalizeClaimSpec(newSpec), normalizeClaimSpec(oldSpec))) {
    causes.push(fieldForbidden("spec", PVC_SPEC_IMMUTABLE));
  }
  const newSize = tryParseQuantity(requestedStorage(object));
  const oldSize = tryParseQuantity(requestedStorage(old));
  if (newSize !== undefined && oldSize !== undefined && compareQuantities(newSize, oldSize) < 0) {
    const statusSize = tryParseQuantity(at(old, "status.capacity.storage")) ?? parseQuantity("0");
    if (compareQuantities(newSize, statusSize) <= 0) {
      causes.push(
        fieldForbidden("spec.resources.requests.storage", "field can not be less than status.capacity"),
      );
    }
  }
  const newMode = at(object, "spec.volumeMode");
  const oldMode = at(old, "spec.volumeMode");
  if (!jsonEqual(newMode, oldMode)) causes.push(fieldInvalid("volumeMode", newMode ?? null, FIELD_IMMUTABLE));
  const oldClass = at(old, "spec.volumeAttributesClassName");
  const newClass = at(object, "spec.volumeAttributesClassName");
  // Kubernetes 1.34 (kubernetes#132106, KEP-3751 rollback): a class may be unset while none has
  // been applied yet (status.currentVolumeAttributesClassName nil), to give up an infeasible one.
  const current = at(old, "status.currentVolumeAttributesClassName");
  if (typeof oldClass === "string" && newClass === undefined && typeof current === "string") {
    causes.push(
      fieldForbidden(
        "spec.volumeAttributesClassName",
        "update to nil is forbidden when status.currentVolumeAttributesClassName is not nil",
      ),
    );
  } else if (typeof oldClass === "string" && newClass === "") {
    causes.push(
      fieldForbidden(
        "spec.volumeAttributesClassName",
        "update from non-nil value to an empty string is forbidden",
      ),
    );
  }
  return causes;
}

function betaClassAnnotation(object: Obj): string | undefined {
  const annotations = metaOf(object).annotations;
  const value = isRecord(annotations) ? annotations["volume.beta.kubernetes.io/storage-class"] : undefined;
  return typeof value === "string" ? value : undefined;
}

/** Quantities compare by value, not spelling ("1Gi" = "1024Mi"), as Semantic.DeepEqual does. */
function normalizeClaimSpec(spec: Obj): Obj {
  const copy = structuredClone(spec);
  for (const kind of ["requests", "limits"]) {
    const list = at(copy, `resources.${kind}`);
    if (!isRecord(list)) continue;
    for (const [key, value] of Object.entries(list)) {
      const quantity = tryParseQuantity(value);
      if (quantity !== undefined) list[key] = quantity.nanos.toString();
    }
    if (Object.keys(list).length === 0) delete (copy.resources as Obj)[kind];
  }
  if (isRecord(copy.resources) && Object.keys(copy.resources).length === 0) delete copy.resources;
  return copy;
}

export const volumeResources: readonly ResourceDef[] = Object.freeze([
  persistentVolumes,
  persistentVolumeClaims,
]);

/** PersistentVolumes and claims as a server acting as `release` serves them. */
export function volumeResourcesOf(release: KubeRelease): readonly ResourceDef[] {
  return Object.freeze([persistentVolumesWith(release.gates), persistentVolumeClaimsWith(release.gates)]);
}
