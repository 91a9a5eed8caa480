// syncJob (upstream's job_controller syncJob with pod tracking finalizers), one pass:
// 1. claim the pods the selector matches;
// 2. count finished pods exactly once: a finished pod still carrying
//    batch.kubernetes.io/job-tracking is first recorded by uid in
//    status.uncountedTerminatedPods (written), then its finalizer is removed, then it moves to
//    status.succeeded/failed (written) — a crash between any two writes is recovered by the
//    next pass, and every status write carries the resourceVersion it was computed from;
// 3. decide: failures beyond backoffLimit or a passed activeDeadlineSeconds → FailureTarget,
//    then Failed once no pod is left running; enough successes → SuccessCriteriaMet, then
//    Complete (with completionTime) — the 1.31+ order; otherwise keep min(parallelism,
//    remaining completions) pods active, creating after the pod-failure backoff;
// 4. write startTime, active, ready, terminating, and the events upstream records.

import { GVR, WORKLOAD_NAMES, type Job, type Pod, type WorkloadCondition } from "../../api/index.ts";
import { jsonEqual, type Logger } from "../../base/index.ts";
import {
  isNotFound,
  objectKey,
  type EventRecorder,
  type KubeClient,
  type ProcessResult,
  type Store,
} from "../../kube/index.ts";
import {
  claimObjects,
  isPodActive,
  isPodReady,
  newControllerRef,
  podFromTemplate,
  selectorMatches,
  timestamp,
  type ControllerExpectations,
  createControlledPod,
  deleteControlledPod,
  createInSlowStartBatches,
} from "../workload/index.ts";
import { hasTrackingFinalizer, isPodFailed, isPodSucceeded, remainingBackoffMs } from "./pods.ts";

export const JOB_KIND = { apiVersion: "batch/v1", kind: "Job" } as const;

export const JOB_EVENTS = Object.freeze({
  successfulCreate: "SuccessfulCreate",
  failedCreate: "FailedCreate",
  successfulDelete: "SuccessfulDelete",
  failedDelete: "FailedDelete",
  completed: "Completed",
});

/** Condition reasons and messages of the 1.31+ Job controller. */
export const JOB_REASONS = Object.freeze({
  completionsReached: "CompletionsReached",
  backoffLimitExceeded: "BackoffLimitExceeded",
  deadlineExceeded: "DeadlineExceeded",
});
const MESSAGES: Readonly<Record<string, string>> = {
  [JOB_REASONS.completionsReached]: "Reached expected number of succeeded pods",
  [JOB_REASONS.backoffLimitExceeded]: "Job has reached the specified backoff limit",
  [JOB_REASONS.deadlineExceeded]: "Job was active longer than specified deadline",
};

/** Upstream's MaxUncountedPods: at most this many uids wait in uncountedTerminatedPods. */
const MAX_UNCOUNTED = 500;

export interface JobSyncContext {
  client: KubeClient;
  recorder: EventRecorder;
  logger: Logger;
  signal: AbortSignal;
  pods: Store<Pod>;
  expectations: ControllerExpectations;
  /** uids whose finalizer this loop removed and whose update the cache has not shown yet. */
  finalizersRemoved: Set<string>;
  podFailureBackoffStartMs: number;
  now(): number;
}

type JobStatus = NonNullable<Job["status"]>;

function trueCondition(status: JobStatus | undefined, type: string): WorkloadCondition | undefined {
  return status?.conditions?.find((c) => c.type === type && c.status === "True");
}

export function isJobFinished(job: Job): boolean {
  return (
    trueCondition(job.status, "Complete") !== undefined || trueCondition(job.status, "Failed") !== undefined
  );
}

function addCondition(status: JobStatus, type: string, reason: string, now: number): void {
  if (status.conditions?.some((c) => c.type === type && c.status === "True")) return;
  const at = timestamp(now);
  status.conditions = [
    ...(status.conditions ?? []).filter((c) => c.type !== type),
    {
      type,
      status: "True",
      lastProbeTime: at,
      lastTransitionTime: at,
      reason,
      message: MESSAGES[reason] ?? reason,
    },
  ];
}

export async function syncJob(ctx: JobSyncContext, cached: Job): Promise<ProcessResult | void> {
  let job = cached;
  const key = objectKey(job);
  const now = ctx.now();
  // Read before the pods are listed: an expectation met after the listing is not in the list.
  const satisfied = ctx.expectations.satisfied(key);
  const pods = await claimObjects<Pod>({
    client: ctx.client,
    gvr: GVR.pods,
    ownerGvr: GVR.jobs,
    owner: job,
    controllerRef: newControllerRef(job, JOB_KIND),
    matches: (pod) => selectorMatches(job.spec?.selector, pod.metadata?.labels),
    objects: ctx.pods.listByNamespace(job.metadata?.namespace ?? ""),
    signal: ctx.signal,
  });
  if (isJobFinished(job)) {
    // A finished Job only lets go of what it still holds.
    await removeFinalizers(ctx, pods.filter(hasTrackingFinalizer));
    return;
  }
  const status: JobStatus = structuredClone(job.status ?? {});
  status.startTime ??= timestamp(now);
  const uncounted = {
    succeeded: new Set(status.uncountedTerminatedPods?.succeeded ?? []),
    failed: new Set(status.uncountedTerminatedPods?.failed ?? []),
  };
  const byUid = new Map(pods.map((pod) => [pod.metadata?.uid ?? "", pod]));
  // Step B first: uncounted pods whose finalizer is gone (or the pod itself) are counted now.
  for (const [which, set] of [
    ["succeeded", uncounted.succeeded],
    ["failed", uncounted.failed],
  ] as const) {
    for (const uid of [...set]) {
      const pod = byUid.get(uid);
      if (pod !== undefined && hasTrackingFinalizer(pod) && !ctx.finalizersRemoved.has(uid)) continue;
      set.delete(uid);
      status[which] = (status[which] ?? 0) + 1;
    }
  }
  // Step A: finished pods still holding the finalizer are recorded as uncounted.
  const toRelease: Pod[] = [];
  for (const pod of pods) {
    const uid = pod.metadata?.uid ?? "";
    if (!hasTrackingFinalizer(pod) || ctx.finalizersRemoved.has(uid)) continue;
    const succeeded = isPodSucceeded(pod);
    const failed = !succeeded && isPodFailed(pod, job);
    if (!succeeded && !failed) continue;
    if (!uncounted.succeeded.has(uid) && !uncounted.failed.has(uid)) {
      if (uncounted.succeeded.size + uncounted.failed.size >= MAX_UNCOUNTED) continue;
      (succeeded ? uncounted.succeeded : uncounted.failed).add(uid);
    }
    toRelease.push(pod);
  }
  const active = pods.filter(isPodActive);
  const succeededTotal = (status.succeeded ?? 0) + uncounted.succeeded.size;
  const failedTotal = (status.failed ?? 0) + uncounted.failed.size;
  setCounts(status, uncounted, active, pods);

  // Decide the outcome.
  const backoffLimit = job.spec?.backoffLimit ?? 6;
  const deadline = job.spec?.activeDeadlineSeconds;
  const started = Date.parse(status.startTime);
  const criteriaMet = trueCondition(status, "SuccessCriteriaMet") !== undefined;
  let failureReason: string | undefined = trueCondition(status, "FailureTarget")?.reason;
  if (!criteriaMet && failureReason === undefined) {
    if (failedTotal > backoffLimit) failureReason = JOB_REASONS.backoffLimitExceeded;
    else if (deadline !== undefined && now - started >= deadline * 1000)
      failureReason = JOB_REASONS.deadlineExceeded;
    else {
      // OBSERVATION: within the backoff limit and the deadline.
    }
  }
  const completions = job.spec?.completions;
  const success =
    criteriaMet ||
    (failureReason === undefined &&
      (completions !== undefined
        ? succeededTotal >= completions
        : succeededTotal > 0 && active.length === 0));

  if (failureReason !== undefined) addCondition(status, "FailureTarget", failureReason, now);
  else if (success) addCondition(status, "SuccessCriteriaMet", JOB_REASONS.completionsReached, now);

  // Uncounted uids are durable before any finalizer goes.
  job = await writeStatus(ctx, job, status);
  if (toRelease.length > 0) {
    await removeFinalizers(ctx, toRelease);
    for (const pod of toRelease) {
      const uid = pod.metadata?.uid ?? "";
      for (const [which, set] of [
        ["succeeded", uncounted.succeeded],
        ["failed", uncounted.failed],
      ] as const)
        if (set.delete(uid)) status[which] = (status[which] ?? 0) + 1;
    }
    setCounts(status, uncounted, active, pods);
    job = await writeStatus(ctx, job, status);
  }

  let result: ProcessResult | void = undefined;
  if (failureReason !== undefined || success) {
    // Finishing: no pod may keep running; the final condition waits for all of them to be counted.
    await deleteActive(ctx, job, active);
    const pending = pods.some((pod) => hasTrackingFinalizer(pod) && !toRelease.includes(pod));
    if (active.length === 0 && !pending && uncounted.succeeded.size + uncounted.failed.size === 0) {
      if (failureReason !== undefined) {
        addCondition(status, "Failed", failureReason, now);
        ctx.recorder.event(job, "Warning", failureReason, MESSAGES[failureReason] ?? failureReason);
      } else {
        addCondition(status, "Complete", JOB_REASONS.completionsReached, now);
        status.completionTime = timestamp(now);
        ctx.recorder.event(job, "Normal", JOB_EVENTS.completed, "Job completed");
      }
      job = await writeStatus(ctx, job, status);
    }
  } else if (job.spec?.suspend === true) {
    await deleteActive(ctx, job, active);
  } else if (satisfied) {
    result = await manageJob(ctx, job, active, pods, succeededTotal);
  } else {
    // OBSERVATION: earlier creates or deletes not seen yet; their events bring the next pass.
  }
  if (result === undefined && deadline !== undefined && failureReason === undefined && !success) {
    const left = started + deadline * 1000 - now;
    if (left > 0) return { requeueAfterMs: left };
  }
  return result;
}

function setCounts(
  status: JobStatus,
  uncounted: { succeeded: Set<string>; failed: Set<string> },
  active: readonly Pod[],
  pods: readonly Pod[],
): void {
  status.active = active.length;
  status.ready = active.filter(isPodReady).length;
  status.terminating = pods.filter(
    (pod) =>
      pod.metadata?.deletionTimestamp !== undefined &&
      pod.status?.phase !== "Succeeded" &&
      pod.status?.phase !== "Failed",
  ).length;
  status.succeeded ??= 0;
  status.failed ??= 0;
  status.uncountedTerminatedPods = {
    ...(uncounted.succeeded.size > 0 ? { succeeded: [...uncounted.succeeded].sort() } : {}),
    ...(uncounted.failed.size > 0 ? { failed: [...uncounted.failed].sort() } : {}),
  };
}

async function writeStatus(ctx: JobSyncContext, job: Job, status: JobStatus): Promise<Job> {
  if (jsonEqual(job.status ?? {}, status)) return job;
  return ctx.client.updateStatus<Job>(GVR.jobs, { ...job, status: structuredClone(status) }, ctx.signal);
}

async function removeFinalizers(ctx: JobSyncContext, pods: readonly Pod[]): Promise<void> {
  const results = await Promise.allSettled(
    pods.map(async (pod) => {
      const finalizers = (pod.metadata?.finalizers ?? []).filter(
        (f) => f !== WORKLOAD_NAMES.jobTrackingFinalizer,
      );
      try {
        await ctx.client.patch(
          GVR.pods,
          pod.metadata?.name ?? "",
          { metadata: { finalizers, resourceVersion: pod.metadata?.resourceVersion } },
          { namespace: pod.metadata?.namespace ?? "" },
          ctx.signal,
        );
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
      ctx.finalizersRemoved.add(pod.metadata?.uid ?? "");
    }),
  );
  const failed = results.find((result) => result.status === "rejected");
  if (failed !== undefined) throw failed.reason;
}

async function deleteActive(ctx: JobSyncContext, job: Job, active: readonly Pod[]): Promise<void> {
  if (active.length === 0) return;
  ctx.expectations.expect(
    objectKey(job),
    0,
    active.map((pod) => pod.metadata?.uid ?? ""),
  );
  const results = await Promise.allSettled(active.map((pod) => deleteControlledPod(ctx, job, pod)));
  const failed = results.find((result) => result.status === "rejected");
  if (failed !== undefined) throw failed.reason;
}

/** manageJob for NonIndexed jobs: keep min(parallelism, remaining) pods active. */
async function manageJob(
  ctx: JobSyncContext,
  job: Job,
  active: readonly Pod[],
  pods: readonly Pod[],
  succeeded: number,
): Promise<ProcessResult | void> {
  const parallelism = job.spec?.parallelism ?? 1;
  const completions = job.spec?.completions;
  const want =
    completions === undefined
      ? succeeded > 0
        ? 0
        : parallelism
      : Math.max(0, Math.min(parallelism, completions - succeeded));
  const key = objectKey(job);
  if (active.length > want) {
    // Not ready and newest first, as upstream's ActivePods ordering.
    const victims = [...active]
      .sort(
        (a, b) =>
          Number(isPodReady(a)) - Number(isPodReady(b)) ||
          (Date.parse(b.metadata?.creationTimestamp ?? "") || 0) -
            (Date.parse(a.metadata?.creationTimestamp ?? "") || 0),
      )
      .slice(0, active.length - want);
    await deleteActive(ctx, job, victims);
    return;
  }
  if (active.length === want) return;
  const wait = remainingBackoffMs(job, pods, ctx.now(), ctx.podFailureBackoffStartMs);
  if (wait > 0) return { requeueAfterMs: wait };
  const count = want - active.length;
  ctx.expectations.expect(key, count);
  await createInSlowStartBatches(count, () => createPod(ctx, job), { expectations: ctx.expectations, key });
}

async function createPod(ctx: JobSyncContext, job: Job): Promise<void> {
  const pod = podFromTemplate(job.spec?.template, job, newControllerRef(job, JOB_KIND), {
    finalizers: [WORKLOAD_NAMES.jobTrackingFinalizer],
  });
  await createControlledPod(ctx, job, pod);
}
