// Upstream's ControllerExpectations (pkg/controller/controller_utils.go): what a loop asked
// the API server to create or delete and has not yet seen in its informer. While a key has
// unmet expectations its sync does not scale again (the cache would still show the old count
// and it would create or delete twice); expectations older than the TTL (5 minutes upstream)
// are considered met, so a lost watch event cannot block a key forever. Only in memory: a
// restarted loop lists everything again and starts from what exists.

import { realClock, type Clock } from "../../base/index.ts";

/** ExpectationsTimeout upstream. */
export const EXPECTATIONS_TTL_MS = 5 * 60 * 1000;

interface Expectation {
  adds: number;
  /** uids of pods whose deletion we asked for and have not observed. */
  deletes: Set<string>;
  at: number;
}

export class ControllerExpectations {
  readonly #entries = new Map<string, Expectation>();
  readonly #clock: Clock;

  constructor(clock: Clock = realClock) {
    this.#clock = clock;
  }

  /** Whether the key may scale: nothing pending, or what is pending has expired. */
  satisfied(key: string): boolean {
    const entry = this.#entries.get(key);
    if (entry === undefined) return true;
    if (entry.adds <= 0 && entry.deletes.size === 0) return true;
    return this.#clock.now() - entry.at > EXPECTATIONS_TTL_MS;
  }

  /** Replaces the key's expectations (a sync sets them before it writes). */
  expect(key: string, adds: number, deleteUids: readonly string[] = []): void {
    this.#entries.set(key, { adds, deletes: new Set(deleteUids), at: this.#clock.now() });
  }

  creationObserved(key: string): void {
    const entry = this.#entries.get(key);
    if (entry !== undefined) entry.adds--;
  }

  deletionObserved(key: string, uid: string): void {
    this.#entries.get(key)?.deletes.delete(uid);
  }

  forget(key: string): void {
    this.#entries.delete(key);
  }
}
