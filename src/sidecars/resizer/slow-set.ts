// external-resizer's slowSet: claims whose last attempt was infeasible are not retried before a
// fixed delay (--retry-interval-max) has passed since they were added, however often their
// object changes. Time comes from the injected clock.

import type { Clock } from "../../base/index.ts";

export class SlowSet {
  readonly #clock: Clock;
  readonly #delayMs: number;
  readonly #added = new Map<string, number>();

  constructor(clock: Clock, delayMs: number) {
    this.#clock = clock;
    this.#delayMs = delayMs;
  }

  /** Adds the key unless present (the first infeasible answer starts the wait). */
  add(key: string): void {
    if (!this.#added.has(key)) this.#added.set(key, this.#clock.now());
  }

  /** True while the key waits; a key whose wait is over is removed. */
  contains(key: string): boolean {
    const at = this.#added.get(key);
    if (at === undefined) return false;
    if (this.#clock.now() - at >= this.#delayMs) {
      this.#added.delete(key);
      return false;
    }
    return true;
  }

  /** Milliseconds until the key may be tried again (0 when not waiting). */
  remainingMs(key: string): number {
    const at = this.#added.get(key);
    return at === undefined ? 0 : Math.max(0, at + this.#delayMs - this.#clock.now());
  }

  remove(key: string): void {
    this.#added.delete(key);
  }
}
