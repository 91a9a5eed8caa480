// storage.k8s.io/v1: storageclasses, csidrivers, csinodes, volumeattachments (+status),
// csistoragecapacities, volumeattributesclasses — defaults, validation and printer columns as
// kube-apiserver's storage strategies, validation and printers have them.

import {
  ANNOTATIONS,
  fieldDuplicate,
  fieldForbidden,
  fieldInvalid,
  fieldRequired,
  fieldTooLong,
  isDNS1123Subdomain,
  isQualifiedName,
  tryParseQuantity,
  isKubeAtLeast,
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
  canonicalizeQuantity,
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
import { validateLabelSelectorObject } from "./selector-validation.ts";

const GROUP = "storage.k8s.io";
const VERSION = "v1";

/** ValidateCSIDriverName: required, at most 63 characters, a DNS-1123 subdomain once lower-cased. */
export function validateCSIDriverName(name: unknown, field: string): FieldCause[] {
  const value = str(name);
  const causes: FieldCause[] = [];
  if (value === "") causes.push(fieldRequired(field));
  if (value.length > 63) causes.push(fieldTooLong(field, 63));
  for (const message of isDNS1123Subdomain(value.toLowerCase()))
    causes.push(fieldInvalid(field, value, message));
  return causes;
}

function validateProvisioner(value: unknown, field: string): FieldCause[] {
  const provisioner = str(value);
  if (provisioner === "") return [fieldRequired(field)];
  return isQualifiedName(provisioner.toLowerCase()).map((message) =>
    fieldInvalid(field, provisioner, message),
  );
}

const MAX_PARAMETERS_LENGTH = 256 * 1024;

const MAX_PARAMETERS_COUNT = 512;

function validateParameters(parameters: unknown, field: string, allowEmpty: boolean): FieldCause[] {
  if (parameters === undefined || parameters === null) {
    return allowEmpty ? [] : [fieldRequired(field, "must contain at least one key/value pair")];
  }
  if (!isRecord(parameters)) return [fieldInvalid(field, parameters, "must be a map of strings")];
  if (Object.keys(parameters).length > MAX_PARAMETERS_COUNT)
    return [fieldTooLong(field, MAX_PARAMETERS_COUNT)];
  const causes: FieldCause[] = [];
  let size = 0;
  for (const [key, value] of Object.entries(parameters)) {
    if (key.length < 1) causes.push(fieldInvalid(field, key, "field can not be empty."));
    if (typeof value !== "string") causes.push(fieldInvalid(`${field}.${key}`, value, "must be a string"));
    size += key.length + str(value).length;
  }
  if (size > MAX_PARAMETERS_LENGTH) causes.push(fieldTooLong(field, MAX_PARAMETERS_LENGTH));
  if (!allowEmpty && Object.keys(parameters).length === 0) {
    causes.push(fieldRequired(field, "must contain at least one key/value pair"));
  }
  return causes;
}

function isDefaultClass(object: Obj): boolean {
  const annotations = metaOf(object).annotations;
  if (!isRecord(annotations)) return false;
  return (
    annotations[ANNOTATIONS.isDefaultStorageClass.key] === "true" ||
    annotations[ANNOTATIONS.betaIsDefaultStorageClass.key] === "true"
  );
}

export const storageClasses: ResourceDef = defineResource({
  group: GROUP,
  version: VERSION,
  resource: "storageclasses",
  kind: "StorageClass",
  namespaced: false,
  shortNames: ["sc"],
  returnDeletedObject: true,
  defaults(object) {
    setDefault(object, "reclaimPolicy", "Delete");
    setDefault(object, "volumeBindingMode", "Immediate");
  },
  validate(object) {
    const causes = [
      ...validateProvisioner(object.provisioner, "provisioner"),
      ...validateParameters(object.parameters, "parameters", true),
      ...(str(object.reclaimPolicy) === ""
        ? []
        : oneOf("reclaimPolicy", object.reclaimPolicy, ["Delete", "Retain"])),
    ];
    if (object.volumeBindingMode === undefined || object.volumeBindingMode === null) {
      causes.push(fieldRequired("volumeBindingMode"));
    } else {
      causes.push(
        ...oneOf("volumeBindingMode", object.volumeBindingMode, ["Immediate", "WaitForFirstConsumer"]),
      );
    }
    if (object.allowVolumeExpansion !== undefined && typeof object.allowVolumeExpansion !== "boolean") {
      causes.push(fieldInvalid("allowVolumeExpansion", object.allowVolumeExpansion, "must be a boolean"));
    }
    causes.push(...validateAllowedTopologies(object.allowedTopologies));
    return causes;
  },
  validateUpdate(object, old) {
    const causes: FieldCause[] = [];
    if (!deepEqualParameters(object.parameters, old.parameters)) {
      causes.push(fieldForbidden("parameters", "updates to parameters are forbidden."));
    }
    if (str(object.provisioner) !== str(old.provisioner)) {
      causes.push(fieldForbidden("provisioner", "updates to provisioner are forbidden."));
    }
    if (str(object.reclaimPolicy) !== str(old.reclaimPolicy)) {
      causes.push(fieldForbidden("reclaimPolicy", "updates to reclaimPolicy are forbidden."));
    }
    causes.push(...immutable("volumeBindingMode", object.volumeBindingMode, old.volumeBindingMode));
    return causes;
  },
  specChanged: () => false,
  columns: [
    NAME_COLUMN,
    column("Provisioner", "string", "provisioner indicates the type of the provisioner."),
    column(
      "ReclaimPolicy",
      "string",
      "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class. Defaults to Delete.",
    ),
    column(
      "VolumeBindingMode",
      "string",
      "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.  When unset, VolumeBindingImmediate is used. This field is only honored by servers that enable the VolumeScheduling feature.",
    ),
    column(
      "AllowVolumeExpansion",
      "string",
      "allowVolumeExpansion shows whether the storage class allow volume expand.",
    ),
    AGE_COLUMN,
  ],
  row(object, now) {
    const name = nameOf(object) + (isDefaultClass(object) ? " (default)" : "");
    return [
      name,
      str(object.provisioner),
      str(object.reclaimPolicy) || "Delete",
      str(object.volumeBindingMode) || "Immediate",
      object.allowVolumeExpansion === true,
      age(object, now),
    ];
  },
  patchStrategies: {},
});

function deepEqualParameters(a: unknown, b: unknown): boolean {
  const left = isRecord(a) ? a : {};
  const right = isRecord(b) ? b : {};
  const keys = new Set([...Object.keys(left), ...Object.keys(right)]);
  for (const key of keys) if (left[key] !== right[key]) return false;
  return true;
}

function validateAllowedTopologies(topologies: unknown): FieldCause[] {
  if (topologies === undefined || topologies === null) return [];
  if (!Array.isArray(topologies)) return [fieldInvalid("allowedTopologies", topologies, "must be a list")];
  const causes: FieldCause[] = [];
  topologies.forEach((term: unknown, i) => {
    const expressions = isRecord(term) ? term.matchLabelExpressions : undefined;
    if (!Array.isArray(expressions) || expressions.length === 0) {
      causes.push(
        fieldRequired(
          `allowedTopologies[${i}].matchLabelExpressions`,
          "must have at least one label match expression",
        ),
      );
      return;
    }
    expressions.forEach((expression: unknown, j) => {
      const field = `allowedTopologies[${i}].matchLabelExpressions[${j}]`;
      const key = str(at(expression, "key"));
      for (const message of isQualifiedName(key)) causes.push(fieldInvalid(`${field}.key`, key, message));
      const values = at(expression, "values");
      if (!Array.isArray(values) || values.length === 0) {
        causes.push(fieldRequired(`${field}.values`, "must specify as least one value"));
      }
    });
  });
  return causes;
}

// ---- CSIDriver -------------------------------------------------------------------------

function validateTokenRequests(requests: unknown, field: string): FieldCause[] {
  if (requests === undefined || requests === null) return [];
  if (!Array.isArray(requests)) return [fieldInvalid(field, requests, "must be a list")];
  const causes: FieldCause[] = [];
  const audiences = new Set<string>();
  requests.forEach((request: unknown, i) => {
    const audience = str(at(request, "audience"));
    if (audiences.has(audience)) {
      causes.push(fieldDuplicate(`${field}[${i}].audience`, audience));
      return;
    }
    audiences.add(audience);
    const seconds = at(request, "expirationSeconds");
    if (typeof seconds === "number") {
      if (seconds < 600) {
        causes.push(
          fieldInvalid(
            `${field}[${i}].expirationSeconds`,
            seconds,
            "may not specify a duration less than 10 minutes",
          ),
        );
      } else if (seconds > 2 ** 32) {
        causes.push(
          fieldInvalid(
            `${field}[${i}].expirationSeconds`,
            seconds,
            "may not specify a duration larger than 2^32 seconds",
          ),
        );
      }
    }
  });
  return causes;
}

/** A boolean the defaults always set; `path` is upstream's (it spells attachRequired "attachedRequired"). */
function requiredBoolean(spec: Obj, key: string, path = `spec.${key}`): FieldCause[] {
  const value = spec[key];
  if (value === undefined || value === null) return [fieldRequired(path)];
  if (typeof value !== "boolean") return [fieldInvalid(path, value, "must be a boolean")];
  return [];
}

/**
 * CSIDriver fields of a feature gate, cleared on write while the gate is off (as the upstream
 * strategy's dropDisabledFields): seLinuxMount is older than any release csikit acts as.
 */
const CSI_DRIVER_GATED_FIELDS: readonly (readonly [string, string])[] = [
  ["seLinuxMount", "SELinuxMountReadWriteOncePod"],
  ["nodeAllocatableUpdatePeriodSeconds", "MutableCSINodeAllocatableCount"],
  ["serviceAccountTokenInSecrets", "CSIServiceAccountTokenSecrets"],
  ["preventPodSchedulingIfMissing", "VolumeLimitScaling"],
];

/**
 * serviceAccountTokenInSecrets says where kubelet puts the tokens of tokenRequests, so setting
 * it (to either value) without any tokenRequests is refused, as kube-apiserver refuses it.
 */
function validateTokensInSecrets(spec: Obj): FieldCause[] {
  const inSecrets = spec.serviceAccountTokenInSecrets;
  if (inSecrets === undefined || inSecrets === null) return [];
  const field = "spec.serviceAccountTokenInSecrets";
  if (typeof inSecrets !== "boolean") return [fieldInvalid(field, inSecrets, "must be a boolean")];
  const requests = spec.tokenRequests;
  if (Array.isArray(requests) && requests.length > 0) return [];
  return [fieldInvalid(field, inSecrets, "may only be set when tokenRequests is specified")];
}

/** CSIDriver as a server with these gates serves it. */
export function csiDriversWith(gates: KubeFeatureGates): ResourceDef {
  return defineResource({
    group: GROUP,
    version: VERSION,
    resource: "csidrivers",
    allowUnconditionalUpdate: false,
    kind: "CSIDriver",
    namespaced: false,
    defaults(object) {
      if (!isRecord(object.spec)) object.spec = {};
      const spec = object.spec as Obj;
      setDefault(spec, "attachRequired", true);
      setDefault(spec, "podInfoOnMount", false);
      setDefault(spec, "storageCapacity", false);
      setDefault(spec, "fsGroupPolicy", "ReadWriteOnceWithFSType");
      setDefault(spec, "volumeLifecycleModes", ["Persistent"]);
      setDefault(spec, "requiresRepublish", false);
      setDefault(spec, "seLinuxMount", false);
    },
    dropDisabledFields(object, old) {
      for (const [field, gate] of CSI_DRIVER_GATED_FIELDS)
        dropUnlessUsed(object, old, `spec.${field}`, gates[gate] === true);
    },
    validate(object) {
      const spec = isRecord(object.spec) ? object.spec : {};
      const causes = [
        ...requiredBoolean(spec, "attachRequired", "spec.attachedRequired"),
        ...requiredBoolean(spec, "podInfoOnMount"),
        ...requiredBoolean(spec, "storageCapacity"),
        ...validateTokenRequests(spec.tokenRequests, "spec.tokenRequests"),
      ];
      if (spec.fsGroupPolicy !== undefined && spec.fsGroupPolicy !== null) {
        causes.push(
          ...oneOf("spec.fsGroupPolicy", spec.fsGroupPolicy, ["File", "None", "ReadWriteOnceWithFSType"]),
        );
      }
      causes.push(...requiredBoolean(spec, "seLinuxMount"));
      const period = spec.nodeAllocatableUpdatePeriodSeconds;
      if (typeof period === "number" && period < 10) {
        causes.push(
          fieldInvalid(
            "spec.nodeAllocatableUpdatePeriodSeconds",
            period,
            "must be greater than or equal to 10 seconds",
          ),
        );
      }
      const modes = spec.volumeLifecycleModes;
      if (Array.isArray(modes)) {
        for (const mode of modes)
          causes.push(...oneOf("spec.volumeLifecycleModes", mode, ["Persistent", "Ephemeral"]));
      }
      causes.push(...validateTokensInSecrets(spec));
      return causes;
    },
    validateUpdate(object, old) {
      // Upstream reports the attachRequired path with this spelling.
      return [
        ...immutable(
          "spec.attachedRequired",
          at(object, "spec.attachRequired"),
          at(old, "spec.attachRequired"),
        ),
        ...immutable(
          "spec.volumeLifecycleModes",
          at(object, "spec.volumeLifecycleModes"),
          at(old, "spec.volumeLifecycleModes"),
        ),
      ];
    },
    specChanged: () => false,
    columns: [
      NAME_COLUMN,
      column(
        "AttachRequired",
        "boolean",
        "attachRequired indicates this CSI volume driver requires an attach operation.",
      ),
      column(
        "PodInfoOnMount",
        "boolean",
        "podInfoOnMount indicates this CSI volume driver requires additional pod information (like podName, podUID, etc.) during mount operations.",
      ),
      column(
        "StorageCapacity",
        "boolean",
        "storageCapacity indicates that the CSI volume driver wants pod scheduling to consider the storage capacity that the driver deployment will report.",
      ),
      column(
        "TokenRequests",
        "string",
        "tokenRequests indicates the CSI driver needs pods' service account tokens it is mounting volume for to do necessary authentication.",
      ),
      column(
        "RequiresRepublish",
        "boolean",
        "requiresRepublish indicates the CSI driver wants `NodePublishVolume` being periodically called to reflect any possible change in the mounted volume.",
      ),
      column(
        "Modes",
        "string",
        "volumeLifecycleModes defines what kind of volumes this CSI volume driver supports.",
      ),
      AGE_COLUMN,
    ],
    row(object, now) {
      const spec = isRecord(object.spec) ? object.spec : {};
      const tokenRequests = Array.isArray(spec.tokenRequests) ? spec.tokenRequests : [];
      const audiences = tokenRequests.map((request: unknown) => str(at(request, "audience")));
      const modes = Array.isArray(spec.volumeLifecycleModes) ? spec.volumeLifecycleModes.map(str) : [];
      return [
        nameOf(object),
        spec.attachRequired !== false,
        spec.podInfoOnMount === true,
        spec.storageCapacity === true,
        audiences.length > 0 ? audiences.join(",") : "<unset>",
        spec.requiresRepublish === true,
        modes.length > 0 ? modes.join(",") : "<none>",
        age(object, now),
      ];
    },
  });
}

/** CSIDriver as the default release (1.37, default gates) serves it. */
export const csiDrivers: ResourceDef = csiDriversWith(kubeRelease().gates);

// ---- CSINode ---------------------------------------------------------------------------

const CSI_NODE_ID_MAX_LENGTH = 192;

function driversOf(object: Obj): Obj[] {
  const drivers = at(object, "spec.drivers");
  return Array.isArray(drivers) ? drivers.filter(isRecord) : [];
}

/** CSINode as a server with these gates serves it. */
export function csiNodesWith(gates: KubeFeatureGates): ResourceDef {
  // MutableCSINodeAllocatableCount: kubelet refreshes a driver's allocatable.count in place.
  const countMutable = gates.MutableCSINodeAllocatableCount === true;
  return defineResource({
    group: GROUP,
    version: VERSION,
    resource: "csinodes",
    allowUnconditionalUpdate: false,
    kind: "CSINode",
    namespaced: false,
    defaults(object) {
      if (!isRecord(object.spec)) object.spec = { drivers: [] };
    },
    validate(object) {
      const drivers = at(object, "spec.drivers");
      if (drivers !== undefined && drivers !== null && !Array.isArray(drivers)) {
        return [fieldInvalid("spec.drivers", drivers, "must be a list")];
      }
      const causes: FieldCause[] = [];
      const names = new Set<string>();
      driversOf(object).forEach((driver, i) => {
        const field = `spec.drivers[${i}]`;
        causes.push(...validateCSIDriverName(driver.name, `${field}.name`));
        const nodeID = str(driver.nodeID);
        if (nodeID === "") causes.push(fieldRequired(`${field}.nodeID`));
        if (nodeID.length > CSI_NODE_ID_MAX_LENGTH) {
          causes.push(
            fieldInvalid(`${field}.nodeID`, nodeID, `must be ${CSI_NODE_ID_MAX_LENGTH} characters or less`),
          );
        }
        const count = at(driver, "allocatable.count");
        if (typeof count === "number" && count < 0) {
          causes.push(
            fieldInvalid(`${field}.allocatable.count`, count, "must be greater than or equal to 0"),
          );
        }
        const name = str(driver.name);
        if (names.has(name)) causes.push(fieldDuplicate(`${field}.name`, name));
        names.add(name);
        // Upstream reports topology-key problems at the driver's path.
        const keys = Array.isArray(driver.topologyKeys) ? driver.topologyKeys : [];
        const seen = new Set<string>();
        for (const key of keys) {
          const text = str(key);
          if (text === "") causes.push(fieldRequired(field));
          if (seen.has(text)) causes.push(fieldDuplicate(field, text));
          seen.add(text);
          for (const message of isQualifiedName(text)) causes.push(fieldInvalid(field, text, message));
        }
      });
      return causes;
    },
    validateUpdate(object, old) {
      // An existing driver entry is immutable as a whole, but for allocatable.count when
      // MutableCSINodeAllocatableCount is on.
      // Drivers found by name through an index: a scan per old driver made a large update quadratic.
      const causes: FieldCause[] = [];
      const updated = new Map<string, Obj[]>();
      for (const driver of driversOf(object)) {
        const name = str(driver.name);
        const named = updated.get(name);
        if (named) named.push(driver);
        else updated.set(name, [driver]);
      }
      for (const previous of driversOf(old)) {
        for (const driver of updated.get(str(previous.name)) ?? [])
          causes.push(
            ...(countMutable
              ? immutable("spec.drivers", withoutCount(driver), withoutCount(previous))
              : immutable("spec.drivers", driver, previous)),
          );
      }
      return causes;
    },
    specChanged: () => false,
    columns: [
      NAME_COLUMN,
      column("Drivers", "integer", "Drivers indicates the number of CSI drivers registered on the node"),
      AGE_COLUMN,
    ],
    row(object, now) {
      return [nameOf(object), driversOf(object).length, age(object, now)];
    },
    patchStrategies: { "spec.drivers": { mergeKey: "name" } },
  });
}

/** A CSINode driver entry without allocatable.count (the part of it that may change). */
function withoutCount(driver: Obj): Obj {
  if (!isRecord(driver.allocatable)) return driver;
  const allocatable = { ...driver.allocatable };
  delete allocatable.count;
  return { ...driver, allocatable };
}

export const csiNodes: ResourceDef = csiNodesWith(kubeRelease().gates);

// ---- VolumeAttachment ------------------------------------------------------------------

/** VolumeAttachment as a server with these gates serves it. */
export function volumeAttachmentsWith(gates: KubeFeatureGates): ResourceDef {
  return defineResource({
    group: GROUP,
    version: VERSION,
    resource: "volumeattachments",
    // Upstream: ResetObjectMetaForStatus on /status; updates need metadata.resourceVersion.
    statusWritableMetadata: [],
    allowUnconditionalUpdate: false,
    kind: "VolumeAttachment",
    namespaced: false,
    subresources: ["status"],
    dropDisabledFields(object, old) {
      // errorCode (the gRPC code of the failed ControllerPublish/Unpublish) came with
      // MutableCSINodeAllocatableCount's beta.
      const enabled = gates.MutableCSINodeAllocatableCount === true;
      dropUnlessUsed(object, old, "status.attachError.errorCode", enabled);
      dropUnlessUsed(object, old, "status.detachError.errorCode", enabled);
    },
    validate(object) {
      const spec = isRecord(object.spec) ? object.spec : {};
      const causes: FieldCause[] = [];
      const attacher = str(spec.attacher);
      if (attacher === "") causes.push(fieldRequired("spec.attacher"));
      const source = isRecord(spec.source) ? spec.source : {};
      const pvName = source.persistentVolumeName;
      const hasPV = typeof pvName === "string";
      const hasInline = isRecord(source.inlineVolumeSpec);
      const exactlyOne = "must specify exactly one of inlineVolumeSpec and persistentVolumeName";
      if (!hasPV && !hasInline) causes.push(fieldRequired("spec.source", exactlyOne));
      else if (hasPV && hasInline) causes.push(fieldForbidden("spec.source", exactlyOne));
      else if (hasPV && pvName === "") {
        causes.push(
          fieldRequired("spec.source.persistentVolumeName", "must specify non empty persistentVolumeName"),
        );
      }
      const nodeName = str(spec.nodeName);
      for (const message of isDNS1123Subdomain(nodeName))
        causes.push(fieldInvalid("spec.nodeName", nodeName, message));
      causes.push(...validateAttachmentStatus(object));
      // The v1-only checks.
      causes.push(...validateCSIDriverName(attacher, "spec.attacher"));
      if (hasPV) {
        const name = str(pvName);
        for (const message of isDNS1123Subdomain(name)) {
          causes.push(fieldInvalid("spec.source.persistentVolumeName", name, message));
        }
      }
      return causes;
    },
    validateUpdate(object, old) {
      return immutable("spec", object.spec, old.spec);
    },
    validateStatus(object) {
      return validateAttachmentStatus(object);
    },
    specChanged: () => false,
    columns: [
      NAME_COLUMN,
      {
        ...column(
          "Attacher",
          "string",
          "Attacher indicates the name of the volume driver that MUST handle this request. This is the name returned by GetPluginName().",
        ),
        format: "name",
      },
      column("PV", "string", "Name of the persistent volume to attach."),
      column("Node", "string", "The node that the volume should be attached to."),
      column(
        "Attached",
        "boolean",
        "Indicates the volume is successfully attached. This field must only be set by the entity completing the attach operation, i.e. the external-attacher.",
      ),
      AGE_COLUMN,
    ],
    row(object, now) {
      return [
        nameOf(object),
        str(at(object, "spec.attacher")),
        str(at(object, "spec.source.persistentVolumeName")),
        str(at(object, "spec.nodeName")),
        at(object, "status.attached") === true,
        age(object, now),
      ];
    },
  });
}

export const volumeAttachments: ResourceDef = volumeAttachmentsWith(kubeRelease().gates);

const MAX_ATTACHMENT_METADATA_SIZE = 256 * 1024;
const MAX_VOLUME_ERROR_MESSAGE_SIZE = 1024;

function validateAttachmentStatus(object: Obj): FieldCause[] {
  const causes: FieldCause[] = [];
  const metadata = at(object, "status.attachmentMetadata");
  if (isRecord(metadata)) {
    let size = 0;
    for (const [key, value] of Object.entries(metadata)) size += key.length + str(value).length;
    if (size > MAX_ATTACHMENT_METADATA_SIZE) {
      causes.push(fieldTooLong("status.attachmentMetadata", MAX_ATTACHMENT_METADATA_SIZE));
    }
  }
  for (const kind of ["attachError", "detachError"]) {
    const error = at(object, `status.${kind}`);
    if (!isRecord(error)) continue;
    if (str(error.message).length > MAX_VOLUME_ERROR_MESSAGE_SIZE) {
      causes.push(fieldTooLong(`status.${kind}.message`, MAX_ATTACHMENT_METADATA_SIZE));
    }
    if (typeof error.errorCode === "number" && error.errorCode < 0) {
      causes.push(
        fieldInvalid(
          `status.${kind}.errorCode`,
          error.errorCode,
          "must be between 0 and 2147483647, inclusive",
        ),
      );
    }
  }
  return causes;
}

// ---- CSIStorageCapacity ----------------------------------------------------------------

function nonNegativeQuantity(value: unknown, field: string): FieldCause[] {
  if (value === undefined || value === null) return [];
  const quantity = tryParseQuantity(value);
  if (quantity === undefined) {
    return [
      fieldInvalid(
        field,
        value,
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
      ),
    ];
  }
  return quantity.nanos < 0n ? [fieldInvalid(field, value, "must be greater than or equal to 0")] : [];
}

export const csiStorageCapacities: ResourceDef = defineResource({
  group: GROUP,
  version: VERSION,
  resource: "csistoragecapacities",
  allowUnconditionalUpdate: false,
  kind: "CSIStorageCapacity",
  namespaced: true,
  defaults(object) {
    canonicalizeQuantity(object, "capacity");
    canonicalizeQuantity(object, "maximumVolumeSize");
  },
  validate(object) {
    const causes: FieldCause[] = [];
    const className = str(object.storageClassName);
    for (const message of isDNS1123Subdomain(className)) {
      causes.push(fieldInvalid("storageClassName", className, message));
    }
    causes.push(...validateLabelSelectorObject(object.nodeTopology, "nodeTopology"));
    causes.push(...nonNegativeQuantity(object.capacity, "capacity"));
    return causes;
  },
  validateUpdate(object, old) {
    // The inputs of CSI GetCapacity are immutable.
    return [
      ...immutable("nodeTopology", object.nodeTopology ?? null, old.nodeTopology ?? null),
      ...immutable("storageClassName", object.storageClassName, old.storageClassName),
    ];
  },
  specChanged: () => false,
  columns: [
    NAME_COLUMN,
    column(
      "StorageClassName",
      "string",
      "storageClassName represents the name of the StorageClass that the reported capacity applies to.",
    ),
    column(
      "Capacity",
      "string",
      "capacity is the value reported by the CSI driver in its GetCapacityResponse for a GetCapacityRequest with topology and parameters that match the previous fields.",
    ),
  ],
  row(object) {
    const capacity = tryParseQuantity(object.capacity);
    return [
      nameOf(object),
      str(object.storageClassName),
      capacity === undefined ? "<unset>" : String(object.capacity),
    ];
  },
});

// ---- VolumeAttributesClass -------------------------------------------------------------

export const volumeAttributesClasses: ResourceDef = defineResource({
  group: GROUP,
  version: VERSION,
  resource: "volumeattributesclasses",
  kind: "VolumeAttributesClass",
  namespaced: false,
  shortNames: ["vac"],
  validate(object) {
    return [
      ...validateCSIDriverName(object.driverName, "driverName"),
      ...validateParameters(object.parameters, "parameters", false),
    ];
  },
  validateUpdate(object, old) {
    const causes: FieldCause[] = [];
    if (str(object.driverName) !== str(old.driverName)) {
      causes.push(fieldForbidden("driverName", "updates to driverName are forbidden."));
    }
    if (!deepEqualParameters(object.parameters, old.parameters)) {
      causes.push(fieldForbidden("parameters", "updates to parameters are forbidden."));
    }
    return causes;
  },
  specChanged: () => false,
  columns: [NAME_COLUMN, column("DriverName", "string", "Name of the CSI driver"), AGE_COLUMN],
  row(object, now) {
    return [nameOf(object), str(object.driverName), age(object, now)];
  },
});

/**
 * VolumeAttributesClass at storage.k8s.io/v1beta1 too, the same objects (one storage key per
 * group and resource): external-resizer v1.13 and external-provisioner v5.2 (Kubernetes 1.32)
 * read this version, newer ones v1; the fields are the same in both.
 */
export const volumeAttributesClassesV1beta1: ResourceDef = { ...volumeAttributesClasses, version: "v1beta1" };

export const storageResources: readonly ResourceDef[] = storageResourcesOf(kubeRelease());

/**
 * storage.k8s.io as a server acting as `release` serves it: VolumeAttributesClass at v1 from
 * 1.34 (its GA); at v1beta1 whenever the VolumeAttributesClass gate is on, which from 1.34 it
 * always is (kube-apiserver serves v1beta1 only with --runtime-config; csikit keeps it for the
 * 2025 sidecars that read it: external-provisioner v5, external-resizer v1).
 */
export function storageResourcesOf(release: KubeRelease): readonly ResourceDef[] {
  const gates = release.gates;
  return Object.freeze([
    storageClasses,
    csiDriversWith(gates),
    csiNodesWith(gates),
    volumeAttachmentsWith(gates),
    csiStorageCapacities,
    ...(isKubeAtLeast(release.minor, "1.34") ? [volumeAttributesClasses] : []),
    ...(gates.VolumeAttributesClass === true ? [volumeAttributesClassesV1beta1] : []),
  ]);
}
