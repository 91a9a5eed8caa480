// Runs a sanity catalogue against a driver endpoint: connect, wait for Probe, discover
// capabilities, then run each selected test in order — gate it (capabilities, mount privilege),
// run it under its own deadline, undo what it made — and collect the results.
//
// Invariants: tests run one at a time in catalogue order; every test's resources are cleaned up
// before the next test starts; temp dirs the run made are removed (non-recursively) at the end;
// the clients are closed however the run ends. With a separate --controller-endpoint, plugin
// capabilities are the union of both endpoints, controller/group capabilities come from the
// controller endpoint and node capabilities from --endpoint; a node endpoint without the Node
// service (UNIMPLEMENTED) skips the Node tests with that reason instead of failing setup.

import { pathOps } from "./paths.ts";
import { mkdtemp, rmdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { setTimeout as delay } from "node:timers/promises";
import { join } from "node:path";
import { childController, errorMessage, whenAborted } from "../base/index.ts";
import { CsiClient, GrpcStatus } from "../csi/index.ts";
import type { SanityOptions } from "./config.ts";
import { DEFAULT_CALL_TIMEOUT_MS, DEFAULT_TEST_TIMEOUT_MS, DEFAULT_TEST_VOLUME_SIZE } from "./config.ts";
import { TestContext } from "./context.ts";
import type { SanityEnvironment, SanitySettings } from "./context.ts";
import { codeName, grpcCode, grpcDetails, SanityAssertion } from "./expect.ts";
import { capabilityGate, MountPrivilegeMissing, selectTests, SkipTest } from "./framework.ts";
import type { Capabilities, SanityTest } from "./framework.ts";
import { summarize } from "./report.ts";
import type { SanityReport, TestResult } from "./report.ts";
import { ResourceTracker } from "./resources.ts";
import { catalogue } from "./tests/index.ts";

export interface RunOptions extends SanityOptions {
  /** The tests to run. Default: the full catalogue. */
  tests?: readonly SanityTest[];
}

/** Runs the suite; resolves with the report (it rejects only for bad options or I/O on temp dirs). */
export async function runSanity(options: RunOptions, outer?: AbortSignal): Promise<SanityReport> {
  const started = performance.now();
  const warnings: string[] = [];
  const tests = ordered(
    selectTests(options.tests ?? catalogue(), {
      focus: options.focus,
      skip: options.skip,
      labels: options.labelFilter,
    }),
    options.order,
  );
  if (options.dryRun) {
    const results = tests.map((test): TestResult => ({
      service: test.service,
      group: test.group,
      name: test.name,
      outcome: "skipped",
      reason: "dry run (-ginkgo.dry-run): not run",
      durationMs: 0,
    }));
    for (const result of results) options.onResult?.(result);
    return summarize(results, performance.now() - started, warnings);
  }
  // The run's own deadline (-ginkgo.timeout) stops the running test as an interrupt would.
  const { controller: run, dispose: disposeRun } = childController(outer);
  const runTimeout =
    options.runTimeoutMs === undefined
      ? undefined
      : setTimeout(
          () =>
            run.abort(
              new SanityAssertion(`the run timed out after ${options.runTimeoutMs}ms (-ginkgo.timeout)`),
            ),
          options.runTimeoutMs,
        );
  const signal = run.signal;
  const made: string[] = [];
  const stagingDir = options.stagingDir ?? (await makeTemp("csikit-sanity-staging-", made));
  const targetDir = options.targetDir ?? (await makeTemp("csikit-sanity-target-", made));
  const callTimeoutMs = options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
  const connect = (endpoint: string): CsiClient =>
    CsiClient.connect(endpoint, {
      timeoutMs: callTimeoutMs,
      ...(options.logger ? { logger: options.logger } : {}),
    });
  const node = connect(options.endpoint);
  const controller =
    options.controllerEndpoint && options.controllerEndpoint !== options.endpoint
      ? connect(options.controllerEndpoint)
      : node;
  const results: TestResult[] = [];
  const record = (result: TestResult): void => {
    results.push(result);
    options.onResult?.(result);
  };
  try {
    const discovered = await discover({ node, controller, callTimeoutMs, signal });
    if (typeof discovered === "string") {
      record({
        service: "Identity",
        group: "setup",
        name: "driver is reachable",
        outcome: "failed",
        reason: discovered,
        durationMs: 0,
      });
    } else {
      const testVolumeSize = options.testVolumeSize ?? DEFAULT_TEST_VOLUME_SIZE;
      const settings: SanitySettings = {
        stagingDir,
        targetDir,
        testVolumeSize,
        testVolumeExpandSize: options.testVolumeExpandSize ?? testVolumeSize * 2,
        secrets: options.secrets ?? {},
        parameters: options.parameters ?? {},
        mutableParameters: options.mutableParameters ?? {},
        snapshotParameters: options.snapshotParameters ?? {},
        paths: pathOps(options.pathCommands),
        ...(options.topologyRequirements ? { topologyRequirements: options.topologyRequirements } : {}),
      };
      const env: SanityEnvironment = {
        node,
        controller,
        caps: discovered.caps,
        settings,
        ...(discovered.nodeUnavailable ? { nodeUnavailable: discovered.nodeUnavailable } : {}),
      };
      const attempts = Math.max(1, options.flakeAttempts ?? 1);
      for (const test of tests) {
        if (signal.aborted) {
          warnings.push(`run ${stopReason(signal)}: ${tests.length - results.length} tests not run`);
          break;
        }
        const once = (): Promise<TestResult> =>
          runOne({
            settleMs: options.graceMs ?? callTimeoutMs,
            test,
            env,
            testTimeoutMs: options.testTimeoutMs ?? DEFAULT_TEST_TIMEOUT_MS,
            signal,
            warnings,
            progress: options.progress,
          });
        let result = await once();
        for (
          let attempt = 2;
          result.outcome === "failed" && attempt <= attempts && !signal.aborted;
          attempt++
        ) {
          result = await once();
          if (result.outcome !== "failed")
            warnings.push(
              `${test.group}: ${test.name}: flaky, ${result.outcome} on attempt ${attempt} of ${attempts}`,
            );
        }
        options.logger?.info(2, "sanity test done", {
          test: `${test.group}: ${test.name}`,
          outcome: result.outcome,
        });
        record(result);
        if (options.failFast && result.outcome === "failed" && results.length < tests.length) {
          warnings.push(
            `fail-fast: stopped after the first failure; ${tests.length - results.length} tests not run`,
          );
          break;
        }
      }
    }
    if (runTimeout !== undefined && signal.aborted && !outer?.aborted)
      record({
        service: "Identity",
        group: "setup",
        name: "the run completes within -ginkgo.timeout",
        outcome: "failed",
        reason: stopReason(signal),
        durationMs: performance.now() - started,
      });
  } finally {
    clearTimeout(runTimeout);
    disposeRun();
    node.close();
    if (controller !== node) controller.close();
    for (const dir of made) {
      try {
        await rmdir(dir);
      } catch (error) {
        warnings.push(`left ${dir} behind: ${errorMessage(error)}`);
      }
    }
  }
  return summarize(results, performance.now() - started, warnings);
}

function stopReason(signal: AbortSignal): string {
  return signal.reason instanceof SanityAssertion ? signal.reason.message : "interrupted";
}

/** A small seeded PRNG (mulberry32): the same seed gives the same order on every run. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = Math.imul(state ^ (state >>> 15), 1 | state);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffle<T>(items: T[], next: () => number): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

/** The tests in run order: the catalogue's, or shuffled by seed (whole groups, or every test). */
export function ordered(tests: readonly SanityTest[], order: RunOptions["order"]): SanityTest[] {
  if (!order) return [...tests];
  const next = random(order.seed);
  if (order.shuffle === "tests") return shuffle([...tests], next);
  const groups = new Map<string, SanityTest[]>();
  for (const test of tests) {
    const key = `${test.service} ${test.group}`;
    groups.set(key, [...(groups.get(key) ?? []), test]);
  }
  return shuffle([...groups.values()], next).flat();
}

async function makeTemp(prefix: string, made: string[]): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** What discovery learned: the capabilities, and why the node endpoint serves no Node service. */
interface Discovered {
  caps: Capabilities;
  /** Set when --endpoint answered UNIMPLEMENTED for NodeGetCapabilities. */
  nodeUnavailable?: string;
}

/**
 * Waits for Probe and reads every capability list; a string is the reason it could not.
 * In a split deployment both endpoints serve Identity, so plugin capabilities are the union of
 * both; controller and group controller capabilities come from the controller endpoint, node
 * capabilities from the node endpoint.
 */
async function discover(options: {
  node: CsiClient;
  controller: CsiClient;
  callTimeoutMs: number;
  signal: AbortSignal | undefined;
}): Promise<Discovered | string> {
  const { node, controller, callTimeoutMs } = options;
  const wait = { timeoutMs: callTimeoutMs, ...(options.signal ? { signal: options.signal } : {}) };
  try {
    await node.waitForReady(wait);
    if (controller !== node) await controller.waitForReady(wait);
  } catch (error) {
    // waitForReady gives up at the deadline (DEADLINE_EXCEEDED) or at once on a failing Probe.
    return grpcCode(error) === GrpcStatus.DEADLINE_EXCEEDED
      ? `driver did not become ready (Probe) within ${callTimeoutMs}ms: ${describeError(error)}`
      : `driver failed its readiness Probe: ${describeError(error)}`;
  }
  try {
    const plugin = await node.pluginCapabilities();
    if (controller !== node) for (const name of await controller.pluginCapabilities()) plugin.add(name);
    const controllerCaps = plugin.has("CONTROLLER_SERVICE")
      ? await controller.controllerCapabilities()
      : new Set<string>();
    const group = plugin.has("GROUP_CONTROLLER_SERVICE")
      ? await controller.groupControllerCapabilities()
      : new Set<string>();
    const nodeCaps = await nodeCapabilities(node);
    const caps = { plugin, controller: controllerCaps, group, node: nodeCaps ?? new Set<string>() };
    return nodeCaps
      ? { caps }
      : {
          caps,
          nodeUnavailable: "no Node service at --endpoint (NodeGetCapabilities answered UNIMPLEMENTED)",
        };
  } catch (error) {
    return `capability discovery failed: ${describeError(error)}`;
  }
}

/** The node capabilities, or undefined when the endpoint does not serve the Node service. */
async function nodeCapabilities(node: CsiClient): Promise<Set<string> | undefined> {
  try {
    return await node.nodeCapabilities();
  } catch (error) {
    if (grpcCode(error) === GrpcStatus.UNIMPLEMENTED) return undefined;
    throw error;
  }
}

async function runOne(options: {
  test: SanityTest;
  env: SanityEnvironment;
  testTimeoutMs: number;
  /** How long a timed-out test may take to return before cleanup starts (the call deadline). */
  settleMs: number;
  signal: AbortSignal | undefined;
  warnings: string[];
  progress: RunOptions["progress"];
}): Promise<TestResult> {
  const { test, env, testTimeoutMs } = options;
  const base = { service: test.service, group: test.group, name: test.name };
  const gate =
    capabilityGate(test.requires, env.caps) ??
    (test.service === "Node" ? env.nodeUnavailable : undefined) ??
    (test.mounts ? env.mountUnavailable : undefined) ??
    (test.inspectsNode && env.settings.paths.remote
      ? "inspects the node's paths itself, and path commands say the node runs elsewhere"
      : undefined);
  if (gate !== undefined) return { ...base, outcome: "skipped", reason: gate, durationMs: 0 };

  const started = performance.now();
  const { controller: abort, dispose } = childController(options.signal);
  const timer = setTimeout(
    () => abort.abort(new SanityAssertion(`test timed out after ${testTimeoutMs}ms`)),
    testTimeoutMs,
  );
  const resources = new ResourceTracker({
    node: env.node,
    controller: env.controller,
    secrets: env.settings.secrets,
    paths: env.settings.paths,
  });
  const t = new TestContext({ env, mounts: test.mounts, resources, signal: abort.signal });
  // Both branches settle to a value, so the losing side of the race never rejects unhandled.
  const running = test.run(t).then(
    () => undefined,
    (error: unknown) => error ?? new Error("test threw nothing"),
  );
  const stopped = whenAborted(abort.signal).then((): unknown => abort.signal.reason ?? new Error("aborted"));
  const stopProgress = watchProgress(options.progress, `${test.group}: ${test.name}`, started);
  // A body that returns only because it was stopped has not passed: the stop is its error.
  const raced = await Promise.race([running, stopped]);
  const error: unknown = raced ?? (abort.signal.aborted ? (abort.signal.reason as unknown) : undefined);
  stopProgress();
  clearTimeout(timer);
  dispose();
  if (abort.signal.aborted) {
    // The test body may still be inside a CSI call that will create something; give that call
    // its own deadline to finish so what it makes is tracked before cleanup runs.
    await settle(running, options.settleMs);
  }
  const problems = await resources.cleanup();
  const durationMs = performance.now() - started;

  if (error instanceof SkipTest) {
    if (!(error instanceof MountPrivilegeMissing)) {
      for (const p of problems) options.warnings.push(`${test.group}: ${test.name}: ${p}`);
    }
    return { ...base, outcome: "skipped", reason: error.message, durationMs };
  }
  if (error === undefined && problems.length === 0) return { ...base, outcome: "passed", durationMs };
  const reasons = error === undefined ? [] : [describeError(error)];
  if (problems.length > 0) reasons.push(`cleanup failed: ${problems.join("; ")}`);
  return { ...base, outcome: "failed", reason: reasons.join("; "), durationMs };
}

/** Reports a long-running test after `afterMs`, then every `intervalMs`; returns the stop function. */
function watchProgress(progress: RunOptions["progress"], name: string, started: number): () => void {
  if (!progress || progress.afterMs <= 0) return () => {};
  let interval: NodeJS.Timeout | undefined;
  const tell = (): void => progress.report(name, performance.now() - started);
  const first = setTimeout(() => {
    tell();
    if (progress.intervalMs > 0) interval = setInterval(tell, progress.intervalMs);
  }, progress.afterMs);
  return () => {
    clearTimeout(first);
    clearInterval(interval);
  };
}

/** Waits for `running` at most `ms`, without leaving a timer behind. */
async function settle(running: Promise<unknown>, ms: number): Promise<void> {
  const cancel = new AbortController();
  const timer = delay(ms, undefined, { signal: cancel.signal }).catch(() => undefined);
  await Promise.race([running, timer]);
  cancel.abort();
}

function describeError(error: unknown): string {
  if (error instanceof SanityAssertion) return error.message;
  const code = grpcCode(error);
  if (code !== undefined) return `unexpected ${codeName(code)}: ${grpcDetails(error)}`;
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return errorMessage(error);
}
