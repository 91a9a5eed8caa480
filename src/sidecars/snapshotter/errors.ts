// How the snapshotter reads a failed CreateSnapshot / CreateVolumeGroupSnapshot (upstream's
// isCSIFinalError), pure: a final error means the driver is certainly not working on the
// request any more, so the being-created guard may go. Canceled, DeadlineExceeded,
// Unavailable, ResourceExhausted and Aborted (and non-gRPC failures, which may have happened
// after the request left) mean it may still be cutting the snapshot: the guard stays, so the
// content is not deleted before a retry learns the snapshot's handle.

import { GrpcStatus, grpcCode } from "../../csi/index.ts";

const NOT_FINAL: ReadonlySet<number> = new Set([
  GrpcStatus.CANCELLED,
  GrpcStatus.DEADLINE_EXCEEDED,
  GrpcStatus.UNAVAILABLE,
  GrpcStatus.RESOURCE_EXHAUSTED,
  GrpcStatus.ABORTED,
]);

export function isFinalError(error: unknown): boolean {
  const code = grpcCode(error);
  if (code === undefined) return false;
  return !NOT_FINAL.has(code);
}
