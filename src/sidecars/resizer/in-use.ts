// --handle-volume-inuse-error (external-resizer's inUsePVCStore): after a driver without ONLINE
// expansion answered FAILED_PRECONDITION, the claim is not expanded again while a pod that is
// not finished uses it; a pod going away re-queues its claims.

import type { PersistentVolumeClaim, Pod } from "../../api/index.ts";
import type { ResizerContext } from "./context.ts";

/** The claims (namespace/name keys) a pod's volumes use. */
export function claimKeysOfPod(pod: Pod): string[] {
  const namespace = pod.metadata?.namespace ?? "";
  const keys: string[] = [];
  for (const volume of pod.spec?.volumes ?? []) {
    const claimName = volume.persistentVolumeClaim?.claimName;
    if (claimName) keys.push(`${namespace}/${claimName}`);
  }
  return keys;
}

function finished(pod: Pod): boolean {
  const phase = pod.status?.phase;
  return phase === "Succeeded" || phase === "Failed";
}

/** Whether a running (not finished) pod uses the claim. Without the pod informer: never. */
export function claimInUse(ctx: ResizerContext, claim: PersistentVolumeClaim): boolean {
  if (!ctx.pods) return false;
  const key = `${claim.metadata?.namespace}/${claim.metadata?.name}`;
  return ctx.pods.store
    .listByNamespace(claim.metadata?.namespace ?? "")
    .some((pod) => !finished(pod) && claimKeysOfPod(pod).includes(key));
}
