// The two strategies and plain scaling (upstream's rolling.go, recreate.go, sync.go scale):
// - RollingUpdate: scale the new ReplicaSet up within replicas + maxSurge (counting spec
//   replicas of all ReplicaSets), then scale old ones down while at least replicas −
//   maxUnavailable stay available (counting the ReplicaSets' available pods), unhealthy old
//   pods first. Each sync takes one step and the ReplicaSet status changes bring the next.
// - Recreate: old ReplicaSets to 0, wait until none of their pods runs, then the new one up.
// - A scaling event (spec.replicas changed) resizes without rolling.

import type { Deployment, Pod, ReplicaSet } from "../../api/index.ts";
import type { ProcessResult } from "../../kube/index.ts";
import { controllerOf } from "../workload/index.ts";
import type { DeploymentSyncContext } from "./context.ts";
import { replicaSetsAndSyncRevision, scaleReplicaSet } from "./replicasets.ts";
import { cleanupOldReplicaSets, syncDeploymentStatus, syncRolloutStatus } from "./status.ts";
import {
  deploymentComplete,
  maxSurge,
  maxUnavailable,
  oldestFirst,
  replicasOf,
  sumSpecReplicas,
  sumStatus,
} from "./util.ts";
import { calculateStatus } from "./status.ts";

function active(list: readonly ReplicaSet[]): ReplicaSet[] {
  return list.filter((rs) => replicasOf(rs) > 0);
}

export async function rolloutRolling(
  ctx: DeploymentSyncContext,
  deployment: Deployment,
  rsList: readonly ReplicaSet[],
): Promise<ProcessResult | void> {
  const { newRS, oldRSs, deployment: d } = await replicaSetsAndSyncRevision(ctx, deployment, rsList, true);
  const all = [...oldRSs, ...(newRS ? [newRS] : [])];
  if (newRS !== undefined) {
    const target = newReplicaSetTarget(d, all, newRS);
    if (target !== replicasOf(newRS)) {
      const { rs } = await scaleReplicaSet(ctx, newRS, target, d);
      return syncRolloutStatus(ctx, [...oldRSs, rs], rs, d);
    }
  }
  const scaledDown = await reconcileOldReplicaSets(ctx, all, oldRSs, newRS, d);
  if (scaledDown) return syncRolloutStatus(ctx, all, newRS, d);
  if (deploymentComplete(d, calculateStatus(all, newRS, d, ctx.now())))
    await cleanupOldReplicaSets(ctx, oldRSs, d);
  return syncRolloutStatus(ctx, all, newRS, d);
}

/** NewRSNewReplicas: how far the new ReplicaSet may grow now. */
function newReplicaSetTarget(d: Deployment, all: readonly ReplicaSet[], newRS: ReplicaSet): number {
  const desired = replicasOf(d);
  const current = replicasOf(newRS);
  if (current >= desired) return desired;
  const maxTotal = desired + maxSurge(d);
  const total = sumSpecReplicas(all);
  if (total >= maxTotal) return current;
  return current + Math.min(maxTotal - total, desired - current);
}

/** reconcileOldReplicaSets: true when an old ReplicaSet was scaled down. */
async function reconcileOldReplicaSets(
  ctx: DeploymentSyncContext,
  all: ReplicaSet[],
  oldRSs: ReplicaSet[],
  newRS: ReplicaSet | undefined,
  d: Deployment,
): Promise<boolean> {
  if (sumSpecReplicas(oldRSs) === 0) return false;
  const minAvailable = replicasOf(d) - maxUnavailable(d);
  const newUnavailable = newRS ? replicasOf(newRS) - (newRS.status?.availableReplicas ?? 0) : 0;
  const maxScaledDown = sumSpecReplicas(all) - minAvailable - newUnavailable;
  if (maxScaledDown <= 0) return false;
  // cleanupUnhealthyReplicas: old pods that are not available go first, within maxScaledDown.
  let cleaned = 0;
  const olds = oldestFirst(oldRSs);
  for (let i = 0; i < olds.length && cleaned < maxScaledDown; i++) {
    const rs = olds[i]!;
    const unhealthy = replicasOf(rs) - (rs.status?.availableReplicas ?? 0);
    if (replicasOf(rs) === 0 || unhealthy <= 0) continue;
    const count = Math.min(maxScaledDown - cleaned, unhealthy);
    const { rs: scaled } = await scaleReplicaSet(ctx, rs, replicasOf(rs) - count, d);
    olds[i] = scaled;
    cleaned += count;
  }
  // scaleDownOldReplicaSetsForRollingUpdate: then healthy old pods, keeping minAvailable.
  const everything = [...olds, ...(newRS ? [newRS] : [])];
  const available = sumStatus(everything, "availableReplicas");
  let scaled = 0;
  if (available > minAvailable) {
    const total = available - minAvailable;
    for (let i = 0; i < olds.length && scaled < total; i++) {
      const rs = olds[i]!;
      if (replicasOf(rs) === 0) continue;
      const count = Math.min(replicasOf(rs), total - scaled);
      const { rs: done } = await scaleReplicaSet(ctx, rs, replicasOf(rs) - count, d);
      olds[i] = done;
      scaled += count;
    }
  }
  return cleaned + scaled > 0;
}

function oldPodsRunning(
  newRS: ReplicaSet | undefined,
  oldRSs: readonly ReplicaSet[],
  pods: readonly Pod[],
): boolean {
  if (oldRSs.some((rs) => (rs.status?.replicas ?? 0) > 0)) return true;
  const oldUids = new Set(oldRSs.map((rs) => rs.metadata?.uid));
  return pods.some((pod) => {
    const owner = controllerOf(pod)?.uid;
    if (owner === undefined || owner === newRS?.metadata?.uid || !oldUids.has(owner)) return false;
    return pod.status?.phase !== "Failed" && pod.status?.phase !== "Succeeded";
  });
}

export async function rolloutRecreate(
  ctx: DeploymentSyncContext,
  deployment: Deployment,
  rsList: readonly ReplicaSet[],
): Promise<ProcessResult | void> {
  let { newRS, oldRSs, deployment: d } = await replicaSetsAndSyncRevision(ctx, deployment, rsList, false);
  let scaledDown = false;
  for (const [i, rs] of oldRSs.entries()) {
    if (replicasOf(rs) === 0) continue;
    const { scaled, rs: done } = await scaleReplicaSet(ctx, rs, 0, d);
    oldRSs[i] = done;
    scaledDown ||= scaled;
  }
  if (scaledDown) return syncRolloutStatus(ctx, [...oldRSs, ...(newRS ? [newRS] : [])], newRS, d);
  const pods = ctx.pods.listByNamespace(d.metadata?.namespace ?? "");
  if (oldPodsRunning(newRS, oldRSs, pods))
    return syncRolloutStatus(ctx, [...oldRSs, ...(newRS ? [newRS] : [])], newRS, d);
  if (newRS === undefined)
    ({ newRS, oldRSs, deployment: d } = await replicaSetsAndSyncRevision(ctx, d, rsList, true));
  if (newRS !== undefined && replicasOf(newRS) !== replicasOf(d)) {
    ({ rs: newRS } = await scaleReplicaSet(ctx, newRS, replicasOf(d), d));
  }
  const all = [...oldRSs, ...(newRS ? [newRS] : [])];
  if (deploymentComplete(d, calculateStatus(all, newRS, d, ctx.now())))
    await cleanupOldReplicaSets(ctx, oldRSs, d);
  return syncRolloutStatus(ctx, all, newRS, d);
}

/** isScalingEvent: an active ReplicaSet was sized for a different spec.replicas. */
export function isScalingEvent(d: Deployment, rsList: readonly ReplicaSet[]): boolean {
  return active(rsList).some((rs) => {
    const desired = rs.metadata?.annotations?.["deployment.kubernetes.io/desired-replicas"];
    return desired !== undefined && Number(desired) !== replicasOf(d);
  });
}

/**
 * sync + scale: resize without rolling. One active ReplicaSet (or none) takes spec.replicas;
 * otherwise the difference to replicas + maxSurge is shared out in proportion to each active
 * ReplicaSet's size, the rest going to the largest (upstream's proportional scaling).
 */
export async function syncScale(
  ctx: DeploymentSyncContext,
  deployment: Deployment,
  rsList: readonly ReplicaSet[],
): Promise<void> {
  const { newRS, oldRSs, deployment: d } = await replicaSetsAndSyncRevision(ctx, deployment, rsList, false);
  const all = [...oldRSs, ...(newRS ? [newRS] : [])];
  const activeRSs = active(all);
  const only =
    activeRSs.length === 1
      ? activeRSs[0]
      : activeRSs.length === 0
        ? (newRS ?? oldestFirst(oldRSs).at(-1))
        : undefined;
  const written = new Map<ReplicaSet, ReplicaSet>();
  if (only !== undefined) {
    const { rs } = await scaleReplicaSet(ctx, only, replicasOf(d), d);
    written.set(only, rs);
  } else if (
    newRS !== undefined &&
    replicasOf(newRS) === replicasOf(d) &&
    (newRS.status?.availableReplicas ?? 0) === replicasOf(d)
  ) {
    // IsSaturated: the new ReplicaSet is complete, the old ones go.
    for (const rs of oldRSs)
      if (replicasOf(rs) > 0) written.set(rs, (await scaleReplicaSet(ctx, rs, 0, d)).rs);
  } else {
    const allowed = replicasOf(d) + maxSurge(d);
    const current = sumSpecReplicas(activeRSs);
    const toAdd = allowed - current;
    if (toAdd !== 0) {
      const sorted = [...activeRSs].sort((a, b) => replicasOf(b) - replicasOf(a));
      let left = toAdd;
      const targets = sorted.map((rs) => {
        const share = Math.trunc((replicasOf(rs) * toAdd) / current);
        const bounded = toAdd > 0 ? Math.min(share, left) : Math.max(share, left);
        left -= bounded;
        return [rs, replicasOf(rs) + bounded] as const;
      });
      const first = targets[0];
      if (first !== undefined && left !== 0) targets[0] = [first[0], first[1] + left];
      for (const [rs, size] of targets)
        written.set(rs, (await scaleReplicaSet(ctx, rs, Math.max(0, size), d)).rs);
    }
  }
  const after = all.map((rs) => written.get(rs) ?? rs);
  const newAfter = newRS ? (written.get(newRS) ?? newRS) : undefined;
  if (d.spec?.paused) await cleanupOldReplicaSets(ctx, oldRSs, d);
  await syncDeploymentStatus(ctx, after, newAfter, d);
}
