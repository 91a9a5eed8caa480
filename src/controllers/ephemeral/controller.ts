// kube-controller-manager's ephemeral-volume-controller (wiring; sync.ts decides): a queue of
// pod keys fed by pod adds (a pod's volumes never change) and by claim deletes (a pod whose
// claim was deleted under it gets it again), drained by --concurrent-ephemeralvolume-syncs
// workers (5). Events come from the source "ephemeral_volume", as upstream's.

import { GVR, type PersistentVolumeClaim, type Pod } from "../../api/index.ts";
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
import { POD_CLAIM_INDEX, ensurePodClaimIndex } from "../common/index.ts";
import { syncPodEphemeralVolumes } from "./sync.ts";

export const EPHEMERAL_VOLUME_COMPONENT = "ephemeral_volume";

export interface EphemeralVolumeControllerOptions {
  client: KubeClient;
  informers: InformerFactory;
  logger?: Logger;
  /** --concurrent-ephemeralvolume-syncs. Default 5. */
  workers?: number;
  clock?: Clock;
}

function hasEphemeralVolume(pod: Pod): boolean {
  return (pod.spec?.volumes ?? []).some((volume) => volume.ephemeral !== undefined);
}

export async function startEphemeralVolumeController(
  options: EphemeralVolumeControllerOptions,
  signal: AbortSignal,
): Promise<void> {
  const logger = (options.logger ?? silentLogger).with({ controller: "ephemeral-volume-controller" });
  const clock = options.clock ?? realClock;
  const workers = options.workers ?? 5;
  if (!Number.isInteger(workers) || workers < 1)
    throw new Error(`ephemeral-volume-controller: workers must be a positive integer, got ${workers}`);
  const podInformer = options.informers.informer<Pod>(GVR.pods);
  const claimInformer = options.informers.informer<PersistentVolumeClaim>(GVR.persistentVolumeClaims);
  ensurePodClaimIndex(podInformer);
  const queue = new WorkQueue<string>({
    name: "ephemeral_volume",
    rateLimiter: controllerRateLimiter<string>({
      retryIntervalStartMs: 5,
      retryIntervalMaxMs: 1_000_000,
      clock,
    }),
    clock,
  });
  const enqueuePod = (pod: Pod): void => {
    if (!pod.metadata?.deletionTimestamp && hasEphemeralVolume(pod)) queue.add(objectKey(pod));
  };
  const removeHandlers = [
    podInformer.addEventHandler({ onAdd: enqueuePod }),
    claimInformer.addEventHandler({
      onDelete: (deleted) => {
        const claim = deletedObject(deleted);
        for (const pod of podInformer.store.byIndex(POD_CLAIM_INDEX, objectKey(claim))) enqueuePod(pod);
      },
    }),
  ];
  const recorder = new EventRecorder({
    client: options.client,
    component: EPHEMERAL_VOLUME_COMPONENT,
    logger,
    clock,
  });
  const recorderRun = recorder.start(signal);
  try {
    await runController(
      {
        name: "ephemeral-volume-controller",
        informers: [podInformer, claimInformer],
        queue,
        workers,
        logger,
        reconcile: async (key, { signal: reconcileSignal, logger: reconcileLogger }) => {
          const pod = podInformer.store.get(key);
          if (pod === undefined) return;
          await syncPodEphemeralVolumes(
            {
              client: options.client,
              recorder,
              logger: reconcileLogger,
              signal: reconcileSignal,
              claims: claimInformer.store,
            },
            pod,
          );
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
