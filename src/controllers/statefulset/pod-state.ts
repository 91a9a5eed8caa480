// What the StatefulSet controller reads of a pod's state (upstream's isCreated, isRunningAndReady,
// IsPodAvailable, isTerminating, …): readiness is the pod's Ready condition as the node agent
// writes it; "available" adds minReadySeconds since that condition last turned True.

import type { Pod } from "../../api/index.ts";

/** The pod exists on the server (the API server set its phase). */
export function isCreated(pod: Pod): boolean {
  return (pod.status?.phase ?? "") !== "";
}

export function isPending(pod: Pod): boolean {
  return pod.status?.phase === "Pending";
}

export function isFinished(pod: Pod): boolean {
  return pod.status?.phase === "Failed" || pod.status?.phase === "Succeeded";
}

export function isTerminating(pod: Pod): boolean {
  return pod.metadata?.deletionTimestamp !== undefined;
}

function readyCondition(pod: Pod) {
  return (pod.status?.conditions ?? []).find((condition) => condition.type === "Ready");
}

export function isRunningAndReady(pod: Pod): boolean {
  return pod.status?.phase === "Running" && readyCondition(pod)?.status === "True";
}

/** Ready for at least minReadySeconds at `now` (ms since the epoch). */
export function isAvailable(pod: Pod, minReadySeconds: number, now: number): boolean {
  const ready = readyCondition(pod);
  if (ready?.status !== "True") return false;
  if (minReadySeconds <= 0) return true;
  const since = Date.parse(ready.lastTransitionTime ?? "");
  return Number.isFinite(since) && since + minReadySeconds * 1000 <= now;
}

/** Not available, or on its way out: what blocks a monotonic scale or update. */
export function isUnavailable(pod: Pod, minReadySeconds: number, now: number): boolean {
  return !isAvailable(pod, minReadySeconds, now) || isTerminating(pod);
}
