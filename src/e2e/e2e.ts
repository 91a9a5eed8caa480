// `csikit e2e` as a library: picks the cluster (an existing one through --kubeconfig, else
// `csikit up` around the driver), plans the selected tests, runs them each in its own namespace,
// prints a line per test as it ends, the closing matrix, writes the JUnit report, tears the
// cluster down, and returns the exit code (0 only when no test failed).

import { writeFile } from "node:fs/promises";
import { errorMessage } from "../base/index.ts";
import { KubeClient, loadKubeConfig } from "../kube/index.ts";
import { DEFAULT_TIMEOUTS, scaleTimeouts, type E2eDriver } from "./model.ts";
import type { Suite } from "./suite.ts";
import { junitXml, renderMatrix, resultLine } from "./report.ts";
import { TestNamespace } from "./resources.ts";
import { planTests, runTests, type TestResult } from "./runner.ts";
import { startUpCluster, type UpCluster } from "./up-process.ts";
import { provisioningSuite } from "./suites/provisioning.ts";
import { volumesSuite } from "./suites/volumes.ts";

/** The suites implemented so far, in upstream's order. */
export const SUITES: readonly Suite[] = [provisioningSuite, volumesSuite];

export interface E2eOptions {
  driver: E2eDriver;
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
  suites?: readonly Suite[];
}

const START_MS = 240_000;
const STOP_MS = 120_000;

export async function runE2e(options: E2eOptions, signal: AbortSignal): Promise<number> {
  const planned = planTests(options.suites ?? SUITES, options.driver, {
    ...(options.focus ? { focus: options.focus } : {}),
    ...(options.skip ? { skip: options.skip } : {}),
  });
  options.print(`${planned.length} tests selected for driver ${options.driver.name}`);
  let up: UpCluster | undefined;
  let client: KubeClient | undefined;
  let results: TestResult[] = [];
  try {
    let kubeconfig = options.kubeconfig;
    if (kubeconfig === undefined) {
      options.print(`starting csikit up (${options.driverCommand ?? "hostpath"})…`);
      const started = performance.now();
      up = await startUpCluster(
        {
          cliMain: options.cliMain,
          ...(options.driverCommand !== undefined ? { driverCommand: options.driverCommand } : {}),
          driverName: options.driver.name,
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
    client = new KubeClient({
      kubeConfig: loadKubeConfig({ kubeconfig }),
      qps: 50,
      burst: 100,
      userAgent: "csikit-e2e",
    });
    const timeouts = scaleTimeouts(DEFAULT_TIMEOUTS, options.timeoutScale);
    const kube = client;
    results = await runTests(planned, {
      driver: options.driver,
      parallel: options.parallel,
      signal,
      onResult: (result) => options.print(resultLine(result)),
      async prepare(test) {
        const namespace = new TestNamespace(kube, {
          suite: test.suite.name,
          driver: options.driver,
          timeouts,
          image: options.image,
          signal,
        });
        await namespace.create();
        return {
          context: {
            client: kube,
            driver: options.driver,
            pattern: test.pattern,
            namespace,
            timeouts,
            image: options.image,
            signal,
          },
          cleanup: () => namespace.cleanup(),
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
