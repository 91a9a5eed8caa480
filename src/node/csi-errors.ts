// How the node words and classifies CSI failures: Go's grpc status text ("rpc error: code =
// Internal desc = ..."), as kubelet events show it, and the kubelet's final/non-final split
// (a non-final error leaves the mount uncertain: it may still happen in the driver).

import { errorMessage } from "../base/index.ts";
import { grpcCode, grpcDetails } from "../csi/index.ts";
import { grpcCodeName } from "../kube/index.ts";

/** "rpc error: code = X desc = ..." for gRPC failures; the plain message otherwise. */
export function describeError(error: unknown): string {
  const code = grpcCode(error);
  if (code === undefined || code === 0) return errorMessage(error);
  return `rpc error: code = ${grpcCodeName(code)} desc = ${grpcDetails(error)}`;
}

/** Codes after which the operation may still complete in the driver (kubelet's isFinalError false). */
const NON_FINAL = new Set([1, 4, 8, 10, 14]);

/** A failure after which the volume may or may not be mounted. */
export function isUncertain(error: unknown): boolean {
  const code = grpcCode(error);
  return code !== undefined && NON_FINAL.has(code);
}
