// The one bounded wait of `csikit up`: polls a probe until it yields a value (not undefined or
// false), failing with a
// timeout error that names what it waited for and the probe's last error, or with AbortedError
// when the cluster is stopped meanwhile (Ctrl-C while starting or walking through).

import { AbortedError, CsikitError, errorMessage } from "../base/index.ts";

export async function pollUntil<T>(
  what: string,
  timeoutMs: number,
  signal: AbortSignal,
  probe: () => Promise<T | undefined | false>,
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  for (;;) {
    if (signal.aborted) throw new AbortedError(`stopped while waiting for ${what}`);
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
      // An error from an earlier try no longer says why we wait.
      last = "";
    } catch (error) {
      last = errorMessage(error);
    }
    if (Date.now() > deadline)
      throw new CsikitError(
        "CSIKIT_ERR_TIMEOUT",
        `timed out after ${(timeoutMs / 1000).toFixed(1)}s waiting for ${what}${last ? `: ${last}` : ""}`,
      );
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
