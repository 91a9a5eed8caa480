// The kubelet's nestedpendingoperations in small: runs volume operations asynchronously, never
// two with the same lock key at once (a volume's stage/unstage, a pod volume's
// publish/unpublish), and after a failure refuses the same operation until its exponential
// backoff (500ms doubling to 2m2s, as the kubelet) has passed. Every completion calls
// `onDone`, which re-runs the reconciler at once: operations chain on events, not ticks.

import { errorMessage, exponentialDelay, type Clock, type Logger } from "../base/index.ts";

export interface OperationExecutorOptions {
  clock: Clock;
  logger: Logger;
  initialDelayMs: number;
  maxDelayMs: number;
  onDone: () => void;
}

interface Failure {
  count: number;
  retryAt: number;
}

export class OperationExecutor {
  readonly #options: OperationExecutorOptions;
  readonly #running = new Map<string, Promise<void>>();
  readonly #failures = new Map<string, Failure>();
  readonly #timers = new Map<string, () => void>();

  constructor(options: OperationExecutorOptions) {
    this.#options = options;
  }

  isRunning(lockKey: string): boolean {
    return this.#running.has(lockKey);
  }

  /** Whether `opKey` is waiting out a backoff. */
  inBackoff(opKey: string): boolean {
    const failure = this.#failures.get(opKey);
    return failure !== undefined && failure.retryAt > this.#options.clock.now();
  }

  failures(opKey: string): number {
    return this.#failures.get(opKey)?.count ?? 0;
  }

  /**
   * Starts `fn` unless an operation holds `lockKey` or `opKey` is backing off; returns whether
   * it started. A thrown error is passed to `onError` (events, uncertain state) and backs off.
   */
  run(lockKey: string, opKey: string, fn: () => Promise<void>, onError: (error: unknown) => void): boolean {
    if (this.#running.has(lockKey) || this.inBackoff(opKey)) return false;
    const { clock, logger } = this.#options;
    const promise = (async () => {
      try {
        await fn();
        this.#failures.delete(opKey);
      } catch (error) {
        const count = (this.#failures.get(opKey)?.count ?? 0) + 1;
        const delay = exponentialDelay(count - 1, this.#options.initialDelayMs, this.#options.maxDelayMs);
        this.#failures.set(opKey, { count, retryAt: clock.now() + delay });
        this.#timers.get(opKey)?.();
        this.#timers.set(
          opKey,
          clock.setTimer(delay, () => {
            this.#timers.delete(opKey);
            this.#options.onDone();
          }),
        );
        logger.info(2, "volume operation failed", {
          operation: opKey,
          retryInMs: delay,
          err: errorMessage(error),
        });
        try {
          onError(error);
        } catch (handlerError) {
          logger.error("volume operation error handler failed", {
            operation: opKey,
            err: errorMessage(handlerError),
          });
        }
      } finally {
        this.#running.delete(lockKey);
        this.#options.onDone();
      }
    })();
    this.#running.set(lockKey, promise);
    return true;
  }

  /** Forgets every backoff (a driver came back: retry now rather than in minutes). */
  resetBackoff(): void {
    this.#failures.clear();
    for (const cancel of this.#timers.values()) cancel();
    this.#timers.clear();
  }

  /** Resolves when no operation is running. */
  async waitIdle(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running.values()]);
  }

  stop(): void {
    for (const cancel of this.#timers.values()) cancel();
    this.#timers.clear();
  }
}
