// --handle-volume-inuse-error: after a driver without ONLINE expansion answered
// FAILED_PRECONDITION, the claim is not expanded again while a pod that has not finished uses it.
//
// Upstream (inUsePVCStore) keeps a cluster-wide pod informer for this, whose memory grows with
// every pod of the cluster (external-resizer#211: OOM in large clusters). Here nothing is cached:
// only when a claim that failed that way is retried are the pods of its namespace listed — in
// pages, without finished pods (field selector), stopping at the first user — and dropped. The
// claim is retried on the queue's backoff (--retry-interval-start … -max) rather than on a pod
// deletion event; memory stays flat however many pods the cluster runs.

import { GVR, type PersistentVolumeClaim, type Pod } from "../../api/index.ts";
import type { ResizerContext } from "./context.ts";

/** Pods that have not finished: the ones that may still have the volume published. */
const NOT_FINISHED = "status.phase!=Succeeded,status.phase!=Failed";
const PAGE = 500;

/** Whether a pod that has not finished uses the claim, from a paged list of its namespace. */
export async function claimInUse(
  ctx: ResizerContext,
  claim: PersistentVolumeClaim,
  signal: AbortSignal,
): Promise<boolean> {
  const namespace = claim.metadata?.namespace ?? "";
  const name = claim.metadata?.name ?? "";
  let next: string | undefined;
  do {
    const page = await ctx.client.list<Pod>(
      GVR.pods,
      { namespace, fieldSelector: NOT_FINISHED, limit: PAGE, ...(next ? { continue: next } : {}) },
      signal,
    );
    for (const pod of page.items)
      if ((pod.spec?.volumes ?? []).some((v) => v.persistentVolumeClaim?.claimName === name)) return true;
    next = page.metadata?.continue || undefined;
  } while (next);
  return false;
}
