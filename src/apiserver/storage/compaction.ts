// The periodic compaction loop: compacts the revision log every interval until its signal aborts
// or the store closes, so history (and the database) stays bounded while watchers that are at
// most one window behind can still resume. A failed round is logged and retried at the next tick;
// the loop itself never throws.

import { errorMessage } from "../../base/index.ts";
import type { Clock, Logger } from "../../base/index.ts";

/** kube-apiserver's --etcd-compaction-interval default. */
export const DEFAULT_COMPACTION_INTERVAL_MS = 5 * 60_000;

export interface CompactionLoopOptions {
  intervalMs: number;
  /** One compaction round; awaited, so the store never closes under a round in progress. */
  compact: () => unknown;
  /** True once the store closed: the loop ends. */
  isClosed: () => boolean;
  clock: Clock;
  logger: Logger;
}

/** Resolves when `signal` aborts or the store closes. */
export async function runCompactionLoop(options: CompactionLoopOptions, signal: AbortSignal): Promise<void> {
  if (!(options.intervalMs > 0)) {
    throw new RangeError(`compaction interval must be positive, got ${options.intervalMs}ms`);
  }
  while (!signal.aborted && !options.isClosed()) {
    try {
      await options.clock.sleep(options.intervalMs, signal);
    } catch {
      return; // aborted
    }
    if (options.isClosed()) return;
    try {
      await options.compact();
    } catch (error) {
      options.logger.error("compaction of the revision log failed; retrying at the next interval", {
        error: errorMessage(error),
      });
    }
  }
}
