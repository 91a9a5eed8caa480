// The resize controller's reconcile (external-resizer pkg/controller: syncPVC, expandAndRecover,
// callResizeOnPlugin; the legacy resizePVC when RecoverVolumeExpansionFailure is off).
//
// For a Bound claim whose request exceeds status.capacity and whose PV belongs to this driver:
//   1. decide the size (expand-plan.ts), 2. write the intent — Resizing, allocatedResources,
//   ControllerResizeInProgress — with the claim's resourceVersion, 3. ControllerExpandVolume
//   (or nothing, for a node-only driver), 4. PV spec.capacity, 5. NodeResizePending +
//   FileSystemResizePending, or capacity updated and everything cleared.
// Crash-safe: after a kill at any step the claim says ControllerResizeInProgress with the
// allocated size, and the next run (this process or the next leader) asks the driver for that
// same size again — ControllerExpandVolume is idempotent, so the volume grows once. The claim
// and PV are read fresh from the API server before acting, so a stale cache cannot repeat a
// finished expansion.

import { GVR, type PersistentVolume, type PersistentVolumeClaim } from "../../api/index.ts";
import { CsikitError, errorMessage } from "../../base/index.ts";
import { grpcDetails } from "../../csi/index.ts";
import { isNotFound, type ProcessResult, type ReconcileContext } from "../../kube/index.ts";
import { pluginForPV } from "../../migration/index.ts";
import {
  markControllerExpansionFailed,
  markControllerExpansionInfeasible,
  markControllerResizeInProgress,
  markExpansionFinished,
  markNodeExpansionPending,
  markResizeInProgressLegacy,
  removePreResizeAnnotation,
  updateVolumeCapacity,
} from "./claim-status.ts";
import {
  allocatedSize,
  claimNeedsResize,
  compareSizes,
  hasCondition,
  requestedSize,
  resizeStatus,
  statusSize,
  volumeSize,
} from "./conditions.ts";
import type { ResizerContext } from "./context.ts";
import { resizeVolume } from "./csi-calls.ts";
import { isFinalError, isInfeasibleError, isInUseError } from "./errors.ts";
import { planExpansion } from "./expand-plan.ts";
import { claimInUse } from "./in-use.ts";
import { ANNOTATION, CONDITION, REASON, RESIZE_STATUS } from "./names.ts";

/**
 * CanSupport: a CSI PV of this driver, or (CSI migration, as upstream) an in-tree PV of the
 * driver's plugin whose claim's `volume.kubernetes.io/storage-resizer` names this driver.
 */
export function volumeOfDriver(
  ctx: ResizerContext,
  pv: PersistentVolume,
  claim?: PersistentVolumeClaim,
): boolean {
  if (pv.spec?.csi) return pv.spec.csi.driver === ctx.driver.name;
  return (
    claim?.metadata?.annotations?.[ANNOTATION.storageResizer] === ctx.driver.name &&
    pluginForPV(pv)?.csiDriverName === ctx.driver.name
  );
}

function boundTo(pv: PersistentVolume, claim: PersistentVolumeClaim): boolean {
  const ref = pv.spec?.claimRef;
  return !!ref && ref.namespace === claim.metadata?.namespace && ref.uid === claim.metadata?.uid;
}

async function fresh<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

export async function syncExpansion(
  ctx: ResizerContext,
  key: string,
  rc: ReconcileContext,
): Promise<ProcessResult | void> {
  const cached = ctx.claims.store.get(key);
  if (!cached?.spec?.volumeName) return;
  const cachedPv = ctx.volumes.store.get(cached.spec.volumeName);
  if (!cachedPv || !volumeOfDriver(ctx, cachedPv, cached)) return;
  if (
    ctx.options.features.annotateFsResize &&
    compareSizes(statusSize(cached), volumeSize(cachedPv)) >= 0 &&
    ANNOTATION.preResizeCapacity in (cachedPv.metadata?.annotations ?? {})
  )
    await removePreResizeAnnotation(ctx, cachedPv, rc.signal);
  if (!claimNeedsResize(cached)) return;
  const { namespace = "", name = "" } = cached.metadata ?? {};
  const claim = await fresh(() =>
    ctx.client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, name, { namespace }, rc.signal),
  );
  const pv = await fresh(() =>
    ctx.client.get<PersistentVolume>(GVR.persistentVolumes, cachedPv.metadata?.name ?? "", {}, rc.signal),
  );
  if (!claim || !pv || !claimNeedsResize(claim) || !volumeOfDriver(ctx, pv, claim)) return;
  if (!boundTo(pv, claim)) {
    rc.logger.info(4, "persistent volume is not bound to the claim being updated", { pv: pv.metadata?.name });
    return;
  }
  if (ctx.options.features.recoverVolumeExpansionFailure) return expandAndRecover(ctx, key, claim, pv, rc);
  return resizeLegacy(ctx, key, claim, pv, rc);
}

async function expandAndRecover(
  ctx: ResizerContext,
  key: string,
  claim: PersistentVolumeClaim,
  pv: PersistentVolume,
  rc: ReconcileContext,
): Promise<ProcessResult | void> {
  const { state } = ctx;
  const status = resizeStatus(claim);
  const plan = planExpansion({
    requested: requestedSize(claim) ?? "0",
    volume: volumeSize(pv),
    allocated: allocatedSize(claim),
    status,
    finalError: state.finalErrorClaims.has(key),
    controlPlane: ctx.driver.controllerExpansion,
    fsResizePending: hasCondition(claim, CONDITION.fileSystemResizePending),
  });
  if (!plan.expand) {
    rc.logger.info(4, "no controller expansion", { why: plan.why });
    return;
  }
  const inSlowSet = state.slowResize.contains(key);
  if (status === RESIZE_STATUS.controllerInfeasible) state.slowResize.add(key);
  let updateStatus = true;
  const allocated = allocatedSize(claim);
  if (allocated !== undefined && compareSizes(allocated, plan.size) === 0) {
    if (inSlowSet) {
      rc.logger.info(4, "skipping volume expansion: it previously failed as infeasible");
      return { requeueAfterMs: Math.max(1, state.slowResize.remainingMs(key)) };
    }
    updateStatus = false;
  }
  let current = await markControllerResizeInProgress(ctx, claim, plan.size, updateStatus, rc.signal);
  await refuseWhileInUse(ctx, key, current, rc.signal);
  ctx.events.event(
    current,
    "Normal",
    REASON.resizing,
    `External resizer is resizing volume ${pv.metadata?.name}`,
  );
  state.inUseErrors.delete(key);
  let result;
  try {
    result = await resizeVolume(ctx, pv, plan.size, rc.signal);
  } catch (error) {
    if (isInUseError(error)) state.inUseErrors.add(key);
    if (isFinalError(error)) {
      state.finalErrorClaims.add(key);
      if (isInfeasibleError(error)) {
        current = await markControllerExpansionInfeasible(ctx, current, error, rc.signal);
      } else {
        state.slowResize.remove(key);
        current = await markControllerExpansionFailed(ctx, current, error, rc.signal);
      }
    } else {
      state.slowResize.remove(key);
      state.finalErrorClaims.delete(key);
    }
    throw failed(ctx, current, pv, error);
  }
  state.finalErrorClaims.delete(key);
  state.slowResize.remove(key);
  await updateVolumeCapacity(
    ctx,
    pv,
    statusSize(claim),
    result.size,
    result.nodeExpansionRequired,
    rc.signal,
  );
  if (result.nodeExpansionRequired) await markNodeExpansionPending(ctx, current, rc.signal);
  else await markExpansionFinished(ctx, current, result.size, rc.signal);
}

/** The legacy flow (RecoverVolumeExpansionFailure off): always the requested size. */
async function resizeLegacy(
  ctx: ResizerContext,
  key: string,
  claim: PersistentVolumeClaim,
  pv: PersistentVolume,
  rc: ReconcileContext,
): Promise<void> {
  if (
    compareSizes(volumeSize(pv), requestedSize(claim)) >= 0 &&
    hasCondition(claim, CONDITION.fileSystemResizePending)
  )
    return; // OBSERVATION: controller part done, the kubelet finishes.
  const current = await markResizeInProgressLegacy(ctx, claim, rc.signal);
  await refuseWhileInUse(ctx, key, current, rc.signal);
  ctx.events.event(
    current,
    "Normal",
    REASON.resizing,
    `External resizer is resizing volume ${pv.metadata?.name}`,
  );
  ctx.state.inUseErrors.delete(key);
  let result;
  try {
    result = await resizeVolume(ctx, pv, requestedSize(claim) ?? "0", rc.signal);
  } catch (error) {
    if (isInUseError(error)) ctx.state.inUseErrors.add(key);
    throw failed(ctx, current, pv, error);
  }
  await updateVolumeCapacity(
    ctx,
    pv,
    statusSize(claim),
    result.size,
    result.nodeExpansionRequired,
    rc.signal,
  );
  if (result.nodeExpansionRequired) await markNodeExpansionPending(ctx, current, rc.signal);
  else await markExpansionFinished(ctx, current, result.size, rc.signal);
}

/** A claim whose last attempt failed because its volume was in use is not tried while a pod uses it. */
async function refuseWhileInUse(
  ctx: ResizerContext,
  key: string,
  claim: PersistentVolumeClaim,
  signal: AbortSignal,
): Promise<void> {
  if (!ctx.options.handleVolumeInUseError || !ctx.state.inUseErrors.has(key)) return;
  if (!(await claimInUse(ctx, claim, signal))) return;
  const message = `Unable to expand ${key} because CSI driver ${ctx.driver.name} only supports offline expansion and volume is currently in-use`;
  ctx.events.event(claim, "Warning", REASON.resizeFailed, message);
  throw new CsikitError("CSIKIT_ERR_IN_USE", message);
}

function failed(
  ctx: ResizerContext,
  claim: PersistentVolumeClaim,
  pv: PersistentVolume,
  error: unknown,
): Error {
  const message = `resize volume "${pv.metadata?.name}" by resizer "${ctx.driver.name}" failed: ${grpcDetails(error) || errorMessage(error)}`;
  ctx.events.event(claim, "Warning", REASON.resizeFailed, message);
  return new CsikitError("CSIKIT_ERR_RESIZE", message, { cause: error });
}
