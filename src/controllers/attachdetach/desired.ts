// The desired state of one node: every CSI volume that a pod scheduled there and not yet
// terminated uses through a bound claim, keyed by its VolumeAttachment name, unless the driver's
// CSIDriver says attachRequired: false (no CSIDriver object: attach is required, as upstream).
// Inline CSI volumes are never attached. Pure over read-only caches.

import {
  keyOf,
  type CSIDriver,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
} from "../../api/index.ts";
import { uniqueVolumeName, volumeAttachmentName } from "./names.ts";

export interface DesiredLookups {
  podsOnNode(nodeName: string): readonly Pod[];
  claim(key: string): PersistentVolumeClaim | undefined;
  volume(name: string): PersistentVolume | undefined;
  csiDriver(name: string): CSIDriver | undefined;
}

export interface DesiredVolume {
  attachmentName: string;
  uniqueName: string;
  driver: string;
  volumeHandle: string;
  persistentVolumeName: string;
  /** Pods that need it (Events go to them). */
  pods: Pod[];
}

/** upstream util.IsPodTerminated: finished, or being deleted with no container running. */
export function podTerminated(pod: Pod): boolean {
  const phase = pod.status?.phase;
  if (phase === "Succeeded" || phase === "Failed") return true;
  if (!pod.metadata?.deletionTimestamp) return false;
  const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
  return statuses.every((status) => status.state?.running === undefined);
}

/** The claim a pod volume uses (a PVC source, or a generic ephemeral volume's claim). */
export function podVolumeClaim(
  pod: Pod,
  volume: NonNullable<NonNullable<Pod["spec"]>["volumes"]>[number],
): string | undefined {
  if (volume.persistentVolumeClaim) return volume.persistentVolumeClaim.claimName;
  if (volume.ephemeral) return `${pod.metadata?.name ?? ""}-${volume.name}`;
  return undefined;
}

export function attachRequired(driver: string, lookups: Pick<DesiredLookups, "csiDriver">): boolean {
  return lookups.csiDriver(driver)?.spec?.attachRequired !== false;
}

/** The bound PV of a claim as upstream's CreateVolumeSpec accepts it (phase Bound, matching UID). */
function boundVolume(
  claim: PersistentVolumeClaim | undefined,
  lookups: DesiredLookups,
): PersistentVolume | undefined {
  if (!claim || claim.status?.phase !== "Bound") return undefined;
  const volumeName = claim.spec?.volumeName ?? "";
  if (volumeName === "") return undefined;
  const volume = lookups.volume(volumeName);
  const refUID = volume?.spec?.claimRef?.uid;
  if (refUID && claim.metadata?.uid && refUID !== claim.metadata.uid) return undefined;
  return volume;
}

export function desiredVolumes(nodeName: string, lookups: DesiredLookups): Map<string, DesiredVolume> {
  const desired = new Map<string, DesiredVolume>();
  for (const pod of lookups.podsOnNode(nodeName)) {
    if (podTerminated(pod)) continue;
    for (const volume of pod.spec?.volumes ?? []) {
      const claimName = podVolumeClaim(pod, volume);
      if (claimName === undefined) continue;
      const persistentVolume = boundVolume(lookups.claim(keyOf(pod.metadata?.namespace, claimName)), lookups);
      const csi = persistentVolume?.spec?.csi;
      if (!persistentVolume || !csi) continue;
      if (!attachRequired(csi.driver, lookups)) continue;
      const attachmentName = volumeAttachmentName(csi.volumeHandle, csi.driver, nodeName);
      const entry = desired.get(attachmentName);
      if (entry) {
        entry.pods.push(pod);
        continue;
      }
      desired.set(attachmentName, {
        attachmentName,
        uniqueName: uniqueVolumeName(csi.driver, csi.volumeHandle),
        driver: csi.driver,
        volumeHandle: csi.volumeHandle,
        persistentVolumeName: persistentVolume.metadata?.name ?? "",
        pods: [pod],
      });
    }
  }
  return desired;
}
