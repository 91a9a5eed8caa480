// syncReplicaSet (upstream's ReplicaSetController.syncReplicaSet): claim the pods the selector
// matches (adopt orphans, release the unmatched), create or delete pods until the active ones
// number spec.replicas — but only when the last round's creates and deletes have been seen in
// the cache (expectations), so a stale cache never creates twice — then write the status
// kubectl reads. Creates go in slow-start batches (1, 2, 4, …) and stop at the first failing
// batch, as upstream, so a quota or admission refusal costs one request, not hundreds.

import { GVR, type Pod, type ReplicaSet, type WorkloadCondition } from "../../api/index.ts";
import { errorMessage, type Logger } from "../../base/index.ts";
import {
  objectKey,
  type EventRecorder,
  type KubeClient,
  type ProcessResult,
  type Store,
} from "../../kube/index.ts";
import {
  claimObjects,
  isPodActive,
  isPodAvailable,
  isPodReady,
  newControllerRef,
  podFromTemplate,
  selectorMatches,
  timestamp,
  type ControllerExpectations,
  createControlledPod,
  createInSlowStartBatches,
  writeOwnerStatus,
  deleteControlledPod,
} from "../workload/index.ts";
import { rankForDeletion } from "./rank.ts";

/** Upstream's BurstReplicas: at most this many creates or deletes per sync. */
export const BURST_REPLICAS = 500;

export const REPLICASET_KIND = { apiVersion: "apps/v1", kind: "ReplicaSet" } as const;

export const REPLICASET_EVENTS = Object.freeze({
  successfulCreate: "SuccessfulCreate",
  failedCreate: "FailedCreate",
  successfulDelete: "SuccessfulDelete",
  failedDelete: "FailedDelete",
});

export interface ReplicaSetSyncContext {
  client: KubeClient;
  recorder: EventRecorder;
  logger: Logger;
  signal: AbortSignal;
  pods: Store<Pod>;
  expectations: ControllerExpectations;
  now(): number;
}

type StatusOf = NonNullable<ReplicaSet["status"]>;

export async function syncReplicaSet(
  ctx: ReplicaSetSyncContext,
  rs: ReplicaSet,
): Promise<ProcessResult | void> {
  const key = objectKey(rs);
  const needsSync = ctx.expectations.satisfied(key) && rs.metadata?.deletionTimestamp === undefined;
  const namespace = rs.metadata?.namespace ?? "";
  const active = ctx.pods.listByNamespace(namespace).filter(isPodActive);
  const pods = await claimObjects<Pod>({
    client: ctx.client,
    gvr: GVR.pods,
    ownerGvr: GVR.replicaSets,
    owner: rs,
    controllerRef: newControllerRef(rs, REPLICASET_KIND),
    matches: (pod) => selectorMatches(rs.spec?.selector, pod.metadata?.labels),
    objects: active,
    signal: ctx.signal,
  });
  let manageError: Error | undefined;
  if (needsSync) {
    try {
      await manageReplicas(ctx, rs, pods);
    } catch (error) {
      manageError = error instanceof Error ? error : new Error(errorMessage(error));
    }
  }
  const status = calculateStatus(rs, pods, manageError, ctx.now());
  await writeStatus(ctx, rs, status);
  if (manageError !== undefined) throw manageError;
  const minReadySeconds = rs.spec?.minReadySeconds ?? 0;
  if (minReadySeconds > 0 && status.readyReplicas !== status.availableReplicas)
    return { requeueAfterMs: minReadySeconds * 1000 };
}

async function manageReplicas(
  ctx: ReplicaSetSyncContext,
  rs: ReplicaSet,
  pods: readonly Pod[],
): Promise<void> {
  const key = objectKey(rs);
  const diff = pods.length - (rs.spec?.replicas ?? 1);
  if (diff < 0) {
    const count = Math.min(-diff, BURST_REPLICAS);
    ctx.expectations.expect(key, count);
    ctx.logger.info(2, "too few replicas, creating", { need: rs.spec?.replicas, creating: count });
    await createInBatches(ctx, rs, count);
  } else if (diff > 0) {
    const count = Math.min(diff, BURST_REPLICAS);
    const victims = rankForDeletion(pods, pods).slice(0, count);
    ctx.expectations.expect(
      key,
      0,
      victims.map((pod) => pod.metadata?.uid ?? ""),
    );
    ctx.logger.info(2, "too many replicas, deleting", { need: rs.spec?.replicas, deleting: count });
    const results = await Promise.allSettled(victims.map((pod) => deleteControlledPod(ctx, rs, pod)));
    const failed = results.find((result) => result.status === "rejected");
    if (failed !== undefined) throw failed.reason;
  } else {
    // OBSERVATION: as many active pods as desired; nothing to create or delete.
  }
}

function createInBatches(ctx: ReplicaSetSyncContext, rs: ReplicaSet, count: number): Promise<void> {
  return createInSlowStartBatches(count, () => createPod(ctx, rs), {
    expectations: ctx.expectations,
    key: objectKey(rs),
  });
}

async function createPod(ctx: ReplicaSetSyncContext, rs: ReplicaSet): Promise<void> {
  await createControlledPod(
    ctx,
    rs,
    podFromTemplate(rs.spec?.template, rs, newControllerRef(rs, REPLICASET_KIND)),
  );
}

function labelsMatchTemplate(rs: ReplicaSet, pod: Pod): boolean {
  const labels = pod.metadata?.labels ?? {};
  return Object.entries(rs.spec?.template?.metadata?.labels ?? {}).every(([k, v]) => labels[k] === v);
}

/** calculateStatus: counts of the claimed active pods, and the ReplicaFailure condition. */
export function calculateStatus(
  rs: ReplicaSet,
  pods: readonly Pod[],
  manageError: unknown,
  now: number,
): StatusOf {
  const minReadySeconds = rs.spec?.minReadySeconds ?? 0;
  const conditions = (rs.status?.conditions ?? []).filter((c) => c.type !== "ReplicaFailure");
  const existing = rs.status?.conditions?.find((c) => c.type === "ReplicaFailure");
  if (manageError !== undefined) {
    const diff = pods.length - (rs.spec?.replicas ?? 1);
    const failure: WorkloadCondition = existing ?? {
      type: "ReplicaFailure",
      status: "True",
      lastTransitionTime: timestamp(now),
      reason: diff < 0 ? "FailedCreate" : "FailedDelete",
      message: errorMessage(manageError),
    };
    conditions.push(failure);
  }
  const status: StatusOf = {
    replicas: pods.length,
    fullyLabeledReplicas: pods.filter((pod) => labelsMatchTemplate(rs, pod)).length,
    readyReplicas: pods.filter(isPodReady).length,
    availableReplicas: pods.filter((pod) => isPodAvailable(pod, minReadySeconds, now)).length,
    observedGeneration: rs.metadata?.generation ?? 0,
  };
  if (conditions.length > 0) status.conditions = conditions;
  return status;
}

function writeStatus(ctx: ReplicaSetSyncContext, rs: ReplicaSet, status: StatusOf): Promise<void> {
  return writeOwnerStatus(ctx.client, GVR.replicaSets, rs, status, ctx.signal);
}
