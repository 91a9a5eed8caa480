// Tests of `csikit sanity` as a user runs it: real child processes, a real
// hostpath driver on a temp socket, exit codes, the closing line, JUnit output, flag errors.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { chmod, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { serveCsi } from "../csi/index.ts";
import { serveHostpathDriver } from "../drivers/index.ts";
import { defer, tempDir } from "../../test/harness/cleanup.ts";

const MAIN = fileURLToPath(new URL("./main.ts", import.meta.url));
const SUMMARY = /^(\d+) passed, (\d+) failed, (\d+) skipped$/m;

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs csikit as a child process without blocking this process (an in-process driver must
 * answer). `unprivileged` runs it in a user namespace without a uid map: "nobody", no capability
 * over the host's mounts, but root's access to files, so a checkout in a private (0700)
 * directory still loads.
 */
function csikit(
  args: string[],
  options: { unprivileged?: boolean; env?: NodeJS.ProcessEnv } = {},
): Promise<Run> {
  const command = options.unprivileged ? "unshare" : process.execPath;
  const prefix = options.unprivileged ? ["--user", process.execPath] : [];
  const child = spawn(command, [...prefix, MAIN, ...args], {
    env: { ...process.env, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}

/** A hostpath driver on a socket in a fresh temp dir (both removed after the test). */
async function hostpathInTemp(
  t: Parameters<typeof tempDir>[0],
  extra: { enableControllerModifyVolume?: boolean } = {},
): Promise<{ dir: string; driver: Awaited<ReturnType<typeof serveHostpathDriver>> }> {
  const dir = await tempDir(t, "csikit-cli-sanity-");
  const driver = await serveHostpathDriver({
    endpoint: join(dir, "csi.sock"),
    nodeId: "cli-node",
    stateDir: join(dir, "state"),
    allowedPathRoots: [dir],
    ...extra,
  });
  defer(t, () => driver.close());
  return { dir, driver };
}

test("csikit sanity rejects bad flags naming the flag", async () => {
  const cases: [string[], RegExp][] = [
    [[], /flag -endpoint is required/],
    [
      ["--endpoint=/x.sock", "--test-volume-size=lots"],
      /flag -test-volume-size: "lots" is not a byte quantity/,
    ],
    [["--endpoint=/x.sock", "--focus=("], /invalid value "\(" for flag -focus/],
    [["--endpoint=/x.sock", "--timeout=soon"], /invalid value "soon" for flag -timeout/],
    [
      ["--endpoint=/x.sock", "--secrets=/nonexistent/secrets.yaml"],
      /secrets file \/nonexistent\/secrets.yaml: cannot read/,
    ],
  ];
  for (const [args, message] of cases) {
    const run = await csikit(["sanity", ...args]);
    assert.equal(run.status, 2, `${args.join(" ")}: exit ${run.status}\n${run.stderr}`);
    assert.match(run.stderr, message);
  }
});

test("--mutable-parameters feeds the ControllerModifyVolume tests, which are skipped without it", async (t) => {
  const { dir, driver } = await hostpathInTemp(t, { enableControllerModifyVolume: true });
  const file = join(dir, "mutable.yaml");
  await writeFile(file, "iops: '3000'\n");
  const focus = "--focus=ControllerModifyVolume";
  const without = await csikit(["sanity", `--endpoint=unix://${driver.path}`, focus]);
  const withFile = await csikit([
    "sanity",
    `--endpoint=unix://${driver.path}`,
    focus,
    `--mutable-parameters=${file}`,
  ]);
  const counts = (run: Run): number[] => (SUMMARY.exec(run.stdout) ?? []).slice(1).map(Number);
  const [passedWithout, failedWithout, skippedWithout] = counts(without);
  const [passedWith, failedWith, skippedWith] = counts(withFile);
  assert.equal(failedWithout, 0, without.stdout);
  assert.ok((skippedWithout ?? 0) > 0, `some tests need mutable parameters:\n${without.stdout}`);
  assert.equal(withFile.status, 0, withFile.stdout + withFile.stderr);
  assert.equal(failedWith, 0, withFile.stdout);
  assert.ok((skippedWith ?? 0) < (skippedWithout ?? 0), withFile.stdout);
  assert.ok((passedWith ?? 0) > (passedWithout ?? 0), withFile.stdout);
});

test("csikit sanity runs focused tests against a driver, prints the summary and writes JUnit", async (t) => {
  const { dir, driver } = await hostpathInTemp(t);
  const junit = join(dir, "report.xml");
  const run = await csikit([
    "sanity",
    `--endpoint=unix://${driver.path}`,
    "--focus=^Identity ",
    `--junit=${junit}`,
  ]);
  assert.equal(run.status, 0, run.stdout + run.stderr);
  assert.match(run.stdout, /^Identity\n {2}✔ GetPluginInfo: /);
  const [, passed, failed, skipped] = SUMMARY.exec(run.stdout) ?? [];
  assert.deepEqual([Number(failed), Number(skipped)], [0, 0]);
  assert.ok(Number(passed) >= 5, run.stdout);
  assert.equal(run.stdout.trimEnd().split("\n").at(-1), `${passed} passed, 0 failed, 0 skipped`);
  const xml = await readFile(junit, "utf8");
  assert.match(
    xml,
    new RegExp(`<testsuites name="csikit sanity" tests="${passed}" failures="0" skipped="0"`),
  );
});

test("csikit sanity exits 1 when a test fails, naming the rule", async (t) => {
  const dir = await tempDir(t, "csikit-cli-sanity-");
  const server = await serveCsi({
    endpoint: join(dir, "bad.sock"),
    identity: {
      getPluginInfo: async () => ({ name: "-not-a-domain-name-", vendorVersion: "1" }),
      getPluginCapabilities: async () => ({ capabilities: [] }),
      probe: async () => ({}),
    },
    node: { nodeGetCapabilities: async () => ({ capabilities: [] }) },
  });
  defer(t, () => server.close());
  const run = await csikit(["sanity", `--endpoint=${server.path}`, "--focus=^Identity GetPluginInfo"]);
  assert.equal(run.status, 1, run.stdout + run.stderr);
  assert.match(
    run.stdout,
    /✖ GetPluginInfo: returns a name in domain-name notation .*: name "-not-a-domain-name-" must begin/,
  );
  assert.match(run.stdout, /^2 passed, 1 failed, 0 skipped$/m);
});

test("csikit sanity reports an unreachable endpoint as a failure", async (t) => {
  const dir = await tempDir(t, "csikit-cli-sanity-");
  const run = await csikit(["sanity", `--endpoint=${join(dir, "missing.sock")}`, "--timeout=300ms"]);
  assert.equal(run.status, 1, run.stdout + run.stderr);
  assert.match(run.stdout, /✖ setup: driver is reachable: driver did not become ready/);
  assert.match(run.stdout, /^0 passed, 1 failed, 0 skipped$/m);
});

test("a csi-sanity command line runs unchanged, path commands included", async (t) => {
  const { dir, driver } = await hostpathInTemp(t);
  // Path commands as a remote node's would be: each logs its call, then acts on the path.
  const log = join(dir, "commands.log");
  const script = async (name: string, body: string): Promise<string> => {
    const path = join(dir, name);
    await writeFile(path, `#!/bin/sh\necho "${name} $1" >> '${log}'\n${body}\n`);
    await chmod(path, 0o755);
    return path;
  };
  const create = await script("create", 'mkdir -p "$1" && echo "$1"');
  const remove = await script("remove", 'rm -rf "$1"');
  const check = await script(
    "check",
    'if [ -d "$1" ]; then echo directory; elif [ -f "$1" ]; then echo file; elif [ -e "$1" ]; then echo other; else echo not_found; fi',
  );
  const junit = join(dir, "junit.xml");
  const run = await csikit([
    "sanity",
    `-csi.endpoint=unix://${driver.path}`,
    `-csi.mountdir=${join(dir, "mnt")}`,
    `-csi.stagingdir=${join(dir, "stg")}`,
    "-csi.testvolumesize=4194304",
    "-csi.testvolumeaccesstype=mount",
    `-csi.createmountpathcmd=${create}`,
    `-csi.createstagingpathcmd=${create}`,
    `-csi.removemountpathcmd=${remove}`,
    `-csi.removestagingpathcmd=${remove}`,
    `-csi.checkpathcmd=${check}`,
    "-csi.createpathcmdtimeout=10",
    "-csi.removepathcmdtimeout=10s",
    "-ginkgo.focus=^Node Node(Publish|Unpublish)Volume ",
    `-ginkgo.junit-report=${junit}`,
  ]);
  assert.equal(run.status, 0, run.stdout + run.stderr);
  const [, passed] = SUMMARY.exec(run.stdout) ?? [];
  assert.ok(Number(passed) > 0, run.stdout);
  assert.match(await readFile(junit, "utf8"), /<testsuites name="csikit sanity"/);
  const calls = await readFile(log, "utf8");
  assert.match(calls, new RegExp(`^create ${join(dir, "mnt")}/`, "m"));
  assert.match(calls, new RegExp(`^remove ${join(dir, "mnt")}/`, "m"));
  const bad = await csikit([
    "sanity",
    `-csi.endpoint=unix://${driver.path}`,
    "-csi.testvolumeaccesstype=tape",
  ]);
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /-csi.testvolumeaccesstype: want mount or block/);
});

test("a csi-sanity CI command line with Ginkgo's flags runs unchanged, each flag with its meaning", async (t) => {
  const { dir, driver } = await hostpathInTemp(t);
  const topology = join(dir, "topology.yaml");
  await writeFile(topology, "requisite:\n  - segments:\n      topology.hostpath.csi/node: cli-node\n");
  const junit = join(dir, "junit.xml");
  const json = join(dir, "report.json");
  const teamcity = join(dir, "teamcity.txt");
  // As CI scripts call csi-sanity v5: single-dash Go flags, bare booleans, Go durations.
  const run = await csikit([
    "sanity",
    `-csi.endpoint=unix://${driver.path}`,
    `-csi.mountdir=${join(dir, "mnt")}`,
    `-csi.stagingdir=${join(dir, "stg")}`,
    "-csi.testvolumesize=4194304",
    "-csi.timeout=30s",
    `-csi.testtopologyrequirements=${topology}`,
    "-ginkgo.v",
    "-ginkgo.fail-fast",
    "-ginkgo.no-color",
    "-ginkgo.focus=^(Identity|Controller CreateVolume) ",
    "-ginkgo.skip=maximum length",
    "-ginkgo.label-filter=!Probe",
    "-ginkgo.timeout=10m",
    "-ginkgo.seed=42",
    "-ginkgo.flake-attempts=2",
    "-ginkgo.poll-progress-after=5m",
    "-ginkgo.silence-skips",
    `-ginkgo.junit-report=${junit}`,
    `-ginkgo.json-report=${json}`,
    `-ginkgo.teamcity-report=${teamcity}`,
  ]);
  assert.equal(run.status, 0, run.stdout + run.stderr);
  assert.match(run.stdout, /^random seed: 42$/m);
  assert.doesNotMatch(run.stdout, /Probe:/, "label-filter !Probe");
  assert.doesNotMatch(run.stdout, /maximum length/, "skip");
  assert.doesNotMatch(run.stdout, /skipped:/, "silence-skips");
  assert.match(run.stdout, /✔ CreateVolume: /);
  const [, passed] = SUMMARY.exec(run.stdout) ?? [];
  assert.ok(Number(passed) > 5, run.stdout);
  assert.match(
    await readFile(junit, "utf8"),
    new RegExp(`<testsuites name="csikit sanity" tests="\\d+" failures="0"`),
  );
  const suites = JSON.parse(await readFile(json, "utf8")) as Array<{
    SuiteSucceeded: boolean;
    SpecReports: unknown[];
  }>;
  assert.equal(suites[0]?.SuiteSucceeded, true);
  assert.ok((suites[0]?.SpecReports.length ?? 0) >= Number(passed));
  assert.match(await readFile(teamcity, "utf8"), /^##teamcity\[testStarted name='Identity GetPluginInfo /m);

  // -ginkgo.fail-fast stops at the first failure; -ginkgo.dry-run only lists; -ginkgo.succinct
  // prints failures only. A driver whose plugin name breaks the spec fails GetPluginInfo.
  const bad = await serveCsi({
    endpoint: join(dir, "bad.sock"),
    identity: {
      getPluginInfo: async () => ({ name: "-not-a-domain-name-", vendorVersion: "1" }),
      getPluginCapabilities: async () => ({ capabilities: [] }),
      probe: async () => ({}),
    },
    node: { nodeGetCapabilities: async () => ({ capabilities: [] }) },
  });
  defer(t, () => bad.close());
  const fast = await csikit([
    "sanity",
    `-csi.endpoint=${bad.path}`,
    "-ginkgo.focus=^Identity ",
    "-ginkgo.fail-fast",
    "-ginkgo.succinct",
  ]);
  assert.equal(fast.status, 1, fast.stdout + fast.stderr);
  assert.doesNotMatch(fast.stdout, /✔/, "succinct: no passed lines");
  assert.match(fast.stdout, /fail-fast: stopped after the first failure; \d+ tests not run/);
  const dry = await csikit([
    "sanity",
    `-csi.endpoint=${join(dir, "nothing.sock")}`,
    "-ginkgo.dry-run",
    "-ginkgo.focus=^Identity ",
  ]);
  assert.equal(dry.status, 0, dry.stdout + dry.stderr);
  assert.match(dry.stdout, /^0 passed, 0 failed, \d+ skipped$/m);
  const empty = await csikit([
    "sanity",
    `-csi.endpoint=${bad.path}`,
    "-ginkgo.focus=^Nothing",
    "-ginkgo.fail-on-empty",
  ]);
  assert.equal(empty.status, 1, empty.stdout);

  // Ginkgo refuses conflicting verbosities; csikit refuses what it cannot honour, saying why.
  for (const [args, message] of [
    [["-ginkgo.v", "-ginkgo.succinct"], /-ginkgo.succinct and -ginkgo.v conflict/],
    [
      ["-ginkgo.focus-file=controller.go"],
      /-ginkgo.focus-file cannot be honoured: csikit's tests are not Go source files/,
    ],
    [["-ginkgo.parallel.total=2"], /runs its tests serially/],
    [["-ginkgo.label-filter=Node &&"], /-ginkgo.label-filter: label filter "Node &&": ends early/],
  ] as const) {
    const refused = await csikit(["sanity", `-csi.endpoint=${bad.path}`, ...args]);
    assert.equal(refused.status, 2, refused.stdout + refused.stderr);
    assert.match(refused.stderr, message);
  }
});
