// The sanity suite's test model: a catalogue is a flat, ordered list of tests, each belonging to
// a CSI service and an RPC group, gated by capabilities the driver must (or must not) report,
// and optionally needing real mounts. Tests are plain async functions over a TestContext; the
// runner (runner.ts) decides whether each runs, and the reporters print results.
//
// Invariants: test order in the catalogue is the run and report order; a test's full name
// (`<service> <group> <name>`) is what --focus/--skip match against and is unique.

import { CsikitError } from "../base/index.ts";
import type { TestContext } from "./context.ts";
import type { Requirement, ServiceName } from "./gates.ts";
import { testLabels, type LabelPredicate } from "./label-filter.ts";

export { capabilityGate, MountPrivilegeMissing, SkipTest } from "./gates.ts";
export type { Capabilities, CapabilityScope, Requirement, ServiceName } from "./gates.ts";

export interface SanityTest {
  service: ServiceName;
  /** The RPC or topic the test exercises, e.g. "CreateVolume"; shown before the test name. */
  group: string;
  name: string;
  requires: readonly Requirement[];
  /** The test mounts for real: skipped with the driver's reason once it says it may not mount. */
  mounts: boolean;
  /**
   * The test looks at the node's paths itself (mountinfo, file contents): skipped when path
   * commands say the node runs elsewhere.
   */
  inspectsNode: boolean;
  run(t: TestContext): Promise<void>;
}

export interface TestOptions {
  requires?: readonly Requirement[];
  mounts?: boolean;
  inspectsNode?: boolean;
}

export type TestBody = (t: TestContext) => Promise<void>;

export interface GroupBuilder {
  it: {
    (name: string, body: TestBody): void;
    (name: string, options: TestOptions, body: TestBody): void;
  };
}

/**
 * Declares the tests of one RPC group. `requires` given here applies to every test in the group,
 * in addition to each test's own.
 */
export function describe(
  service: ServiceName,
  group: string,
  options: TestOptions,
  define: (builder: GroupBuilder) => void,
): SanityTest[] {
  const tests: SanityTest[] = [];
  const it = (name: string, second: TestOptions | TestBody, third?: TestBody): void => {
    const own: TestOptions = typeof second === "function" ? {} : second;
    const body = typeof second === "function" ? second : third;
    if (!body)
      throw new CsikitError("CSIKIT_ERR_SANITY_CATALOGUE", `sanity test ${JSON.stringify(name)} has no body`);
    tests.push({
      service,
      group,
      name,
      requires: [...(options.requires ?? []), ...(own.requires ?? [])],
      mounts: own.mounts ?? options.mounts ?? false,
      inspectsNode: own.inspectsNode ?? options.inspectsNode ?? false,
      run: body,
    });
  };
  define({ it });
  return tests;
}

export function fullName(test: Pick<SanityTest, "service" | "group" | "name">): string {
  return `${test.service} ${test.group} ${test.name}`;
}

/**
 * Keeps the tests whose full name matches `focus` (when set) and not `skip` (when set), and
 * whose labels (service and group) satisfy `labels` (when set).
 */
export function selectTests(
  tests: readonly SanityTest[],
  filters: { focus?: RegExp | undefined; skip?: RegExp | undefined; labels?: LabelPredicate | undefined },
): SanityTest[] {
  return tests.filter((test) => {
    const name = fullName(test);
    if (filters.focus && !filters.focus.test(name)) return false;
    if (filters.skip?.test(name)) return false;
    if (filters.labels && !filters.labels(testLabels(test))) return false;
    return true;
  });
}
