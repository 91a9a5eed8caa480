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
//
// With PersistentVolumeClaimUnusedSinceTime on (1.37's default; off in 1.36) the same loop keeps
// the claim's "Unused" condition (pvc-unused.ts decides): it also queues a Bound claim that has
// none yet, and the claims of every pod added, deleted or terminated, and writes the condition
// through the status subresource only when it changes. "Used" there is decided on the cache
// alone: a condition is informational, the next pod event corrects a stale answer.

import { FINALIZERS, GVR, type PersistentVolumeClaim, type Pod } from "../../api/index.ts";
import { realClock, silentLogger, type Clock, type Logger } from "../../base/index.ts";
import type { FeatureGates } from "../../migration/index.ts";
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
import { gateEnabled } from "../common/index.ts";
import {
  PVC_UNUSED_GATE,
  claimTracksUnused,
  conditionsWithUnused,
  isPodTerminated as isPodDoneForUnused,
  podUsesClaimForUnused,
  unusedCondition,
} from "./pvc-unused.ts";

const FINALIZER = FINALIZERS.pvcProtection.key;

export interface ProtectionControllerOptions {
  client: KubeClient;
  informers: InformerFactory;
  logger?: Logger;
  /** Concurrent workers. Default 1. */
  workers?: number;
  /** Resolved --feature-gates (PersistentVolumeClaimUnusedSinceTime). Default: csikit's default release's. */
  featureGates?: FeatureGates;
  /** The condition's transition times. Default the real clock. */
  clock?: Clock;
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
  const trackUnused = gateEnabled(options.featureGates, PVC_UNUSED_GATE);
  const clock = options.clock ?? realClock;
  const enqueueClaim = (claim: PersistentVolumeClaim): void => {
    if (
      needToAddFinalizer(claim, FINALIZER) ||
      isDeletionCandidate(claim, FINALIZER) ||
      (trackUnused && claimTracksUnused(claim) && unusedCondition(claim) === undefined)
    )
      queue.add(objectKey(claim));
  };
  // For the finalizer only pod changes that can free a claim matter: deleted, finished, or
  // never scheduled. For the Unused condition a new pod, and one turning terminated, matter too.
  const enqueuePodClaims = (pod: Pod, deleted: boolean, unusedMayChange: boolean): void => {
    if (!deleted && !unusedMayChange && !isPodTerminated(pod) && pod.spec?.nodeName) return;
    for (const key of podClaimKeys(pod)) queue.add(key);
  };
  const removeHandlers = [
    claimInformer.addEventHandler({ onAdd: enqueueClaim, onUpdate: (_old, claim) => enqueueClaim(claim) }),
    podInformer.addEventHandler({
      onAdd: (pod) => enqueuePodClaims(pod, false, trackUnused),
      onUpdate: (old, pod) => {
        enqueuePodClaims(pod, false, trackUnused && isPodDoneForUnused(old) !== isPodDoneForUnused(pod));
        if (old.metadata?.uid !== pod.metadata?.uid) enqueuePodClaims(old, true, trackUnused);
      },
      onDelete: (pod) => enqueuePodClaims(deletedObject(pod), true, trackUnused),
    }),
  ];

  /** Writes the Unused condition when it does not say `inUse` yet (nothing otherwise). */
  async function syncUnused(
    claim: PersistentVolumeClaim,
    reconcileSignal: AbortSignal,
    reconcileLogger: Logger,
  ): Promise<void> {
    const inUse = podInformer.store
      .byIndex(POD_CLAIM_INDEX, objectKey(claim))
      .some((pod) => podUsesClaimForUnused(pod, claim));
    const conditions = conditionsWithUnused(claim, inUse, clock.now());
    if (conditions === undefined) return;
    const updated = structuredClone(claim);
    updated.status = { ...updated.status, conditions };
    await options.client.updateStatus(GVR.persistentVolumeClaims, updated, reconcileSignal);
    reconcileLogger.info(3, "updated PVC Unused condition", { unused: !inUse });
  }

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
            } else if (trackUnused && claimTracksUnused(claim)) {
              // OBSERVATION: a live Bound claim that has its finalizer: keep its condition.
              await syncUnused(claim, reconcileSignal, reconcileLogger);
            } else {
              // OBSERVATION: nothing to do (gate off, claim unbound, or being deleted and used).
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
