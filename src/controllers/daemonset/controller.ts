// kube-controller-manager's daemonset loop (pkg/controller/daemon): informers on DaemonSets,
// pods and nodes feed one queue of DaemonSet keys. A node added, removed or changed (labels,
// taints) enqueues every DaemonSet, since any of them may now belong on it or off it; a
// ControllerRevision's event enqueues the DaemonSet controlling it. The
// wiring shared with the other workload loops is workload/loop.ts's. Events are reported as
// "daemonset-controller", as upstream.

import { GVR, type ControllerRevision, type DaemonSet, type Node, type Pod } from "../../api/index.ts";
import type { Clock, Logger } from "../../base/index.ts";
import { deletedObject, type InformerFactory, type KubeClient } from "../../kube/index.ts";
import { ControllerExpectations, WorkloadLoop, controllerOf } from "../workload/index.ts";
import { syncDaemonSet } from "./sync.ts";

export const DAEMONSET_CONTROLLER_COMPONENT = "daemonset-controller";

/** Upstream's failedPodsBackoff: 1 s doubling to 15 min per DaemonSet and node. */
const FAILED_POD_BACKOFF_START_MS = 1000;
const FAILED_POD_BACKOFF_MAX_MS = 15 * 60 * 1000;

export interface DaemonSetControllerOptions {
  client: KubeClient;
  informers: InformerFactory;
  logger?: Logger;
  /** --concurrent-daemonset-syncs. Default 2. */
  workers?: number;
  clock?: Clock;
}

export async function startDaemonSetController(
  options: DaemonSetControllerOptions,
  signal: AbortSignal,
): Promise<void> {
  const { client } = options;
  const daemonSets = options.informers.informer<DaemonSet>(GVR.daemonSets);
  const pods = options.informers.informer<Pod>(GVR.pods);
  const nodes = options.informers.informer<Node>(GVR.nodes);
  const revisions = options.informers.informer<ControllerRevision>(GVR.controllerRevisions);
  const expectations = new ControllerExpectations(options.clock);
  const loop = new WorkloadLoop({
    name: DAEMONSET_CONTROLLER_COMPONENT,
    queueName: "daemonset",
    client,
    logger: options.logger,
    clock: options.clock,
    expectations,
  });
  const { queue, clock } = loop;
  const enqueueAll = (): void => {
    for (const key of daemonSets.store.keys()) queue.add(key);
  };
  /** A revision's event enqueues the DaemonSet it belongs to (upstream's add/update/deleteHistory). */
  const enqueueRevisionOwner = (revision: ControllerRevision): void => {
    const ref = controllerOf(revision);
    if (ref?.kind === "DaemonSet") queue.add(`${revision.metadata.namespace ?? ""}/${ref.name}`);
  };
  loop.handle(
    daemonSets.addEventHandler(loop.ownerHandlers<DaemonSet>()),
    loop.podOwnerHandlers(pods, "DaemonSet", daemonSets),
    nodes.addEventHandler({
      onAdd: enqueueAll,
      onUpdate: (old, node) => {
        const changed =
          JSON.stringify(old.metadata?.labels ?? {}) !== JSON.stringify(node.metadata?.labels ?? {}) ||
          JSON.stringify(old.spec?.taints ?? []) !== JSON.stringify(node.spec?.taints ?? []) ||
          old.spec?.unschedulable !== node.spec?.unschedulable;
        if (changed) enqueueAll();
      },
      onDelete: enqueueAll,
    }),
    revisions.addEventHandler({
      onAdd: enqueueRevisionOwner,
      onUpdate: (_old, revision) => enqueueRevisionOwner(revision),
      onDelete: (value) => enqueueRevisionOwner(deletedObject(value)),
    }),
  );
  // Per ds/node: when the next failed-pod delete may happen and the current backoff step.
  const backoff = new Map<string, { next: number; stepMs: number }>();
  const failedPodBackoff = (key: string): boolean => {
    const now = clock.now();
    const entry = backoff.get(key);
    if (entry !== undefined && now < entry.next) {
      queue.addAfter(key.split("/").slice(0, 2).join("/"), entry.next - now);
      return false;
    }
    const stepMs =
      entry === undefined
        ? FAILED_POD_BACKOFF_START_MS
        : Math.min(entry.stepMs * 2, FAILED_POD_BACKOFF_MAX_MS);
    backoff.set(key, { next: now + stepMs, stepMs });
    return true;
  };
  await loop.run(
    [
      {
        name: DAEMONSET_CONTROLLER_COMPONENT,
        informers: [daemonSets, pods, nodes, revisions],
        queue,
        workers: options.workers ?? 2,
        reconcile: loop.reconcileOwner(
          (key) => daemonSets.store.get(key),
          (ds, tools) =>
            syncDaemonSet(
              {
                client,
                ...tools,
                pods: pods.store,
                nodes: nodes.store,
                revisions: revisions.store,
                expectations,
                failedPodBackoff,
                now: () => clock.now(),
              },
              ds,
            ),
        ),
      },
    ],
    signal,
  );
}
