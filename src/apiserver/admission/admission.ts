// Mutating admission on create, the storage plugins kube-apiserver enables by default, so a
// claim or volume looks here as it would on a real cluster:
// - DefaultStorageClass: a PVC created without spec.storageClassName (absent, not "", and no
//   beta storage-class annotation) gets the default StorageClass — the one annotated
//   `storageclass.kubernetes.io/is-default-class: "true"` (or its beta twin); with several, the
//   newest (then the name) wins, as upstream since 1.26. No default class: unchanged.
// - StorageObjectInUseProtection: PVCs get `kubernetes.io/pvc-protection`, PVs
//   `kubernetes.io/pv-protection`. The pvc/pv-protection controllers remove them once unused;
//   without those controllers a deleted claim stays Terminating, exactly as on a real cluster
//   whose controller-manager is down.
// - PersistentVolumeClaimResize (validating, on update): growing a claim's storage request is
//   allowed only for a Bound claim whose StorageClass (unchanged) sets allowVolumeExpansion;
//   otherwise 403, as external-resizer expects.
// Mutating plugins run after defaulting and before validation, and only on create; validating
// ones after the kind's own validation (as upstream).

import type { KubeObject, ResourceDef } from "../rest/resource.ts";
import type { Store } from "../storage/types.ts";
import type { AdmissionPlugin } from "./types.ts";
import { nodeRestriction } from "./node-restriction.ts";
import { finalizersOf, metadataOf, stringField } from "../rest/objects.ts";
import { forbidden } from "../transport/status.ts";
import { parseQuantity } from "../../api/index.ts";
import { FlagError } from "../../base/index.ts";

export type { AdmissionContext, AdmissionPlugin, AdmissionRequest } from "./types.ts";

const DEFAULT_CLASS_ANNOTATIONS = [
  "storageclass.kubernetes.io/is-default-class",
  "storageclass.beta.kubernetes.io/is-default-class",
];
const BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class";

function isCoreKind(def: ResourceDef, resource: string): boolean {
  return def.group === "" && def.resource === resource;
}

function stringMap(value: unknown): Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

/** The default StorageClass's name, or undefined when none is marked default. */
export function defaultStorageClassName(store: Store): string | undefined {
  const defaults = store
    .list({ prefix: "/storage.k8s.io/storageclasses//" })
    .items.map((item) => metadataOf(item.object))
    .filter((meta) => {
      const annotations = stringMap(meta.annotations);
      return DEFAULT_CLASS_ANNOTATIONS.some((key) => annotations[key] === "true");
    });
  defaults.sort((a, b) => {
    const created = stringField(b, "creationTimestamp").localeCompare(stringField(a, "creationTimestamp"));
    return created !== 0 ? created : stringField(a, "name").localeCompare(stringField(b, "name"));
  });
  return defaults[0] === undefined ? undefined : stringField(defaults[0], "name");
}

export const defaultStorageClass: AdmissionPlugin = {
  name: "DefaultStorageClass",
  admitCreate(context, def, object) {
    if (!isCoreKind(def, "persistentvolumeclaims")) return;
    const spec = stringMap(object.spec);
    if (spec.storageClassName !== undefined && spec.storageClassName !== null) return;
    if (stringMap(metadataOf(object).annotations)[BETA_STORAGE_CLASS_ANNOTATION] !== undefined) return;
    const name = defaultStorageClassName(context.store);
    if (name === undefined) return;
    object.spec = { ...spec, storageClassName: name };
  },
};

const PROTECTION_FINALIZERS: Record<string, string> = {
  persistentvolumeclaims: "kubernetes.io/pvc-protection",
  persistentvolumes: "kubernetes.io/pv-protection",
};

export const storageObjectInUseProtection: AdmissionPlugin = {
  name: "StorageObjectInUseProtection",
  admitCreate(_context, def, object) {
    if (def.group !== "") return;
    const finalizer = PROTECTION_FINALIZERS[def.resource];
    if (finalizer === undefined) return;
    const finalizers = finalizersOf(object);
    if (!finalizers.includes(finalizer)) metadataOf(object).finalizers = [...finalizers, finalizer];
  },
};

/** The claim's class as upstream's GetPersistentVolumeClaimClass reads it: the beta annotation first. */
function claimClass(claim: KubeObject): string {
  const annotation = stringMap(metadataOf(claim).annotations)[BETA_STORAGE_CLASS_ANNOTATION];
  if (typeof annotation === "string") return annotation;
  const name = stringMap(claim.spec).storageClassName;
  return typeof name === "string" ? name : "";
}

function requestedStorage(claim: KubeObject): bigint | undefined {
  const quantity = stringMap(stringMap(stringMap(claim.spec).resources).requests).storage;
  if (typeof quantity !== "string" && typeof quantity !== "number") return undefined;
  try {
    return parseQuantity(String(quantity)).nanos;
  } catch {
    return undefined;
  }
}

export const persistentVolumeClaimResize: AdmissionPlugin = {
  name: "PersistentVolumeClaimResize",
  admitCreate() {},
  validateUpdate(context, def, subresource, object, old) {
    if (!isCoreKind(def, "persistentvolumeclaims") || subresource !== "") return;
    const oldSize = requestedStorage(old) ?? 0n;
    const newSize = requestedStorage(object) ?? 0n;
    if (newSize <= oldSize) return;
    const name = stringField(metadataOf(object), "name");
    const refuse = (why: string): never => {
      throw forbidden(`persistentvolumeclaims "${name}" is forbidden: ${why}`, {
        name,
        kind: "persistentvolumeclaims",
      });
    };
    if (stringMap(old.status).phase !== "Bound")
      refuse("Only bound persistent volume claims can be expanded");
    const className = claimClass(object);
    const stored =
      className !== "" && className === claimClass(old)
        ? context.store.get(`/storage.k8s.io/storageclasses//${className}`)
        : undefined;
    if (stored?.object.allowVolumeExpansion !== true) {
      refuse(
        "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize",
      );
    }
  },
};

/** Every plugin csikit knows, by name. */
export const ADMISSION_PLUGINS: readonly AdmissionPlugin[] = [
  defaultStorageClass,
  storageObjectInUseProtection,
  persistentVolumeClaimResize,
  nodeRestriction,
];

/** The plugins kube-apiserver enables by default, among those csikit implements (not NodeRestriction). */
export const DEFAULT_ADMISSION_PLUGINS: readonly string[] = [
  defaultStorageClass.name,
  storageObjectInUseProtection.name,
  persistentVolumeClaimResize.name,
];

/**
 * The plugin chain from kube-apiserver's --enable-admission-plugins / --disable-admission-plugins
 * lists (added to / removed from the defaults). Unknown names are an error naming them.
 */
export function admissionChain(
  options: { enable?: readonly string[]; disable?: readonly string[] } = {},
): AdmissionPlugin[] {
  const known = new Map(ADMISSION_PLUGINS.map((p) => [p.name, p]));
  const unknown = [...(options.enable ?? []), ...(options.disable ?? [])].filter((n) => !known.has(n));
  if (unknown.length > 0) {
    throw new FlagError(
      `unknown admission plugin(s) ${unknown.join(", ")}; csikit implements ${[...known.keys()].join(", ")}`,
    );
  }
  const names = new Set([...DEFAULT_ADMISSION_PLUGINS, ...(options.enable ?? [])]);
  for (const name of options.disable ?? []) names.delete(name);
  return ADMISSION_PLUGINS.filter((p) => names.has(p.name));
}
