// `runSnapshotter(options, signal)`: the composition root of the csi-snapshotter sidecar, on the
// start-up every controller sidecar shares (runSidecar in src/kube/sidecar.ts):
//   1. connect to the driver, Probe until ready, GetPluginInfo and the capabilities (no
//      CREATE_DELETE_SNAPSHOT is fatal: the promise rejects and the CLI exits non-zero);
//   2. the diagnostics endpoint (csi_sidecar_operations_seconds, the csi-snapshotter-content and
//      csi-snapshotter-groupsnapshotcontent work queues, /healthz/leader-election);
//   3. under leader election on the Lease `external-snapshotter-leader-<driver>`, the content
//      controller (--worker-threads workers) and, with the CSIVolumeGroupSnapshot gate, the group
//      content controller (as many), sharing one informer factory. With --node-deployment only
//      the contents labelled snapshot.storage.kubernetes.io/managed-by=<NODE_NAME> are watched.
//      The group controller waits for its own caches only, so a cluster without the group CRDs
//      still snapshots single volumes.
// Resolves once everything has stopped after `signal` aborts; rejects with LeadershipLostError
// when the lease is lost. `startSnapshotter(options)` wraps it in a handle for in-process callers.

import {
  GVR,
  type VolumeGroupSnapshotClass,
  type VolumeGroupSnapshotContent,
  type VolumeSnapshotClass,
  type VolumeSnapshotContent,
} from "../../api/index.ts";
import { silentLogger } from "../../base/index.ts";
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
import { contentChangeMatters } from "./changes.ts";
import { syncContentKey } from "./content-sync.ts";
import type { SnapshotterContext } from "./context.ts";
import { discoverSnapshotterDriver, type SnapshotterDriverInfo } from "./driver.ts";
import { syncGroupContentKey } from "./group-sync.ts";
import { MANAGED_BY_LABEL } from "./names.ts";
import type { SnapshotterOptions } from "./options.ts";

export async function runSnapshotter(options: SnapshotterOptions, signal: AbortSignal): Promise<void> {
  await runSidecar<SnapshotterDriverInfo>(
    options,
    {
      component: "snapshotter",
      discover: (csi, discoverSignal) =>
        discoverSnapshotterDriver(csi, {
          timeoutMs: options.timeoutMs,
          signal: discoverSignal,
          groupSnapshots: options.volumeGroupSnapshots,
          logger: options.logger ?? silentLogger,
        }),
      describe: (driver) => ({
        status: driver.getSnapshot ? "GetSnapshot" : driver.listSnapshots ? "ListSnapshots" : "none",
        groupSnapshots: driver.groupSnapshots,
        nodeDeployment: options.nodeDeployment.enabled ? options.nodeDeployment.nodeName : false,
      }),
      // No CSI migration for snapshots: calls are never labelled migrated.
      isMigrationTarget: () => false,
      leaderElection: options.leaderElection.enabled,
      releaseLeaseOnExit: options.releaseLeaderElectionOnExit,
      prepare: async (parts) => (workSignal) => runControllers({ options, ...parts }, workSignal),
    },
    signal,
  );
}

type RunParts = SidecarParts<SnapshotterDriverInfo> & { options: SnapshotterOptions };

async function runControllers(parts: RunParts, signal: AbortSignal): Promise<void> {
  const { options, driver, client, csi, queueMetrics, logger, clock } = parts;
  const factory = parts.informers({ resyncPeriodMs: options.resyncPeriodMs });
  // Distributed snapshotting: the snapshot-controller labels each content with the node of its
  // volume; this sidecar watches only its node's.
  const managed = options.nodeDeployment.enabled
    ? { labelSelector: `${MANAGED_BY_LABEL}=${options.nodeDeployment.nodeName}` }
    : {};
  const contents = factory.informer<VolumeSnapshotContent>(GVR.volumeSnapshotContents, managed);
  const classes = factory.informer<VolumeSnapshotClass>(GVR.volumeSnapshotClasses);
  const groups = options.volumeGroupSnapshots;
  const groupContents = groups
    ? factory.informer<VolumeGroupSnapshotContent>(GVR.volumeGroupSnapshotContents, managed)
    : undefined;
  const groupClasses = groups
    ? factory.informer<VolumeGroupSnapshotClass>(GVR.volumeGroupSnapshotClasses)
    : undefined;
  const events = new EventRecorder({ client, component: `csi-snapshotter ${driver.name}`, logger, clock });
  const ctx: SnapshotterContext = {
    client,
    csi,
    driver,
    options,
    contents,
    classes,
    groupContents,
    groupClasses,
    events,
    logger,
    clock,
    polls: new Map(),
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
  // Upstream's queue names, so the workqueue_* metrics read the same.
  const contentQueue = queue("csi-snapshotter-content");
  const groupQueue = queue("csi-snapshotter-groupsnapshotcontent");
  contents.addEventHandler({
    onAdd: (content) => contentQueue.add(content.metadata.name!),
    onUpdate: (old, content) => {
      // Deleting is another operation than the create that may be backing off: it goes at once.
      if (startsDeletion(old, content)) contentQueue.expedite(content.metadata.name!);
      else if (contentChangeMatters(old, content)) contentQueue.add(content.metadata.name!);
    },
    onDelete: (object) => contentQueue.add(deletedObject(object).metadata.name!),
  });
  groupContents?.addEventHandler({
    onAdd: (content) => groupQueue.add(content.metadata.name!),
    onUpdate: (old, content) => {
      if (startsDeletion(old, content)) groupQueue.expedite(content.metadata.name!);
      else groupQueue.add(content.metadata.name!);
    },
    onDelete: (object) => groupQueue.add(deletedObject(object).metadata.name!),
  });
  const running = [
    factory.start(signal),
    events.start(signal),
    runController(
      {
        name: "volumesnapshotcontents",
        informers: [contents, classes],
        queue: contentQueue,
        workers: options.workerThreads,
        logger,
        reconcile: (key, rc) => syncContentKey(ctx, key, rc),
      },
      signal,
    ),
  ];
  if (groupContents && groupClasses)
    running.push(
      runController(
        {
          name: "volumegroupsnapshotcontents",
          informers: [groupContents, groupClasses],
          queue: groupQueue,
          workers: options.workerThreads,
          logger,
          reconcile: (key, rc) => syncGroupContentKey(ctx, key, rc),
        },
        signal,
      ),
    );
  else groupQueue.shutDown();
  await Promise.all(running);
}

/** A running snapshotter as an in-process caller holds it. */
export interface SnapshotterHandle {
  /** Settles when it has stopped: resolves after close(), rejects on a fatal error. */
  readonly done: Promise<void>;
  /** Stops it and waits until everything has stopped; never rejects. */
  close(): Promise<void>;
}

/** Starts the snapshotter in-process; stop it with `close()` (or by aborting `signal`). */
export function startSnapshotter(options: SnapshotterOptions, signal?: AbortSignal): SnapshotterHandle {
  const controller = new AbortController();
  const onAbort = (): void => controller.abort();
  if (signal?.aborted) controller.abort();
  else signal?.addEventListener("abort", onAbort, { once: true });
  const done = runSnapshotter(options, controller.signal).finally(() =>
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
