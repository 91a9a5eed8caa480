// kube-controller-manager's deployment loop (pkg/controller/deployment): informers on
// Deployments, ReplicaSets and pods feed one queue of Deployment keys. A ReplicaSet event
// enqueues its controlling Deployment (an orphan: every Deployment whose selector matches it,
// to adopt it); a pod deletion enqueues its Deployment (Recreate waits for old pods to go).
// Events are reported as "deployment-controller", as upstream.

import { GVR, type Deployment, type Pod, type ReplicaSet } from "../../api/index.ts";
import type { Clock, Logger } from "../../base/index.ts";
import { deletedObject, objectKey, type InformerFactory, type KubeClient } from "../../kube/index.ts";
import { WorkloadLoop, controllerOf, selectorMatches } from "../workload/index.ts";
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
  const { client } = options;
  const deployments = options.informers.informer<Deployment>(GVR.deployments);
  const replicaSets = options.informers.informer<ReplicaSet>(GVR.replicaSets);
  const pods = options.informers.informer<Pod>(GVR.pods);
  const loop = new WorkloadLoop({
    name: DEPLOYMENT_CONTROLLER_COMPONENT,
    queueName: "deployment",
    client,
    logger: options.logger,
    clock: options.clock,
  });
  const { queue } = loop;
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
  loop.handle(
    deployments.addEventHandler(loop.ownerHandlers<Deployment>()),
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
  );
  await loop.run(
    [
      {
        name: DEPLOYMENT_CONTROLLER_COMPONENT,
        informers: [deployments, replicaSets, pods],
        queue,
        workers: options.workers ?? 5,
        reconcile: loop.reconcileOwner(
          (key) => deployments.store.get(key),
          (d, tools) =>
            syncDeployment(
              { client, ...tools, pods: pods.store, now: () => loop.clock.now() },
              structuredClone(d),
              replicaSets.store,
            ),
        ),
      },
    ],
    signal,
  );
}
