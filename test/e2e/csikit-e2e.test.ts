// `csikit e2e` end to end as a user runs it: a child process that starts `csikit up` around
// csikit's hostpath, runs the provisioning and volumes suites (data checked through pods), prints
// a line per test and the closing matrix, writes the JUnit report, and tears the cluster down —
// leaving nothing in its temp dir. Bounded as a whole; the child is killed if the test ends first.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { sandboxUnavailable } from "../../src/node/index.ts";
import { defer, tempDir } from "../harness/cleanup.ts";
import { MAIN, SKIP } from "../harness/up.ts";

/** Cluster start (up to 4 min on a loaded machine) plus four tests and the teardown. */
const RUN_MS = 600_000;
const noSandbox = SKIP === false ? await sandboxUnavailable() : undefined;

const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The provisioning and volumes tests of the default fs pattern: the short focus npm test runs. */
const FOCUS =
  "\\[Testpattern: Dynamic PV \\(default fs\\)\\] (provisioning should provision storage with mount options|volumes )";

test(
  "csikit e2e on hostpath (its src/e2e/hostpath test driver), provisioning and volumes of the default fs pattern: every test passes, matrix and junit",
  {
    skip: SKIP || (noSandbox !== undefined ? `pods run no commands here: ${noSandbox}` : false),
    timeout: RUN_MS + 60_000,
  },
  async (t) => {
    const dir = await tempDir(t, "csikit-e2e-test-");
    // Short: up's socket paths under its state dir must stay within 107 bytes.
    const scratch = await tempDir(t, "e");
    const junit = join(dir, "junit.xml");
    const child = spawn(
      process.execPath,
      [MAIN, "e2e", `--focus=${FOCUS}`, `--junit=${junit}`],
      // up's state dir is made under TMPDIR: what is left there after the run is a leak.
      { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, TMPDIR: scratch } },
    );
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("close", resolve));
    defer(t, async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
        await exited;
        clearTimeout(timer);
      }
    });
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([
      exited,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`csikit e2e still running after ${RUN_MS} ms:\n${output}`)),
          RUN_MS,
        );
      }),
    ]).finally(() => clearTimeout(timer));
    assert.equal(code, 0, output);

    const prefix = "External Storage [Driver: hostpath.csi.k8s.io] [Testpattern: Dynamic PV (default fs)]";
    assert.match(output, /^3 tests selected for driver hostpath\.csi\.k8s\.io: 3 to run, 0 skipped$/m);
    for (const name of [
      "provisioning should provision storage with mount options",
      "volumes should store data",
      "volumes should allow exec of files on the volume",
    ])
      assert.match(output, new RegExp(`^✓ +\\d+\\.\\ds ${escape(`${prefix} ${name}`)}$`, "m"), output);
    assert.match(output, /^provisioning +Dynamic PV \(default fs\) +1 +0 +0$/m, output);
    assert.match(output, /^volumes +Dynamic PV \(default fs\) +2 +0 +0$/m, output);
    assert.match(output, /^total +3 +0 +0$/m, output);

    const xml = await readFile(junit, "utf8");
    assert.match(
      xml,
      /<testsuite name="Kubernetes e2e suite" tests="3" disabled="0" errors="0" failures="0" skipped="0" /,
    );
    assert.equal((xml.match(/<testcase /g) ?? []).length, 3);
    assert.match(xml, new RegExp(escape(`name="${prefix} volumes should store data"`)));
    // (Node keeps its compile cache under TMPDIR too; that is not ours.)
    const left = (await readdir(scratch)).filter((entry) => entry.startsWith("csikit-e2e-"));
    assert.deepEqual(left, [], "csikit up's state dir is removed");
  },
);
