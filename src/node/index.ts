// The virtual node: the kubelet's volume role against the API server, with the kubelet's
// on-disk layout under its root dir. startNode registers the Node (and its Lease and
// CSINode), watches plugins_registry/ for CSI drivers, reconstructs what was mounted before a
// restart, and runs the volume manager until the signal aborts; it resolves once everything
// has stopped (operations drained, watchers closed, driver connections closed).

import { realClock, silentLogger } from "../base/index.ts";
import {
  EventRecorder,
  InformerFactory,
  Registry,
  kubeletAttributes,
  startHttpEndpoint,
  startSecureServing,
} from "../kube/index.ts";
import { instrumentVolumeOperations } from "./operation-metrics.ts";
import {
  GVR,
  type CSIDriver,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
  type VolumeAttachment,
} from "../api/index.ts";
import { migratedPlugins } from "../migration/index.ts";
import { gateOn, NODE_GATES, nodeFeatureGates } from "./feature-gates.ts";
import { AllocatableUpdater } from "./allocatable-updater.ts";
import { hostSELinuxEnabled } from "./selinux.ts";
import { ActualState } from "./actual-state.ts";
import { CsiVolumePlugin } from "./csi-volume.ts";
import { DriverRegistry } from "./drivers.ts";
import { NodeInfoManager } from "./node-info.ts";
import { NodeStatusManager } from "./node-status.ts";
import { OperationExecutor } from "./operation-executor.ts";
import type { NodeContext, NodeOptions } from "./options.ts";
import { KubeletPaths } from "./paths.ts";
import { KubeletStreaming } from "./streaming/index.ts";
import { PluginWatcher } from "./plugin-watcher.ts";
import { PolledObjects } from "./polled-objects.ts";
import { Reconciler } from "./reconciler.ts";
import { cleanupOrphanedPodDirs, reconstruct } from "./reconstruction.ts";
import { RegistrationHandler } from "./registration.ts";
import { CSI_VOLUME_HEALTH_GATE, VolumeStatsCollector } from "./volume-stats.ts";
import { PodRuntime, sandboxUnavailable, type ContainerStreams } from "./runtime/index.ts";

export type { NodeOptions } from "./options.ts";
export { KubeletPaths, attachmentName, ephemeralVolumeHandle, uniqueVolumeName, sha256Hex } from "./paths.ts";
export { VOLUME_STATS_METRICS, VOLUME_CONDITION_ABNORMAL, CSI_VOLUME_HEALTH_GATE } from "./volume-stats.ts";
export { POD_INFO_KEYS } from "./csi-volume.ts";
export { highestSupportedVersion, CSI_PLUGIN_TYPE } from "./registration.ts";
export { NODE_LEASE_NAMESPACE } from "./node-status.ts";
export type { ContainerTarget, ExecIO, LogOptions, ContainerStreams } from "./runtime/index.ts";
export { RuntimeNotFoundError, sandboxUnavailable, podLogDir, containerLogPath } from "./runtime/index.ts";

export const DEFAULT_ROOT_DIR = "/var/lib/kubelet";
const ORPHAN_CLEANUP_INTERVAL_MS = 2000;

export async function startNode(options: NodeOptions, signal: AbortSignal): Promise<void> {
  const clock = options.clock ?? realClock;
  const logger = (options.logger ?? silentLogger).with({ node: options.nodeName });
  const paths = new KubeletPaths(options.rootDir ?? DEFAULT_ROOT_DIR);
  const client = options.client;
  const events = new EventRecorder({ client, component: "kubelet", host: options.nodeName, clock, logger });
  const gates = nodeFeatureGates(options.featureGates);
  const context: NodeContext = { nodeName: options.nodeName, paths, client, events, clock, logger };
  const inner = new AbortController();
  const stop = (): void => inner.abort(signal.reason);
  signal.addEventListener("abort", stop, { once: true });
  const running: Promise<unknown>[] = [];
  const drivers = new DriverRegistry({ timeoutMs: options.csiTimeoutMs ?? 120_000 });
  let executor: OperationExecutor | undefined;
  let runtime: PodRuntime | undefined;
  let allocatable: AllocatableUpdater | undefined;
  try {
    running.push(events.start(inner.signal));
    const nodeStatus = new NodeStatusManager(context, {
      hostname: options.hostname ?? options.nodeName,
      labels: options.labels ?? {},
      leaseDurationSeconds: options.leaseDurationSeconds ?? 40,
      kubeletVersion: "v1.33.0-csikit",
      // What the runtime can do: bubblewrap's --ro-bind is recursive, if containers run at all.
      ...(gateOn(gates, NODE_GATES.recursiveReadOnlyMounts)
        ? {
            recursiveReadOnlyMounts:
              (options.podProcesses ?? true) && (await sandboxUnavailable()) === undefined,
          }
        : {}),
    });
    const node = await nodeStatus.register(inner.signal);
    const nodeInfo = new NodeInfoManager(context, nodeStatus, migratedPlugins(gates), {
      mutableAllocatable: gateOn(gates, NODE_GATES.mutableCSINodeAllocatableCount),
    });
    await nodeInfo.initializeCSINode(node.metadata?.uid ?? "", inner.signal);
    // Ready only now that controllers can read this node's migrated plugins (seed: ADC–kubelet sync).
    nodeStatus.markCSINodeInitialized();
    await nodeStatus.writeStatus(inner.signal);
    running.push(nodeStatus.runLease(options.leaseRenewIntervalMs ?? 10_000, inner.signal));
    running.push(nodeStatus.runHeartbeat(options.nodeStatusReportFrequencyMs ?? 300_000, inner.signal));

    let wake: (() => void) | undefined;
    let pending = false;
    const trigger = (): void => {
      pending = true;
      wake?.();
    };
    // Pods (of this node, by field selector) and CSIDrivers are watched; claims, volumes and
    // attachments are fetched one by one, as the Node authorizer allows a node (polled-objects.ts).
    const factory = new InformerFactory({ client, clock, logger });
    const polled = <T extends PersistentVolumeClaim | PersistentVolume | VolumeAttachment>(
      gvr: (typeof GVR)[keyof typeof GVR],
    ) =>
      new PolledObjects<T>({
        client,
        gvr,
        clock,
        logger,
        refreshMs: options.objectRefreshMs ?? 1000,
        onChange: trigger,
      });
    const informers = {
      pods: factory.informer<Pod>(GVR.pods, { fieldSelector: `spec.nodeName=${options.nodeName}` }),
      claims: polled<PersistentVolumeClaim>(GVR.persistentVolumeClaims),
      volumes: polled<PersistentVolume>(GVR.persistentVolumes),
      csiDrivers: factory.informer<CSIDriver>(GVR.csiDrivers),
      attachments: polled<VolumeAttachment>(GVR.volumeAttachments),
    };
    const handlers = { onAdd: trigger, onUpdate: trigger, onDelete: trigger };
    informers.pods.addEventHandler(handlers);
    informers.csiDrivers.addEventHandler(handlers);
    running.push(factory.start(inner.signal));
    for (const objects of [informers.claims, informers.volumes, informers.attachments])
      running.push(objects.run(inner.signal));

    const actual = new ActualState();
    executor = new OperationExecutor({
      clock,
      logger,
      initialDelayMs: options.retryInitialMs ?? 500,
      maxDelayMs: options.retryMaxMs ?? 122_000,
      onDone: trigger,
    });
    drivers.onChange(() => {
      executor?.resetBackoff();
      trigger();
    });
    runtime = new PodRuntime({
      context,
      enabled: options.podProcesses ?? true,
      hiddenPaths: [...(options.podHiddenPaths ?? [])],
      volumeRefreshMs: options.syncFrequencyMs ?? 60_000,
      recursiveReadOnlyMounts: gateOn(gates, NODE_GATES.recursiveReadOnlyMounts),
      ...(options.runtimeClock ? { clock: options.runtimeClock } : {}),
    });
    const plugin = new CsiVolumePlugin({
      paths,
      nodeName: options.nodeName,
      client,
      featureGates: gates,
      seLinuxEnabled: options.seLinux ?? hostSELinuxEnabled(),
    });
    // KEP-4876: CSINode allocatable.count refreshed at the CSIDriver's period and on ResourceExhausted.
    allocatable = new AllocatableUpdater({
      context,
      drivers,
      nodeInfo,
      csiDriver: (name) => informers.csiDrivers.store.get(name),
      enabled: gateOn(gates, NODE_GATES.mutableCSINodeAllocatableCount),
    });
    const reconciler = new Reconciler({
      context,
      informers,
      drivers,
      plugin,
      nodeStatus,
      executor,
      actual,
      attachTimeoutMs: options.attachTimeoutMs ?? 120_000,
      syncFrequencyMs: options.syncFrequencyMs ?? 60_000,
      runtime,
      featureGates: gates,
      onAttachResourceExhausted: (driverName) => allocatable?.resourceExhausted(driverName, inner.signal),
    });

    // The container runtime as the kubelet's streaming endpoints (/containerLogs, /exec) use it.
    const streams: ContainerStreams = runtime;
    const registry = new Registry();
    // KEP-1432's node side (alpha, off by default): volume_condition → pod event + metric.
    const stats = new VolumeStatsCollector(
      actual,
      drivers,
      registry,
      options.featureGates?.[CSI_VOLUME_HEALTH_GATE] === true
        ? {
            events,
            podOf: (uid) => informers.pods.store.list().find((pod) => pod.metadata?.uid === uid),
          }
        : undefined,
    );
    instrumentVolumeOperations(plugin, registry);
    let metricsUrl: string | undefined;
    if (options.httpEndpoint) {
      const endpoint = await startHttpEndpoint(
        { address: options.httpEndpoint, metricsPath: options.metricsPath ?? "/metrics", registry, logger },
        inner.signal,
      );
      running.push(endpoint.stopped);
      metricsUrl = `${endpoint.url}${options.metricsPath ?? "/metrics"}`;
    }
    const streaming = new KubeletStreaming({
      runtime: options.containerStreams ?? streams,
      podOf: (namespace, name) => informers.pods.store.get(`${namespace}/${name}`),
      logger,
    });
    if (options.secureServing) {
      const secure = options.secureServing;
      const endpoint = await startSecureServing(
        {
          bindAddress: secure.address,
          port: secure.port,
          certFile: secure.certFile,
          keyFile: secure.keyFile,
          alwaysAllowPaths: ["/healthz"],
          ...(secure.webhookAuthorization
            ? { auth: { client, attributes: kubeletAttributes(options.nodeName) } }
            : {}),
          registry,
          healthChecks: { ping: () => undefined },
          host: options.hostname ?? options.nodeName,
          // /containerLogs and /exec, as the kubelet serves them to the API server.
          handler: streaming.handle,
          upgrade: streaming.upgrade,
          logger,
        },
        inner.signal,
      );
      if (endpoint) {
        running.push(endpoint.stopped);
        metricsUrl ??= `${endpoint.url}/metrics`;
        // Where the API server reaches this kubelet (status.daemonEndpoints, status.addresses).
        nodeStatus.setKubeletEndpoint(secure.address, endpoint.port);
        await nodeStatus.writeStatus(inner.signal);
      }
    }

    await reconstruct(paths, actual, logger);
    running.push(
      new PluginWatcher({
        dir: paths.pluginsRegistry,
        handler: new RegistrationHandler({ drivers, nodeInfo, logger }),
        rescanIntervalMs: options.pluginRescanIntervalMs ?? 5000,
        clock,
        logger,
      }).run(inner.signal),
    );
    await factory.waitForCacheSync(inner.signal);
    reconciler.setReady();
    running.push(stats.run(options.volumeStatsAggPeriodMs ?? 60_000, clock, logger, inner.signal));
    options.onReady?.(metricsUrl !== undefined ? { metricsUrl, streams } : { streams });
    logger.info(1, "virtual node running", { root: paths.root });

    const interval = options.reconcileIntervalMs ?? 100;
    let lastCleanup = clock.now();
    while (!inner.signal.aborted) {
      pending = false;
      reconciler.pass(inner.signal);
      allocatable?.tick(inner.signal);
      if (clock.now() - lastCleanup >= ORPHAN_CLEANUP_INTERVAL_MS) {
        lastCleanup = clock.now();
        const live = new Set(informers.pods.store.list().map((p) => p.metadata?.uid ?? ""));
        await cleanupOrphanedPodDirs(paths, live, actual, logger);
      }
      if (pending) continue;
      await new Promise<void>((resolve) => {
        const cancel = clock.setTimer(interval, resolve);
        wake = () => {
          cancel();
          resolve();
        };
        if (inner.signal.aborted) resolve();
      });
      wake = undefined;
    }
  } finally {
    inner.abort();
    signal.removeEventListener("abort", stop);
    // Containers die with the node (bwrap --die-with-parent does it too if the process dies).
    await runtime?.stop();
    await executor?.waitIdle();
    await allocatable?.waitIdle();
    executor?.stop();
    await Promise.allSettled(running);
    drivers.closeAll();
  }
}
