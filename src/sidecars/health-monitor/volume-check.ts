// The controller-side volume check, as upstream's PV health condition checker: which PVs are
// looked at (CSI, this driver, Bound), how their condition is asked for (one paginated
// ListVolumes for all, or ControllerGetVolume for one), and what is recorded: a Warning
// `VolumeConditionAbnormal` on the PV's claim with the driver's message, each time a check finds
// the volume abnormal. A healthy volume records nothing (upstream has no recovery event; the
// repeated warnings simply stop), and a failed CSI call records nothing either: it is logged and
// the next round asks again.

import { errorMessage } from "../../base/index.ts";
import type { PersistentVolume, PersistentVolumeClaim } from "../../api/index.ts";
import type { HealthMonitorContext } from "./context.ts";
import { REASON } from "./names.ts";

export interface VolumeCondition {
  abnormal: boolean;
  message: string;
}

/** Whether the monitor checks this PV: a Bound CSI volume of its driver with a claim. */
export function isMonitoredVolume(pv: PersistentVolume, driverName: string): boolean {
  return (
    pv.spec?.csi?.driver === driverName &&
    pv.status?.phase === "Bound" &&
    !!pv.spec.claimRef?.namespace &&
    !!pv.spec.claimRef.name
  );
}

function claimOf(ctx: HealthMonitorContext, pv: PersistentVolume): PersistentVolumeClaim | undefined {
  const ref = pv.spec?.claimRef;
  return ref ? ctx.claims.store.get(`${ref.namespace}/${ref.name}`) : undefined;
}

/** Records the abnormal condition on the PV's claim; false when the claim is not (yet) known. */
export function reportCondition(
  ctx: HealthMonitorContext,
  pv: PersistentVolume,
  condition: VolumeCondition,
): boolean {
  if (!condition.abnormal) return true;
  const claim = claimOf(ctx, pv);
  if (!claim) {
    ctx.logger.info(2, "claim of an abnormal volume not found", {
      pv: pv.metadata?.name,
      claim: `${pv.spec?.claimRef?.namespace}/${pv.spec?.claimRef?.name}`,
    });
    return false;
  }
  ctx.events.event(claim, "Warning", REASON.volumeConditionAbnormal, condition.message);
  return true;
}

/** Every volume's condition from ListVolumes, following next_token to the end. */
export async function listVolumeConditions(
  ctx: HealthMonitorContext,
  signal: AbortSignal,
): Promise<Map<string, VolumeCondition>> {
  const conditions = new Map<string, VolumeCondition>();
  // One deadline for the whole listing, as upstream gives the paginated loop one context.
  const deadline = AbortSignal.any([signal, AbortSignal.timeout(ctx.options.timeoutMs)]);
  let token = "";
  do {
    const response = await ctx.csi.controller.listVolumes(
      { startingToken: token },
      { signal: deadline, timeoutMs: ctx.options.timeoutMs },
    );
    for (const entry of response.entries) {
      const id = entry.volume?.volumeId;
      if (id === undefined) continue;
      const condition = entry.status?.volumeCondition;
      conditions.set(id, { abnormal: condition?.abnormal ?? false, message: condition?.message ?? "" });
    }
    token = response.nextToken;
  } while (token !== "");
  return conditions;
}

/** One ListVolumes round: every monitored PV the driver reports abnormal gets its event. */
export async function checkByListVolumes(ctx: HealthMonitorContext, signal: AbortSignal): Promise<void> {
  let conditions: Map<string, VolumeCondition>;
  try {
    conditions = await listVolumeConditions(ctx, signal);
  } catch (error) {
    ctx.logger.error("check controller volume status error", {
      err: `failed to list volumes: ${errorMessage(error)}`,
    });
    return;
  }
  for (const pv of ctx.volumes.store.list()) {
    if (!isMonitoredVolume(pv, ctx.driver.name)) continue;
    const condition = conditions.get(pv.spec!.csi!.volumeHandle);
    if (condition) reportCondition(ctx, pv, condition);
  }
}

/** What the ControllerGetVolume worker does with a PV after checking it. */
export type VolumeCheckOutcome = "requeue" | "forget";

/**
 * One PV through ControllerGetVolume. A PV gone, being deleted or not Bound leaves the queue
 * (the periodic listing brings it back once it is Bound); any other PV is checked again later,
 * whatever the outcome.
 */
export async function checkVolume(
  ctx: HealthMonitorContext,
  pvName: string,
  signal: AbortSignal,
): Promise<VolumeCheckOutcome> {
  const pv = ctx.volumes.store.get(pvName);
  if (!pv || pv.metadata?.deletionTimestamp) return "forget";
  if (!isMonitoredVolume(pv, ctx.driver.name)) return "forget";
  const handle = pv.spec!.csi!.volumeHandle;
  if (handle === "") {
    ctx.logger.error("check controller volume status error", {
      pv: pvName,
      err: "volume handle in csi source is empty",
    });
    return "requeue";
  }
  try {
    const response = await ctx.csi.controller.controllerGetVolume(
      { volumeId: handle },
      { signal, timeoutMs: ctx.options.timeoutMs },
    );
    const condition = response.status?.volumeCondition;
    reportCondition(ctx, pv, { abnormal: condition?.abnormal ?? false, message: condition?.message ?? "" });
  } catch (error) {
    ctx.logger.error("check controller volume status error", { pv: pvName, err: errorMessage(error) });
  }
  return "requeue";
}
