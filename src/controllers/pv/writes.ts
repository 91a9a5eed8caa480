// The PV controller's writes, each a no-op when the object already says what we want, so a
// sync that runs twice (or after a crash) writes nothing the second time. Every answer is
// remembered in the latest-objects view before the next step reads it. Messages and the
// order of the steps are upstream's (pv_controller.go bind / unbind / updateClaimStatus /
// updateVolumePhase).

import {
  ANNOTATIONS,
  GVR,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type PersistentVolumeClaimStatus,
  type PersistentVolumePhase,
} from "../../api/index.ts";
import { isConflict, isNotFound, objectReference, type EventType } from "../../kube/index.ts";
import type { PvSyncContext } from "./context.ts";
import { isVolumeBoundToClaim, storageQuantity } from "./match.ts";
import { compareQuantities, parseQuantity } from "../../api/index.ts";

function isQuantity(text: string): boolean {
  try {
    parseQuantity(text);
    return true;
  } catch {
    return false;
  }
}

const BOUND_BY_CONTROLLER = ANNOTATIONS.boundByController.key;
const BIND_COMPLETED = ANNOTATIONS.bindCompleted.key;

export function claimEvent(
  ctx: PvSyncContext,
  claim: PersistentVolumeClaim,
  type: EventType,
  reason: string,
  message: string,
): void {
  ctx.recorder.event(
    objectReference(claim, { kind: "PersistentVolumeClaim", apiVersion: "v1" }),
    type,
    reason,
    message,
  );
}

export function volumeEvent(
  ctx: PvSyncContext,
  volume: PersistentVolume,
  type: EventType,
  reason: string,
  message: string,
): void {
  ctx.recorder.event(
    objectReference(volume, { kind: "PersistentVolume", apiVersion: "v1" }),
    type,
    reason,
    message,
  );
}

export async function updateVolume(ctx: PvSyncContext, volume: PersistentVolume): Promise<PersistentVolume> {
  return ctx.volumes.remember(await ctx.client.update(GVR.persistentVolumes, volume, {}, ctx.signal));
}

export async function updateClaim(
  ctx: PvSyncContext,
  claim: PersistentVolumeClaim,
): Promise<PersistentVolumeClaim> {
  return ctx.claims.remember(await ctx.client.update(GVR.persistentVolumeClaims, claim, {}, ctx.signal));
}

/** Sets status.phase (and message); nothing when the phase is already that. */
export async function updateVolumePhase(
  ctx: PvSyncContext,
  volume: PersistentVolume,
  phase: PersistentVolumePhase,
  message = "",
): Promise<PersistentVolume> {
  if (volume.status?.phase === phase) return volume;
  const next = structuredClone(volume);
  next.status = { ...next.status, phase };
  if (message !== "") next.status.message = message;
  else delete next.status.message;
  next.status.lastPhaseTransitionTime = new Date(Math.floor(ctx.now() / 1000) * 1000)
    .toISOString()
    .replace(".000Z", "Z");
  ctx.logger.info(4, "volume phase", { volume: volume.metadata?.name, phase });
  return ctx.volumes.remember(await ctx.client.updateStatus(GVR.persistentVolumes, next, ctx.signal));
}

/** updateVolumePhase plus an Event, written only on the transition (as upstream). */
export async function updateVolumePhaseWithEvent(
  ctx: PvSyncContext,
  volume: PersistentVolume,
  phase: PersistentVolumePhase,
  event: { type: EventType; reason: string; message: string },
): Promise<PersistentVolume> {
  if (volume.status?.phase === phase) return volume;
  const updated = await updateVolumePhase(ctx, volume, phase, event.message);
  volumeEvent(ctx, updated, event.type, event.reason, event.message);
  return updated;
}

/**
 * Claim status: phase, and access modes and capacity from the volume (cleared without one).
 * Capacity is copied only when the claim becomes Bound: a later difference may be an
 * expansion in progress and must not be clobbered. A volume carrying the resizer's
 * pre-resize-capacity annotation gives that size instead.
 */
export async function updateClaimStatus(
  ctx: PvSyncContext,
  claim: PersistentVolumeClaim,
  phase: NonNullable<PersistentVolumeClaimStatus["phase"]>,
  volume: PersistentVolume | undefined,
): Promise<PersistentVolumeClaim> {
  const next = structuredClone(claim);
  const status: PersistentVolumeClaimStatus = { ...next.status };
  let dirty = false;
  if (status.phase !== phase) {
    status.phase = phase;
    dirty = true;
  }
  if (volume === undefined) {
    if (status.accessModes !== undefined) {
      delete status.accessModes;
      dirty = true;
    }
    if (status.capacity !== undefined) {
      delete status.capacity;
      dirty = true;
    }
  } else {
    const modes = volume.spec?.accessModes ?? [];
    if (JSON.stringify(status.accessModes ?? []) !== JSON.stringify(modes)) {
      status.accessModes = [...modes];
      dirty = true;
    }
    if (claim.status?.phase !== phase && volume.spec?.capacity?.storage !== undefined) {
      const have = status.capacity?.storage;
      if (
        have === undefined ||
        compareQuantities(storageQuantity(volume.spec.capacity), storageQuantity(status.capacity)) !== 0
      ) {
        status.capacity = { ...volume.spec.capacity };
        dirty = true;
      }
      // A volume grown by the resizer whose node expansion had not finished (AnnotateFsResize)
      // binds with its size from before: the kubelet then sees status < PV and expands the
      // filesystem, as the PV controller does since Kubernetes 1.21 (kubernetes#99326).
      const preResize = volume.metadata?.annotations?.[ANNOTATIONS.preResizeCapacity.key];
      if (preResize !== undefined && isQuantity(preResize)) {
        status.capacity = { ...status.capacity, storage: preResize };
        dirty = true;
      }
    }
  }
  if (!dirty) return claim;
  next.status = status;
  ctx.logger.info(4, "claim phase", { claim: claim.metadata?.name, phase });
  return ctx.claims.remember(await ctx.client.updateStatus(GVR.persistentVolumeClaims, next, ctx.signal));
}

export async function updateClaimStatusWithEvent(
  ctx: PvSyncContext,
  claim: PersistentVolumeClaim,
  phase: NonNullable<PersistentVolumeClaimStatus["phase"]>,
  event: { type: EventType; reason: string; message: string },
): Promise<PersistentVolumeClaim> {
  if (claim.status?.phase === phase) return claim;
  const updated = await updateClaimStatus(ctx, claim, phase, undefined);
  claimEvent(ctx, updated, event.type, event.reason, event.message);
  return updated;
}

/** Points the volume's claimRef at the claim (bound-by-controller unless the user pre-bound it). */
async function bindVolumeToClaim(
  ctx: PvSyncContext,
  volume: PersistentVolume,
  claim: PersistentVolumeClaim,
): Promise<PersistentVolume> {
  const byController = !isVolumeBoundToClaim(volume, claim);
  const next = structuredClone(volume);
  next.spec ??= {};
  let dirty = false;
  const ref = volume.spec?.claimRef;
  if (
    !ref ||
    ref.name !== claim.metadata?.name ||
    ref.namespace !== claim.metadata?.namespace ||
    ref.uid !== claim.metadata?.uid
  ) {
    next.spec.claimRef = {
      kind: "PersistentVolumeClaim",
      namespace: claim.metadata?.namespace ?? "",
      name: claim.metadata?.name ?? "",
      uid: claim.metadata?.uid ?? "",
      apiVersion: "v1",
      resourceVersion: claim.metadata?.resourceVersion ?? "",
    };
    dirty = true;
  }
  if (byController && next.metadata?.annotations?.[BOUND_BY_CONTROLLER] === undefined) {
    next.metadata = {
      ...next.metadata,
      annotations: { ...next.metadata?.annotations, [BOUND_BY_CONTROLLER]: "yes" },
    };
    dirty = true;
  }
  if (!dirty) return volume;
  ctx.logger.info(4, "binding volume to claim", {
    volume: volume.metadata?.name,
    claim: claim.metadata?.name,
  });
  return updateVolume(ctx, next);
}

/** Sets spec.volumeName and the bind-completed (and, when we chose, bound-by-controller) annotations. */
async function bindClaimToVolume(
  ctx: PvSyncContext,
  claim: PersistentVolumeClaim,
  volume: PersistentVolume,
): Promise<PersistentVolumeClaim> {
  const volumeName = volume.metadata?.name ?? "";
  const byController = claim.spec?.volumeName !== volumeName;
  const next = structuredClone(claim);
  next.spec ??= {};
  const annotations = { ...next.metadata?.annotations };
  let dirty = false;
  if (next.spec.volumeName !== volumeName) {
    next.spec.volumeName = volumeName;
    dirty = true;
  }
  if (byController && annotations[BOUND_BY_CONTROLLER] === undefined) {
    annotations[BOUND_BY_CONTROLLER] = "yes";
    dirty = true;
  }
  if (annotations[BIND_COMPLETED] === undefined) {
    annotations[BIND_COMPLETED] = "yes";
    dirty = true;
  }
  if (!dirty) return claim;
  next.metadata = { ...next.metadata, annotations };
  ctx.logger.info(4, "binding claim to volume", { claim: claim.metadata?.name, volume: volumeName });
  return updateClaim(ctx, next);
}

/**
 * One claim write of a bind whose volume half is done, redone once on a fresh read when it
 * meets 409 Conflict. The usual cause is the provisioner removing its in-flight finalizer from
 * the claim just after it created the volume, while we bind that volume: upstream fails the
 * sync and waits for the claim's update event, which puts the claim at the back of a queue
 * that, with many claims arriving at once, holds all of them (seconds). The redo writes exactly
 * what the sync would write on its next run (every write here is computed from the claim it is
 * given and is a no-op when already done), and only when the fresh claim is still this claim
 * (same UID) and names this volume or what the stale one named; otherwise (and on a second
 * conflict) the error goes back to the queue as before.
 */
async function claimWriteOfBind(
  ctx: PvSyncContext,
  claim: PersistentVolumeClaim,
  volumeName: string,
  write: (claim: PersistentVolumeClaim) => Promise<PersistentVolumeClaim>,
): Promise<PersistentVolumeClaim> {
  try {
    return await write(claim);
  } catch (error) {
    if (!isConflict(error)) throw error;
    const fresh = await readClaim(ctx, claim);
    if (fresh === undefined || fresh.metadata?.uid !== claim.metadata?.uid) throw error;
    // The fresh claim must name what the claim we had named, or this volume (never another).
    const named = fresh.spec?.volumeName ?? "";
    if (named !== volumeName && named !== (claim.spec?.volumeName ?? "")) throw error;
    ctx.logger.info(4, "claim changed under the bind, writing on the fresh claim", {
      claim: claim.metadata?.name,
    });
    return write(ctx.claims.remember(fresh));
  }
}

async function readClaim(
  ctx: PvSyncContext,
  claim: PersistentVolumeClaim,
): Promise<PersistentVolumeClaim | undefined> {
  try {
    return await ctx.client.get<PersistentVolumeClaim>(
      GVR.persistentVolumeClaims,
      claim.metadata?.name ?? "",
      { namespace: claim.metadata?.namespace ?? "" },
      ctx.signal,
    );
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

/** The four steps of a bind, in upstream's order; each is idempotent, so a crash between them heals. */
export async function bind(
  ctx: PvSyncContext,
  volume: PersistentVolume,
  claim: PersistentVolumeClaim,
): Promise<void> {
  let updatedVolume = await bindVolumeToClaim(ctx, volume, claim);
  updatedVolume = await updateVolumePhase(ctx, updatedVolume, "Bound");
  const volumeName = updatedVolume.metadata?.name ?? "";
  const updatedClaim = await claimWriteOfBind(ctx, claim, volumeName, (current) =>
    bindClaimToVolume(ctx, current, updatedVolume),
  );
  await claimWriteOfBind(ctx, updatedClaim, volumeName, (current) =>
    updateClaimStatus(ctx, current, "Bound", updatedVolume),
  );
}

/** Undoes a bind the controller made (claimRef removed), or clears only the UID of a user's pre-bind. */
export async function unbindVolume(ctx: PvSyncContext, volume: PersistentVolume): Promise<void> {
  const next = structuredClone(volume);
  next.spec ??= {};
  if (volume.metadata?.annotations?.[BOUND_BY_CONTROLLER] !== undefined) {
    delete next.spec.claimRef;
    const annotations = { ...next.metadata?.annotations };
    delete annotations[BOUND_BY_CONTROLLER];
    next.metadata = { ...next.metadata };
    if (Object.keys(annotations).length === 0) delete next.metadata.annotations;
    else next.metadata.annotations = annotations;
  } else if (next.spec.claimRef) {
    next.spec.claimRef = { ...next.spec.claimRef, uid: "" };
  }
  const updated = await updateVolume(ctx, next);
  await updateVolumePhase(ctx, updated, "Available");
}
