// Assertions for sanity tests. Failures throw SanityAssertion with a message a driver author can
// act on: which call, what the spec wants, what the driver answered.

import { CsikitError } from "../base/index.ts";
import { grpcCode, grpcDetails } from "../csi/index.ts";
import { GrpcStatus } from "../csi/index.ts";

export class SanityAssertion extends CsikitError {
  constructor(message: string) {
    super("CSIKIT_ERR_SANITY_ASSERTION", message);
    this.name = "SanityAssertion";
  }
}

const CODE_NAMES = new Map<number, string>(
  Object.entries(GrpcStatus)
    .filter((entry): entry is [string, number] => typeof entry[1] === "number")
    .map(([name, code]) => [code, name]),
);

export function codeName(code: number): string {
  return CODE_NAMES.get(code) ?? `code ${code}`;
}

// One grpcCode and grpcDetails, csi's; re-exported so the tests keep importing them from here.
export { grpcCode, grpcDetails } from "../csi/index.ts";

export function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new SanityAssertion(message);
}

/**
 * Awaits a call that must fail with `want` (one code or any of several). If it succeeds instead,
 * `onSuccess` gets the response first (so a test can track what an unexpected success created).
 */
export async function expectCode<T>(
  call: Promise<T>,
  want: number | readonly number[],
  what: string,
  onSuccess?: (response: T) => void,
): Promise<void> {
  const wanted = typeof want === "number" ? [want] : want;
  const wantText = wanted.map(codeName).join(" or ");
  let response: T;
  try {
    response = await call;
  } catch (error) {
    const code = grpcCode(error);
    if (code === undefined) throw error;
    if (!wanted.includes(code)) {
      throw new SanityAssertion(`${what}: want ${wantText}, got ${codeName(code)} (${grpcDetails(error)})`);
    }
    return;
  }
  onSuccess?.(response);
  throw new SanityAssertion(`${what}: want ${wantText}, got OK`);
}

/** Checks that a caught error is a gRPC failure with one of the wanted codes; rethrows otherwise. */
export function checkCode(error: unknown, want: number | readonly number[], what: string): void {
  const wanted = typeof want === "number" ? [want] : want;
  const code = grpcCode(error);
  if (code === undefined) throw error;
  if (!wanted.includes(code)) {
    throw new SanityAssertion(
      `${what}: want ${wanted.map(codeName).join(" or ")}, got ${codeName(code)} (${grpcDetails(error)})`,
    );
  }
}

/** Awaits a call that must succeed; a failure names the call and the driver's status. */
export async function expectOk<T>(call: Promise<T>, what: string): Promise<T> {
  try {
    return await call;
  } catch (error) {
    throw callFailure(what, error);
  }
}

/** The error to throw for a call that should have succeeded (non-gRPC errors pass through). */
export function callFailure(what: string, error: unknown): unknown {
  const code = grpcCode(error);
  if (code === undefined) return error;
  return new SanityAssertion(`${what}: want OK, got ${codeName(code)} (${grpcDetails(error)})`);
}

/** Parses an int64 field as the client hands it over (decimal string; number or bigint tolerated). */
export function int64(value: unknown): bigint {
  if (value === undefined || value === null || value === "") return 0n;
  if (typeof value === "bigint") return value;
  if (typeof value === "number" || typeof value === "string") return BigInt(value);
  throw new SanityAssertion(`not an int64 value: ${typeof value}`);
}

/** The first value that occurs twice in `values`, if any. */
export function firstRepeat(values: readonly string[]): string | undefined {
  const seen = new Set<string>();
  for (const value of values) {
    if (seen.has(value)) return value;
    seen.add(value);
  }
  return undefined;
}
