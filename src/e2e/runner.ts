// Runs the planned tests against one driver. The plan is the catalogue's (every test upstream
// defines for the driver, its full name, the skip the definition alone decides); --focus and
// --skip are regular expressions on the full name, as ginkgo's. A test skipped by the plan, one
// whose body throws E2eSkip (it saw the cluster cannot run it) and one csikit has no body for are
// skipped, each saying why; the others run in a context of their own whose cleanup runs whatever
// the outcome. Up to `parallel` tests run at once (ginkgo's --nodes); [Serial] and [Disruptive]
// ones run afterwards, alone, as ginkgo runs them.

import { errorMessage } from "../base/index.ts";
import type { PlannedTest } from "./catalogue/index.ts";
import { E2eSkip } from "./model.ts";

export type Outcome = "passed" | "failed" | "skipped";

export interface TestResult {
  suite: string;
  pattern: string;
  /** The It title. */
  test: string;
  fullName: string;
  outcome: Outcome;
  /** Failure message or skip reason. */
  message?: string;
  /** Wall time in seconds (0 for a skip decided before it ran). */
  seconds: number;
}

export interface SelectOptions {
  focus?: RegExp;
  skip?: RegExp;
}

/** The planned tests whose full name --focus matches and --skip does not, in plan order. */
export function selectTests(planned: readonly PlannedTest[], select: SelectOptions = {}): PlannedTest[] {
  return planned.filter(
    (test) => (!select.focus || select.focus.test(test.name)) && !select.skip?.test(test.name),
  );
}

/** Whether ginkgo would run the test alone ([Serial], [Disruptive]). */
export function runsAlone(test: PlannedTest): boolean {
  return /\[(Serial|Disruptive)\]/.test(test.name);
}

export interface RunOptions<C> {
  /** The body of a planned test; undefined when csikit has none. */
  body: (test: PlannedTest) => ((context: C) => Promise<void>) | undefined;
  /** Builds the per-test context and returns it with its cleanup. */
  prepare: (test: PlannedTest) => Promise<{ context: C; cleanup: () => Promise<void> }>;
  /** Tests at once (default 1). */
  parallel?: number;
  onResult?: (result: TestResult) => void;
  signal?: AbortSignal;
}

export const NOT_IMPLEMENTED = "not implemented by csikit e2e";

/** Runs the tests; never throws for a test's failure (it is a result). Results in plan order. */
export async function runTests<C>(
  planned: readonly PlannedTest[],
  options: RunOptions<C>,
): Promise<TestResult[]> {
  const results = new Array<TestResult>(planned.length);
  const indexes = planned.map((_, index) => index);
  const together = indexes.filter((index) => !runsAlone(planned[index]!));
  const alone = indexes.filter((index) => runsAlone(planned[index]!));
  const drain = async (queue: number[], workers: number): Promise<void> => {
    const worker = async (): Promise<void> => {
      for (let index = queue.shift(); index !== undefined; index = queue.shift()) {
        const result = await runOne(planned[index]!, options);
        results[index] = result;
        options.onResult?.(result);
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(workers, queue.length)) }, worker));
  };
  await drain(together, options.parallel ?? 1);
  await drain(alone, 1);
  return results;
}

async function runOne<C>(test: PlannedTest, options: RunOptions<C>): Promise<TestResult> {
  const base = {
    suite: test.suite.name,
    pattern: test.pattern.name,
    test: test.test.title,
    fullName: test.name,
  };
  if (test.skip !== null) return { ...base, outcome: "skipped", message: test.skip, seconds: 0 };
  const body = options.body(test);
  if (body === undefined) return { ...base, outcome: "skipped", message: NOT_IMPLEMENTED, seconds: 0 };
  if (options.signal?.aborted) return { ...base, outcome: "skipped", message: "interrupted", seconds: 0 };
  const started = performance.now();
  const seconds = (): number => (performance.now() - started) / 1000;
  let failure: string | undefined;
  let skipped: string | undefined;
  let cleanup: (() => Promise<void>) | undefined;
  try {
    const prepared = await options.prepare(test);
    cleanup = prepared.cleanup;
    await body(prepared.context);
  } catch (error) {
    if (error instanceof E2eSkip) skipped = error.message;
    else failure = errorMessage(error);
  }
  try {
    await cleanup?.();
  } catch (error) {
    // A test whose resources do not go away fails: the next one would inherit them.
    failure = failure ?? `cleanup: ${errorMessage(error)}`;
  }
  if (failure !== undefined) return { ...base, outcome: "failed", message: failure, seconds: seconds() };
  if (skipped !== undefined) return { ...base, outcome: "skipped", message: skipped, seconds: seconds() };
  return { ...base, outcome: "passed", seconds: seconds() };
}
