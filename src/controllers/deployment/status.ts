// The Deployment's status (upstream's calculateStatus and syncRolloutStatus): replica counts
// summed over its ReplicaSets, Available (MinimumReplicasAvailable / MinimumReplicasUnavailable)
// and Progressing (NewReplicaSetAvailable once complete, ReplicaSetUpdated while moving,
// ProgressDeadlineExceeded when stuck past progressDeadlineSeconds). Also the old-ReplicaSet
// cleanup beyond revisionHistoryLimit.

import { GVR, type Deployment, type ReplicaSet } from "../../api/index.ts";
import { jsonEqual } from "../../base/index.ts";
import { isNotFound, type ProcessResult } from "../../kube/index.ts";
import type { DeploymentSyncContext } from "./context.ts";
import {
  DEPLOYMENT_REASONS,
  deploymentComplete,
  deploymentProgressing,
  deploymentTimedOut,
  getCondition,
  hasProgressDeadline,
  maxUnavailable,
  newCondition,
  removeCondition,
  replicasOf,
  revisionOf,
  setCondition,
  sumSpecReplicas,
  sumStatus,
  type DeploymentStatus,
} from "./util.ts";

export function calculateStatus(
  all: readonly ReplicaSet[],
  newRS: ReplicaSet | undefined,
  d: Deployment,
  now: number,
): DeploymentStatus {
  const available = sumStatus(all, "availableReplicas");
  const total = sumSpecReplicas(all);
  const status: DeploymentStatus = {
    observedGeneration: d.metadata?.generation ?? 0,
    replicas: sumStatus(all, "replicas"),
    updatedReplicas: sumStatus([newRS], "replicas"),
    readyReplicas: sumStatus(all, "readyReplicas"),
    availableReplicas: available,
    unavailableReplicas: Math.max(0, total - available),
  };
  if (d.status?.collisionCount !== undefined) status.collisionCount = d.status.collisionCount;
  if (d.status?.conditions !== undefined) status.conditions = structuredClone(d.status.conditions);
  if (available >= replicasOf(d) - maxUnavailable(d))
    setCondition(
      status,
      newCondition(
        "Available",
        "True",
        DEPLOYMENT_REASONS.minimumReplicasAvailable,
        "Deployment has minimum availability.",
        now,
      ),
    );
  else
    setCondition(
      status,
      newCondition(
        "Available",
        "False",
        DEPLOYMENT_REASONS.minimumReplicasUnavailable,
        "Deployment does not have minimum availability.",
        now,
      ),
    );
  return status;
}

async function writeStatus(
  ctx: DeploymentSyncContext,
  d: Deployment,
  status: DeploymentStatus,
): Promise<void> {
  if (jsonEqual(d.status ?? {}, status)) return;
  try {
    await ctx.client.updateStatus<Deployment>(GVR.deployments, { ...d, status }, ctx.signal);
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}

/** syncDeploymentStatus: counts and Available only (scaling, paused). */
export async function syncDeploymentStatus(
  ctx: DeploymentSyncContext,
  all: readonly ReplicaSet[],
  newRS: ReplicaSet | undefined,
  d: Deployment,
): Promise<void> {
  await writeStatus(ctx, d, calculateStatus(all, newRS, d, ctx.now()));
}

/** syncRolloutStatus: counts, Available and Progressing; requeues a rollout to check its deadline. */
export async function syncRolloutStatus(
  ctx: DeploymentSyncContext,
  all: readonly ReplicaSet[],
  newRS: ReplicaSet | undefined,
  d: Deployment,
): Promise<ProcessResult | void> {
  const now = ctx.now();
  const status = calculateStatus(all, newRS, d, now);
  if (!hasProgressDeadline(d)) removeCondition(status, "Progressing");
  const current = getCondition(d.status, "Progressing");
  const complete =
    status.replicas === status.updatedReplicas && current?.reason === DEPLOYMENT_REASONS.newRSAvailable;
  const rsName = newRS?.metadata?.name ?? "";
  const name = d.metadata?.name ?? "";
  if (hasProgressDeadline(d) && !complete) {
    if (deploymentComplete(d, status)) {
      const message = newRS
        ? `ReplicaSet "${rsName}" has successfully progressed.`
        : `Deployment "${name}" has successfully progressed.`;
      setCondition(
        status,
        newCondition("Progressing", "True", DEPLOYMENT_REASONS.newRSAvailable, message, now),
      );
    } else if (deploymentProgressing(d, status)) {
      const message = newRS
        ? `ReplicaSet "${rsName}" is progressing.`
        : `Deployment "${name}" is progressing.`;
      const condition = newCondition(
        "Progressing",
        "True",
        DEPLOYMENT_REASONS.replicaSetUpdated,
        message,
        now,
      );
      if (current?.status === "True" && current.lastTransitionTime)
        condition.lastTransitionTime = current.lastTransitionTime;
      removeCondition(status, "Progressing");
      setCondition(status, condition);
    } else if (deploymentTimedOut(d, status, now)) {
      const message = newRS
        ? `ReplicaSet "${rsName}" has timed out progressing.`
        : `Deployment "${name}" has timed out progressing.`;
      setCondition(status, newCondition("Progressing", "False", DEPLOYMENT_REASONS.timedOut, message, now));
    } else {
      // OBSERVATION: neither done, moving nor past the deadline: the condition stays.
    }
  }
  await writeStatus(ctx, d, status);
  return requeueStuck(d, status, now);
}

/** requeueStuckDeployment: look again when the progress deadline would pass. */
function requeueStuck(d: Deployment, status: DeploymentStatus, now: number): ProcessResult | void {
  const condition = getCondition(status, "Progressing");
  if (!hasProgressDeadline(d) || condition === undefined) return;
  if (
    condition.reason === DEPLOYMENT_REASONS.newRSAvailable ||
    condition.reason === DEPLOYMENT_REASONS.timedOut
  )
    return;
  if (deploymentComplete(d, status)) return;
  const from = Date.parse(condition.lastUpdateTime ?? "");
  if (Number.isNaN(from)) return;
  const after = from + (d.spec?.progressDeadlineSeconds ?? 600) * 1000 - now;
  return { requeueAfterMs: Math.max(1000, after + 1000) };
}

/** cleanupDeployment: deletes the oldest idle old ReplicaSets beyond revisionHistoryLimit. */
export async function cleanupOldReplicaSets(
  ctx: DeploymentSyncContext,
  oldRSs: readonly ReplicaSet[],
  d: Deployment,
): Promise<void> {
  const limit = d.spec?.revisionHistoryLimit;
  if (limit === undefined) return;
  const alive = oldRSs.filter((rs) => rs.metadata?.deletionTimestamp === undefined);
  const diff = alive.length - limit;
  if (diff <= 0) return;
  const byRevision = [...alive].sort((a, b) => revisionOf(a) - revisionOf(b));
  for (const rs of byRevision.slice(0, diff)) {
    const idle =
      (rs.status?.replicas ?? 0) === 0 &&
      replicasOf(rs) === 0 &&
      (rs.metadata?.generation ?? 0) <= (rs.status?.observedGeneration ?? 0);
    if (!idle) continue;
    ctx.logger.info(4, "trying to cleanup replica set for deployment", { replicaSet: rs.metadata?.name });
    try {
      await ctx.client.delete(
        GVR.replicaSets,
        rs.metadata?.name ?? "",
        { namespace: rs.metadata?.namespace ?? "" },
        ctx.signal,
      );
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
}
