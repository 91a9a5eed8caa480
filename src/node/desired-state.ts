// Desired state of the volume manager (the kubelet's desired-state-of-world populator): for
// every pod bound to this node that is neither terminating nor finished, its CSI volumes —
// PVC → bound PV with spec.csi, generic ephemeral volumes (claim "<pod>-<volume>"), and
// inline CSI ephemeral volumes (handle csi-<sha256(podUID + volume name)>). Computed afresh
// from the informer caches on every reconcile pass, so it never drifts from them. A volume
// that cannot be resolved yet (claim unbound, PV missing, not CSI) is reported per pod as a
// problem in the kubelet's words instead.
// CSI migration: in-tree PVs and inline in-tree volumes of a plugin this node migrated (its
// --feature-gates) are translated and served by the plugin's CSI driver like any CSI volume —
// staged at plugins/kubernetes.io/csi/<driver>/<sha256(handle)>/globalmount, the pod dir named
// by the translated PV's name, as the kubelet's CSI plugin does — and remember the plugin they
// came from. Volumes of plugins not migrated here would be the in-tree plugin's: csikit has
// none, so they are problems.

import type {
  CSIDriver,
  PersistentVolume,
  PersistentVolumeAccessMode,
  PersistentVolumeClaim,
  Pod,
  SecretReference,
} from "../api/index.ts";
import { ephemeralClaimName, ephemeralClaimRefusal } from "../api/index.ts";
import {
  isMigrationEnabledForPlugin,
  pluginForInlineVolume,
  pluginForPV,
  resolveFeatureGates,
  translateInTreeInlineVolumeToCSI,
  translateInTreePVToCSI,
  type FeatureGates,
} from "../migration/index.ts";
import { ephemeralVolumeHandle, uniqueVolumeName } from "./paths.ts";

const DEFAULT_GATES = resolveFeatureGates({});

/** Everything an operation needs to know about one volume of one pod. */
export interface VolumeSpec {
  /** kubernetes.io/csi/<driver>^<handle>. */
  uniqueName: string;
  /** PV name, or the pod's volume name for an inline volume: the dir name under the pod. */
  specName: string;
  driver: string;
  handle: string;
  ephemeral: boolean;
  block: boolean;
  readOnly: boolean;
  fsType: string;
  mountOptions: string[];
  accessModes: PersistentVolumeAccessMode[];
  volumeAttributes: Record<string, string>;
  nodeStageSecretRef?: SecretReference;
  nodePublishSecretRef?: SecretReference;
  nodeExpandSecretRef?: SecretReference;
  /** The claim of a PV-backed volume. */
  claim?: { namespace: string; name: string };
  pvName?: string;
  /** CSI migration: the in-tree plugin the volume was translated from. */
  migratedFrom?: string;
}

export interface DesiredPodVolume {
  /** "<podUID>/<specName>". */
  key: string;
  podUID: string;
  pod: Pod;
  /** The name of the volume in pod.spec.volumes. */
  outerName: string;
  spec: VolumeSpec;
}

export interface DesiredState {
  volumes: Map<string, DesiredPodVolume>;
  /** Pods to run, by UID. */
  pods: Map<string, Pod>;
  /** Per pod UID, the volumes that cannot be resolved yet and why. */
  problems: Map<string, string[]>;
}

export interface Caches {
  claim(namespace: string, name: string): PersistentVolumeClaim | undefined;
  volume(name: string): PersistentVolume | undefined;
  csiDriver(name: string): CSIDriver | undefined;
  /** The node's --feature-gates (which in-tree plugins it migrated); default 1.32's. */
  featureGates?: FeatureGates;
}

export function podVolumeKey(podUID: string, specName: string): string {
  return `${podUID}/${specName}`;
}

/** A pod the kubelet keeps volumes for: not being deleted and not finished. */
export function podIsActive(pod: Pod): boolean {
  const phase = pod.status?.phase;
  return !pod.metadata?.deletionTimestamp && phase !== "Succeeded" && phase !== "Failed";
}

/**
 * keep: pods that are no longer active but whose volumes must stay (their containers are still
 * stopping); their volumes are wanted, the pods themselves are not in `pods`.
 */
export function computeDesiredState(
  pods: readonly Pod[],
  caches: Caches,
  keep?: (pod: Pod) => boolean,
): DesiredState {
  const state: DesiredState = { volumes: new Map(), pods: new Map(), problems: new Map() };
  // A ReadWriteOncePod volume belongs to the first pod that wants it (the kubelet keeps the pod
  // already in its desired state): the oldest, so the owner stays the same from pass to pass.
  const rwopOwners = new Map<string, string>();
  for (const pod of [...pods].sort(byAge)) {
    const active = podIsActive(pod);
    if (!active && !(keep?.(pod) ?? false)) continue;
    const uid = pod.metadata?.uid ?? "";
    if (active) state.pods.set(uid, pod);
    for (const volume of pod.spec?.volumes ?? []) {
      let result: VolumeSpec | string | undefined;
      if (volume.csi) result = inlineSpec(pod, volume.name, volume.csi, caches);
      else if (pluginForInlineVolume(volume)) result = migratedInlineSpec(pod, volume, caches);
      else if (volume.persistentVolumeClaim) {
        result = claimSpec(
          pod,
          volume.persistentVolumeClaim.claimName,
          volume.persistentVolumeClaim.readOnly ?? false,
          caches,
        );
      } else if (volume.ephemeral) {
        result = claimSpec(pod, ephemeralClaimName(pod, volume), false, caches, { ephemeral: true });
      }
      if (result === undefined) continue;
      if (typeof result !== "string") result = modeMismatch(pod, volume.name, result) ?? result;
      if (typeof result === "string") {
        if (!active) continue;
        const list = state.problems.get(uid) ?? [];
        list.push(result);
        state.problems.set(uid, list);
        continue;
      }
      if (result.accessModes.includes("ReadWriteOncePod")) {
        const owner = rwopOwners.get(result.uniqueName);
        if (owner !== undefined && owner !== uid) {
          if (!active) continue;
          const list = state.problems.get(uid) ?? [];
          list.push(`error processing PVC ${claimOf(result)}: ${RWOP_IN_USE}`);
          state.problems.set(uid, list);
          continue;
        }
        rwopOwners.set(result.uniqueName, uid);
      }
      const key = podVolumeKey(uid, result.specName);
      state.volumes.set(key, { key, podUID: uid, pod, outerName: volume.name, spec: result });
    }
  }
  return state;
}

/** The kubelet's refusal of a second pod of a ReadWriteOncePod volume. */
export const RWOP_IN_USE =
  "volume uses the ReadWriteOncePod access mode and is already in use by another pod";

const claimOf = (spec: VolumeSpec): string =>
  spec.claim ? `${spec.claim.namespace}/${spec.claim.name}` : spec.specName;

/** Oldest pod first (creation time, then UID). */
function byAge(a: Pod, b: Pod): number {
  const at = a.metadata?.creationTimestamp ?? "";
  const bt = b.metadata?.creationTimestamp ?? "";
  if (at !== bt) return at < bt ? -1 : 1;
  const au = a.metadata?.uid ?? "";
  const bu = b.metadata?.uid ?? "";
  return au < bu ? -1 : au > bu ? 1 : 0;
}

/**
 * The kubelet's check of a volume's mode against its use: a Block volume only as a container's
 * volumeDevices, a Filesystem one only as volumeMounts (init containers too).
 */
function modeMismatch(pod: Pod, name: string, spec: VolumeSpec): string | undefined {
  const containers = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  const mounted = containers.some((c) => (c.volumeMounts ?? []).some((m) => m.name === name));
  const mapped = containers.some((c) => (c.volumeDevices ?? []).some((d) => d.name === name));
  if (spec.block && mounted) return `volume ${name} has volumeMode Block, but is specified in volumeMounts`;
  if (!spec.block && mapped)
    return `volume ${name} has volumeMode Filesystem, but is specified in volumeDevices`;
  return undefined;
}

function inlineSpec(
  pod: Pod,
  name: string,
  csi: NonNullable<NonNullable<Pod["spec"]>["volumes"]>[number]["csi"] & object,
  caches: Caches,
): VolumeSpec | string {
  const uid = pod.metadata?.uid ?? "";
  const driver = caches.csiDriver(csi.driver);
  const modes = driver?.spec.volumeLifecycleModes ?? ["Persistent"];
  if (!modes.includes("Ephemeral")) {
    return `volume "${name}": volume mode "Ephemeral" not supported by driver ${csi.driver} (only supports ${JSON.stringify(modes)})`;
  }
  const handle = ephemeralVolumeHandle(uid, name);
  const namespace = pod.metadata?.namespace ?? "";
  return {
    uniqueName: uniqueVolumeName(csi.driver, handle),
    specName: name,
    driver: csi.driver,
    handle,
    ephemeral: true,
    block: false,
    readOnly: csi.readOnly ?? false,
    fsType: csi.fsType ?? "",
    mountOptions: [],
    accessModes: [csi.readOnly ? "ReadOnlyMany" : "ReadWriteOnce"],
    volumeAttributes: { ...csi.volumeAttributes },
    ...(csi.nodePublishSecretRef?.name
      ? { nodePublishSecretRef: { name: csi.nodePublishSecretRef.name, namespace } }
      : {}),
  };
}

function claimSpec(
  pod: Pod,
  claimName: string,
  readOnly: boolean,
  caches: Caches,
  options: { ephemeral?: boolean } = {},
): VolumeSpec | string {
  const namespace = pod.metadata?.namespace ?? "";
  const claim = caches.claim(namespace, claimName);
  const where = `error processing PVC ${namespace}/${claimName}`;
  if (!claim) return `${where}: persistentvolumeclaim "${claimName}" not found`;
  // A generic ephemeral volume's claim must be the pod's own (upstream's VolumeIsForPod), so a
  // claim that merely has the right name is never mounted into the pod.
  const refusal = options.ephemeral ? ephemeralClaimRefusal(pod, claim) : undefined;
  if (refusal !== undefined) return refusal;
  if (claim.metadata?.deletionTimestamp) return `${where}: PVC is being deleted`;
  const pvName = claim.spec?.volumeName ?? "";
  if (pvName === "" || claim.status?.phase !== "Bound") return `${where}: PVC is not bound`;
  const pv = caches.volume(pvName);
  if (!pv) return `${where}: persistentvolume "${pvName}" not found`;
  let csi = pv.spec?.csi;
  let spec = pv.spec;
  const plugin = csi ? undefined : pluginForPV(pv)?.inTreePluginName;
  if (plugin !== undefined) {
    if (!isMigrationEnabledForPlugin(caches.featureGates ?? DEFAULT_GATES, plugin))
      return `${where}: volume ${pvName} is an in-tree ${plugin} volume and CSI migration of that plugin is off on this node: csikit node has no in-tree plugins`;
    try {
      spec = translateInTreePVToCSI(pv).spec;
    } catch (error) {
      return `${where}: ${error instanceof Error ? error.message : String(error)}`;
    }
    csi = spec?.csi;
  }
  if (!csi) return `${where}: volume ${pvName} is not a CSI volume: csikit node mounts CSI volumes only`;
  if (pv.spec?.claimRef?.uid && pv.spec.claimRef.uid !== claim.metadata?.uid) {
    return `${where}: volume ${pvName} is bound to another claim`;
  }
  return {
    uniqueName: uniqueVolumeName(csi.driver, csi.volumeHandle),
    specName: pvName,
    driver: csi.driver,
    handle: csi.volumeHandle,
    ephemeral: false,
    block: spec?.volumeMode === "Block",
    readOnly: readOnly || (csi.readOnly ?? false),
    fsType: csi.fsType ?? "",
    mountOptions: [...(spec?.mountOptions ?? [])],
    accessModes: [...(spec?.accessModes ?? [])],
    volumeAttributes: { ...csi.volumeAttributes },
    ...(csi.nodeStageSecretRef ? { nodeStageSecretRef: csi.nodeStageSecretRef } : {}),
    ...(csi.nodePublishSecretRef ? { nodePublishSecretRef: csi.nodePublishSecretRef } : {}),
    ...(csi.nodeExpandSecretRef ? { nodeExpandSecretRef: csi.nodeExpandSecretRef } : {}),
    claim: { namespace, name: claimName },
    pvName,
    ...(plugin !== undefined ? { migratedFrom: plugin } : {}),
  };
}

/** An inline in-tree volume of a plugin migrated here: a persistent CSI volume (attached, staged). */
function migratedInlineSpec(
  pod: Pod,
  volume: NonNullable<NonNullable<Pod["spec"]>["volumes"]>[number],
  caches: Caches,
): VolumeSpec | string {
  const plugin = pluginForInlineVolume(volume)?.inTreePluginName ?? "";
  if (!isMigrationEnabledForPlugin(caches.featureGates ?? DEFAULT_GATES, plugin))
    return `volume "${volume.name}": in-tree ${plugin} volume and CSI migration of that plugin is off on this node: csikit node has no in-tree plugins`;
  let pv: PersistentVolume;
  try {
    pv = translateInTreeInlineVolumeToCSI(volume, pod.metadata?.namespace ?? "");
  } catch (error) {
    return `volume "${volume.name}": ${error instanceof Error ? error.message : String(error)}`;
  }
  const csi = pv.spec?.csi;
  if (!csi) return `volume "${volume.name}": no CSI source after translation`;
  return {
    uniqueName: uniqueVolumeName(csi.driver, csi.volumeHandle),
    // The kubelet names a migrated inline volume by the translated PV (its pod dir too).
    specName: pv.metadata?.name ?? volume.name,
    driver: csi.driver,
    handle: csi.volumeHandle,
    ephemeral: false,
    block: false,
    readOnly: csi.readOnly ?? false,
    fsType: csi.fsType ?? "",
    mountOptions: [...(pv.spec?.mountOptions ?? [])],
    accessModes: [...(pv.spec?.accessModes ?? [])],
    volumeAttributes: { ...csi.volumeAttributes },
    ...(csi.nodeStageSecretRef ? { nodeStageSecretRef: csi.nodeStageSecretRef } : {}),
    ...(csi.nodePublishSecretRef ? { nodePublishSecretRef: csi.nodePublishSecretRef } : {}),
    migratedFrom: plugin,
  };
}
