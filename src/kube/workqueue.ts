// A rate-limited, delaying work queue with client-go's workqueue semantics (CONVENTIONS §8).
//
// Contract:
// - Dedup: an item added while it waits in the queue is stored once (`dirty` set).
// - Exclusive: `get` hands an item out and marks it processing; until `done(item)` no other
//   `get` returns the same item, so no two workers ever work on one key at once.
// - Re-add while processing: the item is remembered as dirty and goes back to the queue
//   tail when `done` is called — it is processed again, after the current run.
// - FIFO among ready items.
// - `addAfter(item, ms)`: the item is added once the delay passes; if it is already waiting,
//   the earlier of the two deadlines wins. `ms <= 0` adds at once.
// - `addRateLimited(item)`: addAfter with the rate limiter's `when(item)` (one failure
//   recorded); `forget(item)` clears that history; `numRequeues(item)` reads it.
// - Backoff holds (csikit's rule, stricter than client-go): from `addRateLimited(item)` until
//   that retry's deadline the item is in backoff, and `add(item)` — a watch event, including
//   one caused by the worker's own write — does not make it ready earlier; nor does a re-add
//   that arrived while it was processing. The retry at the deadline re-reads the cache, so the
//   held event loses nothing. Only `forget` (success) ends the backoff early; `expedite(item)`
//   is the one deliberate way past it (it keeps the failure count). Without this, a reconcile
//   that writes its object on every failure retries as fast as its own watch events arrive,
//   whatever the retry interval (issue 24: 40-65 CreateVolume calls a second).
// - `shutDown()`: further adds are ignored, pending delays are dropped, waiting `get`s return
//   `shutdown`; `get` still hands out items already queued (as client-go), so callers that
//   want to stop at once check their own signal. `shutDownWithDrain()` also resolves only
//   when every item handed out has been `done`.
// - `len()` counts items ready in the queue (not processing, not delayed); `waitIdle()`
//   resolves when nothing is queued or processing.
// `runWorkers` is the standard worker loop over a queue: N workers, success → forget,
// `{ requeueAfterMs }` → forget + addAfter, TerminalError → logged, forget, no retry, any other
// error → logged + addRateLimited. Time comes from an injected Clock.

import {
  CsikitError,
  errorMessage,
  realClock,
  silentLogger,
  type Clock,
  type Logger,
} from "../base/index.ts";
import { controllerRateLimiter, type RateLimiter } from "./ratelimit.ts";
import type { WorkQueueMetricsRecorder } from "./workqueue-metrics.ts";

export type GetResult<T> = { shutdown: false; item: T } | { shutdown: true };

export interface WorkQueueOptions<T> {
  /** Used in logs. Default "queue". */
  name?: string;
  /** Default controllerRateLimiter() (1s..5m per item, 10 qps / 100 burst overall). */
  rateLimiter?: RateLimiter<T>;
  /** Default realClock. */
  clock?: Clock;
  /** workqueue_* metrics under `name`. Default none. */
  metrics?: WorkQueueMetricsRecorder;
}

/** An error a worker throws when retrying cannot help: logged and counted, never retried. */
export class TerminalError extends CsikitError {
  constructor(message: string, options?: ErrorOptions) {
    super("CSIKIT_ERR_TERMINAL", message, options);
    this.name = "TerminalError";
  }
}

/** What a process function may return: nothing (done) or a request to look again later. */
export interface ProcessResult {
  requeueAfterMs?: number;
}

export interface RunWorkersOptions<T> {
  /** Number of concurrent workers (>= 1). */
  workers: number;
  process: (item: T, signal: AbortSignal) => Promise<ProcessResult | void>;
  logger?: Logger;
  /** Called after each processed item with its outcome: for metrics and tests. */
  onResult?: (item: T, outcome: "success" | "requeue" | "retry" | "terminal") => void;
}

interface Delayed {
  at: number;
  cancel: () => void;
}

let defaultMetrics: WorkQueueMetricsRecorder | undefined;

/**
 * Where queues created from now on report their workqueue_* metrics when not given their own
 * recorder: one per process, as client-go's workqueue.SetProvider. A component that serves
 * metrics sets it once at start-up, before its loops make their queues.
 */
export function setWorkQueueMetricsProvider(recorder: WorkQueueMetricsRecorder | undefined): void {
  defaultMetrics = recorder;
}

export class WorkQueue<T> {
  readonly name: string;
  readonly #rateLimiter: RateLimiter<T>;
  readonly #clock: Clock;
  #queue: T[] = [];
  #head = 0;
  readonly #dirty = new Set<T>();
  readonly #processing = new Set<T>();
  readonly #waiting = new Map<T, Delayed>();
  /** Items in backoff: the deadline of the retry `addRateLimited` scheduled. */
  readonly #backoffUntil = new Map<T, number>();
  /** Items expedited while being processed: they run again after `done` even if that run failed. */
  readonly #expedited = new Set<T>();
  #getters: ((result: GetResult<T>) => void)[] = [];
  #drainers: (() => void)[] = [];
  #idlers: (() => void)[] = [];
  #shuttingDown = false;
  readonly #metrics: WorkQueueMetricsRecorder | undefined;
  /** When each queued item was added, and when each handed-out item was taken (for metrics). */
  readonly #addedAt = new Map<T, number>();
  readonly #takenAt = new Map<T, number>();
  terminalErrors = 0;

  constructor(options: WorkQueueOptions<T> = {}) {
    this.name = options.name ?? "queue";
    this.#clock = options.clock ?? realClock;
    this.#rateLimiter = options.rateLimiter ?? controllerRateLimiter<T>({ clock: this.#clock });
    this.#metrics = options.metrics ?? defaultMetrics;
    this.#metrics?.watch(this.name, () => {
      const now = this.#clock.now();
      let oldestAddedAt = now;
      for (const at of this.#addedAt.values()) oldestAddedAt = Math.min(oldestAddedAt, at);
      return {
        depth: this.len(),
        runningSeconds: [...this.#takenAt.values()].map((at) => (now - at) / 1000),
        oldestWaitingSeconds: (now - oldestAddedAt) / 1000,
      };
    });
  }

  add(item: T): void {
    if (this.#shuttingDown) return;
    if (this.#heldByBackoff(item)) return;
    this.#addNow(item);
  }

  /**
   * Adds `item` now even while it is in backoff, keeping its failure count (so a further
   * failure backs off longer still). For a change that starts a different operation — an
   * object now being deleted — never for an ordinary update.
   */
  expedite(item: T): void {
    if (this.#shuttingDown) return;
    if (this.#backoffUntil.delete(item)) {
      // The pending retry is this run: a second one at the old deadline would be one too many.
      this.#waiting.get(item)?.cancel();
      this.#waiting.delete(item);
    }
    if (this.#processing.has(item)) this.#expedited.add(item);
    this.#addNow(item);
  }

  /** Whether `item` is in backoff; if so its retry stays scheduled (an earlier addAfter may have replaced it). */
  #heldByBackoff(item: T): boolean {
    const until = this.#backoffUntil.get(item);
    if (until === undefined) return false;
    const left = until - this.#clock.now();
    if (left <= 0) {
      this.#backoffUntil.delete(item);
      return false;
    }
    if (!this.#waiting.has(item)) this.addAfter(item, left);
    return true;
  }

  #addNow(item: T): void {
    if (this.#dirty.has(item)) return;
    this.#dirty.add(item);
    if (this.#metrics) {
      this.#metrics.added(this.name);
      this.#addedAt.set(item, this.#clock.now());
    }
    if (this.#processing.has(item)) return;
    this.#queue.push(item);
    this.#dispatch();
  }

  addAfter(item: T, ms: number): void {
    if (this.#shuttingDown) return;
    if (ms <= 0) {
      this.add(item);
      return;
    }
    const at = this.#clock.now() + ms;
    const existing = this.#waiting.get(item);
    if (existing) {
      if (existing.at <= at) return;
      existing.cancel();
    }
    const cancel = this.#clock.setTimer(ms, () => {
      this.#waiting.delete(item);
      this.add(item);
    });
    this.#waiting.set(item, { at, cancel });
  }

  addRateLimited(item: T): void {
    if (this.#shuttingDown) return;
    this.#metrics?.retried(this.name);
    const delay = this.#rateLimiter.when(item);
    this.addAfter(item, delay);
    const retryAt = this.#waiting.get(item)?.at;
    if (retryAt !== undefined) this.#backoffUntil.set(item, retryAt);
  }

  /** Clears the item's failure history and ends its backoff (the worker calls it on success). */
  forget(item: T): void {
    this.#rateLimiter.forget(item);
    this.#backoffUntil.delete(item);
  }

  /** Whether `item` is in backoff now (a failure's retry is pending): for tests and views. */
  inBackoff(item: T): boolean {
    const until = this.#backoffUntil.get(item);
    return until !== undefined && until > this.#clock.now();
  }

  numRequeues(item: T): number {
    return this.#rateLimiter.numRequeues(item);
  }

  /** The next item, waiting for one; `{ shutdown: true }` once shut down and empty. */
  get(): Promise<GetResult<T>> {
    const item = this.#take();
    if (item.found) return Promise.resolve({ shutdown: false, item: item.value });
    if (this.#shuttingDown) return Promise.resolve({ shutdown: true });
    return new Promise((resolve) => this.#getters.push(resolve));
  }

  done(item: T): void {
    if (this.#metrics) {
      const takenAt = this.#takenAt.get(item);
      if (takenAt !== undefined) this.#metrics.finished(this.name, (this.#clock.now() - takenAt) / 1000);
      this.#takenAt.delete(item);
    }
    this.#processing.delete(item);
    const expedited = this.#expedited.delete(item);
    if (this.#dirty.has(item)) {
      if (!expedited && this.#heldByBackoff(item)) {
        // Re-added while it ran and failed: the scheduled retry takes its place.
        this.#dirty.delete(item);
        this.#addedAt.delete(item);
      } else {
        this.#queue.push(item);
        this.#dispatch();
      }
    }
    if (this.#processing.size === 0) {
      const drainers = this.#drainers;
      this.#drainers = [];
      for (const resolve of drainers) resolve();
    }
    this.#checkIdle();
  }

  /**
   * Resolves once nothing is queued and nothing is being processed (delayed items do not
   * count): lets tests and shutdown code wait for a burst of work to settle without sleeping.
   */
  waitIdle(): Promise<void> {
    if (this.len() === 0 && this.#processing.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idlers.push(resolve));
  }

  #checkIdle(): void {
    if (this.#idlers.length === 0 || this.len() > 0 || this.#processing.size > 0) return;
    const idlers = this.#idlers;
    this.#idlers = [];
    for (const resolve of idlers) resolve();
  }

  len(): number {
    return this.#queue.length - this.#head;
  }

  /** Items handed out and not yet done. */
  processingCount(): number {
    return this.#processing.size;
  }

  /** Items waiting for a delay to pass. */
  delayedCount(): number {
    return this.#waiting.size;
  }

  shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  shutDown(): void {
    if (this.#shuttingDown) return;
    this.#shuttingDown = true;
    for (const delayed of this.#waiting.values()) delayed.cancel();
    this.#waiting.clear();
    this.#backoffUntil.clear();
    this.#checkIdle();
    if (this.len() === 0) {
      const getters = this.#getters;
      this.#getters = [];
      for (const resolve of getters) resolve({ shutdown: true });
    }
  }

  /** Shuts down, then resolves once every handed-out item is done. */
  shutDownWithDrain(): Promise<void> {
    this.shutDown();
    if (this.#processing.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#drainers.push(resolve));
  }

  #take(): { found: true; value: T } | { found: false } {
    if (this.#head >= this.#queue.length) return { found: false };
    const value = this.#queue[this.#head]!;
    this.#head++;
    // Compact now and then so the array does not grow without bound.
    if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
    this.#processing.add(value);
    this.#dirty.delete(value);
    if (this.#metrics) {
      const now = this.#clock.now();
      const addedAt = this.#addedAt.get(value);
      this.#addedAt.delete(value);
      if (addedAt !== undefined) this.#metrics.started(this.name, (now - addedAt) / 1000);
      this.#takenAt.set(value, now);
    }
    return { found: true, value };
  }

  #dispatch(): void {
    while (this.#getters.length > 0) {
      const item = this.#take();
      if (!item.found) return;
      this.#getters.shift()!({ shutdown: false, item: item.value });
    }
  }

  /**
   * Runs `workers` loops taking items until the queue shuts down or `signal` aborts (which
   * shuts the queue down). In-flight items finish (their signal is aborted so they can stop
   * early); items still queued are not started. Resolves when every worker has stopped.
   */
  async runWorkers(options: RunWorkersOptions<T>, signal: AbortSignal): Promise<void> {
    const logger = (options.logger ?? silentLogger).with({ queue: this.name });
    const onAbort = (): void => this.shutDown();
    if (signal.aborted) this.shutDown();
    else signal.addEventListener("abort", onAbort, { once: true });
    try {
      const loops = Array.from({ length: Math.max(1, options.workers) }, () =>
        this.#worker(options, logger, signal),
      );
      await Promise.all(loops);
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
  }

  async #worker(options: RunWorkersOptions<T>, logger: Logger, signal: AbortSignal): Promise<void> {
    for (;;) {
      const next = await this.get();
      if (next.shutdown) return;
      const item = next.item;
      if (signal.aborted) {
        this.done(item);
        return;
      }
      try {
        const result = await options.process(item, signal);
        this.forget(item);
        if (result && result.requeueAfterMs !== undefined) {
          this.addAfter(item, result.requeueAfterMs);
          options.onResult?.(item, "requeue");
        } else {
          options.onResult?.(item, "success");
        }
      } catch (error) {
        if (error instanceof TerminalError) {
          this.terminalErrors++;
          this.forget(item);
          logger.error("giving up on item", { item: String(item), err: errorMessage(error) });
          options.onResult?.(item, "terminal");
        } else {
          logger.error("processing failed, will retry", {
            item: String(item),
            requeues: this.numRequeues(item),
            err: errorMessage(error),
          });
          this.addRateLimited(item);
          options.onResult?.(item, "retry");
        }
      } finally {
        this.done(item);
      }
    }
  }
}
