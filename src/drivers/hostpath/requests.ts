// Request validation shared by the services: required fields, capacity ranges, volume
// capabilities, pagination tokens, and per-object operation locks. Every failure is a
// CsiError whose message names the offending field.

import {
  CsiError,
  GrpcStatus,
  OperationLocks,
  requireField,
  type CapacityRange,
  type VolumeCapability,
} from "../../csi/index.ts";
import type { AccessType } from "./state.ts";

export function invalid(message: string): CsiError {
  return new CsiError(GrpcStatus.INVALID_ARGUMENT, message);
}

/** INVALID_ARGUMENT "<field> is required" when `value` is empty. */
export function required(value: string, field: string): string {
  requireField(value, field);
  return value;
}

/** The CSI spec's general size limit for a string field ("Size Limits"). */
export const MAX_STRING_BYTES = 128;

/** INVALID_ARGUMENT when `value` is longer than the spec's 128-byte string limit. */
export function withinStringLimit(value: string, field: string): string {
  const bytes = Buffer.byteLength(value, "utf8");
  if (bytes > MAX_STRING_BYTES)
    throw invalid(`${field} is ${bytes} bytes long; the CSI spec limits it to ${MAX_STRING_BYTES} bytes`);
  return value;
}

/** Parses an int64 decimal string into a safe number; INVALID_ARGUMENT when negative or huge. */
export function bytesField(text: string | undefined, field: string): number {
  if (text === undefined || text === "") return 0;
  const value = BigInt(text);
  if (value < 0n) throw invalid(`${field} must not be negative, got ${text}`);
  if (value > BigInt(Number.MAX_SAFE_INTEGER))
    throw new CsiError(GrpcStatus.OUT_OF_RANGE, `${field} ${text} is larger than this driver supports`);
  return Number(value);
}

export interface SizeRange {
  required: number;
  limit: number;
}

export function sizeRange(range: CapacityRange | null, field = "capacity_range"): SizeRange {
  const requiredBytes = bytesField(range?.requiredBytes, `${field}.required_bytes`);
  const limit = bytesField(range?.limitBytes, `${field}.limit_bytes`);
  if (limit > 0 && requiredBytes > limit)
    throw invalid(`${field}.required_bytes ${requiredBytes} exceeds ${field}.limit_bytes ${limit}`);
  return { required: requiredBytes, limit };
}

export function fitsRange(size: number, range: SizeRange): boolean {
  return size >= range.required && (range.limit === 0 || size <= range.limit);
}

/** Validates one capability and returns its access type. */
export function capabilityAccessType(capability: VolumeCapability | null, field: string): AccessType {
  if (!capability) throw invalid(`${field} is required`);
  const accessType =
    capability.accessType ?? (capability.block ? "block" : capability.mount ? "mount" : undefined);
  if (accessType === undefined) throw invalid(`${field}.access_type must be block or mount`);
  const mode = capability.accessMode?.mode;
  if (mode === undefined || mode === "UNKNOWN") throw invalid(`${field}.access_mode.mode is required`);
  return accessType;
}

/** Validates a capability list (non-empty, one access type) and returns that type. */
export function capabilitiesAccessType(capabilities: readonly VolumeCapability[], field: string): AccessType {
  if (capabilities.length === 0) throw invalid(`${field} is required`);
  const types = new Set(capabilities.map((c, i) => capabilityAccessType(c, `${field}[${i}]`)));
  if (types.size > 1) throw invalid(`${field} must not mix block and mount access types`);
  return types.has("block") ? "block" : "mount";
}

export function isMultiNode(capability: VolumeCapability | null): boolean {
  const mode = capability?.accessMode?.mode ?? "UNKNOWN";
  return mode.startsWith("MULTI_NODE");
}

/**
 * One page of `ids` (sorted) starting at the ID named by `token`. Tokens are the first ID of
 * the next page, so deleting entries between calls never skips or repeats a survivor;
 * a token that is not a well-formed ID is ABORTED, as the spec asks.
 */
export function page(
  ids: readonly string[],
  options: { token: string; maxEntries: number; isId: (id: string) => boolean },
): { ids: string[]; nextToken: string } {
  if (options.maxEntries < 0) throw invalid(`max_entries must not be negative, got ${options.maxEntries}`);
  if (options.token !== "" && !options.isId(options.token))
    throw new CsiError(GrpcStatus.ABORTED, `starting_token ${JSON.stringify(options.token)} is not valid`);
  const sorted = [...ids].sort();
  const start = options.token === "" ? 0 : sorted.findIndex((id) => id >= options.token);
  const from = start < 0 ? sorted.length : start;
  const count = options.maxEntries === 0 ? sorted.length - from : options.maxEntries;
  const slice = sorted.slice(from, from + count);
  const next = sorted[from + count];
  return { ids: slice, nextToken: next ?? "" };
}

/**
 * Locks over several objects at once (a clone holds its name and its source): all or none
 * are taken, and a busy one fails the call at once with ABORTED, as OperationLocks does.
 */
export class Locks {
  readonly #locks = new OperationLocks();

  async run<T>(keys: readonly string[], fn: () => Promise<T>): Promise<T> {
    const releases: Array<() => void> = [];
    try {
      for (const key of keys) {
        const release = this.#locks.tryAcquire(key);
        if (!release) throw new CsiError(GrpcStatus.ABORTED, `an operation on ${key} is already in progress`);
        releases.push(release);
      }
      return await fn();
    } finally {
      for (const release of releases) release();
    }
  }
}
