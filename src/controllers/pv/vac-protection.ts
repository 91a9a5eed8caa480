// kubernetes.io/vac-protection (kube-controller-manager's
// volumeattributesclass-protection-controller, GA with VolumeAttributesClass in 1.34): every live
// VolumeAttributesClass carries the finalizer, and one being deleted keeps it while a claim names
// it (spec.volumeAttributesClassName, status.currentVolumeAttributesClassName, or the target of a
// modification in progress) or a volume does (spec.volumeAttributesClassName). Claims and volumes
// re-queue the classes they name when they change or go. Before the finalizer goes, the API
// server is asked, not the cache: a claim created a moment ago may not be in the cache yet.

import {
  FINALIZERS,
  GVR,
  type GroupVersionKindResource,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type VolumeAttributesClass,
} from "../../api/index.ts";
import { silentLogger } from "../../base/index.ts";
import {
  WorkQueue,
  controllerRateLimiter,
  deletedObject,
  firstServedVersion,
  isNotFound,
  objectKey,
  runController,
} from "../../kube/index.ts";
import {
  finalizerPatch,
  isDeletionCandidate,
  needToAddFinalizer,
  type ProtectionControllerOptions,
} from "./pvc-protection.ts";

const FINALIZER = FINALIZERS.vacProtection.key;
const CONTROLLER = "volumeattributesclass-protection-controller";

/** The classes a claim names, in spec and status. */
export function classesOfClaim(claim: PersistentVolumeClaim): string[] {
  return [
    claim.spec?.volumeAttributesClassName,
    claim.status?.currentVolumeAttributesClassName,
    claim.status?.modifyVolumeStatus?.targetVolumeAttributesClassName,
  ].filter((name): name is string => typeof name === "string" && name !== "");
}

export function classOfVolume(volume: PersistentVolume): string[] {
  const name = volume.spec?.volumeAttributesClassName;
  return typeof name === "string" && name !== "" ? [name] : [];
}

export async function startVacProtectionController(
  options: ProtectionControllerOptions,
  signal: AbortSignal,
): Promise<void> {
  const logger = (options.logger ?? silentLogger).with({ controller: CONTROLLER });
  let served: GroupVersionKindResource | undefined;
  try {
    served = await firstServedVersion(
      options.client,
      ["v1", "v1beta1"].map((version): GroupVersionKindResource =>
        Object.freeze({ ...GVR.volumeAttributesClasses, version }),
      ),
      signal,
    );
  } catch (error) {
    // Stopped while asking: a stop, not a failure of the loop.
    if (signal.aborted) return;
    throw error;
  }
  if (served === undefined) {
    logger.info(0, "VolumeAttributesClass is not served: nothing to protect", {});
    return;
  }
  const classInformer = options.informers.informer<VolumeAttributesClass>(served);
  const claimInformer = options.informers.informer<PersistentVolumeClaim>(GVR.persistentVolumeClaims);
  const volumeInformer = options.informers.informer<PersistentVolume>(GVR.persistentVolumes);
  // Asked for after the version lookup, so possibly after the factory started its informers:
  // start whichever of these is not running yet.
  const runs = [classInformer, claimInformer, volumeInformer]
    .filter((informer) => !informer.started)
    .map((informer) => informer.run(signal));
  const queue = new WorkQueue<string>({
    name: "volumeattributesclass",
    rateLimiter: controllerRateLimiter<string>({ retryIntervalStartMs: 5, retryIntervalMaxMs: 1_000_000 }),
  });
  const enqueueClass = (vac: VolumeAttributesClass): void => {
    if (needToAddFinalizer(vac, FINALIZER) || isDeletionCandidate(vac, FINALIZER)) queue.add(objectKey(vac));
  };
  // A class that lost a user may now be free to go: re-check it when it is being deleted.
  const enqueueNamed = (names: readonly string[]): void => {
    for (const name of names) {
      const vac = classInformer.store.get(name);
      if (vac !== undefined && isDeletionCandidate(vac, FINALIZER)) queue.add(name);
    }
  };
  const removers = [
    classInformer.addEventHandler({ onAdd: enqueueClass, onUpdate: (_old, vac) => enqueueClass(vac) }),
    claimInformer.addEventHandler({
      onUpdate: (old, claim) => enqueueNamed([...classesOfClaim(old), ...classesOfClaim(claim)]),
      onDelete: (claim) => enqueueNamed(classesOfClaim(deletedObject(claim))),
    }),
    volumeInformer.addEventHandler({
      onUpdate: (old, volume) => enqueueNamed([...classOfVolume(old), ...classOfVolume(volume)]),
      onDelete: (volume) => enqueueNamed(classOfVolume(deletedObject(volume))),
    }),
  ];
  const inUseLive = async (name: string, reconcileSignal: AbortSignal): Promise<string | undefined> => {
    const claims = await options.client.list<PersistentVolumeClaim>(
      GVR.persistentVolumeClaims,
      {},
      reconcileSignal,
    );
    const claim = claims.items.find((c) => classesOfClaim(c).includes(name));
    if (claim) return `claim ${claim.metadata?.namespace}/${claim.metadata?.name}`;
    const volumes = await options.client.list<PersistentVolume>(GVR.persistentVolumes, {}, reconcileSignal);
    const volume = volumes.items.find((v) => classOfVolume(v).includes(name));
    return volume ? `volume ${volume.metadata?.name}` : undefined;
  };
  try {
    await runController(
      {
        name: CONTROLLER,
        informers: [classInformer, claimInformer, volumeInformer],
        queue,
        workers: options.workers ?? 1,
        logger,
        reconcile: async (name, { signal: reconcileSignal, logger: reconcileLogger }) => {
          const vac = classInformer.store.get(name);
          if (vac === undefined) return;
          const finalizers = vac.metadata?.finalizers ?? [];
          try {
            if (isDeletionCandidate(vac, FINALIZER)) {
              // The cache first (cheap, and the common answer while a class is in use).
              const cachedUser =
                claimInformer.store.list().some((c) => classesOfClaim(c).includes(name)) ||
                volumeInformer.store.list().some((v) => classOfVolume(v).includes(name));
              const user = cachedUser ? "a cached claim or volume" : await inUseLive(name, reconcileSignal);
              if (user !== undefined) {
                reconcileLogger.info(4, "keeping VolumeAttributesClass: in use", { by: user });
                return;
              }
              await options.client.patch(
                served,
                name,
                finalizerPatch(
                  vac,
                  finalizers.filter((f) => f !== FINALIZER),
                ),
                {},
                reconcileSignal,
              );
              reconcileLogger.info(3, "removed VolumeAttributesClass protection finalizer");
            } else if (needToAddFinalizer(vac, FINALIZER)) {
              await options.client.patch(
                served,
                name,
                finalizerPatch(vac, [...finalizers, FINALIZER]),
                {},
                reconcileSignal,
              );
              reconcileLogger.info(3, "added VolumeAttributesClass protection finalizer");
            }
          } catch (error) {
            if (!isNotFound(error)) throw error;
          }
        },
      },
      signal,
    );
  } finally {
    for (const remove of removers) remove();
    await Promise.all(runs);
  }
}
