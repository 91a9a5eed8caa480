// The pod handlers every pod-owning loop registers (upstream's addPod/updatePod/deletePod of
// the ReplicaSet, DaemonSet and Job controllers): a pod event enqueues its controller when that
// controller is of our kind (and settles the expectation it answers), or, for an orphan, every
// owner whose selector matches it, so one of them adopts it. A pod that starts terminating
// counts as deleted, as upstream: it no longer counts as a replica.

import type { Pod } from "../../api/index.ts";
import {
  deletedObject,
  objectKey,
  type KubeObject,
  type SharedInformer,
  type Tombstone,
} from "../../kube/index.ts";
import type { ControllerExpectations } from "./expectations.ts";
import { controllerOf } from "./pods.ts";

export interface PodOwnerHandlers<O extends KubeObject> {
  /** The owner kind handled ("ReplicaSet", "DaemonSet", "Job"). */
  kind: string;
  owners: SharedInformer<O>;
  expectations: ControllerExpectations;
  enqueue(key: string): void;
  /** Owners of this kind whose selector matches an orphan pod. */
  matchingOwners(pod: Pod): O[];
}

function ownerKeyOf<O extends KubeObject>(options: PodOwnerHandlers<O>, pod: Pod): string | undefined {
  const ref = controllerOf(pod);
  if (ref === undefined || ref.kind !== options.kind) return undefined;
  const key = `${pod.metadata?.namespace ?? ""}/${ref.name}`;
  const owner = options.owners.store.get(key);
  return owner?.metadata?.uid === ref.uid ? key : undefined;
}

export function registerPodOwnerHandlers<O extends KubeObject>(
  pods: SharedInformer<Pod>,
  options: PodOwnerHandlers<O>,
): () => void {
  const enqueueOrphanOwners = (pod: Pod): void => {
    for (const owner of options.matchingOwners(pod)) options.enqueue(objectKey(owner));
  };
  const onDelete = (value: Pod | Tombstone<Pod>): void => {
    const pod = deletedObject(value);
    const key = ownerKeyOf(options, pod);
    if (key === undefined) return;
    options.expectations.deletionObserved(key, pod.metadata?.uid ?? "");
    options.enqueue(key);
  };
  return pods.addEventHandler({
    onAdd: (pod) => {
      if (pod.metadata?.deletionTimestamp !== undefined) {
        onDelete(pod);
        return;
      }
      const ref = controllerOf(pod);
      if (ref !== undefined) {
        const key = ownerKeyOf(options, pod);
        if (key === undefined) return;
        options.expectations.creationObserved(key);
        options.enqueue(key);
        return;
      }
      enqueueOrphanOwners(pod);
    },
    onUpdate: (old, pod) => {
      if (old.metadata?.resourceVersion === pod.metadata?.resourceVersion) return;
      if (pod.metadata?.deletionTimestamp !== undefined && old.metadata?.deletionTimestamp === undefined) {
        onDelete(pod);
        // The old owner still gets a sync below if the reference changed too.
      }
      const oldRef = controllerOf(old);
      const ref = controllerOf(pod);
      if (oldRef !== undefined && oldRef.uid !== ref?.uid) {
        const oldKey = ownerKeyOf(options, old);
        if (oldKey !== undefined) options.enqueue(oldKey);
      }
      if (ref !== undefined) {
        const key = ownerKeyOf(options, pod);
        if (key !== undefined) options.enqueue(key);
        return;
      }
      enqueueOrphanOwners(pod);
    },
    onDelete,
  });
}
