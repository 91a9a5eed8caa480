// Classification of CreateVolume failures (FACTS.md "Provisioner error classification"), as
// upstream's checkError, table-tested in errors.test.ts:
// - RESOURCE_EXHAUSTED → "reschedule" when the driver has topology and a node was selected
//   (remove selected-node so the scheduler picks again), else "finished";
// - CANCELLED, DEADLINE_EXCEEDED, UNAVAILABLE, ABORTED and non-gRPC errors → "inBackground":
//   the driver may still be creating the volume, so the claim stays marked in-flight and
//   CreateVolume is retried until it answers for sure (even after the claim is deleted);
// - anything else → "finished": the driver said no; nothing was created.
// Also formats a gRPC error the way Go's status error prints, for Events.

import { GrpcStatus, grpcCode } from "../../csi/index.ts";
import { csiErrorText } from "../../kube/index.ts";

/** Codes meaning "the driver may still be working on it". */
const IN_BACKGROUND_CODES: ReadonlySet<number> = new Set<number>([
  GrpcStatus.CANCELLED,
  GrpcStatus.DEADLINE_EXCEEDED,
  GrpcStatus.UNAVAILABLE,
  GrpcStatus.ABORTED,
]);

export type ProvisioningState = "finished" | "inBackground" | "reschedule";

export function provisioningStateFromError(
  error: unknown,
  context: { topology: boolean; selectedNode: boolean },
): ProvisioningState {
  const code = grpcCode(error);
  if (code === undefined) return "inBackground";
  if (code === (GrpcStatus.RESOURCE_EXHAUSTED as number))
    return context.topology && context.selectedNode ? "reschedule" : "finished";
  return IN_BACKGROUND_CODES.has(code) ? "inBackground" : "finished";
}

/** "rpc error: code = InvalidArgument desc = …" as Go's status.Error prints; other errors as is. */
export const formatCsiError: (error: unknown) => string = csiErrorText;

/**
 * Errors found before any driver call (bad class, bad secret template, missing source…).
 * `reschedule`: the selected node is gone, so the scheduler must choose again.
 */
export class ProvisionError extends Error {
  readonly reschedule: boolean;
  constructor(message: string, options: { reschedule?: boolean } = {}) {
    super(message);
    this.name = "ProvisionError";
    this.reschedule = options.reschedule ?? false;
  }
}
