// syncDaemonSet (upstream's DaemonSetsController.syncDaemonSet): claim the pods the selector
// matches, then per node: create the missing daemon pod where the node should run one, delete
// failed ones (with a per-node backoff) and extra ones (keeping the oldest), and delete pods
// from nodes that should no longer run them or no longer exist; then, for RollingUpdate,
// replace pods of an older template (controller-revision-hash) within maxUnavailable, not
// available ones first; then write the status kubectl's columns read. The template's hash is
// its ControllerRevision's (history.ts), which `kubectl rollout history/undo` read. Scaling
// waits for the last round's creates and deletes to show in the cache (expectations), as
// upstream.

import {
  GVR,
  WORKLOAD_NAMES,
  type ControllerRevision,
  type DaemonSet,
  type Node,
  type Pod,
} from "../../api/index.ts";
import type { Logger } from "../../base/index.ts";
import {
  objectKey,
  type EventRecorder,
  type KubeClient,
  type ProcessResult,
  type Store,
} from "../../kube/index.ts";
import {
  claimObjects,
  computeHash,
  isPodAvailable,
  isPodReady,
  newControllerRef,
  podFromTemplate,
  scaledValue,
  selectorMatches,
  type ControllerExpectations,
  createControlledPod,
  deleteControlledPod,
  writeOwnerStatus,
} from "../workload/index.ts";
import { addDaemonPodTolerations, daemonPodNode, nodeShouldRunDaemonPod, pinToNode } from "./predicates.ts";
import {
  DAEMONSET_KIND,
  cleanupHistory,
  constructHistory,
  controlledHistory,
  revisionHashOf,
} from "./history.ts";

export { DAEMONSET_KIND } from "./history.ts";

export const DAEMONSET_EVENTS = Object.freeze({
  successfulCreate: "SuccessfulCreate",
  failedCreate: "FailedCreate",
  successfulDelete: "SuccessfulDelete",
  failedDelete: "FailedDelete",
  failedDaemonPod: "FailedDaemonPod",
});

/** Label with the DaemonSet's generation at pod creation (extensions' DaemonSetTemplateGenerationKey). */
const TEMPLATE_GENERATION_LABEL = "pod-template-generation";

export interface DaemonSetSyncContext {
  client: KubeClient;
  recorder: EventRecorder;
  logger: Logger;
  signal: AbortSignal;
  pods: Store<Pod>;
  nodes: Store<Node>;
  /** Every ControllerRevision in the cache (the set's own are picked by controller reference). */
  revisions: Store<ControllerRevision>;
  expectations: ControllerExpectations;
  /** Per ds/node backoff of failed-pod deletion: true when a delete may happen now. */
  failedPodBackoff(key: string): boolean;
  now(): number;
}

type StatusOf = NonNullable<DaemonSet["status"]>;

function podHash(pod: Pod): string | undefined {
  return pod.metadata?.labels?.[WORKLOAD_NAMES.controllerRevisionHashLabel];
}

function oldestFirst(pods: readonly Pod[]): Pod[] {
  return [...pods].sort(
    (a, b) =>
      (Date.parse(a.metadata?.creationTimestamp ?? "") || 0) -
        (Date.parse(b.metadata?.creationTimestamp ?? "") || 0) ||
      ((a.metadata?.name ?? "") < (b.metadata?.name ?? "") ? -1 : 1),
  );
}

export async function syncDaemonSet(ctx: DaemonSetSyncContext, ds: DaemonSet): Promise<ProcessResult | void> {
  const key = objectKey(ds);
  const namespace = ds.metadata?.namespace ?? "";
  // Read before the pods are listed: an expectation met after the listing is not in the list.
  const satisfied = ctx.expectations.satisfied(key);
  const claimed = await claimObjects<Pod>({
    client: ctx.client,
    gvr: GVR.pods,
    ownerGvr: GVR.daemonSets,
    owner: ds,
    controllerRef: newControllerRef(ds, DAEMONSET_KIND),
    matches: (pod) => selectorMatches(ds.spec?.selector, pod.metadata?.labels),
    objects: ctx.pods
      .listByNamespace(namespace)
      .filter((pod) => pod.metadata?.deletionTimestamp === undefined),
    signal: ctx.signal,
  });
  const byNode = new Map<string, Pod[]>();
  for (const pod of claimed) {
    const node = daemonPodNode(pod) ?? "";
    byNode.set(node, [...(byNode.get(node) ?? []), pod]);
  }
  const deleting = ds.metadata?.deletionTimestamp !== undefined;
  // The current template's revision names the hash its pods carry; a set being deleted gets
  // no new revision (the collector is removing them).
  const history = deleting
    ? undefined
    : await constructHistory(ctx, ds, controlledHistory(ds, ctx.revisions.listByNamespace(namespace)));
  const hash = history
    ? revisionHashOf(history.current)
    : computeHash(ds.spec?.template ?? {}, ds.status?.collisionCount);
  const nodes = ctx.nodes.list();
  if (history !== undefined && satisfied) {
    const changed = await manage(ctx, ds, nodes, byNode, hash);
    // The rolling update works from the same listing, so only when manage() wrote nothing.
    if ((ds.spec?.updateStrategy?.type ?? "RollingUpdate") === "RollingUpdate" && !changed)
      await rollingUpdate(ctx, ds, nodes, byNode, hash);
    await cleanupHistory(ctx, ds, claimed, history.old);
  }
  const status = calculateStatus(ds, nodes, byNode, hash, ctx.now());
  await writeStatus(ctx, ds, status);
  const minReadySeconds = ds.spec?.minReadySeconds ?? 0;
  if (minReadySeconds > 0 && status.numberReady !== status.numberAvailable)
    return { requeueAfterMs: minReadySeconds * 1000 };
}

async function manage(
  ctx: DaemonSetSyncContext,
  ds: DaemonSet,
  nodes: readonly Node[],
  byNode: Map<string, Pod[]>,
  hash: string,
): Promise<boolean> {
  const create: string[] = [];
  const remove: Pod[] = [];
  const known = new Set<string>();
  for (const node of nodes) {
    const name = node.metadata?.name ?? "";
    known.add(name);
    const { shouldRun, shouldContinueRunning } = nodeShouldRunDaemonPod(node, ds);
    const pods = byNode.get(name) ?? [];
    if (shouldRun && pods.length === 0) {
      // OBSERVATION: the node should run a daemon pod and has none.
      create.push(name);
    } else if (shouldRun) {
      // OBSERVATION: the node has daemon pods: failed ones go (after backoff), then extras.
      const running: Pod[] = [];
      for (const pod of pods) {
        if (pod.status?.phase === "Failed") {
          if (ctx.failedPodBackoff(`${objectKey(ds)}/${name}`)) {
            ctx.recorder.event(
              ds,
              "Warning",
              DAEMONSET_EVENTS.failedDaemonPod,
              `Found failed daemon pod ${pod.metadata?.namespace ?? ""}/${pod.metadata?.name ?? ""} on node ${name}, will try to kill it`,
            );
            remove.push(pod);
          }
        } else {
          running.push(pod);
        }
      }
      if (running.length > 1) remove.push(...oldestFirst(running).slice(1));
    } else if (!shouldContinueRunning) {
      // OBSERVATION: the node should not run the daemon pod any more.
      remove.push(...pods);
    } else {
      // OBSERVATION: not for new pods, but those there may stay (tolerated NoExecute taints).
    }
  }
  // Pods for nodes that no longer exist (upstream: unscheduled ones here, bound ones by pod GC).
  for (const [name, pods] of byNode) if (!known.has(name)) remove.push(...pods);
  await syncNodes(ctx, ds, remove, create, hash);
  return remove.length + create.length > 0;
}

/** syncNodes: deletes then creates, setting expectations first. */
async function syncNodes(
  ctx: DaemonSetSyncContext,
  ds: DaemonSet,
  remove: readonly Pod[],
  create: readonly string[],
  hash: string,
): Promise<void> {
  if (remove.length === 0 && create.length === 0) return;
  const key = objectKey(ds);
  ctx.expectations.expect(
    key,
    create.length,
    remove.map((pod) => pod.metadata?.uid ?? ""),
  );
  ctx.logger.info(4, "nodes needing daemon pods", { create, delete: remove.length });
  const results = await Promise.allSettled([
    ...create.map((node) => createPod(ctx, ds, node, hash)),
    ...remove.map((pod) => deleteControlledPod(ctx, ds, pod)),
  ]);
  const failed = results.find((result) => result.status === "rejected");
  if (failed !== undefined) throw failed.reason;
}

async function createPod(
  ctx: DaemonSetSyncContext,
  ds: DaemonSet,
  nodeName: string,
  hash: string,
): Promise<void> {
  const template = structuredClone(ds.spec?.template ?? {});
  const spec = template.spec ?? { containers: [] };
  addDaemonPodTolerations(spec);
  pinToNode(spec, nodeName);
  template.spec = spec;
  const pod = podFromTemplate(template, ds, newControllerRef(ds, DAEMONSET_KIND), {
    labels: {
      [TEMPLATE_GENERATION_LABEL]: String(ds.metadata?.generation ?? 1),
      [WORKLOAD_NAMES.controllerRevisionHashLabel]: hash,
    },
  });
  try {
    await createControlledPod(ctx, ds, pod);
  } catch (error) {
    // One create, not a batch: its expectation is settled here.
    ctx.expectations.creationObserved(objectKey(ds));
    throw error;
  }
}

/** rollingUpdate with maxSurge 0: old pods replaced, at most maxUnavailable nodes without an available pod. */
async function rollingUpdate(
  ctx: DaemonSetSyncContext,
  ds: DaemonSet,
  nodes: readonly Node[],
  byNode: Map<string, Pod[]>,
  hash: string,
): Promise<void> {
  const now = ctx.now();
  const minReadySeconds = ds.spec?.minReadySeconds ?? 0;
  const desired = nodes.filter((node) => nodeShouldRunDaemonPod(node, ds).shouldRun).length;
  const maxUnavailable = Math.max(
    scaledValue(ds.spec?.updateStrategy?.rollingUpdate?.maxUnavailable ?? 1, desired, true),
    0,
  );
  let unavailable = 0;
  const replaceNow: Pod[] = [];
  const candidates: Pod[] = [];
  for (const node of nodes) {
    if (!nodeShouldRunDaemonPod(node, ds).shouldRun) continue;
    const pods = (byNode.get(node.metadata?.name ?? "") ?? []).filter(
      (pod) => pod.status?.phase !== "Failed",
    );
    const fresh = pods.find((pod) => podHash(pod) === hash);
    const old = pods.find((pod) => podHash(pod) !== hash);
    if (old === undefined && fresh === undefined) {
      unavailable++;
    } else if (old === undefined) {
      if (!isPodAvailable(fresh!, minReadySeconds, now)) unavailable++;
    } else if (!isPodAvailable(old, minReadySeconds, now)) {
      replaceNow.push(old);
    } else {
      candidates.push(old);
    }
  }
  const budget = Math.max(0, maxUnavailable - unavailable - replaceNow.length);
  const remove = [...replaceNow, ...oldestFirst(candidates).slice(0, budget)];
  await syncNodes(ctx, ds, remove, [], hash);
}

export function calculateStatus(
  ds: DaemonSet,
  nodes: readonly Node[],
  byNode: Map<string, Pod[]>,
  hash: string,
  now: number,
): StatusOf {
  const minReadySeconds = ds.spec?.minReadySeconds ?? 0;
  let desired = 0;
  let current = 0;
  let misscheduled = 0;
  let ready = 0;
  let updated = 0;
  let available = 0;
  for (const node of nodes) {
    const { shouldRun } = nodeShouldRunDaemonPod(node, ds);
    const pods = byNode.get(node.metadata?.name ?? "") ?? [];
    const scheduled = pods;
    if (shouldRun) {
      desired++;
      if (scheduled.length > 0) {
        current++;
        const pod = oldestFirst(scheduled)[0]!;
        if (isPodReady(pod)) {
          ready++;
          if (isPodAvailable(pod, minReadySeconds, now)) available++;
        }
        if (podHash(pod) === hash) updated++;
      }
    } else if (scheduled.length > 0) {
      misscheduled++;
    } else {
      // OBSERVATION: neither wanted nor there.
    }
  }
  const status: StatusOf = {
    currentNumberScheduled: current,
    numberMisscheduled: misscheduled,
    desiredNumberScheduled: desired,
    numberReady: ready,
    observedGeneration: ds.metadata?.generation ?? 0,
    updatedNumberScheduled: updated,
    numberAvailable: available,
    numberUnavailable: desired - available,
  };
  if (ds.status?.collisionCount !== undefined) status.collisionCount = ds.status.collisionCount;
  if (ds.status?.conditions !== undefined) status.conditions = ds.status.conditions;
  return status;
}

function writeStatus(ctx: DaemonSetSyncContext, ds: DaemonSet, status: StatusOf): Promise<void> {
  return writeOwnerStatus(ctx.client, GVR.daemonSets, ds, status, ctx.signal);
}
