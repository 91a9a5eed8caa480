// kube-controller-manager's selinux-warning-controller (pkg/controller/volume/selinuxwarning;
// wiring here, sync.ts decides, cache.ts remembers): it changes no object, it only warns. A
// queue of pod keys, fed by pod adds and deletes and by a pod turning Succeeded or Failed (its
// volumes get unmounted); by claims getting bound and volumes getting bound (the pods of that
// claim); and by a CSIDriver appearing, changing spec.seLinuxMount or going away while it had
// it (the pods using its volumes). Each pod's CSI volumes go into the cache; each new conflict
// is an event of type Normal, reason SELinuxLabelConflict or SELinuxChangePolicyConflict, on
// both pods (from the source "selinux_warning", as upstream's), whether or not the pods ever
// share a node — the scheduler may put them together next time. A pod whose containers give
// one volume different labels gets a Warning MultipleSELinuxLabels.
//
// KCM enables it only when asked (--controllers=selinux-warning-controller or "*,selinux-…")
// and only with the SELinuxChangePolicy gate on; run.ts keeps both rules.

import {
  GVR,
  type CSIDriver,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
} from "../../api/index.ts";
import { realClock, silentLogger, type Clock, type Logger } from "../../base/index.ts";
import {
  EventRecorder,
  WorkQueue,
  controllerRateLimiter,
  deletedObject,
  objectKey,
  runController,
  type InformerFactory,
  type KubeClient,
} from "../../kube/index.ts";
import type { FeatureGates } from "../../migration/index.ts";
import { POD_CLAIM_INDEX, ensurePodClaimIndex } from "../common/index.ts";
import { VolumeLabelCache, conflictMessage } from "./cache.ts";
import { podVolumeUses } from "./sync.ts";

export const SELINUX_WARNING_COMPONENT = "selinux_warning";
export const SELINUX_WARNING_CONTROLLER = "selinux-warning-controller";

export interface SELinuxWarningControllerOptions {
  client: KubeClient;
  informers: InformerFactory;
  logger?: Logger;
  /** Resolved --feature-gates. Default: csikit's default release's. */
  featureGates?: FeatureGates;
  /** Workers (KCM runs 1). Default 1. */
  workers?: number;
  clock?: Clock;
  /** Gets the live conflict cache (the metric reads it at scrape time). */
  onCache?: (cache: VolumeLabelCache) => void;
}

const finished = (pod: Pod): boolean => pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed";

export async function startSELinuxWarningController(
  options: SELinuxWarningControllerOptions,
  signal: AbortSignal,
): Promise<void> {
  const logger = (options.logger ?? silentLogger).with({ controller: SELINUX_WARNING_CONTROLLER });
  const clock = options.clock ?? realClock;
  const podInformer = options.informers.informer<Pod>(GVR.pods);
  const claimInformer = options.informers.informer<PersistentVolumeClaim>(GVR.persistentVolumeClaims);
  const volumeInformer = options.informers.informer<PersistentVolume>(GVR.persistentVolumes);
  const driverInformer = options.informers.informer<CSIDriver>(GVR.csiDrivers);
  ensurePodClaimIndex(podInformer);
  const cache = new VolumeLabelCache();
  options.onCache?.(cache);
  const queue = new WorkQueue<string>({
    name: "selinux_warning",
    rateLimiter: controllerRateLimiter<string>({
      retryIntervalStartMs: 5,
      retryIntervalMaxMs: 1_000_000,
      clock,
    }),
    clock,
  });
  const enqueueClaimPods = (namespace: string, name: string): void => {
    for (const pod of podInformer.store.byIndex(POD_CLAIM_INDEX, `${namespace}/${name}`))
      queue.add(objectKey(pod));
  };
  const enqueueDriverPods = (driver: string): void => {
    for (const pod of cache.podsForCSIDriver(driver)) queue.add(`${pod.namespace}/${pod.name}`);
  };
  const removeHandlers = [
    podInformer.addEventHandler({
      onAdd: (pod) => queue.add(objectKey(pod)),
      // A pod's volumes and labels never change; only its end matters.
      onUpdate: (old, pod) => {
        if (old.status?.phase !== pod.status?.phase && finished(pod)) queue.add(objectKey(pod));
      },
      onDelete: (pod) => queue.add(objectKey(deletedObject(pod))),
    }),
    claimInformer.addEventHandler({
      onAdd: (claim) => {
        if (claim.spec?.volumeName)
          enqueueClaimPods(claim.metadata?.namespace ?? "", claim.metadata?.name ?? "");
      },
      onUpdate: (old, claim) => {
        if (old.spec?.volumeName !== claim.spec?.volumeName)
          enqueueClaimPods(claim.metadata?.namespace ?? "", claim.metadata?.name ?? "");
      },
    }),
    volumeInformer.addEventHandler({
      onAdd: (volume) => {
        const ref = volume.spec?.claimRef;
        if (ref?.uid) enqueueClaimPods(ref.namespace ?? "", ref.name ?? "");
      },
      onUpdate: (old, volume) => {
        const ref = volume.spec?.claimRef;
        if (ref?.uid && old.spec?.claimRef?.uid !== ref.uid)
          enqueueClaimPods(ref.namespace ?? "", ref.name ?? "");
      },
    }),
    driverInformer.addEventHandler({
      onAdd: (driver) => enqueueDriverPods(driver.metadata?.name ?? ""),
      onUpdate: (old, driver) => {
        if ((old.spec?.seLinuxMount ?? false) !== (driver.spec?.seLinuxMount ?? false))
          enqueueDriverPods(driver.metadata?.name ?? "");
      },
      onDelete: (deleted) => {
        const driver = deletedObject(deleted);
        if (driver.spec?.seLinuxMount === true) enqueueDriverPods(driver.metadata?.name ?? "");
      },
    }),
  ];
  const recorder = new EventRecorder({
    client: options.client,
    component: SELINUX_WARNING_COMPONENT,
    logger,
    clock,
  });
  const recorderRun = recorder.start(signal);
  const caches = {
    claims: claimInformer.store,
    volumes: volumeInformer.store,
    csiDrivers: driverInformer.store,
  };
  try {
    await runController(
      {
        name: SELINUX_WARNING_CONTROLLER,
        informers: [podInformer, claimInformer, volumeInformer, driverInformer],
        queue,
        workers: options.workers ?? 1,
        logger,
        reconcile: (key, { logger: reconcileLogger }) => {
          const pod = podInformer.store.get(key);
          const slash = key.indexOf("/");
          const ref = { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
          if (pod === undefined || finished(pod)) {
            // OBSERVATION: gone or finished: its volumes are (being) unmounted.
            cache.deletePod(ref);
            return Promise.resolve();
          }
          const { uses, multipleLabels } = podVolumeUses(pod, caches, options.featureGates);
          for (const volume of multipleLabels)
            recorder.event(
              pod,
              "Warning",
              "MultipleSELinuxLabels",
              `Volume "${volume}" is mounted twice with different SELinux labels inside this pod`,
            );
          for (const use of uses) {
            reconcileLogger.info(4, "syncing pod volume", { volume: use.uniqueName, label: use.label });
            for (const conflict of cache.addVolume(use.uniqueName, ref, use)) {
              const target = podInformer.store.get(`${conflict.pod.namespace}/${conflict.pod.name}`);
              // A conflict resolved by deleting one of the pods is not worth an event.
              if (target === undefined) break;
              recorder.event(target, "Normal", conflict.reason, conflictMessage(conflict));
            }
          }
          return Promise.resolve();
        },
      },
      signal,
    );
  } finally {
    queue.shutDown();
    for (const remove of removeHandlers) remove();
    await recorderRun;
  }
}
