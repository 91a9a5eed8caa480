// CSI failures are gRPC statuses. A handler throws CsiError with the status code and a message
// a person can act on; the server sends exactly that. Anything else a handler throws becomes
// INTERNAL with a generic message, so stack traces and internal details never reach a client.

import { status } from "@grpc/grpc-js";
import { errorCode, errorMessage, isRecord } from "../base/index.ts";

export { status as GrpcStatus } from "@grpc/grpc-js";

export class CsiError extends Error {
  /** The gRPC status code (GrpcStatus.INVALID_ARGUMENT, ...). */
  readonly code: number;
  constructor(code: number, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "CsiError";
    this.code = code;
  }
}

/** The name of a gRPC status code ("NOT_FOUND"), for logs and metrics labels. */
export function statusName(code: number): string {
  // grpc-js's status is a numeric enum, so it maps numbers back to names.
  const name: string | undefined = status[code];
  return name ?? `CODE_${code}`;
}

/** The numeric gRPC status of a client-side failure (ServiceError, CsiError), if it has one. */
export function grpcCode(error: unknown): number | undefined {
  const code = errorCode(error);
  return typeof code === "number" ? code : undefined;
}

/** The status message of a failed call (the `details` of a grpc-js error), else its message. */
export function grpcDetails(error: unknown): string {
  if (isRecord(error) && typeof error.details === "string") return error.details;
  return errorMessage(error);
}
