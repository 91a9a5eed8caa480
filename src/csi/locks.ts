// Per-volume (or per-snapshot) operation locks: the spec lets a plugin answer ABORTED when a
// CO, having lost state, sends a second call for an id that already has one in flight. Locks
// are in-memory and never wait: a busy id fails at once and the CO retries.

import { CsiError, GrpcStatus } from "./errors.ts";

export class OperationLocks {
  readonly #held = new Set<string>();

  /** Takes the lock for `id`; returns its release function, or undefined when it is held. Release is idempotent. */
  tryAcquire(id: string): (() => void) | undefined {
    if (this.#held.has(id)) return undefined;
    this.#held.add(id);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#held.delete(id);
    };
  }

  /** Runs `fn` holding the lock for `id`; ABORTED "an operation on <id> is already in progress" when busy. */
  async run<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const release = this.tryAcquire(id);
    if (!release) throw new CsiError(GrpcStatus.ABORTED, `an operation on ${id} is already in progress`);
    try {
      return await fn();
    } finally {
      release();
    }
  }

  /** True while `id` is locked. */
  isHeld(id: string): boolean {
    return this.#held.has(id);
  }
}
