// The status write of the replicaset and daemonset loops (upstream's updateReplicaSetStatus and
// storeDaemonSetStatus): nothing when the status is already so; on a conflict, one more try on a
// fresh copy; an owner gone meanwhile is no error.

import { jsonEqual } from "../../base/index.ts";
import {
  isConflict,
  isNotFound,
  type GroupVersionResource,
  type KubeClient,
  type KubeObject,
} from "../../kube/index.ts";

export async function writeOwnerStatus<T extends KubeObject & { status?: unknown }>(
  client: KubeClient,
  gvr: GroupVersionResource,
  owner: T,
  status: NonNullable<T["status"]>,
  signal: AbortSignal,
): Promise<void> {
  if (jsonEqual(owner.status ?? {}, status)) return;
  let current = owner;
  for (let attempt = 0; ; attempt++) {
    try {
      await client.updateStatus<T>(gvr, { ...current, status }, signal);
      return;
    } catch (error) {
      if (isNotFound(error)) return;
      if (!isConflict(error) || attempt > 0) throw error;
      current = await client.get<T>(
        gvr,
        owner.metadata?.name ?? "",
        { namespace: owner.metadata?.namespace ?? "" },
        signal,
      );
    }
  }
}
