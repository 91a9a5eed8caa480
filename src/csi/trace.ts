// The one place CSI calls are logged (server side and client side): request and response go
// through the secret sanitizer first, at -v 5 as the sidecars trace gRPC, with method and
// duration. Nothing else in csikit logs CSI messages. A client may cap the logged response
// (the sidecars' --max-grpc-log-length, csi-lib-utils' SetMaxGRPCLogLength).

import type { Logger } from "../base/index.ts";
import { errorMessage } from "../base/index.ts";
import { grpcCode, statusName } from "./errors.ts";
import { sanitizeRequest } from "./sanitize.ts";
import type { MethodSpec } from "./services.ts";

/** -v level of per-call request/response traces. */
export const TRACE_VERBOSITY = 5;

export interface CallTrace {
  response(value: unknown): void;
  /** Logs a streamed response message. */
  message(value: unknown): void;
  failure(error: unknown): void;
}

/**
 * A response as logged: the sanitized message, or — with a positive `maxLength` — its JSON cut
 * to that many characters plus csi-lib-utils' note of how much was cut. -1 (the default) and 0
 * mean no limit, as upstream.
 */
export function loggedResponse(sanitized: unknown, maxLength = -1): unknown {
  if (maxLength <= 0) return sanitized;
  const text = JSON.stringify(sanitized) ?? "";
  if (text.length <= maxLength) return sanitized;
  return `${text.slice(0, maxLength)} [response body too large, log truncated by ${text.length - maxLength} characters]`;
}

/** Starts tracing one call; returns hooks for its outcome. `maxResponseLength`: see loggedResponse. */
export function traceCall(
  logger: Logger,
  method: MethodSpec,
  request: unknown,
  maxResponseLength = -1,
): CallTrace {
  const started = performance.now();
  const durationMs = (): number => Math.round((performance.now() - started) * 1000) / 1000;
  if (logger.enabled(TRACE_VERBOSITY)) {
    logger.info(TRACE_VERBOSITY, "GRPC call", {
      method: method.path,
      request: sanitizeRequest(method.requestType, request),
    });
  }
  return {
    response(value) {
      if (!logger.enabled(TRACE_VERBOSITY)) return;
      logger.info(TRACE_VERBOSITY, "GRPC response", {
        method: method.path,
        response:
          value === undefined
            ? undefined
            : loggedResponse(sanitizeRequest(method.responseType, value), maxResponseLength),
        durationMs: durationMs(),
      });
    },
    message(value) {
      if (!logger.enabled(TRACE_VERBOSITY)) return;
      logger.info(TRACE_VERBOSITY, "GRPC stream message", {
        method: method.path,
        response: loggedResponse(sanitizeRequest(method.responseType, value), maxResponseLength),
      });
    },
    failure(error) {
      if (!logger.enabled(TRACE_VERBOSITY)) return;
      const code = grpcCode(error);
      logger.info(TRACE_VERBOSITY, "GRPC error", {
        method: method.path,
        code: code === undefined ? undefined : statusName(code),
        error: errorMessage(error),
        durationMs: durationMs(),
      });
    },
  };
}
