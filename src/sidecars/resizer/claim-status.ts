// The resizer's writes to a claim's status and to the PV, as external-resizer's
// resize_status.go makes them. Writes that start or finish an operation carry the claim's
// resourceVersion (a PUT of /status: 409 on a stale copy, so a stale cache never moves a claim
// backwards); failure marks are merge patches without it, so a failure is recorded even when
// our copy is slightly old (upstream's addResourceVersionCheck=false). Each returns the claim
// as stored.

import { GVR, type PersistentVolume, type PersistentVolumeClaim } from "../../api/index.ts";
import { grpcDetails } from "../../csi/index.ts";
import { createMergePatch } from "../../kube/index.ts";
import type { ResizerContext } from "./context.ts";
import { condition, mergeResizeConditions } from "./conditions.ts";
import { ANNOTATION, CONDITION, REASON, RESIZE_STATUS } from "./names.ts";

type Status = NonNullable<PersistentVolumeClaim["status"]>;

/**
 * A merge patch of /status carrying the claim's resourceVersion: 409 on a stale copy (upstream's
 * addResourceVersionCheck=true). PATCH, not PUT: upstream's RBAC grants only `patch` on
 * persistentvolumeclaims/status.
 */
export async function patchStatusChecked(
  ctx: ResizerContext,
  claim: PersistentVolumeClaim,
  status: Status,
  annotations: Record<string, string> | undefined,
  signal: AbortSignal,
): Promise<PersistentVolumeClaim> {
  const metadata: Record<string, unknown> = { resourceVersion: claim.metadata?.resourceVersion };
  if (annotations) {
    const diff = createMergePatch(claim.metadata?.annotations, annotations);
    if (Object.keys(diff).length > 0) metadata.annotations = diff;
  }
  return ctx.client.patch<PersistentVolumeClaim>(
    GVR.persistentVolumeClaims,
    claim.metadata?.name ?? "",
    { metadata, status: createMergePatch(claim.status, status) },
    { namespace: claim.metadata?.namespace ?? "", subresource: "status" },
    signal,
  );
}

async function patchStatus(
  ctx: ResizerContext,
  claim: PersistentVolumeClaim,
  status: Record<string, unknown>,
  signal: AbortSignal,
): Promise<PersistentVolumeClaim> {
  return ctx.client.patch<PersistentVolumeClaim>(
    GVR.persistentVolumeClaims,
    claim.metadata?.name ?? "",
    { status },
    { namespace: claim.metadata?.namespace ?? "", subresource: "status" },
    signal,
  );
}

function withoutNotRequired(claim: PersistentVolumeClaim): Record<string, string> | undefined {
  const annotations = claim.metadata?.annotations;
  if (!annotations || !(ANNOTATION.nodeExpansionNotRequired in annotations)) return undefined;
  const { [ANNOTATION.nodeExpansionNotRequired]: _gone, ...rest } = annotations;
  return rest;
}

const now = (ctx: ResizerContext): Date => new Date(ctx.clock.now());

/** markControllerResizeInProgress: the intent, written before ControllerExpandVolume. */
export function markControllerResizeInProgress(
  ctx: ResizerContext,
  claim: PersistentVolumeClaim,
  newSize: string,
  updateStatus: boolean,
  signal: AbortSignal,
): Promise<PersistentVolumeClaim> {
  const status: Status = { ...structuredClone(claim.status ?? {}) };
  status.conditions = mergeResizeConditions(
    status.conditions,
    [condition(CONDITION.resizing, now(ctx))],
    !updateStatus,
  );
  if (updateStatus)
    status.allocatedResourceStatuses = {
      ...status.allocatedResourceStatuses,
      storage: RESIZE_STATUS.controllerInProgress,
    };
  status.allocatedResources = { ...status.allocatedResources, storage: newSize };
  return patchStatusChecked(ctx, claim, status, withoutNotRequired(claim), signal);
}

/** The legacy (gate off) in-progress mark: the Resizing condition only. */
export function markResizeInProgressLegacy(
  ctx: ResizerContext,
  claim: PersistentVolumeClaim,
  signal: AbortSignal,
): Promise<PersistentVolumeClaim> {
  const status: Status = { ...structuredClone(claim.status ?? {}) };
  status.conditions = mergeResizeConditions(
    status.conditions,
    [condition(CONDITION.resizing, now(ctx))],
    false,
  );
  return patchStatusChecked(ctx, claim, status, undefined, signal);
}

/** markForPendingNodeExpansion: FileSystemResizePending, NodeResizePending; the kubelet goes on. */
export async function markNodeExpansionPending(
  ctx: ResizerContext,
  claim: PersistentVolumeClaim,
  signal: AbortSignal,
): Promise<PersistentVolumeClaim> {
  const status: Status = { ...structuredClone(claim.status ?? {}) };
  const pending = condition(
    CONDITION.fileSystemResizePending,
    now(ctx),
    "Waiting for user to (re-)start a pod to finish file system resize of volume on node.",
  );
  const recover = ctx.options.features.recoverVolumeExpansionFailure;
  status.conditions = mergeResizeConditions(status.conditions, [pending], recover);
  if (recover)
    status.allocatedResourceStatuses = {
      ...status.allocatedResourceStatuses,
      storage: RESIZE_STATUS.nodePending,
    };
  const updated = await patchStatusChecked(ctx, claim, status, withoutNotRequired(claim), signal);
  ctx.events.event(
    claim,
    "Normal",
    REASON.fileSystemResizeRequired,
    "Require file system resize of volume on node",
  );
  return updated;
}

/** markOverallExpansionAsFinished: capacity = the new size, resize conditions and status cleared. */
export async function markExpansionFinished(
  ctx: ResizerContext,
  claim: PersistentVolumeClaim,
  newSize: string,
  signal: AbortSignal,
): Promise<PersistentVolumeClaim> {
  const status: Status = { ...structuredClone(claim.status ?? {}) };
  status.capacity = { ...status.capacity, storage: newSize };
  status.conditions = mergeResizeConditions(status.conditions, [], false);
  const statuses = { ...status.allocatedResourceStatuses };
  delete statuses.storage;
  if (Object.keys(statuses).length === 0) delete status.allocatedResourceStatuses;
  else status.allocatedResourceStatuses = statuses;
  let annotations: Record<string, string> | undefined;
  if (ctx.options.features.recoverVolumeExpansionFailure)
    // So the kubelet does not expand on the node what needed no node step.
    annotations = { ...claim.metadata?.annotations, [ANNOTATION.nodeExpansionNotRequired]: "true" };
  const updated = await patchStatusChecked(ctx, claim, status, annotations, signal);
  ctx.events.event(claim, "Normal", REASON.resizeSuccessful, "Resize volume succeeded");
  return updated;
}

/** markControllerExpansionInfeasible: ControllerResizeInfeasible plus the ControllerResizeError condition. */
export function markControllerExpansionInfeasible(
  ctx: ResizerContext,
  claim: PersistentVolumeClaim,
  error: unknown,
  signal: AbortSignal,
): Promise<PersistentVolumeClaim> {
  return patchStatus(
    ctx,
    claim,
    {
      allocatedResourceStatuses: { storage: RESIZE_STATUS.controllerInfeasible },
      conditions: failedConditions(ctx, claim, error),
    },
    signal,
  );
}

/** markControllerExpansionFailedCondition: the ControllerResizeError condition only. */
export function markControllerExpansionFailed(
  ctx: ResizerContext,
  claim: PersistentVolumeClaim,
  error: unknown,
  signal: AbortSignal,
): Promise<PersistentVolumeClaim> {
  return patchStatus(ctx, claim, { conditions: failedConditions(ctx, claim, error) }, signal);
}

function failedConditions(ctx: ResizerContext, claim: PersistentVolumeClaim, error: unknown) {
  return mergeResizeConditions(
    claim.status?.conditions,
    [condition(CONDITION.controllerResizeError, now(ctx), `failed to expand pvc with ${grpcDetails(error)}`)],
    true,
  );
}

/** updatePVCapacity: spec.capacity = the new size; with AnnotateFsResize the old size is kept aside. */
export async function updateVolumeCapacity(
  ctx: ResizerContext,
  pv: PersistentVolume,
  oldSize: string | undefined,
  newSize: string,
  nodeExpansionRequired: boolean,
  signal: AbortSignal,
): Promise<PersistentVolume> {
  const patch: Record<string, unknown> = { spec: { capacity: { storage: newSize } } };
  const annotations = pv.metadata?.annotations ?? {};
  if (
    ctx.options.features.annotateFsResize &&
    nodeExpansionRequired &&
    oldSize !== undefined &&
    !(ANNOTATION.preResizeCapacity in annotations)
  )
    patch.metadata = { annotations: { [ANNOTATION.preResizeCapacity]: oldSize } };
  return ctx.client.patch<PersistentVolume>(
    GVR.persistentVolumes,
    pv.metadata?.name ?? "",
    patch,
    {},
    signal,
  );
}

/** Removes the pre-resize annotation once the claim reports the PV's size (node expansion done). */
export async function removePreResizeAnnotation(
  ctx: ResizerContext,
  pv: PersistentVolume,
  signal: AbortSignal,
): Promise<void> {
  await ctx.client.patch(
    GVR.persistentVolumes,
    pv.metadata?.name ?? "",
    { metadata: { annotations: { [ANNOTATION.preResizeCapacity]: null } } },
    {},
    signal,
  );
}
