// A DaemonSet's ControllerRevisions (upstream's constructHistory, snapshot and cleanupHistory in
// pkg/controller/daemon/update.go). Each revision records one pod template as the patch
// `{"spec":{"template":{…,"$patch":"replace"}}}` that `kubectl rollout undo` applies; it is
// named "<ds>-<hash>" and labelled controller-revision-hash=<hash>, the label the daemon pods
// of that template carry. The revision of the current template is the newest: reused when it
// exists (renumbered after a rollback to it), created otherwise; a name taken by a revision of
// another template bumps status.collisionCount and retries, as upstream. Revisions no pod runs
// are deleted, oldest first, beyond spec.revisionHistoryLimit (10).

import { GVR, WORKLOAD_NAMES, type ControllerRevision, type DaemonSet, type Pod } from "../../api/index.ts";
import { CsikitError } from "../../base/index.ts";
import { isAlreadyExists, isNotFound, type KubeClient } from "../../kube/index.ts";
import { canonicalJson, computeHash, controllerOf, newControllerRef } from "../workload/index.ts";

/** The owner reference kind of a DaemonSet's pods and revisions. */
export const DAEMONSET_KIND = { apiVersion: "apps/v1", kind: "DaemonSet" } as const;

export interface DaemonSetHistoryContext {
  client: KubeClient;
  signal: AbortSignal;
}

/** The patch a revision records: the pod template, replacing the whole of the set's. */
export function historyData(ds: DaemonSet): Record<string, unknown> {
  return { spec: { template: { ...structuredClone(ds.spec?.template ?? {}), $patch: "replace" } } };
}

/** The revisions among `revisions` that `ds` controls. */
export function controlledHistory(
  ds: DaemonSet,
  revisions: readonly ControllerRevision[],
): ControllerRevision[] {
  return revisions.filter((revision) => {
    const ref = controllerOf(revision);
    return ref?.kind === DAEMONSET_KIND.kind && ref.uid === ds.metadata?.uid;
  });
}

export function revisionHashOf(revision: ControllerRevision): string {
  return (
    revision.metadata.labels?.[WORKLOAD_NAMES.controllerRevisionHashLabel] ?? revision.metadata.name ?? ""
  );
}

function newRevision(ds: DaemonSet, revision: number): ControllerRevision {
  const hash = computeHash(ds.spec?.template ?? {}, ds.status?.collisionCount);
  const name = ds.metadata?.name ?? "";
  return {
    apiVersion: "apps/v1",
    kind: "ControllerRevision",
    metadata: {
      name: `${name}-${hash}`,
      namespace: ds.metadata?.namespace ?? "",
      labels: {
        ...(ds.spec?.template?.metadata?.labels ?? {}),
        [WORKLOAD_NAMES.controllerRevisionHashLabel]: hash,
      },
      ...(ds.metadata?.annotations ? { annotations: { ...ds.metadata.annotations } } : {}),
      ownerReferences: [newControllerRef(ds, DAEMONSET_KIND)],
    },
    data: historyData(ds),
    revision,
  };
}

/** A name collision with another template's revision: the status now counts one more. */
export class HashCollisionError extends CsikitError {
  constructor(name: string) {
    super(
      "CSIKIT_ERR_REVISION_COLLISION",
      `found a stale collision of ControllerRevision ${name}; collisionCount raised, will retry`,
    );
  }
}

/** Creates the revision of the set's template (upstream's snapshot). */
async function snapshot(
  ctx: DaemonSetHistoryContext,
  ds: DaemonSet,
  revision: number,
): Promise<ControllerRevision> {
  const wanted = newRevision(ds, revision);
  try {
    return await ctx.client.create<ControllerRevision>(GVR.controllerRevisions, wanted, ctx.signal);
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
  }
  const namespace = ds.metadata?.namespace ?? "";
  const name = wanted.metadata.name ?? "";
  const existing = await ctx.client.get<ControllerRevision>(
    GVR.controllerRevisions,
    name,
    { namespace },
    ctx.signal,
  );
  // Ours from an attempt whose answer was lost: the same template under the same name.
  if (canonicalJson(existing.data ?? null) === canonicalJson(wanted.data)) return existing;
  const current = await ctx.client.get<DaemonSet>(
    GVR.daemonSets,
    ds.metadata?.name ?? "",
    { namespace },
    ctx.signal,
  );
  const status = { ...(current.status ?? {}), collisionCount: (current.status?.collisionCount ?? 0) + 1 };
  await ctx.client.updateStatus<DaemonSet>(GVR.daemonSets, { ...current, status }, ctx.signal);
  throw new HashCollisionError(name);
}

/**
 * The revision of the set's current template (created or renumbered as needed) and the older
 * ones. `revisions`: those the set controls.
 */
export async function constructHistory(
  ctx: DaemonSetHistoryContext,
  ds: DaemonSet,
  revisions: readonly ControllerRevision[],
): Promise<{ current: ControllerRevision; old: ControllerRevision[] }> {
  const data = canonicalJson(historyData(ds));
  const matching: ControllerRevision[] = [];
  const old: ControllerRevision[] = [];
  for (const revision of revisions) {
    if (canonicalJson(revision.data ?? null) === data) matching.push(revision);
    else old.push(revision);
  }
  const next = old.reduce((max, revision) => Math.max(max, revision.revision), 0) + 1;
  // More than one of the current template only after a race; the newest one is used.
  const found = matching.sort((a, b) => b.revision - a.revision)[0];
  if (found === undefined) return { current: await snapshot(ctx, ds, next), old };
  if (found.revision >= next) return { current: found, old };
  // Back to an older template (kubectl rollout undo): its revision becomes the newest.
  const current = await ctx.client.update<ControllerRevision>(
    GVR.controllerRevisions,
    { ...structuredClone(found), revision: next },
    {},
    ctx.signal,
  );
  return { current, old };
}

/** Deletes the oldest revisions that no pod runs, down to spec.revisionHistoryLimit. */
export async function cleanupHistory(
  ctx: DaemonSetHistoryContext,
  ds: DaemonSet,
  pods: readonly Pod[],
  old: readonly ControllerRevision[],
): Promise<void> {
  const limit = ds.spec?.revisionHistoryLimit ?? 10;
  if (limit < 0 || old.length <= limit) return;
  const live = new Set(pods.map((pod) => pod.metadata?.labels?.[WORKLOAD_NAMES.controllerRevisionHashLabel]));
  const unused = old.filter((revision) => !live.has(revisionHashOf(revision)));
  const excess = old.length - limit;
  const oldestFirst = [...unused].sort((a, b) => a.revision - b.revision).slice(0, excess);
  for (const revision of oldestFirst) {
    try {
      await ctx.client.delete(
        GVR.controllerRevisions,
        revision.metadata.name ?? "",
        { namespace: revision.metadata.namespace ?? "" },
        ctx.signal,
      );
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
}
