// The livenessprobe's /healthz, with upstream's answers (checkProbe): Probe the driver within
// --probe-timeout; 200 "ok" when it is ready (or does not say: the spec's default is ready);
// 500 "driver responded but is not ready" for ready:false; 500 with the gRPC error, in Go's
// "rpc error: code = … desc = …" form, when the driver is unreachable or timed out.

import { errorMessage, type Logger } from "../../base/index.ts";
import { grpcCode, grpcDetails, type CsiClient } from "../../csi/index.ts";
import { grpcCodeName, type RouteHandler } from "../../kube/diagnostics.ts";

export const NOT_READY = "driver responded but is not ready";

/** A failed call as Go's grpc status error prints it. */
function goStatusText(error: unknown): string {
  const code = grpcCode(error);
  if (code === undefined) return errorMessage(error);
  return `rpc error: code = ${grpcCodeName(code)} desc = ${grpcDetails(error)}`;
}

export function probeRoute(options: {
  client: CsiClient;
  timeoutMs: number;
  driverName: string;
  logger: Logger;
}): RouteHandler {
  const { client, timeoutMs, driverName, logger } = options;
  return async () => {
    logger.info(5, "Sending probe request to CSI driver", { driver: driverName });
    let ready: boolean;
    try {
      const response = await client.identity.probe({}, { timeoutMs });
      ready = response.ready === null || response.ready.value;
    } catch (error) {
      const reason = goStatusText(error);
      logger.error("Health check failed", { err: reason });
      return { status: 500, body: reason };
    }
    if (!ready) {
      logger.error("Driver responded but is not ready");
      return { status: 500, body: NOT_READY };
    }
    logger.info(5, "Health check succeeded");
    return { status: 200, body: "ok" };
  };
}
