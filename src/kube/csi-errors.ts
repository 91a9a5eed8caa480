// How a sidecar words a failed CSI call wherever a person reads it (status.attachError, Event
// messages, logs): Go's grpc status text, "rpc error: code = NotFound desc = ...", as the
// upstream sidecars' err.Error() prints it, so messages read the same as their Go twins'.

import { errorMessage } from "../base/index.ts";
import { grpcCode, grpcDetails } from "../csi/index.ts";
import { grpcCodeName } from "./metrics.ts";

/** "rpc error: code = X desc = ..." for gRPC failures; the plain message otherwise. */
export function csiErrorText(error: unknown): string {
  const code = grpcCode(error);
  if (code === undefined || code === 0) return errorMessage(error);
  return `rpc error: code = ${grpcCodeName(code)} desc = ${grpcDetails(error)}`;
}
