// How the resizer reads a failed CSI call (external-resizer pkg/util): pure, table-tested.
// - final: the driver is certainly not working on the request any more. Non-gRPC failures and
//   Canceled / DeadlineExceeded / Unavailable / ResourceExhausted / Aborted are not final (the
//   operation may still run, so a lowered request must not be tried yet).
// - infeasible: the size can never be reached (InvalidArgument, OutOfRange, NotFound):
//   ControllerResizeInfeasible, retried only slowly.
// - in use: FailedPrecondition, what a driver without ONLINE expansion answers for a
//   published volume (CSI spec, ControllerExpandVolume errors).

import { GrpcStatus, grpcCode } from "../../csi/index.ts";

const NOT_FINAL: ReadonlySet<number> = new Set([
  GrpcStatus.CANCELLED,
  GrpcStatus.DEADLINE_EXCEEDED,
  GrpcStatus.UNAVAILABLE,
  GrpcStatus.RESOURCE_EXHAUSTED,
  GrpcStatus.ABORTED,
]);

const INFEASIBLE: ReadonlySet<number> = new Set([
  GrpcStatus.INVALID_ARGUMENT,
  GrpcStatus.OUT_OF_RANGE,
  GrpcStatus.NOT_FOUND,
]);

export function isFinalError(error: unknown): boolean {
  const code = grpcCode(error);
  if (code === undefined) return false;
  return !NOT_FINAL.has(code);
}

export function isInfeasibleError(error: unknown): boolean {
  const code = grpcCode(error);
  return code !== undefined && INFEASIBLE.has(code);
}

export function isInUseError(error: unknown): boolean {
  return grpcCode(error) === GrpcStatus.FAILED_PRECONDITION;
}
