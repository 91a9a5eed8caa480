// kube-controller-manager's replicaset loop (pkg/controller/replicaset): informers on
// ReplicaSets and pods feed one queue of ReplicaSet keys; handlers only enqueue (and settle
// expectations), the sync in sync.ts decides and writes. Events are reported as
// "replicaset-controller", as upstream.

import { GVR, type Pod, type ReplicaSet } from "../../api/index.ts";
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
import { syncReplicaSet } from "./sync.ts";

export const REPLICASET_CONTROLLER_COMPONENT = "replicaset-controller";

export interface ReplicaSetControllerOptions {
  client: KubeClient;
  informers: InformerFactory;
  logger?: Logger;
  /** --concurrent-replicaset-syncs. Default 5. */
  workers?: number;
  clock?: Clock;
}

export async function startReplicaSetController(
  options: ReplicaSetControllerOptions,
  signal: AbortSignal,
): Promise<void> {
  const logger = (options.logger ?? silentLogger).with({ controller: "replicaset-controller" });
  const clock = options.clock ?? realClock;
  const rsInformer = options.informers.informer<ReplicaSet>(GVR.replicaSets);
  const podInformer = options.informers.informer<Pod>(GVR.pods);
  const queue = new WorkQueue<string>({
    name: "replicaset",
    rateLimiter: controllerRateLimiter<string>({ clock }),
    clock,
  });
  const expectations = new ControllerExpectations(clock);
  const removeHandlers = [
    rsInformer.addEventHandler({
      onAdd: (rs) => queue.add(objectKey(rs)),
      onUpdate: (_old, rs) => queue.add(objectKey(rs)),
      onDelete: (value) => {
        const key = objectKey(deletedObject(value));
        expectations.forget(key);
        queue.add(key);
      },
    }),
    registerPodOwnerHandlers(podInformer, {
      kind: "ReplicaSet",
      owners: rsInformer,
      expectations,
      enqueue: (key) => queue.add(key),
      matchingOwners: (pod) =>
        rsInformer.store
          .listByNamespace(pod.metadata?.namespace ?? "")
          .filter((rs) => selectorMatches(rs.spec?.selector, pod.metadata?.labels)),
    }),
  ];
  const recorder = new EventRecorder({
    client: options.client,
    component: REPLICASET_CONTROLLER_COMPONENT,
    logger,
    clock,
  });
  const recorderRun = recorder.start(signal);
  try {
    await runController(
      {
        name: "replicaset-controller",
        informers: [rsInformer, podInformer],
        queue,
        workers: options.workers ?? 5,
        logger,
        reconcile: async (key, { signal: reconcileSignal, logger: reconcileLogger }) => {
          const rs = rsInformer.store.get(key);
          if (rs === undefined) {
            expectations.forget(key);
            return;
          }
          try {
            return await syncReplicaSet(
              {
                client: options.client,
                recorder,
                logger: reconcileLogger,
                signal: reconcileSignal,
                pods: podInformer.store,
                expectations,
                now: () => clock.now(),
              },
              rs,
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
