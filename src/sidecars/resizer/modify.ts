// The modify controller's reconcile (external-resizer pkg/modifycontroller, gate
// VolumeAttributesClass): when a Bound claim of this driver names a VolumeAttributesClass other
// than status.currentVolumeAttributesClassName, call ControllerModifyVolume with the class's
// parameters and keep status.modifyVolumeStatus as upstream does:
//   class missing → Pending (retried when the class appears);
//   start → InProgress (target = the class), condition ModifyingVolume, Event VolumeModify;
//   success → PV spec.volumeAttributesClassName first, then the claim: current = target,
//     modifyVolumeStatus and modify conditions cleared, Event VolumeModifySuccessful;
//   failure → condition ModifyVolumeError; a non-final error leaves the claim "uncertain" (the
//     target is retried as is, whatever the claim now asks); InvalidArgument → Infeasible, retried
//     slowly; Event VolumeModifyFailed.

import {
  GVR,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type VolumeAttributesClass,
} from "../../api/index.ts";
import { CsikitError } from "../../base/index.ts";
import { GrpcStatus, grpcCode, grpcDetails } from "../../csi/index.ts";
import { createMergePatch, type ProcessResult, type ReconcileContext } from "../../kube/index.ts";
import { patchStatusChecked } from "./claim-status.ts";
import { clearModifyConditions, condition, mergeModifyConditions } from "./conditions.ts";
import type { ResizerContext } from "./context.ts";
import { modifyVolume } from "./csi-calls.ts";
import { isFinalError } from "./errors.ts";
import { volumeOfDriver } from "./expand.ts";
import { CONDITION, MODIFY_METADATA, MODIFY_STATUS, REASON } from "./names.ts";

type Status = NonNullable<PersistentVolumeClaim["status"]>;

export async function syncModify(
  ctx: ResizerContext,
  key: string,
  rc: ReconcileContext,
): Promise<ProcessResult | void> {
  const claim = ctx.claims.store.get(key);
  if (!claim?.spec?.volumeName) return;
  const pv = ctx.volumes.store.get(claim.spec.volumeName);
  if (!pv) return;
  const target = claim.spec.volumeAttributesClassName;
  if (!target || claim.status?.phase !== "Bound" || !volumeOfDriver(ctx, pv)) return;
  const current = claim.status?.currentVolumeAttributesClassName;
  if (current === target) return;
  const { state } = ctx;
  if (current !== undefined && current !== "") {
    if (state.uncertainModify.has(key)) {
      // OBSERVATION: the last call may still run in the driver: finish it, whatever is asked now.
      const pending = claim.status?.modifyVolumeStatus?.targetVolumeAttributesClassName ?? target;
      const vac = ctx.attributeClasses?.store.get(pending);
      if (!vac) throw new CsikitError("CSIKIT_ERR_MODIFY", `VolumeAttributesClass ${pending} not found`);
      return modifyWithClass(ctx, key, claim, pv, vac, rc);
    }
    const inSlowSet = state.slowModify.contains(key);
    if (claim.status?.modifyVolumeStatus?.status === MODIFY_STATUS.infeasible) state.slowModify.add(key);
    if (inSlowSet) {
      rc.logger.info(4, "skipping volume modification: it previously failed as infeasible");
      return { requeueAfterMs: Math.max(1, state.slowModify.remainingMs(key)) };
    }
  } else {
    // OBSERVATION: the first class of this claim.
  }
  const vac = ctx.attributeClasses?.store.get(target);
  if (!vac) {
    rc.logger.info(2, "VolumeAttributesClass not found: modification pending", { class: target });
    await markModifyStatus(ctx, claim, MODIFY_STATUS.pending, undefined, rc.signal);
    return;
  }
  const started = await markModifyStatus(ctx, claim, MODIFY_STATUS.inProgress, undefined, rc.signal);
  ctx.events.event(
    started,
    "Normal",
    REASON.modify,
    `external resizer is modifying volume ${claim.metadata?.name} with vac ${target}`,
  );
  return modifyWithClass(ctx, key, started, pv, vac, rc);
}

async function modifyWithClass(
  ctx: ResizerContext,
  key: string,
  claim: PersistentVolumeClaim,
  pv: PersistentVolume,
  vac: VolumeAttributesClass,
  rc: ReconcileContext,
): Promise<void> {
  const parameters: Record<string, string> = { ...vac.parameters };
  if (ctx.options.extraModifyMetadata) {
    parameters[MODIFY_METADATA.pvcName] = claim.metadata?.name ?? "";
    parameters[MODIFY_METADATA.pvcNamespace] = claim.metadata?.namespace ?? "";
    parameters[MODIFY_METADATA.pvName] = pv.metadata?.name ?? "";
  }
  try {
    await modifyVolume(ctx, pv, parameters, rc.signal);
  } catch (error) {
    const code = grpcCode(error);
    if (code === undefined) throw error;
    let current = await markModifyError(ctx, claim, error, rc.signal);
    if (!isFinalError(error)) {
      ctx.state.uncertainModify.add(key);
    } else {
      if (code === (GrpcStatus.INVALID_ARGUMENT as number)) {
        current = await markModifyStatus(ctx, current, MODIFY_STATUS.infeasible, error, rc.signal);
        ctx.state.slowModify.add(key);
      }
      ctx.state.uncertainModify.delete(key);
    }
    ctx.events.event(current, "Warning", REASON.modifyFailed, grpcDetails(error));
    throw new CsikitError("CSIKIT_ERR_MODIFY", `ControllerModifyVolume failed: ${grpcDetails(error)}`, {
      cause: error,
    });
  }
  ctx.state.uncertainModify.delete(key);
  ctx.state.slowModify.remove(key);
  const target =
    claim.status?.modifyVolumeStatus?.targetVolumeAttributesClassName ?? vac.metadata?.name ?? "";
  // PV before claim: a crash in between leaves the claim asking, and the retry is idempotent.
  await ctx.client.patch(
    GVR.persistentVolumes,
    pv.metadata?.name ?? "",
    { spec: { volumeAttributesClassName: target } },
    {},
    rc.signal,
  );
  const status: Status = structuredClone(claim.status ?? {});
  delete status.modifyVolumeStatus;
  status.currentVolumeAttributesClassName = target;
  status.conditions = clearModifyConditions(status.conditions);
  await putStatus(ctx, claim, status, rc.signal, false);
  ctx.events.event(
    claim,
    "Normal",
    REASON.modifySuccessful,
    `external resizer modified volume ${claim.metadata?.name} with vac ${target} successfully `,
  );
}

/** markControllerModifyVolumeStatus (Pending keeps the conditions as they are). */
async function markModifyStatus(
  ctx: ResizerContext,
  claim: PersistentVolumeClaim,
  value: string,
  error: unknown,
  signal: AbortSignal,
): Promise<PersistentVolumeClaim> {
  const status: Status = structuredClone(claim.status ?? {});
  status.modifyVolumeStatus = { ...status.modifyVolumeStatus, status: value };
  let message = "";
  if (value === MODIFY_STATUS.inProgress) {
    message = "ModifyVolume operation in progress.";
    status.modifyVolumeStatus.targetVolumeAttributesClassName = claim.spec?.volumeAttributesClassName ?? "";
  } else if (value === MODIFY_STATUS.infeasible) {
    message = `ModifyVolume failed with error${grpcDetails(error)}. Waiting for retry.`;
  }
  if (value !== MODIFY_STATUS.pending)
    status.conditions = mergeModifyConditions(status.conditions, [
      condition(CONDITION.modifyingVolume, new Date(ctx.clock.now()), message),
    ]);
  return putStatus(ctx, claim, status, signal, true);
}

/** updateConditionBasedOnError: the ModifyVolumeError condition. */
function markModifyError(
  ctx: ResizerContext,
  claim: PersistentVolumeClaim,
  error: unknown,
  signal: AbortSignal,
): Promise<PersistentVolumeClaim> {
  const status: Status = structuredClone(claim.status ?? {});
  status.conditions = mergeModifyConditions(status.conditions, [
    condition(
      CONDITION.modifyVolumeError,
      new Date(ctx.clock.now()),
      `ModifyVolume failed with error: ${grpcDetails(error)}. Waiting for retry.`,
    ),
  ]);
  return putStatus(ctx, claim, status, signal, false);
}

/** With checkVersion the patch carries the resourceVersion (409 on a stale copy). */
async function putStatus(
  ctx: ResizerContext,
  claim: PersistentVolumeClaim,
  status: Status,
  signal: AbortSignal,
  checkVersion: boolean,
): Promise<PersistentVolumeClaim> {
  if (checkVersion) return patchStatusChecked(ctx, claim, status, undefined, signal);
  return ctx.client.patch<PersistentVolumeClaim>(
    GVR.persistentVolumeClaims,
    claim.metadata?.name ?? "",
    { status: createMergePatch(claim.status, status) },
    { namespace: claim.metadata?.namespace ?? "", subresource: "status" },
    signal,
  );
}
