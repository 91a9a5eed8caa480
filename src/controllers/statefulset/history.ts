// The StatefulSet's ControllerRevisions on the server (upstream's getStatefulSetRevisions and
// truncateHistory over controller/history): the update revision is the revision of the current
// template — reused when it is the latest, renumbered when an older one matches (a rollback),
// created otherwise (a name collision with different data bumps collisionCount); the current
// revision is the one status.currentRevision names. Non-live revisions beyond
// revisionHistoryLimit are deleted oldest first.

import { GVR, type ControllerRevision, type Pod, type StatefulSet } from "../../api/index.ts";
import { isAlreadyExists, isNotFound, type KubeClient } from "../../kube/index.ts";
import { podRevision } from "./identity.ts";
import { equalRevision, newRevision, nextRevisionNumber, revisionHash, revisionName } from "./revisions.ts";

export interface Revisions {
  current: ControllerRevision;
  update: ControllerRevision;
  collisionCount: number;
}

async function createRevision(
  client: KubeClient,
  set: StatefulSet,
  revision: ControllerRevision,
  collisionCount: number,
  signal: AbortSignal,
): Promise<{ created: ControllerRevision; collisionCount: number }> {
  let count = collisionCount;
  for (;;) {
    const name = revisionName(set.metadata.name ?? "", revisionHash(revision.data, count));
    const candidate = { ...revision, metadata: { ...revision.metadata, name } };
    try {
      return {
        created: await client.create(GVR.controllerRevisions, candidate, signal),
        collisionCount: count,
      };
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
      const existing = await client.get<ControllerRevision>(
        GVR.controllerRevisions,
        name,
        { namespace: set.metadata.namespace ?? "" },
        signal,
      );
      // Ours from an attempt whose answer was lost: the same data under the same name.
      if (equalRevision(existing, candidate)) return { created: existing, collisionCount: count };
      count++;
    }
  }
}

/** `sorted`: the set's revisions, ascending (sortRevisions). */
export async function statefulSetRevisions(
  client: KubeClient,
  set: StatefulSet,
  sorted: readonly ControllerRevision[],
  signal: AbortSignal,
): Promise<Revisions> {
  let collisionCount = set.status?.collisionCount ?? 0;
  const wanted = newRevision(set, nextRevisionNumber(sorted), collisionCount);
  const equal = sorted.filter((revision) => equalRevision(revision, wanted));
  const latest = sorted[sorted.length - 1];
  const lastEqual = equal[equal.length - 1];
  let update: ControllerRevision;
  if (latest !== undefined && lastEqual !== undefined && equalRevision(latest, lastEqual)) {
    update = latest;
  } else if (lastEqual !== undefined) {
    // Back to an older template (kubectl rollout undo): that revision becomes the newest.
    update = await client.update<ControllerRevision>(
      GVR.controllerRevisions,
      { ...structuredClone(lastEqual), revision: wanted.revision },
      {},
      signal,
    );
  } else {
    const created = await createRevision(client, set, wanted, collisionCount, signal);
    update = created.created;
    collisionCount = created.collisionCount;
  }
  const current = sorted.find((revision) => revision.metadata.name === set.status?.currentRevision) ?? update;
  return { current, update, collisionCount };
}

/** Deletes the oldest revisions no pod and no status names, down to revisionHistoryLimit. */
export async function truncateHistory(
  client: KubeClient,
  set: StatefulSet,
  pods: readonly Pod[],
  sorted: readonly ControllerRevision[],
  live: readonly (ControllerRevision | undefined)[],
  signal: AbortSignal,
): Promise<void> {
  const liveNames = new Set<string>();
  for (const revision of live) if (revision) liveNames.add(revision.metadata.name ?? "");
  for (const pod of pods) liveNames.add(podRevision(pod));
  const history = sorted.filter((revision) => !liveNames.has(revision.metadata.name ?? ""));
  const limit = set.spec?.revisionHistoryLimit ?? 10;
  if (limit < 0 || history.length <= limit) return;
  for (const revision of history.slice(0, history.length - limit)) {
    try {
      await client.delete(
        GVR.controllerRevisions,
        revision.metadata.name ?? "",
        { namespace: revision.metadata.namespace ?? "" },
        signal,
      );
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
}
