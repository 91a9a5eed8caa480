// kubernetes.io/pvc-protection (kube-controller-manager's
// persistentvolumeclaim-protection-controller, pkg/controller/volume/pvcprotection): a claim
// being deleted keeps its finalizer while a scheduled pod uses it, and loses it once no pod
// does; a live claim without the finalizer gets it (the admission plugin normally adds it).
//
// As upstream: only pods with spec.nodeName count (the kubelet refuses to start a pod whose
// claim is being deleted); every pod object that exists counts, whatever its phase, until it
// is removed — except, for generic ephemeral claims, a pod already shut down (deletion
// timestamp with grace 0). "Unused" is decided on the cache and confirmed with a live list of
// the namespace's pods, so a stale cache cannot drop the finalizer of a claim in use.

import { FINALIZERS, GVR, type PersistentVolumeClaim, type Pod } from "../../api/index.ts";
import { silentLogger, type Logger } from "../../base/index.ts";
import {
  WorkQueue,
  controllerRateLimiter,
  deletedObject,
  isNotFound,
  objectKey,
  runController,
  type InformerFactory,
  type KubeClient,
} from "../../kube/index.ts";
import { POD_CLAIM_INDEX, ensurePodClaimIndex, podClaimKeys } from "../common/index.ts";

const FINALIZER = FINALIZERS.pvcProtection.key;

export interface ProtectionControllerOptions {
  client: KubeClient;
  informers: InformerFactory;
  logger?: Logger;
  /** Concurrent workers. Default 1. */
  workers?: number;
}

function podIsShutDown(pod: Pod): boolean {
  return pod.metadata?.deletionTimestamp !== undefined && pod.metadata.deletionGracePeriodSeconds === 0;
}

function isPodTerminated(pod: Pod): boolean {
  return pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed";
}

/** Whether this pod keeps the claim in use. */
export function podUsesClaim(pod: Pod, claim: PersistentVolumeClaim): boolean {
  if (!pod.spec?.nodeName) return false;
  const claimName = claim.metadata?.name;
  for (const volume of pod.spec.volumes ?? []) {
    if (volume.persistentVolumeClaim?.claimName === claimName) return true;
    if (
      volume.ephemeral &&
      !podIsShutDown(pod) &&
      `${pod.metadata?.name}-${volume.name}` === claimName &&
      (claim.metadata?.ownerReferences ?? []).some(
        (ref) => ref.controller === true && ref.uid === pod.metadata?.uid,
      )
    )
      return true;
  }
  return false;
}

export function isDeletionCandidate(
  object: { metadata?: { deletionTimestamp?: string; finalizers?: string[] } },
  finalizer: string,
): boolean {
  return (
    object.metadata?.deletionTimestamp !== undefined && (object.metadata.finalizers ?? []).includes(finalizer)
  );
}

export function needToAddFinalizer(
  object: { metadata?: { deletionTimestamp?: string; finalizers?: string[] } },
  finalizer: string,
): boolean {
  return (
    object.metadata?.deletionTimestamp === undefined &&
    !(object.metadata?.finalizers ?? []).includes(finalizer)
  );
}

/** Merge patch of the finalizer list, guarded by the resourceVersion we decided on. */
export function finalizerPatch(
  object: { metadata?: { resourceVersion?: string; finalizers?: string[] } },
  finalizers: string[],
): unknown {
  return { metadata: { resourceVersion: object.metadata?.resourceVersion, finalizers } };
}

export async function startPvcProtectionController(
  options: ProtectionControllerOptions,
  signal: AbortSignal,
): Promise<void> {
  const logger = (options.logger ?? silentLogger).with({
    controller: "persistentvolumeclaim-protection-controller",
  });
  const claimInformer = options.informers.informer<PersistentVolumeClaim>(GVR.persistentVolumeClaims);
  const podInformer = options.informers.informer<Pod>(GVR.pods);
  ensurePodClaimIndex(podInformer);
  const queue = new WorkQueue<string>({
    name: "pvcprotection",
    rateLimiter: controllerRateLimiter<string>({ retryIntervalStartMs: 5, retryIntervalMaxMs: 1_000_000 }),
  });
  const enqueueClaim = (claim: PersistentVolumeClaim): void => {
    if (needToAddFinalizer(claim, FINALIZER) || isDeletionCandidate(claim, FINALIZER))
      queue.add(objectKey(claim));
  };
  // Only pod changes that can free a claim matter: deleted, finished, or never scheduled.
  const enqueuePodClaims = (pod: Pod, deleted: boolean): void => {
    if (!deleted && !isPodTerminated(pod) && pod.spec?.nodeName) return;
    for (const key of podClaimKeys(pod)) queue.add(key);
  };
  const removeHandlers = [
    claimInformer.addEventHandler({ onAdd: enqueueClaim, onUpdate: (_old, claim) => enqueueClaim(claim) }),
    podInformer.addEventHandler({
      onAdd: (pod) => enqueuePodClaims(pod, false),
      onUpdate: (old, pod) => {
        enqueuePodClaims(pod, false);
        if (old.metadata?.uid !== pod.metadata?.uid) enqueuePodClaims(old, true);
      },
      onDelete: (pod) => enqueuePodClaims(deletedObject(pod), true),
    }),
  ];

  async function inUse(claim: PersistentVolumeClaim, reconcileSignal: AbortSignal): Promise<boolean> {
    const key = objectKey(claim);
    if (podInformer.store.byIndex(POD_CLAIM_INDEX, key).some((pod) => podUsesClaim(pod, claim))) return true;
    const live = await options.client.list<Pod>(
      GVR.pods,
      { namespace: claim.metadata?.namespace ?? "" },
      reconcileSignal,
    );
    return live.items.some((pod) => podUsesClaim(pod, claim));
  }

  try {
    await runController(
      {
        name: "persistentvolumeclaim-protection-controller",
        informers: [claimInformer, podInformer],
        queue,
        workers: options.workers ?? 1,
        logger,
        reconcile: async (key, { signal: reconcileSignal, logger: reconcileLogger }) => {
          const claim = claimInformer.store.get(key);
          if (claim === undefined) return;
          const finalizers = claim.metadata?.finalizers ?? [];
          try {
            if (isDeletionCandidate(claim, FINALIZER)) {
              if (await inUse(claim, reconcileSignal)) {
                reconcileLogger.info(2, "keeping PVC because it is being used");
                return;
              }
              await options.client.patch(
                GVR.persistentVolumeClaims,
                claim.metadata?.name ?? "",
                finalizerPatch(
                  claim,
                  finalizers.filter((f) => f !== FINALIZER),
                ),
                { namespace: claim.metadata?.namespace ?? "" },
                reconcileSignal,
              );
              reconcileLogger.info(3, "removed PVC protection finalizer");
            } else if (needToAddFinalizer(claim, FINALIZER)) {
              await options.client.patch(
                GVR.persistentVolumeClaims,
                claim.metadata?.name ?? "",
                finalizerPatch(claim, [...finalizers, FINALIZER]),
                { namespace: claim.metadata?.namespace ?? "" },
                reconcileSignal,
              );
              reconcileLogger.info(3, "added PVC protection finalizer");
            }
          } catch (error) {
            if (!isNotFound(error)) throw error;
          }
        },
      },
      signal,
    );
  } finally {
    for (const remove of removeHandlers) remove();
  }
}
