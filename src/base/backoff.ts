// Exponential backoff with jitter, as client-go's wait.Backoff and the sidecars' retry loops:
// each step multiplies the delay by `factor` up to `max`; jitter spreads retries of many
// clients so they do not hit a recovering server in lockstep.

export interface BackoffOptions {
  /** First delay in ms. Default 100. */
  initial?: number;
  /** Upper bound in ms. Default 30000. */
  max?: number;
  /** Multiplier per step. Default 2. */
  factor?: number;
  /** Fraction of random extra delay (0..1). Default 0. */
  jitter?: number;
  /** Source of randomness, for tests. Default Math.random. */
  random?: () => number;
}

export class Backoff {
  readonly #initial: number;
  readonly #max: number;
  readonly #factor: number;
  readonly #jitter: number;
  readonly #random: () => number;
  #current: number;

  constructor(options: BackoffOptions = {}) {
    this.#initial = options.initial ?? 100;
    this.#max = options.max ?? 30_000;
    this.#factor = options.factor ?? 2;
    this.#jitter = options.jitter ?? 0;
    this.#random = options.random ?? Math.random;
    this.#current = this.#initial;
  }

  /** The next delay in ms; advances the sequence. */
  next(): number {
    const base = this.#current;
    this.#current = Math.min(this.#max, this.#current * this.#factor);
    const jittered = base + base * this.#jitter * this.#random();
    return Math.min(this.#max * (1 + this.#jitter), jittered);
  }

  reset(): void {
    this.#current = this.#initial;
  }
}

/** Delay for the n-th failure (0-based) of an item: initial * 2^n capped at max, as client-go's ItemExponentialFailureRateLimiter. */
export function exponentialDelay(failures: number, initial: number, max: number): number {
  const delay = initial * 2 ** Math.min(failures, 62);
  return Number.isFinite(delay) ? Math.min(delay, max) : max;
}
