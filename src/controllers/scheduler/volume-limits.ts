// Per-node attachable volume limits, as upstream's NodeVolumeLimits (CSILimits) filter: each
// driver's limit is CSINode spec.drivers[].allocatable.count; the node's scheduled pods' unique
// CSI volumes of that driver plus the new pod's volumes not already on the node must not
// exceed it. Drivers without a limit are not counted. CSI migration (as upstream's CSILimits):
// in-tree PVs, inline in-tree volumes and unbound claims of in-tree classes of a plugin migrated
// on the node count against its CSI driver's limit, under their translated handles — the same
// volume counts once whichever form names it. VolumeLimitScaling (KEP-5030): with the gate on,
// a driver whose CSIDriver sets preventPodSchedulingIfMissing must be listed in the node's
// CSINode (a node without a CSINode has no driver) before the limits are even looked at, so a
// node that has not registered the driver yet is not crowded past a limit it has not reported.
// Pure functions.

import type { CSINode, Pod } from "../../api/index.ts";
import {
  isMigratedOnNode,
  pluginByInTreeName,
  pluginForInlineVolume,
  pluginForPV,
  resolveFeatureGates,
  translateInTreeInlineVolumeToCSI,
  translateInTreePVToCSI,
  type FeatureGates,
} from "../../migration/index.ts";
import { claimClass, podVolumeClaimName, type VolumeView } from "./volume-binding.ts";

const DEFAULT_GATES = resolveFeatureGates({});

/** Marks a CSI inline volume's id: upstream's CSILimits does not look at them, only csikit counts them. */
const INLINE_CSI = "^inline:";

/** Upstream's filter reason when an opted-in driver is missing on the node (VolumeLimitScaling). */
export function driverMissingReason(driver: string): string {
  return `${driver} CSI driver is not installed on the node`;
}

/** The translated CSI source, or undefined when the node does not migrate it or it is malformed. */
function migrated<T>(
  plugin: string | undefined,
  csiNode: CSINode | undefined,
  gates: FeatureGates,
  translate: () => T,
): T | undefined {
  if (plugin === undefined || !isMigratedOnNode(gates, plugin, csiNode)) return undefined;
  try {
    return translate();
  } catch {
    return undefined;
  }
}

/**
 * Unique volume id → driver name, for the CSI volumes a pod uses on a node with `csiNode`
 * (which decides whether its in-tree volumes are migrated there).
 */
export function podCSIVolumes(
  pod: Pod,
  view: VolumeView,
  csiNode?: CSINode,
  gates: FeatureGates = DEFAULT_GATES,
): Map<string, string> {
  const out = new Map<string, string>();
  const namespace = pod.metadata?.namespace ?? "";
  for (const volume of pod.spec?.volumes ?? []) {
    if (volume.csi) {
      // Inline ephemeral volumes are per pod.
      out.set(
        `${volume.csi.driver}${INLINE_CSI}${pod.metadata?.uid ?? ""}/${volume.name}`,
        volume.csi.driver,
      );
      continue;
    }
    const inline = migrated(pluginForInlineVolume(volume)?.inTreePluginName, csiNode, gates, () =>
      translateInTreeInlineVolumeToCSI(volume, namespace),
    )?.spec?.csi;
    if (inline) {
      out.set(`${inline.driver}^${inline.volumeHandle}`, inline.driver);
      continue;
    }
    const claimName = podVolumeClaimName(pod, volume);
    if (claimName === undefined) continue;
    const claim = view.claim(namespace, claimName);
    if (!claim) continue;
    const volumeName = claim.spec?.volumeName ?? "";
    if (volumeName !== "") {
      const pv = view.volume(volumeName);
      const csi =
        pv?.spec?.csi ??
        migrated(pv ? pluginForPV(pv)?.inTreePluginName : undefined, csiNode, gates, () =>
          translateInTreePVToCSI(pv!),
        )?.spec?.csi;
      if (csi) out.set(`${csi.driver}^${csi.volumeHandle}`, csi.driver);
      continue;
    }
    // Not bound yet: the class's provisioner (an in-tree one's CSI driver, if migrated) creates it.
    let provisioner = view.storageClass(claimClass(claim))?.provisioner;
    const plugin = provisioner === undefined ? undefined : pluginByInTreeName(provisioner);
    if (plugin && isMigratedOnNode(gates, plugin.inTreePluginName, csiNode))
      provisioner = plugin.csiDriverName;
    if (provisioner) out.set(`${provisioner}^claim:${namespace}/${claimName}`, provisioner);
  }
  return out;
}

/** Driver → allocatable count, from the node's CSINode. */
export function nodeVolumeLimits(csiNode: CSINode | undefined): Map<string, number> {
  const limits = new Map<string, number>();
  for (const driver of csiNode?.spec?.drivers ?? []) {
    const count = driver.allocatable?.count;
    if (typeof count === "number") limits.set(driver.name, count);
  }
  return limits;
}

/**
 * VolumeLimitScaling's check: the first driver of the pod's volumes (CSI inline volumes aside, as
 * upstream) that asks for preventPodSchedulingIfMissing and is missing from the node's CSINode,
 * or undefined.
 */
export function missingDriver(
  pod: Pod,
  csiNode: CSINode | undefined,
  view: VolumeView,
  gates: FeatureGates = DEFAULT_GATES,
): string | undefined {
  const installed = new Set((csiNode?.spec?.drivers ?? []).map((driver) => driver.name));
  for (const [id, driver] of podCSIVolumes(pod, view, csiNode, gates)) {
    if (id.includes(INLINE_CSI) || installed.has(driver)) continue;
    if (view.csiDriver(driver)?.spec?.preventPodSchedulingIfMissing === true) return driver;
  }
  return undefined;
}

/** Whether the pod's new volumes fit within the node's limits given the pods already there. */
export function fitsVolumeLimits(
  pod: Pod,
  podsOnNode: readonly Pod[],
  csiNode: CSINode | undefined,
  view: VolumeView,
  gates: FeatureGates = DEFAULT_GATES,
): boolean {
  const limits = nodeVolumeLimits(csiNode);
  if (limits.size === 0) return true;
  const fresh = podCSIVolumes(pod, view, csiNode, gates);
  if (fresh.size === 0) return true;
  const attached = new Map<string, string>();
  for (const other of podsOnNode)
    for (const [id, driver] of podCSIVolumes(other, view, csiNode, gates)) attached.set(id, driver);
  const attachedCount = new Map<string, number>();
  for (const [id, driver] of attached) {
    // A volume several pods share counts once.
    fresh.delete(id);
    attachedCount.set(driver, (attachedCount.get(driver) ?? 0) + 1);
  }
  const freshCount = new Map<string, number>();
  for (const driver of fresh.values()) freshCount.set(driver, (freshCount.get(driver) ?? 0) + 1);
  for (const [driver, count] of freshCount) {
    const limit = limits.get(driver);
    if (limit !== undefined && (attachedCount.get(driver) ?? 0) + count > limit) return false;
  }
  return true;
}
