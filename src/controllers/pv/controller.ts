// The PV binder loop (kube-controller-manager's persistentvolume-binder-controller): one
// queue of volume names and one of claim keys, each drained by `workers` workers (default 1,
// as upstream runs one volumeWorker and one claimWorker), plus a periodic resync that
// enqueues every volume and claim (--pvclaimbinder-sync-period, 15s) so claims waiting for
// something no event announces (a class created later, a node label) are looked at again.
//
// Why more than one worker per queue cannot bind two claims to one volume (or one claim twice):
// - the work queue never hands one key to two workers at once, so a claim (or a volume) is
//   only ever synced by one worker at a time, as with upstream's single worker;
// - two claims that pick the same Available volume both start their bind with the volume's
//   update (claimRef), and that update carries the resourceVersion the pick was made on: the
//   API server accepts exactly one and answers the other 409 Conflict. The loser writes
//   nothing to its claim (the volume write comes first, upstream's order), is requeued, and
//   its next sync sees the winner's answer (LatestObjects, upstream's assume-cache role) with
//   the claimRef naming the other claim, so it picks another volume or provisions;
// - a volume's writes are all resourceVersion-guarded updates, so the volume and claim
//   workers racing on one volume (as upstream's two workers already do) end the same way.
// binding.server.test.ts races many claims over fewer static volumes on several workers.
//
// Handlers only enqueue: a volume event enqueues the volume and the claim its claimRef
// names; a claim event enqueues the claim and, on delete, the volume it was bound to; a new
// StorageClass, and an unbound volume turning Available, enqueue the Pending claims of that
// class.

import { resolveFeatureGates, type FeatureGates } from "../../migration/index.ts";
import {
  GVR,
  type Node,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
  type StorageClass,
} from "../../api/index.ts";
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
import { LatestObjects } from "../common/index.ts";
import type { PvSyncContext } from "./context.ts";
import { ensurePodClaimIndex } from "../common/index.ts";
import { claimClass, volumeClass } from "./match.ts";
import { syncClaim } from "./sync-claim.ts";
import { syncVolume } from "./sync-volume.ts";

/** Event source of the PV controller, as kube-controller-manager reports it. */
export const PV_CONTROLLER_COMPONENT = "persistentvolume-controller";

export interface PersistentVolumeControllerOptions {
  client: KubeClient;
  informers: InformerFactory;
  logger?: Logger;
  /** --pvclaimbinder-sync-period. Default 15000 ms. */
  syncPeriodMs?: number;
  /**
   * Workers per queue (volumes and claims each get this many). Default 1, as upstream;
   * kube-controller-manager has no flag for it (csikit's own --pv-binder-workers sets it).
   */
  workers?: number;
  /** Resolved --feature-gates (CSI migration's). Default: Kubernetes 1.32's defaults. */
  featureGates?: FeatureGates;
  /** Events go here; default a recorder of this controller's own, started and flushed by it. */
  recorder?: EventRecorder;
  /** Per-item retry backoff start. Default 5 ms, as client-go's DefaultControllerRateLimiter. */
  retryIntervalStartMs?: number;
  /** Default 1000 s, as client-go's DefaultControllerRateLimiter. */
  retryIntervalMaxMs?: number;
  clock?: Clock;
}

function claimKeyOfVolume(volume: PersistentVolume): string | undefined {
  const ref = volume.spec?.claimRef;
  return ref?.name ? `${ref.namespace ?? ""}/${ref.name}` : undefined;
}

export async function startPersistentVolumeController(
  options: PersistentVolumeControllerOptions,
  signal: AbortSignal,
): Promise<void> {
  const logger = (options.logger ?? silentLogger).with({ controller: "persistentvolume-binder-controller" });
  const clock = options.clock ?? realClock;
  const workers = options.workers ?? 1;
  if (!Number.isInteger(workers) || workers < 1)
    throw new Error(`persistentvolume-binder-controller: workers must be a positive integer, got ${workers}`);
  // Informers first, synchronously: the composition root starts the factory after every loop asked.
  const volumeInformer = options.informers.informer<PersistentVolume>(GVR.persistentVolumes);
  const claimInformer = options.informers.informer<PersistentVolumeClaim>(GVR.persistentVolumeClaims);
  const classInformer = options.informers.informer<StorageClass>(GVR.storageClasses);
  const podInformer = options.informers.informer<Pod>(GVR.pods);
  const nodeInformer = options.informers.informer<Node>(GVR.nodes);
  ensurePodClaimIndex(podInformer);

  const rateLimiter = (): ReturnType<typeof controllerRateLimiter<string>> =>
    controllerRateLimiter<string>({
      retryIntervalStartMs: options.retryIntervalStartMs ?? 5,
      retryIntervalMaxMs: options.retryIntervalMaxMs ?? 1_000_000,
      clock,
    });
  const volumeQueue = new WorkQueue<string>({ name: "volumes", rateLimiter: rateLimiter(), clock });
  const claimQueue = new WorkQueue<string>({ name: "claims", rateLimiter: rateLimiter(), clock });
  const volumes = new LatestObjects(volumeInformer.store);
  const claims = new LatestObjects(claimInformer.store);

  const removeHandlers = [
    volumeInformer.addEventHandler({
      onAdd: (volume) => enqueueVolume(volume),
      onUpdate: (_old, volume) => enqueueVolume(volume),
      onDelete: (deleted) => {
        const volume = deletedObject(deleted);
        volumes.forget(objectKey(volume));
        enqueueVolume(volume);
      },
    }),
    claimInformer.addEventHandler({
      onAdd: (claim) => claimQueue.add(objectKey(claim)),
      onUpdate: (_old, claim) => claimQueue.add(objectKey(claim)),
      onDelete: (deleted) => {
        const claim = deletedObject(deleted);
        claims.forget(objectKey(claim));
        if (claim.spec?.volumeName) volumeQueue.add(claim.spec.volumeName);
        // Volumes pointing at the claim without being named by it (a provisioned volume not bound yet).
        for (const volume of volumeInformer.store.list())
          if (claimKeyOfVolume(volume) === objectKey(claim)) volumeQueue.add(objectKey(volume));
      },
    }),
    classInformer.addEventHandler({
      onAdd: (storageClass) => {
        for (const claim of claimInformer.store.list())
          if (!claim.spec?.volumeName && claimClass(claim) === storageClass.metadata?.name)
            claimQueue.add(objectKey(claim));
      },
    }),
  ];
  function enqueueVolume(volume: PersistentVolume): void {
    volumeQueue.add(objectKey(volume));
    const claimKey = claimKeyOfVolume(volume);
    if (claimKey) claimQueue.add(claimKey);
    else if (volume.status?.phase === "Available" && !volume.metadata?.deletionTimestamp) {
      // An unbound volume became usable: the Pending claims of its class need not wait for the
      // periodic resync (upstream waits for it; this only adds syncs, never a different outcome).
      const className = volumeClass(volume);
      for (const claim of claimInformer.store.list())
        if (!claim.spec?.volumeName && claimClass(claim) === className) claimQueue.add(objectKey(claim));
    }
  }

  const ownRecorder = options.recorder === undefined;
  const recorder =
    options.recorder ??
    new EventRecorder({ client: options.client, component: PV_CONTROLLER_COMPONENT, logger, clock });
  const recorderRun = ownRecorder ? recorder.start(signal) : Promise.resolve();

  const featureGates = options.featureGates ?? resolveFeatureGates({});
  const context = (reconcileSignal: AbortSignal, reconcileLogger: Logger): PvSyncContext => ({
    client: options.client,
    recorder,
    logger: reconcileLogger,
    signal: reconcileSignal,
    volumes,
    claims,
    classes: classInformer.store,
    pods: podInformer.store,
    nodes: nodeInformer.store,
    featureGates,
    enqueueClaim: (key) => claimQueue.add(key),
    enqueueVolume: (name) => volumeQueue.add(name),
    now: () => clock.now(),
  });

  const syncPeriodMs = options.syncPeriodMs ?? 15_000;
  let cancelResync = (): void => {};
  const scheduleResync = (): void => {
    if (signal.aborted || syncPeriodMs <= 0) return;
    cancelResync = clock.setTimer(syncPeriodMs, () => {
      if (volumeInformer.hasSynced() && claimInformer.hasSynced()) {
        for (const key of volumeInformer.store.keys()) volumeQueue.add(key);
        for (const key of claimInformer.store.keys()) claimQueue.add(key);
      }
      scheduleResync();
    });
  };
  scheduleResync();
  const informers = [volumeInformer, claimInformer, classInformer, podInformer, nodeInformer];
  try {
    await Promise.all([
      runController(
        {
          name: "persistentvolume-binder-controller/volumes",
          informers,
          queue: volumeQueue,
          workers,
          logger,
          reconcile: async (name, { signal: reconcileSignal, logger: reconcileLogger }) => {
            const volume = volumes.get(name);
            if (volume === undefined) return;
            await syncVolume(context(reconcileSignal, reconcileLogger), volume).catch(ignoreNotFound);
          },
        },
        signal,
      ),
      runController(
        {
          name: "persistentvolume-binder-controller/claims",
          informers,
          queue: claimQueue,
          workers,
          logger,
          reconcile: async (key, { signal: reconcileSignal, logger: reconcileLogger }) => {
            const claim = claims.get(key);
            if (claim === undefined) return;
            await syncClaim(context(reconcileSignal, reconcileLogger), claim).catch(ignoreNotFound);
          },
        },
        signal,
      ),
    ]);
  } finally {
    cancelResync();
    volumeQueue.shutDown();
    claimQueue.shutDown();
    for (const remove of removeHandlers) remove();
    await recorderRun;
  }
}

/** An object deleted under us: its delete event brings the next sync. */
function ignoreNotFound(error: unknown): void {
  if (!isNotFound(error)) throw error;
}
