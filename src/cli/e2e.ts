// `csikit e2e`: Kubernetes' external storage e2e suites against a CSI driver, on a `csikit up`
// cluster started around it or on an existing cluster (--kubeconfig). Turns flags into
// src/e2e's options; the runner, suites and cluster lifecycle live there.

import { join } from "node:path";
import { FlagError, type Flags } from "../base/index.ts";
import { DEFAULT_DRIVER_NAME } from "../cluster/index.ts";
import {
  loadTestDriver,
  runE2e,
  selectedTests,
  TestDriverError,
  type DriverDefinition,
} from "../e2e/index.ts";
import type { Command } from "./command.ts";

const CLI_MAIN = join(import.meta.dirname, "main.ts");
/** csikit hostpath's test driver definition (src/e2e/hostpath/), used without --test-driver. */
export const HOSTPATH_TEST_DRIVER = join(import.meta.dirname, "..", "e2e", "hostpath", "test-driver.yaml");

function regexFlag(flags: Flags, name: string): RegExp | undefined {
  const value = flags.string(name);
  if (value === "") return undefined;
  try {
    return new RegExp(value);
  } catch (error) {
    throw new FlagError(
      `invalid value ${JSON.stringify(value)} for flag -${name}: ${(error as Error).message}`,
    );
  }
}

async function driverOf(flags: Flags, warn: (line: string) => void): Promise<DriverDefinition> {
  const file = flags.string("test-driver");
  const name = flags.string("driver-name");
  let definition: DriverDefinition;
  try {
    const parsed = await loadTestDriver(file === "" ? HOSTPATH_TEST_DRIVER : file);
    for (const warning of parsed.warnings) warn(`warning: ${warning}`);
    definition = parsed.definition;
  } catch (error) {
    if (error instanceof TestDriverError || (error as NodeJS.ErrnoException).code === "ENOENT")
      throw new FlagError(
        `invalid value ${JSON.stringify(file)} for flag -test-driver: ${(error as Error).message}`,
      );
    throw error;
  }
  if (name === "") return definition;
  if (file !== "" && name !== definition.DriverInfo.Name)
    throw new FlagError(
      `flag -driver-name ${name} differs from ${file}'s DriverInfo.Name ${definition.DriverInfo.Name}`,
    );
  // The built-in description serves hostpath under another name (up --driver-name): its class
  // then is up's csi-hostpath too, whose provisioner follows the name.
  return { ...definition, DriverInfo: { ...definition.DriverInfo, Name: name } };
}

export const e2eCommand: Command = {
  name: "e2e",
  summary:
    "Run Kubernetes' external storage e2e suites against a CSI driver, on a csikit up cluster started around it or on a real cluster",
  usage:
    'csikit e2e [--driver-command="DRIVER --endpoint {endpoint} --nodeid {nodeid}"] [--test-driver=FILE] [--kubeconfig=FILE] [--focus=REGEX] [--skip=REGEX] [--junit=FILE]',
  description:
    "Runs the suites Kubernetes runs against every CSI driver (test/e2e/storage/testsuites: provisioning, volumes,\n" +
    "volumeMode, volumeIO, subPath, multiVolume, topology, capacity, volume-expand, snapshottable, ephemeral,\n" +
    "volumeLimits, disruptive, read-write-once-pod, fsgroupchangepolicy, volume-modify, volumegroupsnapshottable)\n" +
    "with upstream's test patterns, each test in a namespace of its own, checking data through pods (pods/exec),\n" +
    "never through the host. The driver is described by upstream's test driver file (--storage.testdriver's\n" +
    "format: DriverInfo, Capabilities, StorageClass, SnapshotClass, Timeouts…); a test the driver's capabilities\n" +
    "rule out is skipped with upstream's message. Without --kubeconfig it starts `csikit up` around the driver\n" +
    "(--driver-command; none: csikit's hostpath) on a temporary state dir and tears it down afterwards. Test names\n" +
    "are upstream's (External Storage [Driver: NAME] [Testpattern: PATTERN] SUITE TEST); --focus and --skip match\n" +
    "them. Prints a line per test as it ends, then a matrix suite × pattern (passed/failed/skipped). Exit code: 0\n" +
    "when no test failed, 1 otherwise, 2 on bad flags.",
  flags: {
    "driver-command": {
      type: "string",
      help:
        "Start this driver under csikit up (its --driver-command: {endpoint}, {nodeid}, {mode} replaced, and {statedir} by the " +
        "cluster's temporary state dir); default csikit's hostpath.",
    },
    "driver-name": {
      type: "string",
      help: `CSI driver name (default: the test driver's DriverInfo.Name, else ${DEFAULT_DRIVER_NAME}).`,
    },
    "test-driver": {
      type: "string",
      help: "Upstream's test driver definition (YAML: DriverInfo.Name, Capabilities, SupportedMountOption, SupportedSizeRange, StorageClass); default: csikit hostpath's.",
    },
    kubeconfig: {
      type: "string",
      help: "Run on the cluster of this kubeconfig instead of starting csikit up.",
    },
    image: {
      type: "string",
      default: "busybox",
      help: "Image of the test pods (pulled by a real cluster; csikit up runs the command from the host).",
    },
    focus: { type: "string", help: "Run only tests whose full name matches this regular expression." },
    skip: { type: "string", help: "Skip tests whose full name matches this regular expression." },
    junit: { type: "string", help: "Write a JUnit XML report to this file." },
    list: {
      type: "bool",
      default: "false",
      help: "Print the selected tests' names (and why a skipped one is skipped) and exit, running nothing (ginkgo's --dry-run).",
    },
    nodes: { type: "int", default: "1", help: "Tests run in parallel (ginkgo's --nodes)." },
    "cluster-nodes": { type: "int", default: "2", help: "Virtual nodes of the csikit up cluster." },
    "timeout-scale": {
      type: "float",
      default: "1",
      help: "Multiplies every timeout (cluster start, claim provisioning, pod start, deletion, exec).",
    },
  },
  async run({ flags, signal, stdout }) {
    const parallel = flags.number("nodes");
    if (!Number.isInteger(parallel) || parallel < 1 || parallel > 32)
      throw new FlagError(`invalid value ${parallel} for flag -nodes: want 1..32`);
    const clusterNodes = flags.number("cluster-nodes");
    if (!Number.isInteger(clusterNodes) || clusterNodes < 1 || clusterNodes > 50)
      throw new FlagError(`invalid value ${clusterNodes} for flag -cluster-nodes: want 1..50`);
    const timeoutScale = flags.number("timeout-scale");
    if (!(timeoutScale > 0))
      throw new FlagError(`invalid value ${timeoutScale} for flag -timeout-scale: want > 0`);
    const kubeconfig = flags.string("kubeconfig");
    const driverCommand = flags.string("driver-command");
    if (kubeconfig !== "" && driverCommand !== "")
      throw new FlagError(
        "flags -kubeconfig and -driver-command exclude each other: the driver runs in that cluster",
      );
    const focus = regexFlag(flags, "focus");
    const skip = regexFlag(flags, "skip");
    const junit = flags.string("junit");
    const driver = await driverOf(flags, (line) => void process.stderr.write(line + "\n"));
    if (flags.bool("list")) {
      for (const planned of selectedTests({ driver, ...(focus ? { focus } : {}), ...(skip ? { skip } : {}) }))
        stdout.write(`${planned.name}${planned.skip !== null ? ` — skipped: ${planned.skip}` : ""}\n`);
      return 0;
    }
    // A second Ctrl-C must not cut the teardown short.
    process.on("SIGINT", () => {});
    process.on("SIGTERM", () => {});
    return runE2e(
      {
        driver,
        ...(kubeconfig !== "" ? { kubeconfig } : {}),
        ...(driverCommand !== "" ? { driverCommand } : {}),
        cliMain: CLI_MAIN,
        ...(focus ? { focus } : {}),
        ...(skip ? { skip } : {}),
        ...(junit !== "" ? { junit } : {}),
        parallel,
        timeoutScale,
        clusterNodes,
        image: flags.string("image"),
        print: (line) => void stdout.write(line + "\n"),
      },
      signal,
    );
  },
};
