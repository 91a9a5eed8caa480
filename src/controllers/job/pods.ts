// How the Job loop reads its pods (upstream's job_controller helpers): which finished pods
// count as failed (a pod deleted before it succeeded does, unless podReplacementPolicy is
// Failed), when a pod finished, and the pod-failure backoff (10 s doubling, at most 10 min,
// counted over failures since the last success) before the next pod is created.

import { WORKLOAD_NAMES, type Job, type Pod } from "../../api/index.ts";

export function hasTrackingFinalizer(pod: Pod): boolean {
  return (pod.metadata?.finalizers ?? []).includes(WORKLOAD_NAMES.jobTrackingFinalizer);
}

/** onlyReplaceFailedPods. */
function onlyReplaceFailed(job: Job): boolean {
  return job.spec?.podReplacementPolicy === "Failed" || job.spec?.podFailurePolicy !== undefined;
}

/** isPodFailed. */
export function isPodFailed(pod: Pod, job: Job): boolean {
  if (pod.status?.phase === "Failed") return true;
  if (onlyReplaceFailed(job)) return false;
  return pod.metadata?.deletionTimestamp !== undefined && pod.status?.phase !== "Succeeded";
}

export function isPodSucceeded(pod: Pod): boolean {
  return pod.status?.phase === "Succeeded";
}

/** getFinishedTime: the last container's finishedAt, else the deletion or creation time. */
export function finishedTime(pod: Pod): number {
  let latest = 0;
  for (const status of pod.status?.containerStatuses ?? []) {
    const terminated = status.state?.terminated as { finishedAt?: string } | undefined;
    const at = Date.parse(terminated?.finishedAt ?? "");
    if (!Number.isNaN(at)) latest = Math.max(latest, at);
  }
  if (latest > 0) return latest;
  const fallback = Date.parse(pod.metadata?.deletionTimestamp ?? pod.metadata?.creationTimestamp ?? "");
  return Number.isNaN(fallback) ? 0 : fallback;
}

/** Upstream's DefaultJobPodFailureBackOff and MaxJobPodFailureBackOff. */
export const POD_FAILURE_BACKOFF_START_MS = 10_000;
export const POD_FAILURE_BACKOFF_MAX_MS = 10 * 60 * 1000;

/** Milliseconds still to wait before creating a pod after the failures since the last success. */
export function remainingBackoffMs(
  job: Job,
  pods: readonly Pod[],
  now: number,
  startMs: number = POD_FAILURE_BACKOFF_START_MS,
): number {
  const lastSuccess = Math.max(0, ...pods.filter(isPodSucceeded).map(finishedTime));
  const failures = pods.filter((pod) => isPodFailed(pod, job) && finishedTime(pod) >= lastSuccess);
  if (failures.length === 0) return 0;
  const lastFailure = Math.max(...failures.map(finishedTime));
  const delay = Math.min(startMs * 2 ** (failures.length - 1), POD_FAILURE_BACKOFF_MAX_MS);
  return Math.max(0, lastFailure + delay - now);
}
