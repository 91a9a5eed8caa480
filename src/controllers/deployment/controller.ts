// kube-controller-manager's deployment loop (pkg/controller/deployment): informers on
// Deployments, ReplicaSets and pods feed one queue of Deployment keys. A ReplicaSet event
// enqueues its controlling Deployment (an orphan: every Deployment whose selector matches it,
// to adopt it); a pod deletion enqueues its Deployment (Recreate waits for old pods to go).
// Events are reported as "deployment-controller", as upstream.

import { GVR, type Deployment, type Pod, type ReplicaSet } from "../../api/index.ts";
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
import { controllerOf, selectorMatches } from "../workload/index.ts";
import { syncDeployment } from "./sync.ts";

export const DEPLOYMENT_CONTROLLER_COMPONENT = "deployment-controller";

export interface DeploymentControllerOptions {
  client: KubeClient;
  informers: InformerFactory;
  logger?: Logger;
  /** --concurrent-deployment-syncs. Default 5. */
  workers?: number;
  clock?: Clock;
}

export async function startDeploymentController(
  options: DeploymentControllerOptions,
  signal: AbortSignal,
): Promise<void> {
  const logger = (options.logger ?? silentLogger).with({ controller: "deployment-controller" });
  const clock = options.clock ?? realClock;
  const deployments = options.informers.informer<Deployment>(GVR.deployments);
  const replicaSets = options.informers.informer<ReplicaSet>(GVR.replicaSets);
  const pods = options.informers.informer<Pod>(GVR.pods);
  const queue = new WorkQueue<string>({
    name: "deployment",
    rateLimiter: controllerRateLimiter<string>({ clock }),
    clock,
  });
  const ownerKey = (
    object: { metadata?: { namespace?: string } } & Parameters<typeof controllerOf>[0],
  ): string | undefined => {
    const ref = controllerOf(object);
    if (ref?.kind !== "Deployment") return undefined;
    const key = `${object.metadata?.namespace ?? ""}/${ref.name}`;
    return deployments.store.get(key)?.metadata?.uid === ref.uid ? key : undefined;
  };
  const enqueueForReplicaSet = (rs: ReplicaSet): void => {
    const key = ownerKey(rs);
    if (key !== undefined) {
      queue.add(key);
      return;
    }
    if (controllerOf(rs) !== undefined) return;
    for (const d of deployments.store.listByNamespace(rs.metadata?.namespace ?? ""))
      if (selectorMatches(d.spec?.selector, rs.metadata?.labels)) queue.add(objectKey(d));
  };
  const removeHandlers = [
    deployments.addEventHandler({
      onAdd: (d) => queue.add(objectKey(d)),
      onUpdate: (_old, d) => queue.add(objectKey(d)),
      onDelete: (value) => queue.add(objectKey(deletedObject(value))),
    }),
    replicaSets.addEventHandler({
      onAdd: enqueueForReplicaSet,
      onUpdate: (old, rs) => {
        const oldKey = ownerKey(old);
        if (oldKey !== undefined && controllerOf(old)?.uid !== controllerOf(rs)?.uid) queue.add(oldKey);
        enqueueForReplicaSet(rs);
      },
      onDelete: (value) => {
        const key = ownerKey(deletedObject(value));
        if (key !== undefined) queue.add(key);
      },
    }),
    pods.addEventHandler({
      onDelete: (value) => {
        const pod = deletedObject(value);
        const ref = controllerOf(pod);
        if (ref?.kind !== "ReplicaSet") return;
        const rs = replicaSets.store.get(`${pod.metadata?.namespace ?? ""}/${ref.name}`);
        if (rs === undefined) return;
        const key = ownerKey(rs);
        if (key !== undefined && deployments.store.get(key)?.spec?.strategy?.type === "Recreate")
          queue.add(key);
      },
    }),
  ];
  const recorder = new EventRecorder({
    client: options.client,
    component: DEPLOYMENT_CONTROLLER_COMPONENT,
    logger,
    clock,
  });
  const recorderRun = recorder.start(signal);
  try {
    await runController(
      {
        name: "deployment-controller",
        informers: [deployments, replicaSets, pods],
        queue,
        workers: options.workers ?? 5,
        logger,
        reconcile: async (key, { signal: reconcileSignal, logger: reconcileLogger }) => {
          const d = deployments.store.get(key);
          if (d === undefined) return;
          try {
            return await syncDeployment(
              {
                client: options.client,
                recorder,
                logger: reconcileLogger,
                signal: reconcileSignal,
                pods: pods.store,
                now: () => clock.now(),
              },
              structuredClone(d),
              replicaSets.store,
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
