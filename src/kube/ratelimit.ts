// Rate limiters with client-go's semantics.
//
// TokenBucket: golang.org/x/time/rate's reservation model as client-go's flowcontrol uses it:
// the bucket starts full (`burst` tokens) and refills at `qps` per second up to `burst`; every
// caller takes a token at once, possibly driving the balance negative, and is told how long
// to wait for its token to exist. So N callers arriving together are spaced 1/qps apart in the
// order they asked, and a waiter that gives up (abort) returns its token.
// `acquire(priority)` is the queued form the client uses: callers wait in line by priority
// (higher first, FIFO within one), and each token that comes into existence goes to the head of
// the line. With one priority it hands out tokens exactly as `wait` does; with several, a
// controller's completion writes overtake its new work (the provisioner's PV creates go before
// further in-flight marks) without raising the rate.
//
// Work-queue limiters (RateLimiter): `when(item)` says how long to wait before the item may be
// processed again and records a failure; `forget(item)` clears an item's history;
// `numRequeues(item)` counts failures since the last forget.
// - ItemExponentialRateLimiter: base * 2^failures, capped at max (client-go's
//   ItemExponentialFailureRateLimiter).
// - BucketRateLimiter: an overall token bucket; a reservation per call, no per-item memory.
// - MaxOfRateLimiter: asks every limiter (so each records the failure) and returns the longest.
// `controllerRateLimiter` builds the sidecars' default: per-item exponential between
// --retry-interval-start and --retry-interval-max, max-ed with a 10 qps / 100 burst bucket.

import { exponentialDelay, realClock, type Clock } from "../base/index.ts";

export interface TokenBucketOptions {
  /** Tokens added per second; must be > 0. */
  qps: number;
  /** Bucket size; also the initial balance. Must be >= 1. */
  burst: number;
  /** Default realClock. */
  clock?: Clock;
}

export class TokenBucket {
  readonly qps: number;
  readonly burst: number;
  readonly #clock: Clock;
  #tokens: number;
  #last: number;

  constructor(options: TokenBucketOptions) {
    if (!(options.qps > 0)) throw new RangeError(`token bucket qps must be > 0, got ${options.qps}`);
    if (!(options.burst >= 1)) throw new RangeError(`token bucket burst must be >= 1, got ${options.burst}`);
    this.qps = options.qps;
    this.burst = options.burst;
    this.#clock = options.clock ?? realClock;
    this.#tokens = options.burst;
    this.#last = this.#clock.now();
  }

  #refill(): void {
    const now = this.#clock.now();
    const elapsed = Math.max(0, now - this.#last);
    this.#tokens = Math.min(this.burst, this.#tokens + (elapsed * this.qps) / 1000);
    this.#last = now;
  }

  /** Takes one token now; returns ms until it is really available (0 = go ahead). */
  reserve(): number {
    this.#refill();
    this.#tokens -= 1;
    if (this.#tokens >= 0) return 0;
    return Math.ceil((-this.#tokens * 1000) / this.qps);
  }

  /** Takes a token only if one is available now (flowcontrol's TryAccept). */
  tryAccept(): boolean {
    this.#refill();
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }

  /** Waits for a token (flowcontrol's Wait). On abort the token goes back and the promise rejects. */
  async wait(signal?: AbortSignal): Promise<void> {
    const delay = this.reserve();
    if (delay === 0) return;
    try {
      await this.#clock.sleep(delay, signal);
    } catch (error) {
      this.#refill();
      this.#tokens = Math.min(this.burst, this.#tokens + 1);
      throw error;
    }
  }

  /** The queued waiters of `acquire`, highest priority first, FIFO within a priority. */
  readonly #line: Waiter[] = [];
  #timer: (() => void) | undefined;

  /**
   * Waits in line for a token: higher `priority` first, FIFO within a priority. On abort the
   * caller leaves the line (it held no token) and the promise rejects with the signal's reason.
   */
  acquire(priority: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (this.#line.length === 0 && this.tryAccept()) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { priority, resolve, reject, signal, onAbort: undefined };
      if (signal) {
        waiter.onAbort = () => {
          const at = this.#line.indexOf(waiter);
          if (at >= 0) this.#line.splice(at, 1);
          reject(abortReason(signal));
        };
        signal.addEventListener("abort", waiter.onAbort, { once: true });
      }
      let at = this.#line.length;
      while (at > 0 && this.#line[at - 1]!.priority < priority) at--;
      this.#line.splice(at, 0, waiter);
      this.#dispatch();
    });
  }

  /** Hands the tokens that exist to the head of the line; sleeps until the next one exists. */
  #dispatch(): void {
    if (this.#timer) return;
    while (this.#line.length > 0 && this.tryAccept()) {
      const waiter = this.#line.shift()!;
      if (waiter.onAbort) waiter.signal?.removeEventListener("abort", waiter.onAbort);
      waiter.resolve();
    }
    if (this.#line.length === 0) return;
    const ms = Math.max(1, Math.ceil(((1 - this.#tokens) * 1000) / this.qps));
    this.#timer = this.#clock.setTimer(ms, () => {
      this.#timer = undefined;
      this.#dispatch();
    });
  }

  /** Tokens available now (may be negative while callers wait): for tests and metrics. */
  get tokens(): number {
    this.#refill();
    return this.#tokens;
  }
}

/** The signal's reason as the Error it is (an abort's DOMException), else wrapped. */
function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new Error(String(reason));
}

interface Waiter {
  priority: number;
  resolve: () => void;
  reject: (reason: Error) => void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

export interface RateLimiter<T> {
  /** Delay in ms before `item` may be retried; records one failure. */
  when(item: T): number;
  forget(item: T): void;
  numRequeues(item: T): number;
}

export class ItemExponentialRateLimiter<T> implements RateLimiter<T> {
  readonly #baseMs: number;
  readonly #maxMs: number;
  readonly #failures = new Map<T, number>();

  constructor(options: { baseMs: number; maxMs: number }) {
    this.#baseMs = options.baseMs;
    this.#maxMs = options.maxMs;
  }

  when(item: T): number {
    const failures = this.#failures.get(item) ?? 0;
    this.#failures.set(item, failures + 1);
    return exponentialDelay(failures, this.#baseMs, this.#maxMs);
  }

  forget(item: T): void {
    this.#failures.delete(item);
  }

  numRequeues(item: T): number {
    return this.#failures.get(item) ?? 0;
  }
}

export class BucketRateLimiter<T> implements RateLimiter<T> {
  readonly bucket: TokenBucket;
  constructor(bucket: TokenBucket) {
    this.bucket = bucket;
  }
  when(_item: T): number {
    return this.bucket.reserve();
  }
  forget(_item: T): void {}
  numRequeues(_item: T): number {
    return 0;
  }
}

export class MaxOfRateLimiter<T> implements RateLimiter<T> {
  readonly #limiters: readonly RateLimiter<T>[];
  constructor(limiters: readonly RateLimiter<T>[]) {
    this.#limiters = limiters;
  }
  when(item: T): number {
    let longest = 0;
    for (const limiter of this.#limiters) longest = Math.max(longest, limiter.when(item));
    return longest;
  }
  forget(item: T): void {
    for (const limiter of this.#limiters) limiter.forget(item);
  }
  numRequeues(item: T): number {
    let most = 0;
    for (const limiter of this.#limiters) most = Math.max(most, limiter.numRequeues(item));
    return most;
  }
}

export interface ControllerRateLimiterOptions {
  /** --retry-interval-start. Default 1000 ms. */
  retryIntervalStartMs?: number;
  /** --retry-interval-max. Default 300000 ms (5m). */
  retryIntervalMaxMs?: number;
  /** Overall bucket; default 10 qps as client-go's DefaultControllerRateLimiter. */
  qps?: number;
  /** Default 100. */
  burst?: number;
  clock?: Clock;
}

/** Per-item exponential backoff max-ed with an overall token bucket. */
export function controllerRateLimiter<T>(options: ControllerRateLimiterOptions = {}): RateLimiter<T> {
  return new MaxOfRateLimiter<T>([
    new ItemExponentialRateLimiter<T>({
      baseMs: options.retryIntervalStartMs ?? 1000,
      maxMs: options.retryIntervalMaxMs ?? 300_000,
    }),
    new BucketRateLimiter<T>(
      new TokenBucket({
        qps: options.qps ?? 10,
        burst: options.burst ?? 100,
        ...(options.clock ? { clock: options.clock } : {}),
      }),
    ),
  ]);
}
