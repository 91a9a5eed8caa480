// The one bounded poll of the test suite: waits for a condition on real time (the servers,
// drivers and processes under test are real), never longer than its deadline. Each check races
// the deadline, so a check that never settles (a request with no deadline of its own, a hung
// driver) fails the wait at the bound instead of hanging the test; the error names what was
// awaited and the last value or error seen, which is what a reader of a CI log needs.

import { inspect } from "node:util";

export interface UntilOptions {
  /** The bound on the whole wait, checks included (default 20 s). */
  timeoutMs?: number | undefined;
  /** The pause between two checks (default 20 ms). */
  intervalMs?: number | undefined;
}

const NOT_YET = Symbol("not yet");

/**
 * Calls `condition` until it returns a value other than undefined or false and returns that
 * value. A check that throws counts as "not yet" (its error is reported if the wait times out).
 */
export async function until<T>(
  condition: () => T | Promise<T>,
  what: string,
  options: UntilOptions = {},
): Promise<Exclude<T, undefined | false>> {
  const timeoutMs = options.timeoutMs ?? 20_000;
  const intervalMs = options.intervalMs ?? 20;
  let timedOut = false;
  let expire: () => void = () => undefined;
  const expired = new Promise<typeof NOT_YET>((resolve) => (expire = () => resolve(NOT_YET)));
  const timer = setTimeout(() => {
    timedOut = true;
    expire();
  }, timeoutMs);
  let last: { value: unknown } | { error: unknown } | undefined;
  const timeout = () =>
    new UntilTimeout(`timed out after ${timeoutMs} ms waiting for ${what}${describe(last, ": ")}`);
  try {
    for (;;) {
      // The bound passed during the pause: report the last check, not the next one.
      if (timedOut && last !== undefined) throw timeout();
      const outcome = await Promise.race([
        Promise.resolve()
          .then(condition)
          .then(
            (value) => ({ value }),
            (error: unknown) => ({ error }),
          ),
        expired,
      ]);
      if (outcome === NOT_YET) {
        throw new UntilTimeout(
          `timed out after ${timeoutMs} ms waiting for ${what}: a check did not settle${describe(last, "; before it, ")}`,
        );
      }
      if ("value" in outcome && outcome.value !== undefined && outcome.value !== false)
        return outcome.value as Exclude<T, undefined | false>;
      last = outcome;
      if (timedOut) throw timeout();
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  } finally {
    clearTimeout(timer);
  }
}

/** The failure of a wait: its message names what was awaited and the last value or error. */
export class UntilTimeout extends Error {
  override name = "UntilTimeout";
}

function describe(last: { value: unknown } | { error: unknown } | undefined, lead: string): string {
  if (last === undefined) return "";
  if ("error" in last) {
    const error = last.error;
    return `${lead}last error: ${error instanceof Error ? error.message : inspect(error)}`;
  }
  return `${lead}last value: ${inspect(last.value, { depth: 2, breakLength: Infinity })}`;
}
