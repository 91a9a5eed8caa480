// Kubernetes API failures as one error class with the HTTP status and the Status reason, plus
// predicates (NotFound, Conflict, AlreadyExists, Gone). They also understand errors thrown by
// @kubernetes/client-node's typed APIs (tests and benches use them) by shape — an ApiException
// carries a numeric `code` and the Status `body` — so this module never loads client-node.

import { CsikitError } from "../base/index.ts";

export class KubeApiError extends CsikitError {
  /** HTTP status code (0 when the request never got an answer). */
  readonly statusCode: number;
  /** Status.reason ("NotFound", "Conflict", "Expired", ...) or "" when absent. */
  readonly reason: string;
  constructor(statusCode: number, reason: string, message: string, options?: ErrorOptions) {
    super("CSIKIT_ERR_KUBE_API", message, options);
    this.name = "KubeApiError";
    this.statusCode = statusCode;
    this.reason = reason;
  }
}

/** The HTTP status of a failed Kubernetes request, from our error or client-node's. */
export function apiStatusCode(error: unknown): number | undefined {
  if (error instanceof KubeApiError) return error.statusCode;
  if (isClientNodeApiException(error)) return error.code;
  return undefined;
}

/** client-node's ApiException (an Error subclass with a numeric `code` and `body`), matched by shape. */
function isClientNodeApiException(error: unknown): error is Error & { code: number; body: unknown } {
  return (
    error instanceof Error &&
    error.constructor.name === "ApiException" &&
    "code" in error &&
    typeof error.code === "number" &&
    "body" in error
  );
}

export const isNotFound = (error: unknown): boolean => apiStatusCode(error) === 404;
export const isConflict = (error: unknown): boolean =>
  apiStatusCode(error) === 409 && !isAlreadyExists(error);
export const isGone = (error: unknown): boolean => apiStatusCode(error) === 410;

/**
 * 504 "Too large resource version": the client asked for a revision the server has not reached
 * (its storage was reset, or another replica lags). client-go relists from scratch on it.
 */
export function isTooLargeResourceVersion(error: unknown): boolean {
  return (
    apiStatusCode(error) === 504 &&
    error instanceof Error &&
    /too large resource version/i.test(error.message)
  );
}

export function isAlreadyExists(error: unknown): boolean {
  if (apiStatusCode(error) !== 409) return false;
  if (error instanceof KubeApiError) return error.reason === "AlreadyExists";
  if (isClientNodeApiException(error)) return /AlreadyExists/.test(String(error.body));
  return false;
}

/** Builds a KubeApiError from an HTTP status and a (possibly non-JSON) body. */
export function kubeApiErrorFromResponse(statusCode: number, body: string, what: string): KubeApiError {
  let reason = "";
  let message = body.trim().slice(0, 500);
  try {
    const status: unknown = JSON.parse(body);
    if (typeof status === "object" && status !== null) {
      if ("reason" in status && typeof status.reason === "string") reason = status.reason;
      if ("message" in status && typeof status.message === "string") message = status.message;
    }
  } catch {
    // Not a Status object: keep the raw text.
  }
  return new KubeApiError(statusCode, reason, `${what}: ${statusCode} ${reason || "error"}: ${message}`);
}
