// syncVolume: the volume half of upstream's PV controller state machine (pv_controller.go),
// "space shuttle style". A volume without claimRef (or pre-bound by name only) is Available;
// one whose claim is gone is Released and reclaimed by its policy; one whose claim is bound
// elsewhere is given back; one whose claim has not finished binding gets the claim enqueued
// (that is how a provisioned volume gets bound quickly).
//
// Reclaim, as upstream for volumes without in-tree plugins: Retain keeps the Released volume;
// Delete of a volume provisioned by an external provisioner (pv.kubernetes.io/provisioned-by
// not under kubernetes.io/) waits for that provisioner to delete it; Delete of any other
// volume, and Recycle, fail the volume with an Event (no plugin here can delete or recycle).

import {
  ANNOTATIONS,
  EVENT_REASONS,
  type PersistentVolume,
  type PersistentVolumeClaim,
} from "../../api/index.ts";
import type { PvSyncContext } from "./context.ts";
import { volumeModeMismatch } from "./match.ts";
import { getClaimLive } from "./sync-claim.ts";
import { volumeMigrationAnnotations } from "./migration.ts";
import {
  claimEvent,
  updateVolume,
  unbindVolume,
  updateVolumePhase,
  updateVolumePhaseWithEvent,
  volumeEvent,
} from "./writes.ts";

const PROVISIONED_BY = ANNOTATIONS.provisionedBy.key;
const BOUND_BY_CONTROLLER = ANNOTATIONS.boundByController.key;

/** The claim the volume's claimRef names, from the cache or (when the cache lacks it) the server. */
async function referencedClaim(
  ctx: PvSyncContext,
  volume: PersistentVolume,
): Promise<PersistentVolumeClaim | undefined> {
  const ref = volume.spec?.claimRef;
  if (!ref?.name) return undefined;
  const namespace = ref.namespace ?? "";
  const claim = ctx.claims.get(`${namespace}/${ref.name}`) ?? (await getClaimLive(ctx, namespace, ref.name));
  if (claim !== undefined && claim.metadata?.uid !== ref.uid) return undefined; // deleted and re-created
  return claim;
}

/** Sets or removes migrated-to first, as upstream's syncVolume does, and goes on with the result. */
async function updateVolumeMigrationAnnotations(
  ctx: PvSyncContext,
  volume: PersistentVolume,
): Promise<PersistentVolume> {
  const annotations = volumeMigrationAnnotations(ctx.featureGates, volume.metadata?.annotations);
  if (annotations === undefined) return volume;
  const next = structuredClone(volume);
  next.metadata = { ...next.metadata, annotations: { ...annotations } };
  return updateVolume(ctx, next);
}

export async function syncVolume(ctx: PvSyncContext, original: PersistentVolume): Promise<void> {
  const volume = await updateVolumeMigrationAnnotations(ctx, original);
  const ref = volume.spec?.claimRef;
  if (!ref) {
    // OBSERVATION: volume unbound.
    await updateVolumePhase(ctx, volume, "Available");
    return;
  } else if (!ref.uid) {
    // OBSERVATION: volume pre-bound by the user to a claim that has not bound yet.
    await updateVolumePhase(ctx, volume, "Available");
    ctx.enqueueClaim(`${ref.namespace ?? ""}/${ref.name ?? ""}`);
    return;
  }
  const claim = await referencedClaim(ctx, volume);
  if (claim === undefined) {
    // OBSERVATION: volume bound, its claim is gone: Released, then reclaim.
    let current = volume;
    if (volume.status?.phase !== "Released" && volume.status?.phase !== "Failed") {
      ctx.logger.info(2, "volume is released and reclaim policy will be executed", {
        volume: volume.metadata?.name,
      });
      current = await updateVolumePhase(ctx, volume, "Released");
    }
    await reclaimVolume(ctx, current);
    return;
  } else if (!claim.spec?.volumeName) {
    // OBSERVATION: volume points at a claim that is still Pending.
    if (volumeModeMismatch(claim, volume)) {
      volumeEvent(
        ctx,
        volume,
        "Warning",
        EVENT_REASONS.volumeMismatch.key,
        `Cannot bind PersistentVolume to requested PersistentVolumeClaim "${claim.metadata?.name}" due to incompatible volumeMode.`,
      );
      claimEvent(
        ctx,
        claim,
        "Warning",
        EVENT_REASONS.volumeMismatch.key,
        `Cannot bind PersistentVolume "${volume.metadata?.name}" to requested PersistentVolumeClaim due to incompatible volumeMode.`,
      );
      return;
    } else {
      // The claim's sync finishes the bind (a provisioned volume, or a half-done bind).
      ctx.enqueueClaim(`${claim.metadata?.namespace}/${claim.metadata?.name}`);
      return;
    }
  } else if (claim.spec.volumeName === volume.metadata?.name) {
    // OBSERVATION: volume and claim point at each other.
    await updateVolumePhase(ctx, volume, "Bound");
    return;
  } else if (
    volume.metadata?.annotations?.[PROVISIONED_BY] !== undefined &&
    volume.spec?.persistentVolumeReclaimPolicy === "Delete"
  ) {
    // OBSERVATION: provisioned for this claim, but the claim bound another volume: release it.
    let current = volume;
    if (volume.status?.phase !== "Released" && volume.status?.phase !== "Failed")
      current = await updateVolumePhase(ctx, volume, "Released");
    await reclaimVolume(ctx, current);
    return;
  } else {
    // OBSERVATION: the claim bound another volume; give this one back (a user's pre-bind
    // keeps its claim name, only the UID goes).
    ctx.logger.info(4, "volume's claim is bound to another volume, unbinding", {
      volume: volume.metadata?.name,
      byController: volume.metadata?.annotations?.[BOUND_BY_CONTROLLER] !== undefined,
    });
    await unbindVolume(ctx, volume);
    return;
  }
}

async function reclaimVolume(ctx: PvSyncContext, volume: PersistentVolume): Promise<void> {
  const policy = volume.spec?.persistentVolumeReclaimPolicy;
  if (policy === "Retain") {
    ctx.logger.info(4, "volume is released and reclaim policy is Retain, nothing to do", {
      volume: volume.metadata?.name,
    });
  } else if (policy === "Recycle") {
    await updateVolumePhaseWithEvent(ctx, volume, "Failed", {
      type: "Warning",
      reason: EVENT_REASONS.volumeFailedRecycle.key,
      message: "No recycler plugin found for the volume!",
    });
  } else if (policy === "Delete") {
    const provisionedBy = volume.metadata?.annotations?.[PROVISIONED_BY] ?? "";
    const migratedTo = volume.metadata?.annotations?.[ANNOTATIONS.migratedTo.key];
    if (migratedTo !== undefined) {
      // A migrated in-tree volume: its CSI driver's external provisioner deletes it.
      ctx.logger.info(3, "volume is migrated to CSI, its external deleter deletes it", {
        volume: volume.metadata?.name,
        driver: migratedTo,
      });
    } else if (provisionedBy !== "" && !provisionedBy.startsWith("kubernetes.io/")) {
      ctx.logger.info(3, "external deleter for volume requested, ignoring", {
        volume: volume.metadata?.name,
        provisioner: provisionedBy,
      });
    } else {
      const message =
        provisionedBy !== ""
          ? `no volume plugin matched name: ${provisionedBy}`
          : `error getting deleter volume plugin for volume "${volume.metadata?.name}": no deletable volume plugin matched`;
      await updateVolumePhaseWithEvent(ctx, volume, "Failed", {
        type: "Warning",
        reason: EVENT_REASONS.volumeFailedDelete.key,
        message,
      });
    }
  } else {
    await updateVolumePhaseWithEvent(ctx, volume, "Failed", {
      type: "Warning",
      reason: EVENT_REASONS.volumeUnknownReclaimPolicy.key,
      message: "Volume has unrecognized PersistentVolumeReclaimPolicy",
    });
  }
}
