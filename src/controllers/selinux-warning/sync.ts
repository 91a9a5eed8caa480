// What one pod's volumes mean to the selinux-warning-controller (decisions only; the caches are
// read, never written): for each volume a container uses, the volume's unique name, its CSI
// driver, the label it would be mounted with (`-o context`) and the pod's effective
// seLinuxChangePolicy — as kubelet would decide them:
//
// - only CSI persistent volumes are tracked (through a claim or a generic ephemeral claim; the
//   unique name is kubelet's "kubernetes.io/csi/<driver>^<volumeHandle>"); inline CSI volumes
//   are the pod's own, and other volume types have no -o context support here;
// - the volume supports -o context when its CSIDriver says spec.seLinuxMount: true (with the
//   SELinuxMountReadWriteOncePod gate on). Access modes are not looked at: the controller warns
//   of what SELinuxMount (GA in 1.37) does to every volume, before it does;
// - the mount label is the containers' one label, emptied when the pod opted into Recursive
//   (SELinuxChangePolicy gate) or the volume cannot be mounted with a context; a volume
//   without a mount label counts as Recursive. Containers giving one volume different labels
//   are reported instead (MultipleSELinuxLabels).
// A claim not yet bound, or a volume not yet in the cache, is left out: its bind or add
// re-queues the pod.

import type { CSIDriver, PersistentVolume, PersistentVolumeClaim, Pod } from "../../api/index.ts";
import type { Store } from "../../kube/index.ts";
import type { FeatureGates } from "../../migration/index.ts";
import { gateEnabled } from "../common/index.ts";
import { podChangePolicy, podVolumeLabels } from "./labels.ts";

export interface PodVolumeUse {
  /** The pod's volume name. */
  volumeName: string;
  uniqueName: string;
  csiDriver: string;
  /** The -o context label, "" when the volume is relabelled recursively instead. */
  label: string;
  changePolicy: string;
}

export interface PodVolumes {
  uses: PodVolumeUse[];
  /** Volumes the pod's containers give different labels. */
  multipleLabels: string[];
}

export interface VolumeCaches {
  claims: Store<PersistentVolumeClaim>;
  volumes: Store<PersistentVolume>;
  csiDrivers: Store<CSIDriver>;
}

/** The CSI persistent volume behind a pod volume, or undefined (not CSI, not bound yet). */
function csiVolumeOf(
  pod: Pod,
  volume: NonNullable<NonNullable<Pod["spec"]>["volumes"]>[number],
  caches: VolumeCaches,
): { driver: string; handle: string } | undefined {
  const claimName =
    volume.persistentVolumeClaim?.claimName ??
    (volume.ephemeral !== undefined ? `${pod.metadata?.name ?? ""}-${volume.name}` : undefined);
  if (claimName === undefined) return undefined;
  const claim = caches.claims.get(`${pod.metadata?.namespace ?? ""}/${claimName}`);
  const volumeName = claim?.spec?.volumeName;
  if (!volumeName) return undefined;
  const csi = caches.volumes.get(volumeName)?.spec?.csi;
  if (!csi?.driver || !csi.volumeHandle) return undefined;
  return { driver: csi.driver, handle: csi.volumeHandle };
}

export function podVolumeUses(pod: Pod, caches: VolumeCaches, gates: FeatureGates | undefined): PodVolumes {
  const labelsByVolume = podVolumeLabels(pod);
  const policy = podChangePolicy(pod);
  const result: PodVolumes = { uses: [], multipleLabels: [] };
  for (const volume of pod.spec?.volumes ?? []) {
    const labels = labelsByVolume.get(volume.name);
    if (labels === undefined) continue; // OBSERVATION: no container uses it: never mounted.
    const csi = csiVolumeOf(pod, volume, caches);
    if (csi === undefined) continue;
    if (labels.size > 1) {
      result.multipleLabels.push(volume.name);
      continue;
    }
    const supportsContextMount =
      gateEnabled(gates, "SELinuxMountReadWriteOncePod") &&
      caches.csiDrivers.get(csi.driver)?.spec?.seLinuxMount === true;
    const podLabel = [...labels][0] ?? "";
    const optedOut = gateEnabled(gates, "SELinuxChangePolicy") && policy === "Recursive";
    const label = supportsContextMount && !optedOut ? podLabel : "";
    const changePolicy = !supportsContextMount || label === "" ? "Recursive" : policy;
    result.uses.push({
      volumeName: volume.name,
      uniqueName: `kubernetes.io/csi/${csi.driver}^${csi.handle}`,
      csiDriver: csi.driver,
      label,
      changePolicy,
    });
  }
  return result;
}
