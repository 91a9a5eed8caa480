// Coded errors: every error csikit raises on purpose carries a stable `code` (CSIKIT_ERR_*),
// so callers and tests branch on codes, never on message text. Helpers narrow `unknown`
// catch variables without casts.

export class CsikitError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "CsikitError";
    this.code = code;
  }
}

/** A command-line flag was unknown, malformed or out of range. */
export class FlagError extends CsikitError {
  constructor(message: string) {
    super("CSIKIT_ERR_FLAG", message);
    this.name = "FlagError";
  }
}

/** A value handed in from outside (request, manifest, file) is invalid. */
export class ValidationError extends CsikitError {
  constructor(message: string) {
    super("CSIKIT_ERR_VALIDATION", message);
    this.name = "ValidationError";
  }
}

/** Work was cancelled through an AbortSignal. */
export class AbortedError extends CsikitError {
  constructor(message = "operation aborted") {
    super("CSIKIT_ERR_ABORTED", message);
    this.name = "AbortedError";
  }
}

/** The one object type guard: a non-null, non-array object whose keys can be read. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function isError(value: unknown): value is Error {
  return value instanceof Error;
}

/** The message of anything thrown, for logs and error text. */
export function errorMessage(value: unknown): string {
  if (value instanceof Error) return value.message;
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}

/** The `code` property of a thrown value (Node system errors, gRPC errors, CsikitError). */
export function errorCode(value: unknown): string | number | undefined {
  if (typeof value !== "object" || value === null || !("code" in value)) return undefined;
  const code = value.code;
  return typeof code === "string" || typeof code === "number" ? code : undefined;
}

/** True for a Node system error with the given errno code (ENOENT, EEXIST, ...). */
export function isErrno(value: unknown, code: string): boolean {
  return errorCode(value) === code;
}
