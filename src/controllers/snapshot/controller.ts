// `startSnapshotController(options, signal)`: the composition root of the snapshot controller
// (external-snapshotter's cmd/snapshot-controller + common-controller's snapshot_controller_base):
//   1. the client (--kube-api-qps/burst) and, before any election, the wait for the snapshot
//      CRDs (--retry-crd-interval-max; a fatal error if they never appear, as upstream; missing
//      group CRDs only turn group snapshots off, as upstream's master does);
//   2. the diagnostics endpoint: --metrics-path (snapshot_controller_operation_total_seconds,
//      workqueue_*), /healthz and /healthz/leader-election;
//   3. under the Lease snapshot-controller-leader (--leader-election), the informers and four
//      queues — snapshots, contents, claims (csikit's own: see claim-protection.ts), group
//      snapshots — each drained by --worker-threads workers.
// Handlers only enqueue keys; every sync re-reads the caches (wiring apart from sync logic, as
// src/controllers/pv/). Resolves once everything stopped; rejects with LeadershipLostError.

import {
  GVR,
  type Node,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type VolumeGroupSnapshot,
  type VolumeGroupSnapshotClass,
  type VolumeGroupSnapshotContent,
  type VolumeSnapshot,
  type VolumeSnapshotClass,
  type VolumeSnapshotContent,
} from "../../api/index.ts";
import { realClock, silentLogger, type Logger } from "../../base/index.ts";
import { setTimeout as sleep } from "node:timers/promises";
import {
  EventRecorder,
  InformerFactory,
  ItemExponentialRateLimiter,
  LeaderElector,
  Registry,
  WorkQueue,
  WorkQueueMetrics,
  collectDefaultMetrics,
  deletedObject,
  kubeClientFromOptions,
  leaderElectionOptions,
  objectKey,
  runController,
  runElected,
  startHttpEndpoint,
  type HttpEndpoint,
  type KubeClient,
} from "../../kube/index.ts";
import { LatestObjects } from "../common/index.ts";
import { claimKeyOf, syncClaim } from "./claim-protection.ts";
import { syncContentKey } from "./content-sync.ts";
import {
  CLAIMS_BY_SNAPSHOT_SOURCE,
  SNAPSHOTS_BY_CLAIM,
  SNAPSHOTS_BY_GROUP,
  VOLUMES_BY_HANDLE,
  type GroupCaches,
  type SnapshotSyncContext,
} from "./context.ts";
import { syncGroupContentKey, syncGroupSnapshotKey } from "./group-sync.ts";
import { OPERATIONS, SnapshotOperationMetrics } from "./metrics.ts";
import { boundContentName, parentGroupName } from "./names.ts";
import type { SnapshotControllerOptions } from "./options.ts";
import { syncSnapshotKey } from "./snapshot-sync.ts";

/** Ready, bound, protected, not failing, not deleting: a resync of it would write nothing. */
function isSettled(snapshot: VolumeSnapshot): boolean {
  return (
    snapshot.status?.readyToUse === true &&
    boundContentName(snapshot) !== undefined &&
    snapshot.status.error === undefined &&
    snapshot.metadata?.deletionTimestamp === undefined &&
    (snapshot.metadata?.finalizers ?? []).includes(
      "snapshot.storage.kubernetes.io/volumesnapshot-as-source-protection",
    )
  );
}

/** Event source, Lease and user agent, as upstream. */
export const SNAPSHOT_CONTROLLER_COMPONENT = "snapshot-controller";
export const SNAPSHOT_CONTROLLER_LEASE = "snapshot-controller-leader";

/** Lists each CRD until it answers or the wait (--retry-crd-interval-max, at least 1 s) ends. */
async function crdsServed(
  client: KubeClient,
  gvrs: readonly (typeof GVR)[keyof typeof GVR][],
  maxMs: number,
  signal: AbortSignal,
  logger: Logger,
): Promise<boolean> {
  const deadline = Date.now() + Math.max(maxMs, 1000);
  let delay = 100;
  for (;;) {
    try {
      for (const gvr of gvrs) await client.list(gvr, { limit: 1 }, signal);
      return true;
    } catch (error) {
      logger.error("failed to list snapshot CRDs", {
        err: error instanceof Error ? error.message : String(error),
      });
      if (signal.aborted || Date.now() + delay > deadline) return false;
      await sleep(delay, undefined, { signal }).catch(() => undefined);
      delay = Math.ceil(delay * 1.5);
    }
  }
}

export async function startSnapshotController(
  options: SnapshotControllerOptions,
  signal: AbortSignal,
): Promise<void> {
  const logger = (options.logger ?? silentLogger).with({ controller: SNAPSHOT_CONTROLLER_COMPONENT });
  const clock = options.clock ?? realClock;
  const clientOptions = {
    kubeconfig: options.kubeconfig,
    master: "",
    kubeApiQps: options.kubeApiQps,
    kubeApiBurst: options.kubeApiBurst,
    userAgent: SNAPSHOT_CONTROLLER_COMPONENT,
    clock,
  };
  // Two clients, each with its own --kube-api-qps/--kube-api-burst bucket, as upstream builds a
  // snapshot clientset and a core one from the same config: snapshot.storage.k8s.io and
  // groupsnapshot requests on `client`; claims, PVs, nodes and Events on `coreClient`.
  const client = kubeClientFromOptions(clientOptions);
  const coreClient = kubeClientFromOptions(clientOptions);
  const electionClient = options.leaderElection.enabled
    ? kubeClientFromOptions({
        kubeconfig: options.kubeconfig,
        master: "",
        kubeApiQps: options.kubeApiQps,
        kubeApiBurst: options.kubeApiBurst,
        userAgent: `${SNAPSHOT_CONTROLLER_COMPONENT}-leader-election`,
        clock,
      })
    : undefined;
  try {
    const snapshotCrds = [GVR.volumeSnapshots, GVR.volumeSnapshotClasses, GVR.volumeSnapshotContents];
    if (!(await crdsServed(client, snapshotCrds, options.retryCrdIntervalMaxMs, signal, logger))) {
      if (signal.aborted) return;
      throw new Error(
        "Exiting due to failure to ensure CRDs exist during startup: the snapshot.storage.k8s.io/v1 CRDs are not served",
      );
    }
    let groups = options.featureGates.CSIVolumeGroupSnapshot === true;
    if (groups) {
      const groupCrds = [
        GVR.volumeGroupSnapshots,
        GVR.volumeGroupSnapshotClasses,
        GVR.volumeGroupSnapshotContents,
      ];
      if (!(await crdsServed(client, groupCrds, 0, signal, logger))) {
        logger.info(0, "group snapshot CRDs are not served: group snapshots are off", {});
        groups = false;
      }
    }
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    const metrics = new SnapshotOperationMetrics(registry, () => clock.now());
    const queueMetrics = new WorkQueueMetrics({ registry });
    const elector = electionClient
      ? new LeaderElector({
          ...leaderElectionOptions(
            { ...options.leaderElection },
            { client: electionClient, leaseName: SNAPSHOT_CONTROLLER_LEASE, logger, clock },
          ),
          releaseOnCancel: options.featureGates.ReleaseLeaderElectionOnExit === true,
        })
      : undefined;
    let endpoint: HttpEndpoint | undefined;
    if (options.httpEndpoint !== "") {
      endpoint = await startHttpEndpoint(
        {
          address: options.httpEndpoint,
          metricsPath: options.metricsPath,
          registry,
          healthChecks: elector ? { "leader-election": elector.healthCheck() } : { ping: () => undefined },
          logger,
        },
        signal,
      );
      options.onHttpEndpoint?.(endpoint.url);
    }
    const work = (workSignal: AbortSignal): Promise<void> =>
      runLoops({ options, client, coreClient, logger, metrics, queueMetrics, groups }, workSignal);
    if (elector) await runElected(elector, work, signal);
    else await work(signal);
    await endpoint?.stopped;
  } finally {
    client.close();
    coreClient.close();
    electionClient?.close();
  }
}

interface LoopParts {
  options: SnapshotControllerOptions;
  /** The snapshot API groups' client. */
  client: KubeClient;
  /** The core API's client (its own token bucket). */
  coreClient: KubeClient;
  logger: Logger;
  metrics: SnapshotOperationMetrics;
  queueMetrics: WorkQueueMetrics;
  groups: boolean;
}

async function runLoops(parts: LoopParts, signal: AbortSignal): Promise<void> {
  const { options, client, coreClient, logger, metrics, queueMetrics } = parts;
  const clock = options.clock ?? realClock;
  const factory = new InformerFactory({
    client,
    clock,
    logger,
    defaultResyncPeriodMs: options.resyncPeriodMs,
  });
  const coreFactory = new InformerFactory({
    client: coreClient,
    clock,
    logger,
    defaultResyncPeriodMs: options.resyncPeriodMs,
  });
  const snapshotInformer = factory.informer<VolumeSnapshot>(GVR.volumeSnapshots);
  const contentInformer = factory.informer<VolumeSnapshotContent>(GVR.volumeSnapshotContents);
  const classInformer = factory.informer<VolumeSnapshotClass>(GVR.volumeSnapshotClasses);
  const claimInformer = coreFactory.informer<PersistentVolumeClaim>(GVR.persistentVolumeClaims);
  const volumeInformer = coreFactory.informer<PersistentVolume>(GVR.persistentVolumes);
  const nodeInformer = options.enableDistributedSnapshotting
    ? coreFactory.informer<Node>(GVR.nodes)
    : undefined;
  const groupInformer = parts.groups
    ? factory.informer<VolumeGroupSnapshot>(GVR.volumeGroupSnapshots)
    : undefined;
  const groupContentInformer = parts.groups
    ? factory.informer<VolumeGroupSnapshotContent>(GVR.volumeGroupSnapshotContents)
    : undefined;
  const groupClassInformer = parts.groups
    ? factory.informer<VolumeGroupSnapshotClass>(GVR.volumeGroupSnapshotClasses)
    : undefined;

  snapshotInformer.addIndexer(SNAPSHOTS_BY_CLAIM, (snapshot) => {
    const key = snapshot.spec?.source ? claimKeyOf(snapshot) : undefined;
    return key ? [key] : [];
  });
  snapshotInformer.addIndexer(SNAPSHOTS_BY_GROUP, (snapshot) => {
    const parent = parentGroupName(snapshot);
    return parent ? [`${snapshot.metadata?.namespace ?? ""}^${parent}`] : [];
  });
  volumeInformer.addIndexer(VOLUMES_BY_HANDLE, (volume) => {
    const csi = volume.spec?.csi;
    return csi ? [`${csi.driver}^${csi.volumeHandle}`] : [];
  });
  claimInformer.addIndexer(CLAIMS_BY_SNAPSHOT_SOURCE, (claim) => {
    const source = claim.spec?.dataSource;
    return source?.kind === "VolumeSnapshot" && source.apiGroup === "snapshot.storage.k8s.io"
      ? [`${claim.metadata?.namespace ?? ""}/${source.name}`]
      : [];
  });

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
  const snapshotQueue = queue("snapshot-controller-snapshot");
  const contentQueue = queue("snapshot-controller-content");
  const claimQueue = queue("snapshot-controller-claim");
  const groupQueue = queue("snapshot-controller-group-snapshot");
  const groupContentQueue = queue("snapshot-controller-group-content");

  const snapshots = new LatestObjects(snapshotInformer.store);
  const contents = new LatestObjects(contentInformer.store);
  const claims = new LatestObjects(claimInformer.store);
  const group: GroupCaches | undefined =
    groupInformer && groupContentInformer && groupClassInformer
      ? {
          groups: new LatestObjects(groupInformer.store),
          groupContents: new LatestObjects(groupContentInformer.store),
          groupClasses: groupClassInformer.store,
        }
      : undefined;

  const recorder = new EventRecorder({
    client: coreClient,
    component: SNAPSHOT_CONTROLLER_COMPONENT,
    logger,
    clock,
  });
  const claimsInContentCreation = new Map<string, number>();
  const context = (reconcileSignal: AbortSignal, reconcileLogger: Logger): SnapshotSyncContext => ({
    client,
    coreClient,
    recorder,
    logger: reconcileLogger,
    signal: reconcileSignal,
    snapshots,
    snapshotStore: snapshotInformer.store,
    contents,
    classes: classInformer.store,
    claims,
    claimStore: claimInformer.store,
    volumes: volumeInformer.store,
    nodes: nodeInformer?.store,
    group,
    metrics,
    preventVolumeModeConversion: options.preventVolumeModeConversion,
    distributed: options.enableDistributedSnapshotting,
    claimsInContentCreation,
    enqueueSnapshot: (key) => snapshotQueue.add(key),
    enqueueContent: (name) => contentQueue.add(name),
    enqueueGroup: (key) => groupQueue.add(key),
    enqueueClaim: (key) => claimQueue.add(key),
    now: () => clock.now(),
  });

  snapshotInformer.addEventHandler({
    onAdd: (snapshot) => snapshotQueue.add(objectKey(snapshot)),
    onUpdate: (old, snapshot) => {
      // external-snapshotter#1148: a resync (same resourceVersion) of a settled snapshot has
      // nothing to do, and queueing thousands of them delays every new snapshot behind them.
      if (old.metadata?.resourceVersion === snapshot.metadata?.resourceVersion && isSettled(snapshot)) return;
      snapshotQueue.add(objectKey(snapshot));
    },
    onDelete: (deleted) => {
      // Upstream's deleteSnapshot: the delete completes DeleteSnapshot and resyncs the content.
      const snapshot = deletedObject(deleted);
      snapshots.forget(objectKey(snapshot));
      const driver = contents.get(boundContentName(snapshot) ?? "")?.spec.driver ?? "";
      metrics.succeeded(OPERATIONS.deleteSnapshot, snapshot.metadata?.uid ?? "", driver);
      const content = boundContentName(snapshot);
      if (content) contentQueue.add(content);
      const claimKey = claimKeyOf(snapshot);
      if (claimKey) claimQueue.add(claimKey);
      const parent = parentGroupName(snapshot);
      if (parent) groupQueue.add(`${snapshot.metadata?.namespace ?? ""}/${parent}`);
    },
  });
  contentInformer.addEventHandler({
    onAdd: (content) => contentQueue.add(objectKey(content)),
    onUpdate: (_old, content) => contentQueue.add(objectKey(content)),
    onDelete: (deleted) => {
      const content = deletedObject(deleted);
      contents.forget(objectKey(content));
      const ref = content.spec?.volumeSnapshotRef;
      if (ref?.name) snapshotQueue.add(`${ref.namespace ?? ""}/${ref.name}`);
    },
  });
  // csikit: claims that carry our finalizer are reconciled on their own, and a claim restoring
  // from a snapshot resyncs that snapshot (its deletion may be waiting for the restore).
  const onClaim = (claim: PersistentVolumeClaim): void => {
    if (
      (claim.metadata?.finalizers ?? []).includes("snapshot.storage.kubernetes.io/pvc-as-source-protection")
    )
      claimQueue.add(objectKey(claim));
    const source = claim.spec?.dataSource;
    if (source?.kind === "VolumeSnapshot")
      snapshotQueue.add(`${claim.metadata?.namespace ?? ""}/${source.name}`);
  };
  claimInformer.addEventHandler({
    onAdd: onClaim,
    onUpdate: (_old, claim) => onClaim(claim),
    onDelete: (deleted) => {
      const claim = deletedObject(deleted);
      claims.forget(objectKey(claim));
      const source = claim.spec?.dataSource;
      if (source?.kind === "VolumeSnapshot")
        snapshotQueue.add(`${claim.metadata?.namespace ?? ""}/${source.name}`);
    },
  });
  groupInformer?.addEventHandler({
    onAdd: (g) => groupQueue.add(objectKey(g)),
    onUpdate: (_old, g) => groupQueue.add(objectKey(g)),
    onDelete: (deleted) => {
      const g = deletedObject(deleted);
      group?.groups.forget(objectKey(g));
      const bound = g.status?.boundVolumeGroupSnapshotContentName;
      const driver = (bound && group?.groupContents.get(bound)?.spec.driver) || "";
      metrics.succeeded(OPERATIONS.deleteGroupSnapshot, g.metadata?.uid ?? "", driver);
      if (bound) groupContentQueue.add(bound);
      // Members wait for their group to be gone before they drop volumesnapshot-in-group-protection.
      for (const member of snapshotInformer.store.byIndex(
        SNAPSHOTS_BY_GROUP,
        `${g.metadata?.namespace ?? ""}^${g.metadata?.name ?? ""}`,
      ))
        snapshotQueue.add(objectKey(member));
      for (const member of snapshotInformer.store.listByNamespace(g.metadata?.namespace ?? ""))
        if (member.status?.volumeGroupSnapshotName === g.metadata?.name) snapshotQueue.add(objectKey(member));
    },
  });
  groupContentInformer?.addEventHandler({
    onAdd: (c) => groupContentQueue.add(objectKey(c)),
    onUpdate: (_old, c) => groupContentQueue.add(objectKey(c)),
    onDelete: (deleted) => {
      const c = deletedObject(deleted);
      group?.groupContents.forget(objectKey(c));
      const ref = c.spec?.volumeGroupSnapshotRef;
      if (ref?.name) groupQueue.add(`${ref.namespace ?? ""}/${ref.name}`);
    },
  });

  const informers = [
    snapshotInformer,
    contentInformer,
    classInformer,
    claimInformer,
    volumeInformer,
    ...(nodeInformer ? [nodeInformer] : []),
    ...(groupInformer && groupContentInformer && groupClassInformer
      ? [groupInformer, groupContentInformer, groupClassInformer]
      : []),
  ];
  const loop = (
    name: string,
    q: WorkQueue<string>,
    sync: (ctx: SnapshotSyncContext, key: string) => Promise<void>,
  ) =>
    runController(
      {
        name,
        informers,
        queue: q,
        workers: options.workers,
        logger,
        reconcile: (key, rc) => sync(context(rc.signal, rc.logger), key),
      },
      signal,
    );
  const running = [
    factory.start(signal),
    coreFactory.start(signal),
    recorder.start(signal),
    loop("snapshot", snapshotQueue, syncSnapshotKey),
    loop("content", contentQueue, syncContentKey),
    loop("claim", claimQueue, syncClaim),
  ];
  if (group) {
    running.push(loop("group-snapshot", groupQueue, syncGroupSnapshotKey));
    running.push(loop("group-content", groupContentQueue, syncGroupContentKey));
  } else {
    groupQueue.shutDown();
    groupContentQueue.shutDown();
  }
  await Promise.all(running);
}
