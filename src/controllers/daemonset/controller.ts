// kube-controller-manager's daemonset loop (pkg/controller/daemon): informers on DaemonSets,
// pods and nodes feed one queue of DaemonSet keys. A node added, removed or changed (labels,
// taints) enqueues every DaemonSet, since any of them may now belong on it or off it. Events
// are reported as "daemonset-controller", as upstream.

import { GVR, type DaemonSet, type Node, type Pod } from "../../api/index.ts";
import { realClock, silentLogger, type Clock, type Logger } from "../../base/index.ts";
import {
  EventRecorder,
  WorkQueue,
  controllerRateLimiter,
  deletedObject,
  isNotFound,
  objectKey,
  runController,
  type InformerFactory,
  type KubeClient,
} from "../../kube/index.ts";
import { ControllerExpectations, registerPodOwnerHandlers, selectorMatches } from "../workload/index.ts";
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
  const logger = (options.logger ?? silentLogger).with({ controller: "daemonset-controller" });
  const clock = options.clock ?? realClock;
  const daemonSets = options.informers.informer<DaemonSet>(GVR.daemonSets);
  const pods = options.informers.informer<Pod>(GVR.pods);
  const nodes = options.informers.informer<Node>(GVR.nodes);
  const queue = new WorkQueue<string>({
    name: "daemonset",
    rateLimiter: controllerRateLimiter<string>({ clock }),
    clock,
  });
  const expectations = new ControllerExpectations(clock);
  const enqueueAll = (): void => {
    for (const key of daemonSets.store.keys()) queue.add(key);
  };
  const removeHandlers = [
    daemonSets.addEventHandler({
      onAdd: (ds) => queue.add(objectKey(ds)),
      onUpdate: (_old, ds) => queue.add(objectKey(ds)),
      onDelete: (value) => {
        const key = objectKey(deletedObject(value));
        expectations.forget(key);
        queue.add(key);
      },
    }),
    registerPodOwnerHandlers(pods, {
      kind: "DaemonSet",
      owners: daemonSets,
      expectations,
      enqueue: (key) => queue.add(key),
      matchingOwners: (pod) =>
        daemonSets.store
          .listByNamespace(pod.metadata?.namespace ?? "")
          .filter((ds) => selectorMatches(ds.spec?.selector, pod.metadata?.labels)),
    }),
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
  ];
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
  const recorder = new EventRecorder({
    client: options.client,
    component: DAEMONSET_CONTROLLER_COMPONENT,
    logger,
    clock,
  });
  const recorderRun = recorder.start(signal);
  try {
    await runController(
      {
        name: "daemonset-controller",
        informers: [daemonSets, pods, nodes],
        queue,
        workers: options.workers ?? 2,
        logger,
        reconcile: async (key, { signal: reconcileSignal, logger: reconcileLogger }) => {
          const ds = daemonSets.store.get(key);
          if (ds === undefined) {
            expectations.forget(key);
            return;
          }
          try {
            return await syncDaemonSet(
              {
                client: options.client,
                recorder,
                logger: reconcileLogger,
                signal: reconcileSignal,
                pods: pods.store,
                nodes: nodes.store,
                expectations,
                failedPodBackoff,
                now: () => clock.now(),
              },
              ds,
            );
          } catch (error) {
            if (isNotFound(error)) return;
            throw error;
          }
        },
      },
      signal,
    );
  } finally {
    queue.shutDown();
    for (const remove of removeHandlers) remove();
    await recorderRun;
  }
}
