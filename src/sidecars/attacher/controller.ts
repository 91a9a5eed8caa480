// `runAttacher(options, signal)`: the composition root of the attacher sidecar, on the start-up
// every controller sidecar shares (runSidecar in src/kube/sidecar.ts):
//   1. connect to the driver, Probe until ready, GetPluginInfo and capabilities (any error is
//      fatal: the promise rejects and the CLI exits non-zero, as upstream);
//   2. the diagnostics endpoint (metrics incl. csi_sidecar_operations_seconds and the
//      csi-attacher-va / csi-attacher-va-detach / csi-attacher-pv work queues,
//      /healthz/leader-election);
//   3. under leader election on the Lease `external-attacher-leader-<driver>`, the controllers
//      sharing one informer factory: VolumeAttachments in two lanes (lanes.ts: attaches and
//      detaches queued apart, --worker-threads workers each, so detaches cannot starve
//      attaches; or the trivial handler without PUBLISH_UNPUBLISH_VOLUME) and PVs (as many
//      workers; the PV finalizer), plus the --reconcile-sync loop when the driver can list
//      published nodes.
// Resolves once everything has stopped after `signal` aborts (workers drained, lease
// released, sockets closed); rejects with LeadershipLostError when the lease is lost.
// `startAttacher(options)` wraps it in a handle for in-process callers (`csikit up`).

import {
  GVR,
  attacherFinalizer,
  type CSINode,
  type PersistentVolume,
  type VolumeAttachment,
} from "../../api/index.ts";
import {
  EventRecorder,
  ItemExponentialRateLimiter,
  WorkQueue,
  deletedObject,
  runController,
  runSidecar,
  startsDeletion,
  type SidecarParts,
} from "../../kube/index.ts";
import { isMigratedCSIDriverByName } from "../../migration/index.ts";
import { syncAttachment } from "./attachment-sync.ts";
import { AttachmentLanes, LANE_QUEUE_NAMES } from "./lanes.ts";
import { attachmentChangeMatters } from "./changes.ts";
import type { AttacherContext } from "./context.ts";
import { discoverAttacherDriver, type AttacherDriverInfo } from "./driver.ts";
import { ATTACHER_FEATURE_GATE_DEFAULTS, type AttacherOptions } from "./options.ts";
import { runReconcileLoop } from "./reconcile.ts";
import { BY_VOLUME, syncVolume, volumeNeedsSync } from "./volume-sync.ts";

export async function runAttacher(options: AttacherOptions, signal: AbortSignal): Promise<void> {
  await runSidecar<AttacherDriverInfo>(
    options,
    {
      component: "attacher",
      discover: (csi, discoverSignal) =>
        discoverAttacherDriver(csi, { timeoutMs: options.timeoutMs, signal: discoverSignal }),
      describe: (driver) => ({
        handler: driver.publishUnpublish ? "csi" : "trivial",
        reconcile: driver.publishUnpublish && driver.listVolumesPublishedNodes,
      }),
      isMigrationTarget: isMigratedCSIDriverByName,
      leaderElection: options.leaderElection.enabled,
      releaseLeaseOnExit: options.releaseLeaderElectionOnExit,
      prepare: async (parts) => (workSignal) => runControllers({ options, ...parts }, workSignal),
    },
    signal,
  );
}

type RunParts = SidecarParts<AttacherDriverInfo> & { options: AttacherOptions };

async function runControllers(parts: RunParts, signal: AbortSignal): Promise<void> {
  const { options, driver, client, csi, queueMetrics, logger, clock } = parts;
  const factory = parts.informers({ resyncPeriodMs: options.resyncMs });
  const attachments = factory.informer<VolumeAttachment>(GVR.volumeAttachments);
  // A PV's finalizer waits for the attachments naming it: looked up per PV sync, so indexed.
  attachments.addIndexer(BY_VOLUME, (va) => {
    const pvName = va.spec.source.persistentVolumeName;
    return pvName ? [pvName] : [];
  });
  const volumes = factory.informer<PersistentVolume>(GVR.persistentVolumes);
  const csiNodes = factory.informer<CSINode>(GVR.csiNodes);
  const events = new EventRecorder({ client, component: `csi-attacher ${driver.name}`, logger, clock });
  const ctx: AttacherContext = {
    client,
    csi,
    driver,
    finalizer: attacherFinalizer(driver.name),
    timeoutMs: options.timeoutMs,
    errorCodes:
      options.featureGates.MutableCSINodeAllocatableCount ??
      ATTACHER_FEATURE_GATE_DEFAULTS.MutableCSINodeAllocatableCount!,
    defaultFsType: options.defaultFsType,
    maxEntries: options.maxEntries,
    attachments: attachments.store,
    volumes: volumes.store,
    csiNodes: csiNodes.store,
    events,
    forceSync: new Set(),
    superseded: new Map(),
    logger,
    clock,
  };
  const queue = (name: string): WorkQueue<string> =>
    new WorkQueue<string>({
      name,
      rateLimiter: new ItemExponentialRateLimiter<string>({
        baseMs: options.retryIntervalStartMs,
        maxMs: options.retryIntervalMaxMs,
      }),
      clock,
      metrics: queueMetrics,
    });
  // Upstream's queue names (the attach lane keeps csi-attacher-va), so the workqueue_* metrics
  // read the same; detaches wait in a lane of their own (lanes.ts).
  const vaQueues = {
    attach: queue(LANE_QUEUE_NAMES.attach),
    detach: queue(LANE_QUEUE_NAMES.detach),
  };
  const pvQueue = queue("csi-attacher-pv");
  const lanes = new AttachmentLanes({
    queues: vaQueues,
    attachments: attachments.store,
    sync: (key, rc) => syncAttachment(ctx, key, rc),
  });
  attachments.addEventHandler({
    onAdd: (va) => lanes.enqueue(va.metadata.name!),
    onUpdate: (old, va) => {
      // A failing attachment keeps its backoff (the queue's hold) until it is deleted: detach
      // is another operation, started at once.
      if (startsDeletion(old, va)) lanes.enqueueDetach(va.metadata.name!);
      else if (attachmentChangeMatters(old, va)) lanes.enqueue(va.metadata.name!);
    },
    onDelete: (object) => {
      const gone = deletedObject(object);
      // Names are deterministic (csi-<sha256>): a re-created attachment starts with no marks.
      ctx.forceSync.delete(gone.metadata.name!);
      ctx.superseded.delete(gone.metadata.name!);
      const pvName = gone.spec.source.persistentVolumeName;
      // The last attachment of a PV going away is what its finalizer waits for.
      if (pvName) pvQueue.add(pvName);
    },
  });
  const onVolume = (pv: PersistentVolume): void => {
    if (volumeNeedsSync(pv, ctx.finalizer)) pvQueue.add(pv.metadata.name!);
  };
  volumes.addEventHandler({ onAdd: onVolume, onUpdate: (_old, pv) => onVolume(pv) });
  const informers = [attachments, volumes, csiNodes];
  const reconcile =
    driver.publishUnpublish && driver.listVolumesPublishedNodes
      ? (async () => {
          await factory.waitForCacheSync(signal).catch(() => undefined);
          if (signal.aborted) return;
          await runReconcileLoop(
            ctx,
            { periodMs: options.reconcileSyncMs, enqueue: (name) => lanes.enqueue(name) },
            signal,
          );
        })()
      : Promise.resolve();
  await Promise.all([
    factory.start(signal),
    events.start(signal),
    reconcile,
    ...(["attach", "detach"] as const).map((lane) =>
      runController(
        {
          name: lane === "attach" ? "volumeattachments" : "volumeattachments-detach",
          informers,
          queue: vaQueues[lane],
          workers: options.workerThreads,
          logger,
          reconcile: lanes.reconciler(lane),
        },
        signal,
      ),
    ),
    runController(
      {
        name: "persistentvolumes",
        informers,
        queue: pvQueue,
        workers: options.workerThreads,
        logger,
        reconcile: (key, rc) => syncVolume(ctx, key, rc),
      },
      signal,
    ),
  ]);
}

/** A running attacher as an in-process caller holds it. */
export interface AttacherHandle {
  /** Settles when the attacher has stopped: resolves after close(), rejects on a fatal error. */
  readonly done: Promise<void>;
  /** Stops it and waits until everything has stopped (lease released, sockets closed); never rejects. */
  close(): Promise<void>;
}

/** Starts the attacher in-process; stop it with `close()` (or by aborting `signal`). */
export function startAttacher(options: AttacherOptions, signal?: AbortSignal): AttacherHandle {
  const controller = new AbortController();
  const onAbort = (): void => controller.abort();
  if (signal?.aborted) controller.abort();
  else signal?.addEventListener("abort", onAbort, { once: true });
  const done = runAttacher(options, controller.signal).finally(() =>
    signal?.removeEventListener("abort", onAbort),
  );
  // Observed here so a fatal start-up error is never an unhandled rejection; callers see it on `done`.
  done.catch(() => undefined);
  return {
    done,
    async close() {
      controller.abort();
      await done.catch(() => undefined);
    },
  };
}
