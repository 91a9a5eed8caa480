// Test fixture: parts of one test that share what it starts (a driver process, a proxy) and
// run in order as its subtests, so what they share is stopped when the test ends, failed or not.

import type { TestContext } from "node:test";

export type SubtestFn = (t: TestContext) => Promise<void> | void;

export interface Subtests {
  /** Declares a part (at module level, in the order they run). */
  subtest: (name: string, options: { skip?: string | false } | SubtestFn, fn?: SubtestFn) => void;
  /** Runs every declared part as a subtest of `t`, in order. */
  runAll: (t: TestContext) => Promise<void>;
}

export function subtests(): Subtests {
  const parts: { name: string; options: { skip?: string | false }; fn: SubtestFn }[] = [];
  return {
    subtest(name, options, fn) {
      if (typeof options === "function") parts.push({ name, options: {}, fn: options });
      else if (fn) parts.push({ name, options, fn });
      else throw new Error(`subtest ${name} has no function`);
    },
    async runAll(t) {
      for (const { name, options, fn } of parts) await t.test(name, options, fn);
    },
  };
}
