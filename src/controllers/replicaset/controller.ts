// kube-controller-manager's replicaset loop (pkg/controller/replicaset): informers on
// ReplicaSets and pods feed one queue of ReplicaSet keys; handlers only enqueue (and settle
// expectations), the sync in sync.ts decides and writes. The wiring shared with the other
// workload loops is workload/loop.ts's. Events are reported as "replicaset-controller", as
// upstream.

import { GVR, type Pod, type ReplicaSet } from "../../api/index.ts";
import type { Clock, Logger } from "../../base/index.ts";
import type { InformerFactory, KubeClient } from "../../kube/index.ts";
import { ControllerExpectations, WorkloadLoop } from "../workload/index.ts";
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
  const { client } = options;
  const rsInformer = options.informers.informer<ReplicaSet>(GVR.replicaSets);
  const podInformer = options.informers.informer<Pod>(GVR.pods);
  const expectations = new ControllerExpectations(options.clock);
  const loop = new WorkloadLoop({
    name: REPLICASET_CONTROLLER_COMPONENT,
    queueName: "replicaset",
    client,
    logger: options.logger,
    clock: options.clock,
    expectations,
  });
  loop.handle(
    rsInformer.addEventHandler(loop.ownerHandlers<ReplicaSet>()),
    loop.podOwnerHandlers(podInformer, "ReplicaSet", rsInformer),
  );
  await loop.run(
    [
      {
        name: REPLICASET_CONTROLLER_COMPONENT,
        informers: [rsInformer, podInformer],
        queue: loop.queue,
        workers: options.workers ?? 5,
        reconcile: loop.reconcileOwner(
          (key) => rsInformer.store.get(key),
          (rs, tools) =>
            syncReplicaSet(
              { client, ...tools, pods: podInformer.store, expectations, now: () => loop.clock.now() },
              rs,
            ),
        ),
      },
    ],
    signal,
  );
}
