// kube-controller-manager's statefulset-controller (wiring, on workload/loop.ts's; the
// decisions are in sync.ts):
// informers on StatefulSets, Pods, ControllerRevisions and PersistentVolumeClaims, one queue
// of set keys drained by --concurrent-statefulset-syncs workers (5).
//
// Handlers only enqueue: a set's own events; a pod's events enqueue the set its controller
// reference names; a claim's update or delete enqueues the sets in its namespace whose claim
// names it could carry (a new pod may wait for a stale claim to go). A reconcile lists the
// set's pods and revisions from the caches by controller UID; pods this controller created
// and the informer has not delivered yet are added, so a quick second sync neither creates
// them again nor misses them in its status.

import {
  GVR,
  type ControllerRevision,
  type PersistentVolumeClaim,
  type Pod,
  type StatefulSet,
} from "../../api/index.ts";
import type { Clock, Logger } from "../../base/index.ts";
import {
  deletedObject,
  enqueueHandlers,
  objectKey,
  type InformerFactory,
  type KubeClient,
  type KubeObject,
} from "../../kube/index.ts";
import { LatestObjects } from "../common/index.ts";
import { WorkloadLoop } from "../workload/index.ts";
import { isMemberOf } from "./identity.ts";
import { syncStatefulSet, type StatefulSetSyncContext } from "./sync.ts";

/** Event source of the controller, as kube-controller-manager reports it. */
export const STATEFULSET_CONTROLLER_COMPONENT = "statefulset-controller";

const CONTROLLER_UID_INDEX = "statefulset-controller/controller-uid";

export interface StatefulSetControllerOptions {
  client: KubeClient;
  informers: InformerFactory;
  logger?: Logger;
  /** --concurrent-statefulset-syncs. Default 5. */
  workers?: number;
  clock?: Clock;
}

/** The UID of an object's controller, when that controller is a StatefulSet. */
function statefulSetControllerOf(object: KubeObject): { name: string; uid: string } | undefined {
  const ref = (object.metadata?.ownerReferences ?? []).find((candidate) => candidate.controller === true);
  if (!ref || ref.kind !== "StatefulSet" || !ref.apiVersion.startsWith("apps/")) return undefined;
  return { name: ref.name, uid: ref.uid };
}

function controllerUidIndex(object: KubeObject): string[] {
  const owner = statefulSetControllerOf(object);
  return owner ? [`${object.metadata?.namespace ?? ""}/${owner.uid}`] : [];
}

export async function startStatefulSetController(
  options: StatefulSetControllerOptions,
  signal: AbortSignal,
): Promise<void> {
  const workers = options.workers ?? 5;
  if (!Number.isInteger(workers) || workers < 1)
    throw new Error(`statefulset-controller: workers must be a positive integer, got ${workers}`);
  const setInformer = options.informers.informer<StatefulSet>(GVR.statefulSets);
  const podInformer = options.informers.informer<Pod>(GVR.pods);
  const revisionInformer = options.informers.informer<ControllerRevision>(GVR.controllerRevisions);
  const claimInformer = options.informers.informer<PersistentVolumeClaim>(GVR.persistentVolumeClaims);
  podInformer.addIndexer(CONTROLLER_UID_INDEX, controllerUidIndex);
  revisionInformer.addIndexer(CONTROLLER_UID_INDEX, controllerUidIndex);

  const loop = new WorkloadLoop({
    name: STATEFULSET_CONTROLLER_COMPONENT,
    queueName: "statefulset",
    client: options.client,
    logger: options.logger,
    clock: options.clock,
    retryIntervalStartMs: 5,
    retryIntervalMaxMs: 1_000_000,
  });
  const { queue, clock, recorder } = loop;
  const sets = new LatestObjects(setInformer.store);
  /** Pods created here and not yet in the cache, by key. */
  const created = new Map<string, Pod>();

  const enqueueOwner = (pod: Pod): void => {
    const owner = statefulSetControllerOf(pod);
    if (owner) queue.add(`${pod.metadata?.namespace ?? ""}/${owner.name}`);
  };
  const enqueueClaimSets = (claim: PersistentVolumeClaim): void => {
    const namespace = claim.metadata?.namespace ?? "";
    const name = claim.metadata?.name ?? "";
    for (const set of setInformer.store.listByNamespace(namespace))
      for (const template of set.spec?.volumeClaimTemplates ?? [])
        if (name.startsWith(`${template.metadata?.name ?? ""}-${set.metadata.name ?? ""}-`))
          queue.add(objectKey(set));
  };
  loop.handle(
    setInformer.addEventHandler({
      ...enqueueHandlers<StatefulSet>(queue),
      onDelete: (deleted) => {
        const set = deletedObject(deleted);
        sets.forget(objectKey(set));
        queue.add(objectKey(set));
      },
    }),
    podInformer.addEventHandler({
      onAdd: (pod) => {
        created.delete(objectKey(pod));
        enqueueOwner(pod);
      },
      onUpdate: (_old, pod) => enqueueOwner(pod),
      onDelete: (deleted) => {
        const pod = deletedObject(deleted);
        created.delete(objectKey(pod));
        enqueueOwner(pod);
      },
    }),
    claimInformer.addEventHandler({
      onUpdate: (_old, claim) => enqueueClaimSets(claim),
      onDelete: (deleted) => enqueueClaimSets(deletedObject(deleted)),
    }),
  );

  const podsOf = (set: StatefulSet): Pod[] => {
    const namespace = set.metadata.namespace ?? "";
    const key = `${namespace}/${set.metadata.uid ?? ""}`;
    const pods = podInformer.store.byIndex(CONTROLLER_UID_INDEX, key);
    const known = new Set(pods.map((pod) => objectKey(pod)));
    for (const [podKey, pod] of created)
      if (!known.has(podKey) && controllerUidIndex(pod)[0] === key) pods.push(pod);
    return pods.filter((pod) => isMemberOf(set, pod));
  };

  await loop.run(
    [
      {
        name: STATEFULSET_CONTROLLER_COMPONENT,
        informers: [setInformer, podInformer, revisionInformer, claimInformer],
        queue,
        workers,
        reconcile: async (key, { signal: reconcileSignal, logger: reconcileLogger }) => {
          const set = sets.get(key);
          if (set === undefined) return;
          const namespace = set.metadata.namespace ?? "";
          const context: StatefulSetSyncContext = {
            client: options.client,
            recorder,
            logger: reconcileLogger,
            signal: reconcileSignal,
            claims: claimInformer.store,
            now: () => clock.now(),
            rememberSet: (written) => sets.remember(written),
            rememberPod: (pod) => created.set(objectKey(pod), pod),
          };
          const revisions = revisionInformer.store.byIndex(
            CONTROLLER_UID_INDEX,
            `${namespace}/${set.metadata.uid ?? ""}`,
          );
          return syncStatefulSet(context, set, podsOf(set), revisions);
        },
      },
    ],
    signal,
  );
}
