// kubernetes.io/pv-protection (kube-controller-manager's persistentvolume-protection-controller,
// pkg/controller/volume/pvprotection): a volume being deleted keeps its finalizer while its
// status.phase is Bound (the PV controller keeps that phase current) and loses it otherwise;
// a live volume without the finalizer gets it.

import { FINALIZERS, GVR, type PersistentVolume } from "../../api/index.ts";
import { silentLogger } from "../../base/index.ts";
import { WorkQueue, controllerRateLimiter, isNotFound, objectKey, runController } from "../../kube/index.ts";
import {
  finalizerPatch,
  isDeletionCandidate,
  needToAddFinalizer,
  type ProtectionControllerOptions,
} from "./pvc-protection.ts";

const FINALIZER = FINALIZERS.pvProtection.key;

export async function startPvProtectionController(
  options: ProtectionControllerOptions,
  signal: AbortSignal,
): Promise<void> {
  const logger = (options.logger ?? silentLogger).with({
    controller: "persistentvolume-protection-controller",
  });
  const volumeInformer = options.informers.informer<PersistentVolume>(GVR.persistentVolumes);
  const queue = new WorkQueue<string>({
    name: "pvprotection",
    rateLimiter: controllerRateLimiter<string>({ retryIntervalStartMs: 5, retryIntervalMaxMs: 1_000_000 }),
  });
  const enqueue = (volume: PersistentVolume): void => {
    if (needToAddFinalizer(volume, FINALIZER) || isDeletionCandidate(volume, FINALIZER))
      queue.add(objectKey(volume));
  };
  const remove = volumeInformer.addEventHandler({
    onAdd: enqueue,
    onUpdate: (_old, volume) => enqueue(volume),
  });
  try {
    await runController(
      {
        name: "persistentvolume-protection-controller",
        informers: [volumeInformer],
        queue,
        workers: options.workers ?? 1,
        logger,
        reconcile: async (name, { signal: reconcileSignal, logger: reconcileLogger }) => {
          const volume = volumeInformer.store.get(name);
          if (volume === undefined) return;
          const finalizers = volume.metadata?.finalizers ?? [];
          try {
            if (isDeletionCandidate(volume, FINALIZER)) {
              if (volume.status?.phase === "Bound") {
                reconcileLogger.info(4, "keeping PV because it is being used");
                return;
              }
              await options.client.patch(
                GVR.persistentVolumes,
                name,
                finalizerPatch(
                  volume,
                  finalizers.filter((f) => f !== FINALIZER),
                ),
                {},
                reconcileSignal,
              );
              reconcileLogger.info(3, "removed PV protection finalizer");
            } else if (needToAddFinalizer(volume, FINALIZER)) {
              await options.client.patch(
                GVR.persistentVolumes,
                name,
                finalizerPatch(volume, [...finalizers, FINALIZER]),
                {},
                reconcileSignal,
              );
              reconcileLogger.info(3, "added PV protection finalizer");
            }
          } catch (error) {
            if (!isNotFound(error)) throw error;
          }
        },
      },
      signal,
    );
  } finally {
    remove();
  }
}
