// `startHealthMonitor(options, signal)`: the composition root of the health monitor, on the
// start-up every controller sidecar shares (runSidecar in src/kube/sidecar.ts):
//   1. connect to the driver, Probe until ready, GetPluginInfo and capabilities (driver.ts; a
//      driver without VOLUME_CONDITION and LIST_VOLUMES/GET_VOLUME is fatal, as upstream);
//   2. the diagnostics endpoint (metrics incl. csi_sidecar_operations_seconds,
//      /healthz/leader-election);
//   3. under leader election on the Lease `external-health-monitor-leader-<sanitized driver>`:
//      with LIST_VOLUMES one ListVolumes round every --list-volumes-interval, else
//      --worker-threads ControllerGetVolume workers, each taking one PV from the queue every
//      --monitor-interval, with every PV queued again every --volume-list-add-interval
//      (volume-check.ts); with --enable-node-watcher the node watcher (node-watcher.ts).
// Resolves once everything has stopped after `signal` aborts.

import {
  GVR,
  type Node,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
} from "../../api/index.ts";
import { errorMessage } from "../../base/index.ts";
import {
  EventRecorder,
  WorkQueue,
  deletedObject,
  objectKey,
  runSidecar,
  type SidecarParts,
} from "../../kube/index.ts";
import { isMigratedCSIDriverByName } from "../../migration/index.ts";
import type { HealthMonitorContext } from "./context.ts";
import { discoverHealthMonitorDriver, type HealthMonitorDriverInfo } from "./driver.ts";
import { eventComponent } from "./names.ts";
import { NodeWatcher } from "./node-watcher.ts";
import type { HealthMonitorOptions } from "./options.ts";
import { checkByListVolumes, checkVolume, isMonitoredVolume } from "./volume-check.ts";

export async function startHealthMonitor(options: HealthMonitorOptions, signal: AbortSignal): Promise<void> {
  await runSidecar<HealthMonitorDriverInfo>(
    options,
    {
      component: "health-monitor",
      discover: (csi, discoverSignal) =>
        discoverHealthMonitorDriver(csi, { timeoutMs: options.timeoutMs, signal: discoverSignal }),
      describe: (driver) => ({ listVolumes: driver.listVolumes, getVolume: driver.getVolume }),
      isMigrationTarget: isMigratedCSIDriverByName,
      leaderElection: options.leaderElection.enabled,
      prepare: async (parts) => (workSignal) => runMonitor({ options, ...parts }, workSignal),
    },
    signal,
  );
}

type RunParts = SidecarParts<HealthMonitorDriverInfo> & { options: HealthMonitorOptions };

/** Runs `round` now and then every `periodMs` until the signal aborts. */
async function every(
  periodMs: number,
  clock: HealthMonitorContext["clock"],
  signal: AbortSignal,
  round: () => Promise<void> | void,
): Promise<void> {
  while (!signal.aborted) {
    await round();
    await clock.sleep(periodMs, signal).catch(() => undefined);
  }
}

async function runMonitor(parts: RunParts, signal: AbortSignal): Promise<void> {
  const { options, driver, client, csi, queueMetrics, logger, clock } = parts;
  const factory = parts.informers({ resyncPeriodMs: options.resyncPeriodMs });
  const ctx: HealthMonitorContext = {
    driver,
    csi,
    options,
    volumes: factory.informer<PersistentVolume>(GVR.persistentVolumes),
    claims: factory.informer<PersistentVolumeClaim>(GVR.persistentVolumeClaims),
    ...(options.enableNodeWatcher
      ? { pods: factory.informer<Pod>(GVR.pods), nodes: factory.informer<Node>(GVR.nodes) }
      : {}),
    events: new EventRecorder({ client, component: eventComponent(driver.name), logger, clock }),
    logger,
    clock,
  };
  const running: Promise<unknown>[] = [factory.start(signal), ctx.events.start(signal)];
  const queues: WorkQueue<string>[] = [];
  signal.addEventListener("abort", () => queues.forEach((q) => q.shutDown()), { once: true });
  try {
    await factory.waitForCacheSync(signal);
  } catch {
    await Promise.all(running);
    return;
  }
  logger.info(1, "Starting CSI External PV Health Monitor Controller", {
    driver: driver.name,
    mode: driver.listVolumes ? "ListVolumes" : "ControllerGetVolume",
  });

  if (driver.listVolumes) {
    // ListVolumes is preferred: one call (paginated) for every volume.
    running.push(every(options.listVolumesIntervalMs, clock, signal, () => checkByListVolumes(ctx, signal)));
  } else {
    const queue = new WorkQueue<string>({ name: "csi-monitor-pv-queue", clock, metrics: queueMetrics });
    queues.push(queue);
    const enqueue = (pv: PersistentVolume): void => {
      if (isMonitoredVolume(pv, driver.name)) queue.add(objectKey(pv));
    };
    ctx.volumes.addEventHandler({ onAdd: enqueue, onUpdate: (_old, pv) => enqueue(pv) });
    running.push(
      every(options.volumeListAddIntervalMs, clock, signal, () => ctx.volumes.store.list().forEach(enqueue)),
    );
    for (let i = 0; i < options.workerThreads; i++)
      running.push(
        every(options.monitorIntervalMs, clock, signal, async () => {
          const next = await queue.get();
          if (next.shutdown) return;
          try {
            if ((await checkVolume(ctx, next.item, signal)) === "requeue") queue.add(next.item);
          } finally {
            queue.done(next.item);
          }
        }),
      );
  }

  if (options.enableNodeWatcher && ctx.nodes) {
    const watcher = new NodeWatcher(ctx);
    const nodeQueue = new WorkQueue<string>({ name: "nodes", clock, metrics: queueMetrics });
    queues.push(nodeQueue);
    const enqueueNode = (node: Node): void => nodeQueue.add(node.metadata?.name ?? "");
    ctx.nodes.addEventHandler({
      onAdd: enqueueNode,
      onUpdate: (_old, node) => enqueueNode(node),
      onDelete: (object) => enqueueNode(deletedObject(object)),
    });
    running.push(
      every(options.nodeListAddIntervalMs, clock, signal, () => ctx.nodes!.store.list().forEach(enqueueNode)),
      nodeQueue.runWorkers(
        {
          workers: 1,
          logger,
          // A node whose claims are not all cached yet is retried with backoff (runWorkers).
          process: (name) =>
            watcher.sync(name)
              ? Promise.resolve()
              : Promise.reject(new Error(`node ${name}: a claim to report on is not cached yet`)),
        },
        signal,
      ),
    );
  }
  await Promise.all(running).catch((error: unknown) => {
    logger.error("health monitor stopped", { err: errorMessage(error) });
    throw error;
  });
}
