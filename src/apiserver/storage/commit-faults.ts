// Fault hooks of the commit worker, for tests (CONVENTIONS.md §20): hold every COMMIT at its
// start until released, or fail the next COMMITs. The state is a SharedArrayBuffer both threads
// see, so the worker checks it without a message round trip, and a held COMMIT blocks only the
// worker thread: a test can show the main thread keeps answering meanwhile (it would hang if
// the COMMIT ran on the main thread). Nothing reachable from the CLI creates one.

import { CsikitError } from "../../base/index.ts";

const HOLD = 0;
const HELD = 1;
const FAIL = 2;

export class CommitFaults {
  /** [hold flag, COMMITs that reached the hold, COMMITs still to fail]. */
  readonly state: Int32Array<SharedArrayBuffer>;

  constructor(buffer: SharedArrayBuffer = new SharedArrayBuffer(3 * 4)) {
    this.state = new Int32Array(buffer);
  }

  /** From now on every COMMIT waits, once its writes are applied, until release(). */
  hold(): void {
    Atomics.store(this.state, HOLD, 1);
  }

  release(): void {
    Atomics.store(this.state, HOLD, 0);
    Atomics.notify(this.state, HOLD);
  }

  /** How many COMMITs have reached the hold so far (each counted once). */
  get heldCommits(): number {
    return Atomics.load(this.state, HELD);
  }

  /** The next `count` COMMITs fail (the batch is rolled back) instead of committing. */
  failNext(count = 1): void {
    Atomics.store(this.state, FAIL, count);
  }
}

/**
 * Worker side: called just before a COMMIT. Blocks (this thread only) while held, bounded by
 * `maxWaitMs` so a test that forgets to release cannot hang a worker forever; throws if the
 * COMMIT is to fail.
 */
export function beforeCommit(state: Int32Array<SharedArrayBuffer>, maxWaitMs: number): void {
  if (Atomics.load(state, HOLD) === 1) {
    Atomics.add(state, HELD, 1);
    const deadline = Date.now() + maxWaitMs;
    while (Atomics.load(state, HOLD) === 1 && Date.now() < deadline) Atomics.wait(state, HOLD, 1, 100);
  }
  for (;;) {
    const remaining = Atomics.load(state, FAIL);
    if (remaining <= 0) return;
    if (Atomics.compareExchange(state, FAIL, remaining, remaining - 1) === remaining) {
      throw new CsikitError("CSIKIT_ERR_FAULT_INJECTED", "injected fault: COMMIT failed (disk I/O error)");
    }
  }
}
