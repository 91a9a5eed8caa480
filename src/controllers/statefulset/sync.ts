// One StatefulSet's reconcile (upstream's defaultStatefulSetControl.UpdateStatefulSet): decide
// from the set, its pods and its revisions, then write — revisions first, then pods and their
// claims, then status, then history truncation.
//
// - Every ordinal in [start, start+replicas) gets a pod; pods outside are condemned.
// - OrderedReady ("monotonic"): one ordinal at a time, ascending, each waiting for the one
//   before to be Running and Ready (and available after minReadySeconds); scale-down deletes
//   the highest condemned ordinal only once every other pod is healthy. Parallel ("burst"):
//   every create and delete at once, in batches of 1, 2, 4, … (slowStartBatch) so a failing
//   call stops a large burst early.
// - A failed or succeeded pod is deleted (and recreated on a later sync).
// - Rolling update: with every replica healthy, the highest-ordinal pod >= partition whose
//   controller-revision-hash is not the update revision is deleted; it comes back at the update
//   revision. Ordinals below the partition are created at the current revision.
// - The retention policy is written as owner references (./retention.ts); condemned pods'
//   claims get theirs before the pod is deleted, so the garbage collector follows.

import {
  GVR,
  type ControllerRevision,
  type Pod,
  type StatefulSet,
  type StatefulSetStatus,
} from "../../api/index.ts";
import { errorMessage } from "../../base/index.ts";
import { isConflict, isNotFound, type ProcessResult } from "../../kube/index.ts";
import {
  identityMatches,
  inOrdinalRange,
  newStatefulSetPod,
  ordinalOf,
  podRevision,
  replicasOf,
  startOrdinal,
  storageMatches,
} from "./identity.ts";
import { statefulSetRevisions, truncateHistory } from "./history.ts";
import {
  claimsMatchRetentionPolicy,
  createMissingClaims,
  createStatefulPod,
  deleteStatefulPod,
  podClaimIsStale,
  updateClaimsForRetentionPolicy,
  updateStatefulPod,
  type PodControlContext,
} from "./pod-control.ts";
import {
  isAvailable,
  isCreated,
  isFinished,
  isPending,
  isRunningAndReady,
  isTerminating,
  isUnavailable,
} from "./pod-state.ts";
import { applyRevision, sortRevisions } from "./revisions.ts";

export interface StatefulSetSyncContext extends PodControlContext {
  now(): number;
  /** Stored from the status write, so the next sync does not repeat it on a stale cache. */
  rememberSet(set: StatefulSet): void;
  /** A pod just created, listed with the set's pods until the informer delivers it. */
  rememberPod(pod: Pod): void;
}

/** Upstream's realistic bound on one burst of parallel writes. */
const MAX_BATCH_SIZE = 500;

/** Runs fn over 0..count-1 in growing batches; stops after the first batch with a failure. */
async function slowStartBatch(count: number, fn: (index: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  for (let size = Math.min(count, 1); size > 0;) {
    const batch = Array.from({ length: size }, (_, i) => next + i);
    next += size;
    const results = await Promise.allSettled(batch.map((index) => fn(index)));
    const failures = results.flatMap((result) =>
      result.status === "rejected" ? [errorMessage(result.reason)] : [],
    );
    if (failures.length > 0) throw new Error(failures.join("; "));
    size = Math.min(2 * size, count - next, MAX_BATCH_SIZE);
  }
}

/**
 * Runs fn over every item: monotonic, in order until one says stop (true) or fails; otherwise
 * all of them in batches. Resolves true when the caller must stop this sync here.
 */
async function runForAll(
  count: number,
  fn: (index: number) => Promise<boolean>,
  monotonic: boolean,
): Promise<boolean> {
  if (monotonic) {
    for (let i = 0; i < count; i++) if (await fn(i)) return true;
    return false;
  }
  await slowStartBatch(count, fn);
  return false;
}

function countStatus(
  status: StatefulSetStatus,
  pods: readonly Pod[],
  set: StatefulSet,
  revisions: { current: ControllerRevision; update: ControllerRevision },
  now: number,
): void {
  const minReadySeconds = set.spec?.minReadySeconds ?? 0;
  Object.assign(status, {
    replicas: 0,
    readyReplicas: 0,
    availableReplicas: 0,
    currentReplicas: 0,
    updatedReplicas: 0,
  });
  for (const pod of pods) {
    if (isCreated(pod)) status.replicas! += 1;
    if (isRunningAndReady(pod)) {
      status.readyReplicas! += 1;
      if (isAvailable(pod, minReadySeconds, now)) status.availableReplicas! += 1;
    }
    if (isCreated(pod) && !isTerminating(pod)) {
      const revision = podRevision(pod);
      if (revision === revisions.current.metadata.name) status.currentReplicas! += 1;
      if (revision === revisions.update.metadata.name) status.updatedReplicas! += 1;
    }
  }
}

interface Outcome {
  status: StatefulSetStatus;
  error?: Error;
}

async function updateStatefulSet(
  ctx: StatefulSetSyncContext,
  set: StatefulSet,
  revisions: { current: ControllerRevision; update: ControllerRevision; collisionCount: number },
  pods: readonly Pod[],
): Promise<Outcome> {
  const now = ctx.now();
  const currentSet = applyRevision(set, revisions.current);
  const updateSet = applyRevision(set, revisions.update);
  const minReadySeconds = set.spec?.minReadySeconds ?? 0;
  const status: StatefulSetStatus = {
    observedGeneration: set.metadata.generation ?? 0,
    currentRevision: revisions.current.metadata.name ?? "",
    updateRevision: revisions.update.metadata.name ?? "",
    collisionCount: revisions.collisionCount,
  };
  countStatus(status, pods, set, revisions, now);

  const start = startOrdinal(set);
  const replicaCount = replicasOf(set);
  const replicas: Pod[] = new Array<Pod>(replicaCount);
  const condemned: Pod[] = [];
  for (const pod of pods) {
    if (inOrdinalRange(pod, set)) replicas[ordinalOf(pod) - start] = pod;
    else if (ordinalOf(pod) >= 0) condemned.push(pod);
  }
  const partition = set.spec?.updateStrategy?.rollingUpdate?.partition ?? 0;
  for (let ordinal = start; ordinal < start + replicaCount; ordinal++) {
    if (replicas[ordinal - start] !== undefined) continue;
    // Below the partition a new pod is made at the current revision, from the partition up at the update one.
    const atCurrent = set.spec?.updateStrategy?.type !== "OnDelete" && ordinal < start + partition;
    replicas[ordinal - start] = atCurrent
      ? newStatefulSetPod(currentSet, ordinal, revisions.current.metadata.name ?? "")
      : newStatefulSetPod(updateSet, ordinal, revisions.update.metadata.name ?? "");
  }
  condemned.sort((a, b) => ordinalOf(b) - ordinalOf(a));
  const firstUnavailable =
    replicas.find((pod) => isUnavailable(pod, minReadySeconds, now)) ??
    [...condemned].reverse().find((pod) => isUnavailable(pod, minReadySeconds, now));

  if (set.metadata.deletionTimestamp) return { status };
  const monotonic = set.spec?.podManagementPolicy !== "Parallel";
  const recount = (): void => countStatus(status, [...replicas, ...condemned], set, revisions, now);

  const processReplica = async (i: number): Promise<boolean> => {
    let pod = replicas[i]!;
    if (isFinished(pod)) {
      // Recreated on a later sync, once this one is gone.
      if (!isTerminating(pod)) await deleteStatefulPod(ctx, set, pod);
      return true;
    }
    if (!isCreated(pod)) {
      if (podClaimIsStale(ctx, set, pod)) return true; // the garbage collector deletes it first
      pod = await createStatefulPod(ctx, set, pod);
      ctx.rememberPod(pod);
      replicas[i] = pod;
      await updateClaimsForRetentionPolicy(ctx, updateSet, pod);
      if (monotonic) return true;
    }
    if (isPending(pod)) await createMissingClaims(ctx, set, pod);
    if (monotonic && isTerminating(pod)) return true;
    if (monotonic && !isRunningAndReady(pod)) return true;
    if (monotonic && !isAvailable(pod, minReadySeconds, now)) return true;
    const retentionMatches = claimsMatchRetentionPolicy(ctx, updateSet, pod);
    if (identityMatches(set, pod) && storageMatches(set, pod) && retentionMatches) return false;
    if (!retentionMatches) await updateClaimsForRetentionPolicy(ctx, updateSet, pod);
    if (!identityMatches(set, pod) || !storageMatches(set, pod)) await updateStatefulPod(ctx, updateSet, pod);
    return false;
  };
  try {
    if (await runForAll(replicas.length, processReplica, monotonic)) {
      recount();
      return { status };
    }
    const fixClaims = async (i: number): Promise<boolean> => {
      const pod = condemned[i]!;
      if (!claimsMatchRetentionPolicy(ctx, updateSet, pod))
        await updateClaimsForRetentionPolicy(ctx, updateSet, pod);
      return false;
    };
    if (await runForAll(condemned.length, fixClaims, monotonic)) {
      recount();
      return { status };
    }
    const processCondemned = async (i: number): Promise<boolean> => {
      const pod = condemned[i]!;
      if (isTerminating(pod)) return monotonic;
      if (monotonic && pod !== firstUnavailable && isUnavailable(pod, minReadySeconds, now)) return true;
      await deleteStatefulPod(ctx, set, pod);
      return true;
    };
    if (await runForAll(condemned.length, processCondemned, monotonic)) {
      recount();
      return { status };
    }
    recount();
    if (set.spec?.updateStrategy?.type === "OnDelete") return { status };
    // Rolling update: the highest ordinal not at the update revision goes first.
    for (let target = replicas.length - 1; target >= partition; target--) {
      const pod = replicas[target]!;
      if (podRevision(pod) !== revisions.update.metadata.name && !isTerminating(pod)) {
        await deleteStatefulPod(ctx, set, pod);
        status.currentReplicas = (status.currentReplicas ?? 0) - 1;
        return { status };
      }
      if (isUnavailable(pod, minReadySeconds, now)) return { status };
    }
    return { status };
  } catch (error) {
    recount();
    return { status, error: error instanceof Error ? error : new Error(errorMessage(error)) };
  }
}

/** Upstream's completeRollingUpdate: every replica updated and ready makes update current. */
function completeRollingUpdate(set: StatefulSet, status: StatefulSetStatus): void {
  const replicas = replicasOf(set);
  if (
    set.spec?.updateStrategy?.type !== "OnDelete" &&
    status.updatedReplicas === replicas &&
    status.readyReplicas === replicas &&
    status.replicas === replicas
  ) {
    status.currentReplicas = status.updatedReplicas;
    status.currentRevision = status.updateRevision ?? "";
  }
}

const STATUS_FIELDS = [
  "replicas",
  "readyReplicas",
  "currentReplicas",
  "updatedReplicas",
  "availableReplicas",
  "currentRevision",
  "updateRevision",
] as const;

/** Zero, "" and absent are one value on the wire (Go's omitempty). */
const normalized = (value: string | number | undefined): string =>
  value === undefined || value === 0 || value === "" ? "" : String(value);

function statusChanged(set: StatefulSet, status: StatefulSetStatus): boolean {
  const old = set.status ?? {};
  if ((status.observedGeneration ?? 0) > (old.observedGeneration ?? 0)) return true;
  if (normalized(status.collisionCount) !== normalized(old.collisionCount)) return true;
  return STATUS_FIELDS.some((field) => normalized(status[field]) !== normalized(old[field]));
}

async function writeStatus(
  ctx: StatefulSetSyncContext,
  set: StatefulSet,
  status: StatefulSetStatus,
): Promise<void> {
  completeRollingUpdate(set, status);
  if (!statusChanged(set, status)) return;
  let target = set;
  for (let attempt = 0; ; attempt++) {
    try {
      const written = await ctx.client.updateStatus<StatefulSet>(
        GVR.statefulSets,
        { ...structuredClone(target), status: { ...structuredClone(target.status ?? {}), ...status } },
        ctx.signal,
      );
      ctx.rememberSet(written);
      return;
    } catch (error) {
      if (!isConflict(error) || attempt >= 4) throw error;
      target = await ctx.client.get<StatefulSet>(
        GVR.statefulSets,
        set.metadata.name ?? "",
        { namespace: set.metadata.namespace ?? "" },
        ctx.signal,
      );
    }
  }
}

/** Reconciles one set whose pods (owned members) and revisions (owned) the caller listed. */
export async function syncStatefulSet(
  ctx: StatefulSetSyncContext,
  set: StatefulSet,
  pods: readonly Pod[],
  ownedRevisions: readonly ControllerRevision[],
): Promise<ProcessResult | void> {
  const sorted = sortRevisions(ownedRevisions);
  const revisions = await statefulSetRevisions(ctx.client, set, sorted, ctx.signal);
  const outcome = await updateStatefulSet(ctx, set, revisions, pods);
  let statusError: Error | undefined;
  try {
    await writeStatus(ctx, set, outcome.status);
  } catch (error) {
    if (!isNotFound(error)) statusError = error instanceof Error ? error : new Error(errorMessage(error));
  }
  await truncateHistory(ctx.client, set, pods, sorted, [revisions.current, revisions.update], ctx.signal);
  if (outcome.error !== undefined) throw outcome.error;
  if (statusError !== undefined) throw statusError;
  const minReadySeconds = set.spec?.minReadySeconds ?? 0;
  if (minReadySeconds > 0) return { requeueAfterMs: minReadySeconds * 1000 };
}
