// The shape of a storage e2e test: a suite (provisioning, volumes, …) holds test cases and runs
// under test patterns; each case may need capabilities of the driver and is skipped, naming the
// one missing, when the driver does not claim it; a case that runs gets a TestContext with a
// namespace of its own.

import type { KubeClient } from "../kube/index.ts";
import type { E2eDriver, E2eTimeouts, TestPattern } from "./model.ts";
import type { TestNamespace } from "./resources.ts";

/** What a running test gets: the cluster, its own namespace, the driver, the bounds. */
export interface TestContext {
  client: KubeClient;
  driver: E2eDriver;
  pattern: TestPattern;
  namespace: TestNamespace;
  timeouts: E2eTimeouts;
  /** Image of the test pods (a real cluster pulls it; csikit runs the command from the host). */
  image: string;
  signal: AbortSignal;
}

/** A test; generic in its context so the runner is testable without a cluster. */
export interface TestCase<C = TestContext> {
  /** Upstream's It() text, e.g. "should store data". */
  name: string;
  /** Why this test cannot run on the driver (naming the missing capability), or undefined. */
  skipReason?: (driver: E2eDriver, pattern: TestPattern) => string | undefined;
  run(context: C): Promise<void>;
}

export interface Suite<C = TestContext> {
  /** Upstream's suite name (TestSuiteInfo.Name), e.g. "provisioning". */
  name: string;
  patterns: readonly TestPattern[];
  tests: readonly TestCase<C>[];
}
