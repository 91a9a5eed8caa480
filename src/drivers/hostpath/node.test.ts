// Runs the real-mount node scenarios (node-mounts.scenario.ts) inside a private mount
// namespace (`unshare -m --propagation private`), so their mounts vanish with the child even
// if it dies; loop devices, which are not namespaced, are detached here afterwards as a
// second net. Without root the scenarios are skipped with the reason, and a non-root driver
// is checked to answer FAILED_PRECONDITION instead of mounting.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { run } from "./system.ts";

const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
const NEEDS_ROOT = isRoot ? false : "needs root to mount (run the tests as root or in `unshare -rm`)";

function runChild(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    // The child runs its own test runner: without NODE_TEST_CONTEXT it does not think it is
    // nested in ours and skip everything.
    const childEnv: Record<string, string | undefined> = { ...process.env, ...env };
    delete childEnv.NODE_TEST_CONTEXT;
    const child = spawn(args[0]!, args.slice(1), {
      env: childEnv,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, output }));
  });
}

/** Detaches loop devices whose backing file lies under `dir`. */
async function detachLoopsUnder(dir: string): Promise<void> {
  const out = await run("losetup", ["--list", "--noheadings", "--output", "NAME,BACK-FILE"]).catch(() => "");
  for (const line of out.split("\n")) {
    const [name, file] = line.trim().split(/\s+/, 2);
    if (name && file?.startsWith(dir + "/")) await run("losetup", ["-d", name]).catch(() => undefined);
  }
}

/** Runs a scenario file in its own private mount namespace; asserts it passed `passes` tests. */
async function runScenario(t: { after(fn: () => Promise<void>): void }, file: string, passes: number) {
  const dir = await mkdtemp(join(tmpdir(), "hostpath-mounts-"));
  t.after(async () => {
    await detachLoopsUnder(dir);
    await rm(dir, { recursive: true, force: true });
  });
  const { code, output } = await runChild(
    [
      "unshare",
      "-m",
      "--propagation",
      "private",
      process.execPath,
      "--test",
      "--test-reporter=spec",
      join(import.meta.dirname, file),
    ],
    { HOSTPATH_TEST_DIR: dir, TMPDIR: dir },
  );
  assert.equal(code, 0, output);
  assert.match(output, new RegExp(`pass ${passes}\\b`), output);
}

test("node service with real mounts in a private mount namespace", { skip: NEEDS_ROOT }, (t) =>
  runScenario(t, "node-mounts.scenario.ts", 10),
);

test("NodePublishVolume honours each access mode, with real mounts", { skip: NEEDS_ROOT }, (t) =>
  runScenario(t, "access-modes.scenario.ts", 10),
);

test(
  "without mount privilege node calls answer FAILED_PRECONDITION",
  { skip: isRoot ? false : "needs root to run a child in a user namespace without privileges" },
  async (t) => {
    const dir = await mkdtemp(join(tmpdir(), "hostpath-nopriv-"));
    t.after(() => rm(dir, { recursive: true, force: true }));
    await chmod(dir, 0o777);
    const script = join(import.meta.dirname, "unprivileged.scenario.ts");
    // A user namespace without a uid map: the process is "nobody" and holds no capability over
    // the host's mount namespace, yet keeps root's access to files, so a checkout in a private
    // (0700) directory still loads (setuid to 65534 would not).
    const { code, output } = await runChild(["unshare", "--user", process.execPath, script], {
      HOSTPATH_TEST_DIR: dir,
    });
    assert.equal(code, 0, output);
    assert.match(output, /FAILED_PRECONDITION: .*cannot mount: the driver runs as uid 65534/);
  },
);
