// The desired state of one node: every CSI volume that a pod scheduled there and not yet
// terminated uses through a bound claim, keyed by its VolumeAttachment name, unless the driver's
// CSIDriver says attachRequired: false (no CSIDriver object: attach is required, as upstream).
// Inline CSI volumes are never attached. CSI migration: in-tree PVs and inline in-tree volumes
// of a plugin migrated on the node (see migration.ts) are translated first and attached like CSI
// volumes — inline ones through `spec.source.inlineVolumeSpec`; those left to the in-tree plugin
// are not ours; those the node and this controller disagree on are problems reported to the pod.
// Pure over read-only caches.

import {
  ephemeralClaimName,
  ephemeralClaimRefusal,
  keyOf,
  type CSIDriver,
  type CSINode,
  type CSIPersistentVolumeSource,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type PersistentVolumeSpec,
  type Pod,
} from "../../api/index.ts";
import { resolveFeatureGates, type FeatureGates } from "../../migration/index.ts";
import {
  csiFormOfPV,
  inTreePluginOfInlineVolume,
  inTreePluginOfPV,
  migrationDecision,
  translatedInlineVolume,
} from "./migration.ts";
import { uniqueVolumeName, volumeAttachmentName } from "./names.ts";

const DEFAULT_GATES = resolveFeatureGates({});

export interface DesiredLookups {
  podsOnNode(nodeName: string): readonly Pod[];
  claim(key: string): PersistentVolumeClaim | undefined;
  volume(name: string): PersistentVolume | undefined;
  csiDriver(name: string): CSIDriver | undefined;
  /** The node's CSINode (its kubelet's migrated plugins); absent = no CSINode. */
  csiNode?(name: string): CSINode | undefined;
  /** This controller's --feature-gates; default Kubernetes 1.32's. */
  featureGates?: FeatureGates;
}

/** A pod volume the controller cannot handle, with the reason (reported as a pod Event). */
export interface DesiredProblem {
  pod: Pod;
  volumeName: string;
  message: string;
}

export interface DesiredVolume {
  attachmentName: string;
  uniqueName: string;
  driver: string;
  volumeHandle: string;
  /** The PV to attach; "" for a migrated inline volume. */
  persistentVolumeName: string;
  /** A migrated inline volume's translated spec (the VolumeAttachment's inlineVolumeSpec). */
  inlineVolumeSpec?: PersistentVolumeSpec;
  /** The volume's name in messages: the PV name, or the translated inline volume's name. */
  specName: string;
  /** Translated from an in-tree source (CSI migration). */
  migrated: boolean;
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
  if (volume.ephemeral) return ephemeralClaimName(pod, volume);
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

/** One pod volume in CSI form, or why it has none. */
type Resolved =
  | {
      csi: CSIPersistentVolumeSource;
      persistentVolumeName: string;
      inlineVolumeSpec?: PersistentVolumeSpec;
      specName: string;
      migrated: boolean;
    }
  | { problem: string }
  | undefined;

function resolve(
  nodeName: string,
  pod: Pod,
  volume: NonNullable<NonNullable<Pod["spec"]>["volumes"]>[number],
  lookups: DesiredLookups,
): Resolved {
  const gates = lookups.featureGates ?? DEFAULT_GATES;
  const claimName = podVolumeClaim(pod, volume);
  if (claimName === undefined) {
    // An inline in-tree volume of a plugin migrated on this node is attached translated.
    const plugin = inTreePluginOfInlineVolume(volume);
    if (plugin === undefined) return undefined;
    const decision = migrationDecision(gates, plugin, lookups.csiNode?.(nodeName), nodeName);
    if (decision.path === "error") return { problem: decision.message };
    if (decision.path === "in-tree") return undefined;
    let translated;
    try {
      translated = translatedInlineVolume(volume, pod.metadata?.namespace ?? "");
    } catch (error) {
      return { problem: error instanceof Error ? error.message : String(error) };
    }
    const { spec, name } = translated;
    if (!spec.csi) return undefined;
    return {
      csi: spec.csi,
      persistentVolumeName: "",
      inlineVolumeSpec: spec,
      specName: name,
      migrated: true,
    };
  }
  const claim = lookups.claim(keyOf(pod.metadata?.namespace, claimName));
  // A generic ephemeral volume attaches only the pod's own claim (upstream's VolumeIsForPod).
  if (claim && volume.ephemeral) {
    const refusal = ephemeralClaimRefusal(pod, claim);
    if (refusal !== undefined) return { problem: refusal };
  }
  const persistentVolume = boundVolume(claim, lookups);
  if (!persistentVolume) return undefined;
  const name = persistentVolume.metadata?.name ?? "";
  if (persistentVolume.spec?.csi)
    return { csi: persistentVolume.spec.csi, persistentVolumeName: name, specName: name, migrated: false };
  const plugin = inTreePluginOfPV(persistentVolume);
  if (plugin === undefined) return undefined;
  const decision = migrationDecision(gates, plugin, lookups.csiNode?.(nodeName), nodeName);
  if (decision.path === "error") return { problem: decision.message };
  if (decision.path === "in-tree") return undefined;
  const csi = csiFormOfPV(persistentVolume)?.spec?.csi;
  if (!csi) return { problem: `PersistentVolume ${JSON.stringify(name)} could not be translated to CSI` };
  return { csi, persistentVolumeName: name, specName: name, migrated: true };
}

export function desiredVolumes(
  nodeName: string,
  lookups: DesiredLookups,
  problems?: DesiredProblem[],
): Map<string, DesiredVolume> {
  const desired = new Map<string, DesiredVolume>();
  for (const pod of lookups.podsOnNode(nodeName)) {
    if (podTerminated(pod)) continue;
    for (const volume of pod.spec?.volumes ?? []) {
      const resolved = resolve(nodeName, pod, volume, lookups);
      if (resolved === undefined) continue;
      if ("problem" in resolved) {
        problems?.push({ pod, volumeName: volume.name, message: resolved.problem });
        continue;
      }
      const { csi } = resolved;
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
        persistentVolumeName: resolved.persistentVolumeName,
        ...(resolved.inlineVolumeSpec ? { inlineVolumeSpec: resolved.inlineVolumeSpec } : {}),
        specName: resolved.specName,
        migrated: resolved.migrated,
        pods: [pod],
      });
    }
  }
  return desired;
}
