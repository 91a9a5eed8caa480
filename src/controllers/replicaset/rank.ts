// Which pods a ReplicaSet deletes first when scaling down (upstream's ActivePodsWithRanks):
// unscheduled before scheduled, Pending before Unknown before Running, not ready before ready,
// pods doubled up on a node (more of their siblings there) before lone ones, ready for less time
// before longer, more restarts before fewer, newer before older.

import type { Pod } from "../../api/index.ts";
import { isPodReady, podReadyTime } from "../workload/index.ts";

const PHASE_ORDER: Readonly<Record<string, number>> = { Pending: 0, Unknown: 1, Running: 2 };

function restarts(pod: Pod): number {
  return Math.max(0, ...(pod.status?.containerStatuses ?? []).map((status) => status.restartCount));
}

function created(pod: Pod): number {
  const at = Date.parse(pod.metadata?.creationTimestamp ?? "");
  return Number.isNaN(at) ? 0 : at;
}

/** `pods` ordered for deletion (first = deleted first); `related` are the pods of the same owner family. */
export function rankForDeletion(pods: readonly Pod[], related: readonly Pod[]): Pod[] {
  const perNode = new Map<string, number>();
  for (const pod of related) {
    const node = pod.spec?.nodeName;
    if (node) perNode.set(node, (perNode.get(node) ?? 0) + 1);
  }
  const rank = (pod: Pod): number => (pod.spec?.nodeName ? (perNode.get(pod.spec.nodeName) ?? 0) : 0);
  const compare = (a: Pod, b: Pod): number => {
    const aAssigned = a.spec?.nodeName ? 1 : 0;
    const bAssigned = b.spec?.nodeName ? 1 : 0;
    if (aAssigned !== bAssigned) return aAssigned - bAssigned;
    const aPhase = PHASE_ORDER[a.status?.phase ?? "Pending"] ?? 0;
    const bPhase = PHASE_ORDER[b.status?.phase ?? "Pending"] ?? 0;
    if (aPhase !== bPhase) return aPhase - bPhase;
    const aReady = isPodReady(a) ? 1 : 0;
    const bReady = isPodReady(b) ? 1 : 0;
    if (aReady !== bReady) return aReady - bReady;
    if (rank(a) !== rank(b)) return rank(b) - rank(a);
    if (aReady === 1 && podReadyTime(a) !== podReadyTime(b)) return podReadyTime(b) - podReadyTime(a);
    if (restarts(a) !== restarts(b)) return restarts(b) - restarts(a);
    return created(b) - created(a);
  };
  return [...pods].sort(compare);
}
