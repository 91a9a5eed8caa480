// syncDeployment (upstream's DeploymentController.syncDeployment): claim the ReplicaSets the
// selector matches, then, in upstream's order: a Deployment being deleted only gets its
// status; a paused one (or a change of spec.replicas alone) is resized without rolling; else
// the strategy rolls (rollout.ts). The paused/resumed Progressing condition is kept as
// upstream's checkPausedConditions does.

import { GVR, type Deployment, type ReplicaSet } from "../../api/index.ts";
import type { ProcessResult, Store } from "../../kube/index.ts";
import { claimObjects, newControllerRef, selectorMatches } from "../workload/index.ts";
import type { DeploymentSyncContext } from "./context.ts";
import { replicaSetsAndSyncRevision } from "./replicasets.ts";
import { isScalingEvent, rolloutRecreate, rolloutRolling, syncScale } from "./rollout.ts";
import { syncDeploymentStatus } from "./status.ts";
import {
  DEPLOYMENT_KIND,
  DEPLOYMENT_REASONS,
  getCondition,
  hasProgressDeadline,
  newCondition,
  setCondition,
} from "./util.ts";

export async function syncDeployment(
  ctx: DeploymentSyncContext,
  deployment: Deployment,
  replicaSets: Store<ReplicaSet>,
): Promise<ProcessResult | void> {
  const d = await checkPausedConditions(ctx, deployment);
  const rsList = await claimObjects<ReplicaSet>({
    client: ctx.client,
    gvr: GVR.replicaSets,
    ownerGvr: GVR.deployments,
    owner: d,
    controllerRef: newControllerRef(d, DEPLOYMENT_KIND),
    matches: (rs) => selectorMatches(d.spec?.selector, rs.metadata?.labels),
    objects: replicaSets.listByNamespace(d.metadata?.namespace ?? ""),
    signal: ctx.signal,
  });
  if (d.metadata?.deletionTimestamp !== undefined) {
    const { newRS, oldRSs } = await replicaSetsAndSyncRevision(ctx, d, rsList, false);
    await syncDeploymentStatus(ctx, [...oldRSs, ...(newRS ? [newRS] : [])], newRS, d);
    return;
  }
  if (d.spec?.paused === true || isScalingEvent(d, rsList)) {
    await syncScale(ctx, d, rsList);
    return;
  }
  if (d.spec?.strategy?.type === "Recreate") return rolloutRecreate(ctx, d, rsList);
  return rolloutRolling(ctx, d, rsList);
}

/** checkPausedConditions: Progressing Unknown DeploymentPaused / DeploymentResumed. */
async function checkPausedConditions(ctx: DeploymentSyncContext, d: Deployment): Promise<Deployment> {
  if (!hasProgressDeadline(d)) return d;
  const condition = getCondition(d.status, "Progressing");
  if (condition?.reason === DEPLOYMENT_REASONS.timedOut) return d;
  const pausedCondition = condition?.reason === DEPLOYMENT_REASONS.pausedDeploy;
  const status = structuredClone(d.status ?? {});
  if (d.spec?.paused === true && !pausedCondition) {
    setCondition(
      status,
      newCondition(
        "Progressing",
        "Unknown",
        DEPLOYMENT_REASONS.pausedDeploy,
        "Deployment is paused",
        ctx.now(),
      ),
    );
  } else if (d.spec?.paused !== true && pausedCondition) {
    setCondition(
      status,
      newCondition(
        "Progressing",
        "Unknown",
        DEPLOYMENT_REASONS.resumedDeploy,
        "Deployment is resumed",
        ctx.now(),
      ),
    );
  } else {
    return d;
  }
  return ctx.client.updateStatus<Deployment>(GVR.deployments, { ...d, status }, ctx.signal);
}
