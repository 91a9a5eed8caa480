// Required-field checks for handlers: the spec answers a missing required field with
// INVALID_ARGUMENT, and the message names the field so the caller can fix the request.

import { CsiError, GrpcStatus } from "./errors.ts";

/**
 * Throws INVALID_ARGUMENT "<field> is required" when `value` is missing: undefined, null, "",
 * an empty array, or an empty object (an empty map, or a message sent with no fields).
 */
export function requireField(value: unknown, field: string): void {
  if (isEmpty(value)) throw new CsiError(GrpcStatus.INVALID_ARGUMENT, `${field} is required`);
}

function isEmpty(value: unknown): boolean {
  if (value === undefined || value === null || value === "") return true;
  if (Array.isArray(value)) return value.length === 0;
  if (typeof value === "object") return Object.keys(value).length === 0;
  return false;
}
