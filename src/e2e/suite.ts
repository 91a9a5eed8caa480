// The shape of csikit's implementation of upstream's storage e2e tests. Which tests exist, under
// which names and patterns, and when they are skipped is the catalogue's (src/e2e/catalogue/);
// this is what runs one: a body per It title of a suite, given a TestContext — the cluster, the
// driver's definition, the pattern, a namespace of its own and, on a `csikit up` cluster, control
// over its processes for the disruptive tests.

import type { KubeClient } from "../kube/index.ts";
import type { DriverDefinition, Suite as CatalogueSuite, TestPattern } from "./catalogue/index.ts";
import type { E2eTimeouts } from "./model.ts";
import type { TestNamespace } from "./resources.ts";

/**
 * What a disruptive test may do to the cluster's processes (upstream does it over SSH with
 * systemctl). Only a cluster csikit e2e started has it; on another, such tests skip.
 */
export interface NodeProcesses {
  /** kill -9 of the node's agent (the kubelet); resolves once its supervisor started it again. */
  restartNodeAgent(node: string): Promise<void>;
  /** Freezes the node's agent (SIGSTOP): the kubelet is down, its pods' processes go on. */
  stopNodeAgent(node: string): Promise<void>;
  /** Lets a frozen node agent go on (SIGCONT). */
  startNodeAgent(node: string): Promise<void>;
  /** kill -9 of the node's driver instance; resolves once it was started again. */
  restartNodeDriver(node: string): Promise<void>;
}

/** What a running test gets. */
export interface TestContext {
  client: KubeClient;
  driver: DriverDefinition;
  suite: CatalogueSuite;
  pattern: TestPattern;
  namespace: TestNamespace;
  timeouts: E2eTimeouts;
  /** Image of the test pods (a real cluster pulls it; csikit runs the command from the host). */
  image: string;
  /** Ready, schedulable nodes, sorted (read when the test starts). */
  nodes: readonly string[];
  /** Present on a cluster csikit e2e started (csikit up). */
  processes?: NodeProcesses;
  signal: AbortSignal;
}

/** One It of a suite. */
export type TestBody = (context: TestContext) => Promise<void>;

/** The bodies of one upstream suite, keyed by the It title exactly as the catalogue has it. */
export interface SuiteImplementation {
  suite: string;
  tests: Readonly<Record<string, TestBody>>;
}
