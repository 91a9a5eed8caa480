// `csikit e2e` as a library: plans the tests upstream defines for the driver (the catalogue),
// selects them by --focus/--skip, picks the cluster (an existing one through --kubeconfig, else
// `csikit up` around the driver), runs each in its own namespace, prints a line per test as it
// ends, the closing matrix, writes the JUnit report, tears the cluster down, and returns the exit
// code (0 only when no test failed).

import { writeFile } from "node:fs/promises";
import { GVR, type Node } from "../api/index.ts";
import { errorMessage } from "../base/index.ts";
import { KubeClient, loadKubeConfig } from "../kube/index.ts";
import { planTests, type DriverDefinition, type PlannedTest } from "./catalogue/index.ts";
import { e2eTimeouts } from "./model.ts";
import { UpNodeProcesses } from "./node-processes.ts";
import { junitXml, renderMatrix, resultLine } from "./report.ts";
import { TestNamespace } from "./resources.ts";
import { runTests, selectTests, type TestResult } from "./runner.ts";
import type { TestBody, TestContext } from "./suite.ts";
import { bodyOf } from "./suites/index.ts";
import { startUpCluster, type UpCluster } from "./up-process.ts";

export interface E2eOptions {
  driver: DriverDefinition;
  /** An existing cluster; none: start `csikit up`. */
  kubeconfig?: string;
  /** up's --driver-command; none: csikit's hostpath. */
  driverCommand?: string;
  cliMain: string;
  focus?: RegExp;
  skip?: RegExp;
  junit?: string;
  /** Tests at once (ginkgo's --nodes). */
  parallel: number;
  timeoutScale: number;
  /** Virtual nodes of the `csikit up` cluster. */
  clusterNodes: number;
  image: string;
  print: (line: string) => void;
  /** The bodies (default: csikit's suites); a test without one is skipped as not implemented. */
  body?: (test: PlannedTest) => TestBody | undefined;
}

const START_MS = 240_000;
const STOP_MS = 120_000;

/** The tests the run would select, in order. */
export function selectedTests(options: Pick<E2eOptions, "driver" | "focus" | "skip">): PlannedTest[] {
  return selectTests(planTests(options.driver), {
    ...(options.focus ? { focus: options.focus } : {}),
    ...(options.skip ? { skip: options.skip } : {}),
  });
}

/** Ready, schedulable nodes, by name. */
async function readyNodes(client: KubeClient): Promise<string[]> {
  const nodes = await client.list<Node>(GVR.nodes);
  return nodes.items
    .filter(
      (node) =>
        node.spec?.unschedulable !== true &&
        node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true,
    )
    .map((node) => node.metadata?.name ?? "")
    .sort();
}

export async function runE2e(options: E2eOptions, signal: AbortSignal): Promise<number> {
  const planned = selectedTests(options);
  const body = options.body ?? bodyOf;
  const toRun = planned.filter((test) => test.skip === null && body(test) !== undefined).length;
  options.print(
    `${planned.length} tests selected for driver ${options.driver.DriverInfo.Name}: ${toRun} to run, ${planned.length - toRun} skipped`,
  );
  let up: UpCluster | undefined;
  let client: KubeClient | undefined;
  let results: TestResult[] = [];
  try {
    let kubeconfig = options.kubeconfig;
    if (kubeconfig === undefined && toRun > 0) {
      options.print(`starting csikit up (${options.driverCommand ?? "hostpath"})…`);
      const started = performance.now();
      up = await startUpCluster(
        {
          cliMain: options.cliMain,
          ...(options.driverCommand !== undefined ? { driverCommand: options.driverCommand } : {}),
          driverName: options.driver.DriverInfo.Name,
          nodes: options.clusterNodes,
          startTimeoutMs: START_MS * options.timeoutScale,
          stopTimeoutMs: STOP_MS * options.timeoutScale,
        },
        signal,
      );
      options.print(
        `cluster ready in ${((performance.now() - started) / 1000).toFixed(1)}s (state ${up.stateDir})`,
      );
      kubeconfig = up.kubeconfig;
    }
    const kube =
      kubeconfig === undefined
        ? undefined
        : new KubeClient({
            kubeConfig: loadKubeConfig({ kubeconfig }),
            qps: 50,
            burst: 100,
            userAgent: "csikit-e2e",
          });
    client = kube;
    const timeouts = e2eTimeouts(options.driver, options.timeoutScale);
    results = await runTests<TestContext>(planned, {
      body,
      parallel: options.parallel,
      signal,
      onResult: (result) => options.print(resultLine(result)),
      async prepare(test) {
        if (kube === undefined) throw new Error("no cluster"); // unreachable: toRun > 0 started one
        const namespace = new TestNamespace(kube, {
          suite: test.suite,
          driver: options.driver,
          pattern: test.pattern,
          timeouts,
          image: options.image,
          signal,
        });
        const processes = up ? new UpNodeProcesses(up.stateDir, kube, signal) : undefined;
        const nodes = await readyNodes(kube);
        await namespace.create();
        return {
          context: {
            client: kube,
            driver: options.driver,
            suite: test.suite,
            pattern: test.pattern,
            namespace,
            timeouts,
            image: options.image,
            nodes,
            ...(processes ? { processes } : {}),
            signal,
          },
          cleanup: async () => {
            processes?.release();
            await namespace.cleanup();
          },
        };
      },
    });
  } catch (error) {
    options.print(`✗ ${errorMessage(error)}`);
    if (up) options.print(`csikit up's output:\n${up.output().trimEnd()}`);
    return 1;
  } finally {
    client?.close();
    if (up) {
      options.print("stopping csikit up…");
      await up.stop();
    }
  }
  options.print("");
  for (const line of renderMatrix(results).trimEnd().split("\n")) options.print(line);
  if (options.junit !== undefined) {
    await writeFile(options.junit, junitXml(results));
    options.print(`JUnit report: ${options.junit}`);
  }
  return results.some((r) => r.outcome === "failed") ? 1 : 0;
}
