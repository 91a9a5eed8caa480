// The kubelet's side of volume expansion (Kubernetes 1.32 with RecoverVolumeExpansionFailure):
// which claims wait for the node, and the claim status writes around NodeExpandVolume —
//   before: allocatedResourceStatuses["storage"] = NodeResizeInProgress (MarkNodeExpansionInProgress);
//   success: capacity = the PV's size, resize conditions and the storage status cleared
//     (MarkFSResizeFinished);
//   infeasible failure (InvalidArgument, OutOfRange, NotFound): NodeResizeInfeasible and the
//     NodeResizeError condition (MarkNodeExpansionInfeasible) — the node stops; the resizer
//     resets the claim when the user lowers the request;
//   other failures: the NodeResizeError condition (MarkNodeExpansionFailedCondition), retried.
// Writes are merge patches of /status: only the fields named change.

import {
  GVR,
  parseQuantity,
  quantityValue,
  type PersistentVolume,
  type PersistentVolumeClaim,
} from "../api/index.ts";
import { grpcCode } from "../csi/index.ts";
import { describeError } from "./csi-errors.ts";
import type { NodeContext } from "./options.ts";

const FS_RESIZE_PENDING = "FileSystemResizePending";
const NODE_RESIZE_ERROR = "NodeResizeError";
const RESIZING = "Resizing";
const NODE_RESIZE_PENDING = "NodeResizePending";
const NODE_RESIZE_IN_PROGRESS = "NodeResizeInProgress";
const NODE_RESIZE_INFEASIBLE = "NodeResizeInfeasible";
/** kubelet's isInfeasibleError: InvalidArgument, NotFound, OutOfRange. */
const INFEASIBLE = new Set([3, 5, 11]);

/**
 * A claim whose node step may run: NodeResizePending or NodeResizeInProgress (a node restarted
 * mid-expansion resumes), or no allocatedResourceStatuses at all — an older resizer, or a claim
 * bound anew to a volume whose node expansion was cut short (the PV controller gave it the
 * pre-resize-capacity): then, as the kubelet, the size skew alone decides (nodeExpansionSize).
 * ControllerResizeInProgress/Infeasible and NodeResizeInfeasible wait for the resizer.
 * The resizer's node-expansion-not-required annotation needs no check here: it governs only a
 * claim that already reports the PV's size (the kubelet's ReadWriteMany case), which this node
 * never expands.
 */
export function resizePending(claim: PersistentVolumeClaim): boolean {
  const status = claim.status?.allocatedResourceStatuses?.storage;
  if (status !== undefined) return status === NODE_RESIZE_PENDING || status === NODE_RESIZE_IN_PROGRESS;
  return true;
}

/**
 * The size the node expands a pending claim's volume to: the PV's capacity, only when it is
 * above the claim's recorded capacity (as the kubelet). The claim and the PV come through
 * separate watches, so the claim can say NodeResizePending while the PV cache still holds the
 * PV from before ControllerExpandVolume; expanding to that size would finish the resize at the
 * old capacity. undefined: nothing to do yet.
 */
export function nodeExpansionSize(
  claim: PersistentVolumeClaim,
  pv: PersistentVolume | undefined,
): string | undefined {
  if (!resizePending(claim)) return undefined;
  const size = pv?.spec?.capacity?.storage;
  if (!size) return undefined;
  const recorded = claim.status?.capacity?.storage;
  if (recorded && quantityValue(parseQuantity(size)) <= quantityValue(parseQuantity(recorded)))
    return undefined;
  return size;
}

async function patchClaimStatus(
  context: NodeContext,
  claim: PersistentVolumeClaim,
  status: Record<string, unknown>,
  signal: AbortSignal,
): Promise<void> {
  await context.client.patch(
    GVR.persistentVolumeClaims,
    claim.metadata?.name ?? "",
    { status },
    { namespace: claim.metadata?.namespace ?? "", subresource: "status" },
    signal,
  );
}

/** MarkNodeExpansionInProgress (only where the resizer keeps allocatedResourceStatuses). */
export async function markNodeExpansionInProgress(
  context: NodeContext,
  claim: PersistentVolumeClaim,
  signal: AbortSignal,
): Promise<void> {
  const status = claim.status?.allocatedResourceStatuses?.storage;
  if (status === undefined || status === NODE_RESIZE_IN_PROGRESS) return;
  await patchClaimStatus(
    context,
    claim,
    { allocatedResourceStatuses: { storage: NODE_RESIZE_IN_PROGRESS } },
    signal,
  );
}

/** MarkFSResizeFinished: capacity = the PV size, resize conditions and status cleared. */
export async function markResizeFinished(
  context: NodeContext,
  claim: PersistentVolumeClaim,
  size: string,
  signal: AbortSignal,
): Promise<void> {
  const conditions = (claim.status?.conditions ?? []).filter(
    (c) => c.type !== FS_RESIZE_PENDING && c.type !== RESIZING && c.type !== NODE_RESIZE_ERROR,
  );
  const patch: Record<string, unknown> = {
    capacity: { ...claim.status?.capacity, storage: size },
    conditions: conditions.length > 0 ? conditions : null,
  };
  if ("storage" in (claim.status?.allocatedResourceStatuses ?? {}))
    patch.allocatedResourceStatuses = { storage: null };
  await patchClaimStatus(context, claim, patch, signal);
}

/** MarkNodeExpansionInfeasible / MarkNodeExpansionFailedCondition after a failed NodeExpandVolume. */
export async function markNodeExpansionFailed(
  context: NodeContext,
  claim: PersistentVolumeClaim,
  error: unknown,
  signal: AbortSignal,
): Promise<void> {
  const code = grpcCode(error);
  const infeasible = code !== undefined && INFEASIBLE.has(code);
  const failed = {
    type: NODE_RESIZE_ERROR,
    status: "True",
    lastTransitionTime: new Date(context.clock.now()).toISOString().replace(/\.\d{3}Z$/, "Z"),
    message: `failed to expand pvc with ${describeError(error)}`,
  };
  const conditions = [
    ...(claim.status?.conditions ?? []).filter((c) => c.type !== NODE_RESIZE_ERROR),
    failed,
  ];
  const patch: Record<string, unknown> = { conditions };
  if (infeasible && claim.status?.allocatedResourceStatuses?.storage !== undefined)
    patch.allocatedResourceStatuses = { storage: NODE_RESIZE_INFEASIBLE };
  await patchClaimStatus(context, claim, patch, signal);
}
