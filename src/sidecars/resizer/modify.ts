// The modify controller's reconcile (external-resizer v2.2 pkg/modifycontroller, with rollback,
// external-resizer#513): keep a Bound claim's volume at the VolumeAttributesClass its spec names,
// with status.modifyVolumeStatus recording the last operation that did not finish:
//   spec = current and no modifyVolumeStatus → nothing to do;
//   class missing → Pending, Event VolumeModifyFailed (retried when the class appears);
//   start → InProgress (target = the spec's class), condition ModifyingVolume, Event VolumeModify;
//   success → PV spec.volumeAttributesClassName first, then the claim: current = target,
//     modifyVolumeStatus and modify conditions cleared, Event VolumeModifySuccessful;
//   failure (Event VolumeModifyFailed) —
//     non-final (Unavailable, DeadlineExceeded, …): InProgress, the claim is "uncertain": the same
//       target is retried whatever the spec now says, since the driver may still be applying it;
//     final InvalidArgument: Infeasible, retried only after --retry-interval-max;
//     other final errors: InProgress, and the spec is followed again.
// Rollback: after a final error the user may set the spec back to status.currentVolumeAttributesClassName
// (the driver is called with that class's parameters, then the status is cleared as on any
// success), or to another class. With the spec unset (allowed only while no class is current):
// a modification still in progress goes on to its target; an Infeasible or Pending one is given
// up — Event VolumeModifyCancelled, modify conditions cleared, modifyVolumeStatus kept as the
// record of the last attempt — and the claim is left alone.

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
import { clearModifyConditions, condition, hasCondition, mergeModifyConditions } from "./conditions.ts";
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
  if (!claim?.spec?.volumeName || claim.status?.phase !== "Bound") return;
  const pv = ctx.volumes.store.get(claim.spec.volumeName);
  if (!pv?.spec?.csi || !volumeOfDriver(ctx, pv)) return;
  const { state } = ctx;
  const spec = claim.spec.volumeAttributesClassName ?? "";
  const current = claim.status.currentVolumeAttributesClassName ?? "";
  const status = claim.status.modifyVolumeStatus;

  // An Infeasible target the spec still names waits --retry-interval-max; a new spec goes at once.
  if (status && spec !== "" && status.targetVolumeAttributesClassName === spec) {
    const inSlowSet = state.slowModify.contains(key);
    if (status.status === MODIFY_STATUS.infeasible) state.slowModify.add(key);
    if (inSlowSet) {
      rc.logger.info(4, "skipping volume modification: it previously failed as infeasible");
      return { requeueAfterMs: Math.max(1, state.slowModify.remainingMs(key)) };
    }
  } else {
    state.slowModify.remove(key);
  }

  if (!status && spec === current) return; // OBSERVATION: at the target already.
  const inProgress = status?.status === MODIFY_STATUS.inProgress;
  if (spec === "" && !inProgress) {
    // OBSERVATION: rolled back to "no class" after a failure that is not running: give it up.
    await cancelModification(ctx, claim, rc.signal);
    return;
  }
  // Only this process knows whether the last call may still run in the driver; after a restart
  // an InProgress status follows the spec, as upstream.
  const uncertain = inProgress && state.uncertainModify.has(key);
  if (uncertain || spec === "") {
    // OBSERVATION: keep going to the target already in flight.
    const target = status?.targetVolumeAttributesClassName ?? "";
    const vac = attributeClass(ctx, claim, target);
    if (!vac) throw new CsikitError("CSIKIT_ERR_MODIFY", `VolumeAttributesClass ${target} not found`);
    return modifyWithClass(ctx, key, claim, pv, vac, rc);
  }
  const vac = attributeClass(ctx, claim, spec);
  if (!vac) {
    rc.logger.info(2, "VolumeAttributesClass not found: modification pending", { class: spec });
    await markModifyStatus(
      ctx,
      claim,
      MODIFY_STATUS.pending,
      status?.targetVolumeAttributesClassName,
      undefined,
      rc.signal,
    );
    return;
  }
  const started = await markModifyStatus(ctx, claim, MODIFY_STATUS.inProgress, spec, undefined, rc.signal);
  ctx.events.event(
    started,
    "Normal",
    REASON.modify,
    `external resizer is modifying volume ${claim.metadata?.name} with vac ${spec}`,
  );
  return modifyWithClass(ctx, key, started, pv, vac, rc);
}

/** The class from the cache; a missing one is reported on the claim (Event VolumeModifyFailed). */
function attributeClass(
  ctx: ResizerContext,
  claim: PersistentVolumeClaim,
  name: string,
): VolumeAttributesClass | undefined {
  const vac = ctx.attributeClasses?.store.get(name);
  if (!vac) ctx.events.event(claim, "Warning", REASON.modifyFailed, `VAC "${name}" does not exist.`);
  return vac;
}

async function cancelModification(
  ctx: ResizerContext,
  claim: PersistentVolumeClaim,
  signal: AbortSignal,
): Promise<void> {
  if (!hasCondition(claim, CONDITION.modifyingVolume)) return; // cancelled already
  ctx.events.event(claim, "Normal", REASON.modifyCancelled, "Cancelled modify.");
  const status: Status = structuredClone(claim.status ?? {});
  status.conditions = clearModifyConditions(status.conditions);
  await patchStatusChecked(ctx, claim, status, undefined, signal);
}

async function modifyWithClass(
  ctx: ResizerContext,
  key: string,
  claim: PersistentVolumeClaim,
  pv: PersistentVolume,
  vac: VolumeAttributesClass,
  rc: ReconcileContext,
): Promise<void> {
  const target = vac.metadata?.name ?? "";
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
    if (code === undefined) throw error; // e.g. the secret could not be read: retried as is
    let next: string = MODIFY_STATUS.inProgress;
    let message = grpcDetails(error);
    if (!isFinalError(error)) {
      ctx.state.uncertainModify.add(key);
      message += `. Still modifying to VAC ${target}`;
    } else {
      if (code === (GrpcStatus.INVALID_ARGUMENT as number)) next = MODIFY_STATUS.infeasible;
      ctx.state.uncertainModify.delete(key);
    }
    const marked = await markModifyStatus(ctx, claim, next, target, error, rc.signal);
    if (next === MODIFY_STATUS.infeasible) ctx.state.slowModify.add(key);
    ctx.events.event(marked, "Warning", REASON.modifyFailed, message);
    throw new CsikitError("CSIKIT_ERR_MODIFY", `ControllerModifyVolume failed: ${grpcDetails(error)}`, {
      cause: error,
    });
  }
  ctx.state.uncertainModify.delete(key);
  ctx.state.slowModify.remove(key);
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
  await ctx.client.patch<PersistentVolumeClaim>(
    GVR.persistentVolumeClaims,
    claim.metadata?.name ?? "",
    { status: createMergePatch(claim.status, status) },
    { namespace: claim.metadata?.namespace ?? "", subresource: "status" },
    rc.signal,
  );
  ctx.events.event(
    claim,
    "Normal",
    REASON.modifySuccessful,
    `external resizer modified volume ${claim.metadata?.name} with vac ${target} successfully`,
  );
}

/**
 * markControllerModifyVolumeStatus: the status and its target; every state but Pending replaces
 * the modify conditions with ModifyingVolume (Infeasible's carries the driver's error). Written
 * with the claim's resourceVersion, so a stale copy retries from a fresh one.
 */
async function markModifyStatus(
  ctx: ResizerContext,
  claim: PersistentVolumeClaim,
  value: string,
  target: string | undefined,
  error: unknown,
  signal: AbortSignal,
): Promise<PersistentVolumeClaim> {
  const status: Status = structuredClone(claim.status ?? {});
  status.modifyVolumeStatus = {
    status: value,
    ...(target ? { targetVolumeAttributesClassName: target } : {}),
  };
  const message =
    value === MODIFY_STATUS.infeasible
      ? `ModifyVolume failed with error${grpcDetails(error)}. Waiting for retry.`
      : "ModifyVolume operation in progress.";
  if (value !== MODIFY_STATUS.pending)
    status.conditions = mergeModifyConditions(status.conditions, [
      condition(CONDITION.modifyingVolume, new Date(ctx.clock.now()), message),
    ]);
  return patchStatusChecked(ctx, claim, status, undefined, signal);
}
