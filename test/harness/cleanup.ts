// Test cleanups in the order Go's t.Cleanup runs them: last registered first. node:test runs
// t.after hooks first-registered first, so a temp dir registered before the process or server
// writing into it would be removed while that writer still runs (and it recreates files there,
// leaving the dir behind). Everything a test starts goes through `defer`, so teardown unwinds
// in reverse order of set-up, also when the test fails.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestContext } from "node:test";

const cleanups = new WeakMap<TestContext, (() => unknown)[]>();

/**
 * Registers a cleanup that runs after the test in reverse order of registration. Every cleanup
 * runs even when one fails; the failures are reported together. (Cleanups a test registers with
 * t.after itself run in t.after's order around this group: use one mechanism per test.)
 */
export function defer(t: TestContext, cleanup: () => unknown): void {
  let stack = cleanups.get(t);
  if (!stack) {
    const list: (() => unknown)[] = [];
    cleanups.set(t, list);
    stack = list;
    t.after(async () => {
      const failures: unknown[] = [];
      for (const run of list.reverse()) {
        try {
          await run();
        } catch (error) {
          failures.push(error);
        }
      }
      if (failures.length > 0) throw new AggregateError(failures, "test cleanup failed");
    });
  }
  stack.push(cleanup);
}

/** A fresh directory under the OS temp dir, removed (after everything deferred later) when the test ends. */
export async function tempDir(t: TestContext, prefix = "csikit-test-"): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  defer(t, () => rm(dir, { recursive: true, force: true }));
  return dir;
}
