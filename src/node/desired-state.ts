// Desired state of the volume manager (the kubelet's desired-state-of-world populator): for
// every pod bound to this node that is neither terminating nor finished, its CSI volumes —
// PVC → bound PV with spec.csi, generic ephemeral volumes (claim "<pod>-<volume>"), and
// inline CSI ephemeral volumes (handle csi-<sha256(podUID + volume name)>). Computed afresh
// from the informer caches on every reconcile pass, so it never drifts from them. A volume
// that cannot be resolved yet (claim unbound, PV missing, not CSI) is reported per pod as a
// problem in the kubelet's words instead.

import type {
  CSIDriver,
  PersistentVolume,
  PersistentVolumeAccessMode,
  PersistentVolumeClaim,
  Pod,
  SecretReference,
} from "../api/index.ts";
import { ephemeralVolumeHandle, uniqueVolumeName } from "./paths.ts";

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
}

export function podVolumeKey(podUID: string, specName: string): string {
  return `${podUID}/${specName}`;
}

/** A pod the kubelet keeps volumes for: not being deleted and not finished. */
export function podIsActive(pod: Pod): boolean {
  const phase = pod.status?.phase;
  return !pod.metadata?.deletionTimestamp && phase !== "Succeeded" && phase !== "Failed";
}

export function computeDesiredState(pods: readonly Pod[], caches: Caches): DesiredState {
  const state: DesiredState = { volumes: new Map(), pods: new Map(), problems: new Map() };
  for (const pod of pods) {
    if (!podIsActive(pod)) continue;
    const uid = pod.metadata?.uid ?? "";
    state.pods.set(uid, pod);
    for (const volume of pod.spec?.volumes ?? []) {
      let result: VolumeSpec | string | undefined;
      if (volume.csi) result = inlineSpec(pod, volume.name, volume.csi, caches);
      else if (volume.persistentVolumeClaim) {
        result = claimSpec(
          pod,
          volume.persistentVolumeClaim.claimName,
          volume.persistentVolumeClaim.readOnly ?? false,
          caches,
        );
      } else if (volume.ephemeral) {
        result = claimSpec(pod, `${pod.metadata?.name ?? ""}-${volume.name}`, false, caches);
      }
      if (result === undefined) continue;
      if (typeof result === "string") {
        const list = state.problems.get(uid) ?? [];
        list.push(result);
        state.problems.set(uid, list);
        continue;
      }
      const key = podVolumeKey(uid, result.specName);
      state.volumes.set(key, { key, podUID: uid, pod, outerName: volume.name, spec: result });
    }
  }
  return state;
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

function claimSpec(pod: Pod, claimName: string, readOnly: boolean, caches: Caches): VolumeSpec | string {
  const namespace = pod.metadata?.namespace ?? "";
  const claim = caches.claim(namespace, claimName);
  const where = `error processing PVC ${namespace}/${claimName}`;
  if (!claim) return `${where}: persistentvolumeclaim "${claimName}" not found`;
  if (claim.metadata?.deletionTimestamp) return `${where}: PVC is being deleted`;
  const pvName = claim.spec?.volumeName ?? "";
  if (pvName === "" || claim.status?.phase !== "Bound") return `${where}: PVC is not bound`;
  const pv = caches.volume(pvName);
  if (!pv) return `${where}: persistentvolume "${pvName}" not found`;
  const csi = pv.spec?.csi;
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
    block: pv.spec?.volumeMode === "Block",
    readOnly: readOnly || (csi.readOnly ?? false),
    fsType: csi.fsType ?? "",
    mountOptions: [...(pv.spec?.mountOptions ?? [])],
    accessModes: [...(pv.spec?.accessModes ?? [])],
    volumeAttributes: { ...csi.volumeAttributes },
    ...(csi.nodeStageSecretRef ? { nodeStageSecretRef: csi.nodeStageSecretRef } : {}),
    ...(csi.nodePublishSecretRef ? { nodePublishSecretRef: csi.nodePublishSecretRef } : {}),
    ...(csi.nodeExpandSecretRef ? { nodeExpandSecretRef: csi.nodeExpandSecretRef } : {}),
    claim: { namespace, name: claimName },
    pvName,
  };
}
