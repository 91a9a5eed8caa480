// `startResizer(options, signal)`: the composition root of the resizer sidecar, on the start-up
// every controller sidecar shares (runSidecar in src/kube/sidecar.ts):
//   1. connect to the driver, Probe until ready, GetPluginInfo and capabilities (any error is
//      fatal: the promise rejects and the CLI exits non-zero, as upstream);
//   2. the diagnostics endpoint (metrics incl. csi_sidecar_operations_seconds and workqueue_*,
//      /healthz/leader-election);
//   3. under leader election on the Lease `external-resizer-<sanitized driver>`, the resize
//      controller (--workers workers; when the driver expands at all) and the modify controller
//      (--workers more; VolumeAttributesClass gate on, the driver has MODIFY_VOLUME and the API
//      server serves VolumeAttributesClasses), sharing one informer factory of claims, volumes
//      and classes. No pod informer: --handle-volume-inuse-error looks pods up on demand
//      (in-use.ts), so memory does not grow with the cluster's pods (external-resizer#211).
// Resolves once everything has stopped after `signal` aborts (workers drained, lease released,
// sockets closed); rejects with LeadershipLostError when the lease is lost.

import {
  GVR,
  type GroupVersionKindResource,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type VolumeAttributesClass,
} from "../../api/index.ts";
import {
  EventRecorder,
  ItemExponentialRateLimiter,
  WorkQueue,
  objectKey,
  runController,
  runSidecar,
  type SidecarParts,
} from "../../kube/index.ts";
import { isMigratedCSIDriverByName } from "../../migration/index.ts";
import { newResizerState, type ResizerContext } from "./context.ts";
import { discoverResizerDriver, type ResizerDriverInfo } from "./driver.ts";
import { syncExpansion } from "./expand.ts";
import { requestedSize } from "./conditions.ts";
import { syncModify } from "./modify.ts";
import type { ResizerOptions } from "./options.ts";
import { servedVolumeAttributesClassApi } from "./vac-api.ts";

export async function startResizer(options: ResizerOptions, signal: AbortSignal): Promise<void> {
  await runSidecar<ResizerDriverInfo>(
    options,
    {
      component: "resizer",
      discover: (csi, discoverSignal) =>
        discoverResizerDriver(csi, { timeoutMs: options.timeoutMs, signal: discoverSignal }),
      describe: (driver) => ({
        controllerExpansion: driver.controllerExpansion,
        nodeExpansion: driver.nodeExpansion,
        modifyVolume: driver.modifyVolume,
        online: driver.online,
      }),
      isMigrationTarget: isMigratedCSIDriverByName,
      leaderElection: options.leaderElection.enabled,
      prepare: async (parts, prepareSignal) => {
        let vacApi: GroupVersionKindResource | undefined;
        if (!options.features.volumeAttributesClass) {
          // OBSERVATION: the gate is off: no modify controller.
        } else if (!parts.driver.modifyVolume) {
          parts.logger.info(2, "Modify not supported: the driver lacks MODIFY_VOLUME", {});
        } else {
          vacApi = await servedVolumeAttributesClassApi(parts.client, parts.logger, prepareSignal);
        }
        return (workSignal) => runControllers({ options, ...parts, vacApi }, workSignal);
      },
    },
    signal,
  );
}

type RunParts = SidecarParts<ResizerDriverInfo> & {
  options: ResizerOptions;
  /** The VolumeAttributesClass version to read; undefined: no modify controller. */
  vacApi: GroupVersionKindResource | undefined;
};

async function runControllers(parts: RunParts, signal: AbortSignal): Promise<void> {
  const { options, driver, client, csi, queueMetrics, logger, clock, vacApi } = parts;
  // --resync-period: every cached object is handed to the handlers again (onUpdate(obj, obj)),
  // so every claim is looked at again, as upstream's shared informer factory does.
  const factory = parts.informers({ resyncPeriodMs: options.resyncPeriodMs });
  const claims = factory.informer<PersistentVolumeClaim>(GVR.persistentVolumeClaims);
  const volumes = factory.informer<PersistentVolume>(GVR.persistentVolumes);
  const resize = driver.expansion;
  const modify = vacApi !== undefined;
  const attributeClasses = vacApi ? factory.informer<VolumeAttributesClass>(vacApi) : undefined;
  const events = new EventRecorder({ client, component: `external-resizer ${driver.name}`, logger, clock });
  const ctx: ResizerContext = {
    client,
    csi,
    driver,
    options,
    claims,
    volumes,
    attributeClasses,
    events,
    logger,
    clock,
    state: newResizerState(clock, options.retryIntervalMaxMs),
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
  const resizeQueue = queue(`${driver.name}-pvc`);
  const modifyQueue = queue(`${driver.name}-modify-pvc`);
  const enqueueClaim = (claim: PersistentVolumeClaim): void => {
    const key = objectKey(claim);
    if (resize) resizeQueue.add(key);
    if (modify) modifyQueue.add(key);
  };
  claims.addEventHandler({
    onAdd: enqueueClaim,
    onUpdate: (old, claim) => {
      // A failing claim keeps its backoff whatever the resizer's own status writes cause (the
      // queue's hold); a new request from the user is a new operation and goes at once.
      const key = objectKey(claim);
      if (resize && requestedSize(old) !== requestedSize(claim)) resizeQueue.expedite(key);
      if (modify && old.spec?.volumeAttributesClassName !== claim.spec?.volumeAttributesClassName)
        modifyQueue.expedite(key);
      enqueueClaim(claim);
    },
  });
  // A PV changing (capacity written, class recorded) re-checks its claim.
  const onVolume = (pv: PersistentVolume): void => {
    const ref = pv.spec?.claimRef;
    if (ref?.namespace && ref.name) {
      const claim = claims.store.get(`${ref.namespace}/${ref.name}`);
      if (claim) enqueueClaim(claim);
    }
  };
  volumes.addEventHandler({ onAdd: onVolume, onUpdate: (_old, pv) => onVolume(pv) });
  // A claim waiting for its pods to go (in-use error) is retried on the queue's backoff, and
  // its pods are looked up then (in-use.ts): no watch of every pod of the cluster.
  // A class appearing lets Pending modifications go on.
  attributeClasses?.addEventHandler({
    onAdd: (vac) => {
      for (const claim of claims.store.list())
        if (claim.spec?.volumeAttributesClassName === vac.metadata?.name) modifyQueue.add(objectKey(claim));
    },
  });
  const informers = [claims, volumes, ...(attributeClasses ? [attributeClasses] : [])];
  const running = [factory.start(signal), events.start(signal)];
  if (resize)
    running.push(
      runController(
        {
          name: "resize",
          informers,
          queue: resizeQueue,
          workers: options.workers,
          logger,
          reconcile: (key, rc) => syncExpansion(ctx, key, rc),
        },
        signal,
      ),
    );
  else {
    logger.info(2, "the driver expands neither in the controller nor on the node: no resize controller", {});
    resizeQueue.shutDown();
  }
  if (modify)
    running.push(
      runController(
        {
          name: "modify",
          informers,
          queue: modifyQueue,
          workers: options.workers,
          logger,
          reconcile: (key, rc) => syncModify(ctx, key, rc),
        },
        signal,
      ),
    );
  else modifyQueue.shutDown();
  await Promise.all(running);
}
