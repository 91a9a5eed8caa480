// `startProvisioner(options, signal)`: the composition root of the provisioner sidecar, on the
// start-up every controller sidecar shares (runSidecar in src/kube/sidecar.ts):
//   1. connect to the driver, Probe until ready, GetPluginInfo / capabilities (any error is
//      fatal: the promise rejects and the CLI exits non-zero, as upstream);
//   2. the diagnostics endpoint (metrics, /healthz/leader-election, optional pprof);
//   3. under leader election on the Lease named after the driver (not in node deployment, where
//      each node's instance works alone, as upstream), the controllers: claims (provisioning,
//      --worker-threads workers), volumes (deletion, --worker-threads more), cloning
//      protection (--cloning-protection-threads), sharing one informer factory.
// Resolves once everything has stopped after `signal` aborts (workers drained, lease
// released, sockets closed); rejects with LeadershipLostError when the lease is lost.

import {
  GVR,
  type CSINode,
  type GroupVersionResource,
  type Node,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type StorageClass,
  type OwnerReference,
  type VolumeAttachment,
} from "../../api/index.ts";
import { CsikitError, type Clock } from "../../base/index.ts";
import {
  EventRecorder,
  ItemExponentialRateLimiter,
  PPROF_PREFIX,
  REQUEST_PRIORITY,
  WorkQueue,
  deletedObject,
  kubeClientFromOptions,
  objectKey,
  podNamespace,
  pprofRoute,
  runController,
  sanitizeLeaseName,
  runSidecar,
  startsDeletion,
  withRequestPriority,
  type SidecarParts,
  type KubeClient,
} from "../../kube/index.ts";
import { isMigratedCSIDriverByName } from "../../migration/index.ts";
import { CapacityRefresh, resolveCapacityOwner, startCapacityController } from "./capacity/index.ts";
import { syncClaim } from "./claim-sync.ts";
import { cloneProtectionKeys, syncCloneSource } from "./clone-protection.ts";
import { newProvisionerState, type ProvisionerContext } from "./context.ts";
import { discoverDriver, type DriverInfo } from "./driver.ts";
import { InFlightLedger } from "./ledger.ts";
import { ProvisionerMetrics } from "./metrics.ts";
import { provisionerIdentity } from "./names.ts";
import { localTopologyView } from "./node-deployment.ts";
import type { ProvisionerOptions } from "./options.ts";
import { runSnapshotSweep } from "./snapshot-protection.ts";
import { syncVolume } from "./volume-sync.ts";
import { volumeAttributesClassApi } from "./vac-api.ts";
import { clusterView } from "./view.ts";

export async function startProvisioner(options: ProvisionerOptions, signal: AbortSignal): Promise<void> {
  if (options.nodeDeployment.enabled && options.nodeDeployment.nodeName === "")
    throw new CsikitError("CSIKIT_ERR_CONFIG", "--node-deployment needs the NODE_NAME environment variable");
  await runSidecar<DriverInfo>(
    options,
    {
      component: "provisioner",
      discover: (csi, discoverSignal) =>
        discoverDriver(csi, {
          timeoutMs: options.timeoutMs,
          topologyGate: options.features.topology,
          nodeDeployment: options.nodeDeployment.enabled,
          signal: discoverSignal,
        }),
      describe: (driver) => ({ topology: driver.topology }),
      isMigrationTarget: isMigratedCSIDriverByName,
      // In node deployment each node's instance works alone, as upstream.
      leaderElection: options.leaderElection.enabled && !options.nodeDeployment.enabled,
      releaseLeaseOnExit: options.features.releaseLeaderElectionOnExit,
      ...(options.enablePprof ? { routes: { [PPROF_PREFIX]: pprofRoute } } : {}),
      prepare: async (parts, prepareSignal) => {
        const capacity = options.capacity.enabled
          ? await capacitySetup(options, parts.driver, parts.client, parts.clock, prepareSignal)
          : undefined;
        const metrics = new ProvisionerMetrics(parts.registry);
        const vacApi = await volumeAttributesClassApi(parts.client, {
          enabled: options.features.volumeAttributesClass,
          logger: parts.logger,
          signal: prepareSignal,
        });
        // The gate as resolved: off when the server serves no VolumeAttributesClass API.
        const resolved: ProvisionerOptions = {
          ...options,
          features: { ...options.features, volumeAttributesClass: vacApi !== undefined },
        };
        return (workSignal) =>
          runControllers({ ...parts, options: resolved, metrics, capacity, vacApi }, workSignal);
      },
    },
    signal,
  );
}

type RunParts = SidecarParts<DriverInfo> & {
  options: ProvisionerOptions;
  metrics: ProvisionerMetrics;
  capacity: CapacitySetup | undefined;
  /** The VolumeAttributesClass version served (vac-api.ts); undefined = feature off. */
  vacApi: GroupVersionResource | undefined;
};

/** What --enable-capacity resolved at start-up, before any leader election (as upstream's main). */
interface CapacitySetup {
  client: KubeClient;
  ownerReference: OwnerReference | null;
}

async function capacitySetup(
  options: ProvisionerOptions,
  driver: DriverInfo,
  client: KubeClient,
  clock: Clock,
  signal: AbortSignal,
): Promise<CapacitySetup> {
  const { capacity } = options;
  if (!driver.getCapacity)
    throw new CsikitError(
      "CSIKIT_ERR_CONFIG",
      `--enable-capacity: driver ${driver.name} does not have the GET_CAPACITY controller capability`,
    );
  if (capacity.namespace === "")
    throw new CsikitError("CSIKIT_ERR_CONFIG", "--enable-capacity needs the NAMESPACE environment variable");
  const ownerReference = await resolveCapacityOwner(client, {
    namespace: capacity.namespace,
    podName: capacity.podName,
    level: capacity.ownerrefLevel,
    signal,
  });
  return {
    // Its own token bucket: --kube-api-capacity-qps/burst, so capacity writes never starve provisioning.
    client: kubeClientFromOptions({
      ...options,
      kubeApiQps: capacity.kubeApiQps,
      kubeApiBurst: capacity.kubeApiBurst,
      userAgent: "csi-provisioner-capacity",
      clock,
    }),
    ownerReference,
  };
}

/**
 * The in-flight ledger, read before any worker runs (under leader election: once leading, so the
 * new leader sees every intent of the previous one).
 */
async function loadLedger(parts: RunParts, signal: AbortSignal): Promise<InFlightLedger> {
  const { options, driver, client, logger } = parts;
  const nd = options.nodeDeployment;
  const ledger = new InFlightLedger({
    client,
    namespace: options.leaderElection.namespace !== "" ? options.leaderElection.namespace : podNamespace(),
    name: sanitizeLeaseName(`${driver.name}-in-flight${nd.enabled ? `-${nd.nodeName}` : ""}`),
    logger,
  });
  const intents = await ledger.load(signal);
  logger.info(2, "in-flight ledger loaded", {
    lease: `${ledger.namespace}/${ledger.name}`,
    intents: intents.length,
  });
  return ledger;
}

async function runControllers(parts: RunParts, signal: AbortSignal): Promise<void> {
  const { options, driver, client, csi, metrics, queueMetrics, registry, capacity, logger, clock, vacApi } =
    parts;
  const factory = parts.informers({});
  const claims = factory.informer<PersistentVolumeClaim>(GVR.persistentVolumeClaims);
  const volumes = factory.informer<PersistentVolume>(GVR.persistentVolumes);
  const classes = factory.informer<StorageClass>(GVR.storageClasses);
  const nd = options.nodeDeployment;
  const needsClusterTopology = driver.topology && !nd.enabled;
  const csiNodes = needsClusterTopology ? factory.informer<CSINode>(GVR.csiNodes) : undefined;
  const nodes = needsClusterTopology ? factory.informer<Node>(GVR.nodes) : undefined;
  // Upstream lists VolumeAttachments too: a PV still attached somewhere is not deleted.
  const attachments = factory.informer<VolumeAttachment>(GVR.volumeAttachments);
  const events = new EventRecorder({ client, component: "csi-provisioner", logger, clock });
  const view = clusterView({
    client,
    claims,
    volumes,
    classes,
    ...(csiNodes ? { csiNodes } : {}),
    ...(nodes ? { nodes } : {}),
    volumeAttachments: attachments,
    ...(nd.enabled ? { localNodes: localTopologyView(driver, nd.nodeName) } : {}),
    ...(vacApi ? { volumeAttributesClasses: vacApi } : {}),
  });
  const ctx: ProvisionerContext = {
    client,
    csi,
    view,
    driver,
    options,
    identity: provisionerIdentity(driver.name, nd.enabled ? nd.nodeName : ""),
    events,
    metrics,
    logger,
    clock,
    random: Math.random,
    state: newProvisionerState(),
    capacityRefresh: new CapacityRefresh(),
    ...(options.inFlightRecord === "ledger" ? { ledger: await loadLedger(parts, signal) } : {}),
  };
  const limiter = <T>() =>
    new ItemExponentialRateLimiter<T>({
      baseMs: options.retryIntervalStartMs,
      maxMs: options.retryIntervalMaxMs,
    });
  const claimQueue = new WorkQueue<string>({
    name: "claims",
    rateLimiter: limiter(),
    clock,
    metrics: queueMetrics,
  });
  const volumeQueue = new WorkQueue<string>({
    name: "volumes",
    rateLimiter: limiter(),
    clock,
    metrics: queueMetrics,
  });
  const cloneQueue = new WorkQueue<string>({
    name: "cloning-protection",
    rateLimiter: limiter(),
    clock,
    metrics: queueMetrics,
  });

  const enqueueClaim = (claim: PersistentVolumeClaim): void => {
    claimQueue.add(objectKey(claim));
    for (const key of cloneProtectionKeys(claim)) cloneQueue.add(key);
  };
  claims.addEventHandler({
    onAdd: enqueueClaim,
    onUpdate: (old, claim) => {
      // Held by the claim's backoff (the queue's rule), except when its deletion starts.
      if (startsDeletion(old, claim)) claimQueue.expedite(objectKey(claim));
      enqueueClaim(claim);
    },
    onDelete: (object) => {
      const claim = deletedObject(object);
      for (const key of cloneProtectionKeys(claim)) cloneQueue.add(key);
      // A claim gone with its intent still recorded: settle what its CreateVolume may have made.
      if (ctx.ledger?.get(claim.metadata?.uid ?? "")) claimQueue.add(objectKey(claim));
    },
  });
  // Intents recorded by an earlier process (or leader): each claim is looked at again.
  for (const intent of ctx.ledger?.all() ?? []) claimQueue.add(`${intent.namespace}/${intent.name}`);
  const onVolume = (pv: PersistentVolume): void => {
    volumeQueue.add(objectKey(pv));
    const ref = pv.spec?.claimRef;
    if (ref?.namespace && ref.name) {
      const claim = claims.store.get(`${ref.namespace}/${ref.name}`);
      if (claim) for (const key of cloneProtectionKeys(claim)) cloneQueue.add(key);
    }
  };
  volumes.addEventHandler({
    onAdd: onVolume,
    onUpdate: (old, pv) => {
      if (startsDeletion(old, pv)) volumeQueue.expedite(objectKey(pv));
      onVolume(pv);
    },
  });
  // A detach finishing is what a delete held by an attachment waits for.
  attachments.addEventHandler({
    onDelete: (object) => {
      const pvName = deletedObject(object).spec?.source?.persistentVolumeName;
      if (pvName) volumeQueue.add(pvName);
    },
  });
  const informers = [
    claims,
    volumes,
    classes,
    attachments,
    ...(csiNodes ? [csiNodes] : []),
    ...(nodes ? [nodes] : []),
  ];
  // Started before the factory: it requests its informers synchronously.
  const capacityRun = capacity
    ? startCapacityController(
        {
          client,
          capacityClient: capacity.client,
          informers: factory,
          csi,
          driverName: driver.name,
          namespace: options.capacity.namespace,
          ownerReference: capacity.ownerReference,
          pollIntervalMs: options.capacity.pollIntervalMs,
          workers: options.capacity.threads,
          immediateBinding: options.capacity.forImmediateBinding,
          timeoutMs: options.timeoutMs,
          retryIntervalStartMs: options.retryIntervalStartMs,
          retryIntervalMaxMs: options.retryIntervalMaxMs,
          ...(nd.enabled
            ? { nodeDeployment: { nodeName: nd.nodeName, accessibleTopology: driver.localTopology } }
            : {}),
          refresh: ctx.capacityRefresh,
          registry,
          workQueueMetrics: queueMetrics,
          logger: logger.with({ controller: "capacity" }),
          clock,
        },
        signal,
      )
    : Promise.resolve();
  const running = [
    capacityRun,
    runSnapshotSweep(ctx, claims, options.snapshotOrphanSweepIntervalMs, signal),
    factory.start(signal),
    // Events wait behind every other write of this client (client-go's broadcaster also
    // writes them after the fact): the rate limit goes to PVs and marks first.
    withRequestPriority(REQUEST_PRIORITY.trailing, () => events.start(signal)),
    runController(
      {
        name: "claims",
        informers,
        queue: claimQueue,
        workers: options.workerThreads,
        logger,
        reconcile: (key, rc) => syncClaim(ctx, key, rc),
      },
      signal,
    ),
    runController(
      {
        name: "volumes",
        informers,
        queue: volumeQueue,
        workers: options.workerThreads,
        logger,
        reconcile: (key, rc) => syncVolume(ctx, key, rc),
      },
      signal,
    ),
    runController(
      {
        name: "cloning-protection",
        informers,
        queue: cloneQueue,
        workers: options.cloningProtectionThreads,
        logger,
        reconcile: (key, rc) => syncCloneSource(ctx, claims, key, rc),
      },
      signal,
    ),
  ];
  // events.start resolves once its writer stopped; events still queued at shutdown are
  // dropped, as client-go's broadcaster drops them (waiting could block shutdown forever).
  await Promise.all(running);
}
