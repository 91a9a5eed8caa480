// Runs the selected tests of the suites against one driver: every (suite, pattern, test) gets its
// upstream-style full name, is selected by --focus/--skip (regular expressions on that name, as
// ginkgo's), skipped when the driver lacks what it needs (the reason names it), and otherwise run
// in a namespace of its own that is deleted afterwards whatever the outcome. Up to `parallel`
// tests run at once (ginkgo's --nodes). Each result is reported as it ends.

import { errorMessage } from "../base/index.ts";
import type { E2eDriver, TestPattern } from "./model.ts";
import type { Suite, TestCase, TestContext } from "./suite.ts";
import { fullTestName } from "./model.ts";

export type Outcome = "passed" | "failed" | "skipped";

export interface TestResult {
  suite: string;
  pattern: string;
  test: string;
  fullName: string;
  outcome: Outcome;
  /** Failure message or skip reason. */
  message?: string;
  /** Wall time in seconds (0 for a skip). */
  seconds: number;
}

export interface PlannedTest<C = TestContext> {
  suite: Suite<C>;
  pattern: TestPattern;
  test: TestCase<C>;
  fullName: string;
}

export interface SelectOptions {
  focus?: RegExp;
  skip?: RegExp;
}

/** Every (suite, pattern, test) whose full name --focus matches and --skip does not, in suite order. */
export function planTests<C = TestContext>(
  suites: readonly Suite<C>[],
  driver: E2eDriver,
  select: SelectOptions = {},
): PlannedTest<C>[] {
  const planned: PlannedTest<C>[] = [];
  for (const suite of suites)
    for (const pattern of suite.patterns)
      for (const test of suite.tests) {
        const fullName = fullTestName(driver.name, pattern, suite.name, test.name);
        if (select.focus && !select.focus.test(fullName)) continue;
        if (select.skip?.test(fullName)) continue;
        planned.push({ suite, pattern, test, fullName });
      }
  return planned;
}

export interface RunOptions<C = TestContext> {
  driver: E2eDriver;
  /** Builds the per-test context (its namespace) and returns it with its cleanup. */
  prepare: (planned: PlannedTest<C>) => Promise<{ context: C; cleanup: () => Promise<void> }>;
  /** Tests at once (default 1). */
  parallel?: number;
  onResult?: (result: TestResult) => void;
  signal?: AbortSignal;
}

/** Runs the planned tests; never throws for a test's failure (it is a result). */
export async function runTests<C>(
  planned: readonly PlannedTest<C>[],
  options: RunOptions<C>,
): Promise<TestResult[]> {
  const results: TestResult[] = new Array<TestResult>(planned.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < planned.length) {
      const index = next++;
      const result = await runOne(planned[index]!, options);
      results[index] = result;
      options.onResult?.(result);
    }
  };
  const workers = Math.max(1, Math.min(options.parallel ?? 1, planned.length));
  await Promise.all(Array.from({ length: workers }, worker));
  return results;
}

async function runOne<C>(planned: PlannedTest<C>, options: RunOptions<C>): Promise<TestResult> {
  const base = {
    suite: planned.suite.name,
    pattern: planned.pattern.name,
    test: planned.test.name,
    fullName: planned.fullName,
  };
  const reason = planned.test.skipReason?.(options.driver, planned.pattern);
  if (reason !== undefined) return { ...base, outcome: "skipped", message: reason, seconds: 0 };
  if (options.signal?.aborted) return { ...base, outcome: "skipped", message: "interrupted", seconds: 0 };
  const started = performance.now();
  const seconds = (): number => (performance.now() - started) / 1000;
  let failure: string | undefined;
  let cleanup: (() => Promise<void>) | undefined;
  try {
    const prepared = await options.prepare(planned);
    cleanup = prepared.cleanup;
    await planned.test.run(prepared.context);
  } catch (error) {
    failure = errorMessage(error);
  }
  try {
    await cleanup?.();
  } catch (error) {
    // A test whose resources do not go away fails: the next one would inherit them.
    failure = failure ?? `cleanup: ${errorMessage(error)}`;
  }
  return failure === undefined
    ? { ...base, outcome: "passed", seconds: seconds() }
    : { ...base, outcome: "failed", message: failure, seconds: seconds() };
}
