// One node against one pod: upstream's default Filter plugins that matter for a volume-only
// cluster, in upstream's order, stopping at the first that rejects (NodeUnschedulable,
// TaintToleration, NodeAffinity, NodeVolumeLimits — with VolumeLimitScaling's driver check
// first when its gate is on —, VolumeBinding). Pure.

import type { CSINode, Node, Pod } from "../../api/index.ts";
import type { FeatureGates } from "../../migration/index.ts";
import { NODE_REASONS, untoleratedTaintReason } from "./fit-error.ts";
import { firstUntoleratedTaint, podFitsNodeAffinity, toleratesTaint } from "./node-selector.ts";
import {
  VOLUME_REASONS,
  filterVolumes,
  type PodClaims,
  type VolumeDecision,
  type VolumeView,
} from "./volume-binding.ts";
import { driverMissingReason, fitsVolumeLimits, missingDriver } from "./volume-limits.ts";

const UNSCHEDULABLE_TAINT = { key: "node.kubernetes.io/unschedulable", effect: "NoSchedule" } as const;

export interface NodeContext {
  node: Node;
  csiNode: CSINode | undefined;
  /** Pods already on the node (scheduled or assumed), not finished. */
  pods: readonly Pod[];
}

export type NodeFit = { fits: true; volumes: VolumeDecision } | { fits: false; reasons: string[] };

export function filterNode(
  pod: Pod,
  claims: PodClaims,
  context: NodeContext,
  view: VolumeView,
  gates: FeatureGates,
): NodeFit {
  const { node } = context;
  const tolerations = pod.spec?.tolerations ?? [];
  if (node.spec?.unschedulable && !tolerations.some((t) => toleratesTaint(t, UNSCHEDULABLE_TAINT))) {
    return { fits: false, reasons: [NODE_REASONS.unschedulable] };
  }
  const taint = firstUntoleratedTaint(node.spec?.taints ?? [], tolerations);
  if (taint) return { fits: false, reasons: [untoleratedTaintReason(taint.key, taint.value)] };
  if (!podFitsNodeAffinity(pod, node)) return { fits: false, reasons: [NODE_REASONS.nodeAffinity] };
  if (gates.VolumeLimitScaling === true) {
    const driver = missingDriver(pod, context.csiNode, view, gates);
    if (driver !== undefined) return { fits: false, reasons: [driverMissingReason(driver)] };
  }
  if (!fitsVolumeLimits(pod, context.pods, context.csiNode, view, gates)) {
    return { fits: false, reasons: [VOLUME_REASONS.maxVolumeCount] };
  }
  const volumes = filterVolumes(claims, node, view);
  if (volumes.reasons.length > 0) return { fits: false, reasons: volumes.reasons };
  return { fits: true, volumes };
}
