// Test fixture: real `csikit <command>` child processes (a hostpath driver, a fault proxy),
// started as a user starts them and stopped when the test ends, also when it fails (SIGTERM,
// then SIGKILL after a bound). As root, hostpath runs in a private mount namespace
// (`unshare -m --propagation private`) so its mounts vanish with it; its loop devices, which are
// not namespaced, are detached afterwards.

import { execFile, spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { fileURLToPath } from "node:url";
import { CsiClient } from "../../src/csi/index.ts";
import { defer } from "./cleanup.ts";

export const MAIN = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));
export const IS_ROOT = typeof process.getuid === "function" && process.getuid() === 0;
/** How long a stopped child may take to exit before SIGKILL. */
const STOP_GRACE_MS = 5000;
/** How long a driver may take to answer Probe ready after start. */
const READY_TIMEOUT_MS = 60_000;

export interface CsikitProcess {
  child: ChildProcess;
  /** Everything the child wrote to stdout and stderr so far. */
  output(): string;
  /** Resolves with the exit code (or signal name) once the child has exited. */
  exited: Promise<number | string | null>;
  stop(): Promise<void>;
}

/** Spawns `csikit ...args` (under `prefix`, e.g. unshare), stopped when the test ends. */
export function startCsikit(
  t: TestContext,
  args: readonly string[],
  prefix: readonly string[] = [],
): CsikitProcess {
  const command = prefix.length > 0 ? prefix[0]! : process.execPath;
  const argv = prefix.length > 0 ? [...prefix.slice(1), process.execPath, MAIN, ...args] : [MAIN, ...args];
  const child = spawn(command, argv, { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  const exited = new Promise<number | string | null>((resolve) =>
    // "close", not "exit": by then stdout and stderr are read to the end.
    child.on("close", (code, signal) => resolve(code ?? signal)),
  );
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), STOP_GRACE_MS);
    await exited;
    clearTimeout(timer);
  };
  defer(t, stop);
  return { child, output: () => output, exited, stop };
}

/** losetup's output; "" when it fails (no loop support: nothing to detach). */
function losetup(args: string[]): Promise<string> {
  return new Promise((resolve) =>
    execFile("losetup", args, { timeout: 10_000 }, (error, stdout) => resolve(error ? "" : stdout)),
  );
}

/** Detaches loop devices whose backing file lies under `dir`. */
async function detachLoopsUnder(dir: string): Promise<void> {
  const out = await losetup(["--list", "--noheadings", "--output", "NAME,BACK-FILE"]);
  for (const line of out.split("\n")) {
    const [name, file] = line.trim().split(/\s+/, 2);
    if (name && file?.startsWith(dir + "/")) await losetup(["-d", name]);
  }
}

/** Waits (bounded) until the driver at `socket` answers Probe ready; names the process's output if not. */
export async function waitForDriver(socket: string, process: CsikitProcess): Promise<void> {
  const client = CsiClient.connect(socket, { timeoutMs: 5000 });
  try {
    await Promise.race([
      client.waitForReady({ timeoutMs: READY_TIMEOUT_MS }),
      process.exited.then((code) => {
        throw new Error(`csikit exited (${code}) before its socket was ready:\n${process.output()}`);
      }),
    ]);
  } finally {
    client.close();
  }
}

/**
 * `csikit hostpath` serving `dir/csi.sock` with its state in `dir/state` and paths allowed under
 * `dir`, node id "csi-node"; `extra` flags are appended. Ready when it returns.
 */
export async function startHostpathProcess(
  t: TestContext,
  dir: string,
  extra: readonly string[] = [],
): Promise<{ socket: string; process: CsikitProcess }> {
  const socket = join(dir, "csi.sock");
  if (IS_ROOT) defer(t, () => detachLoopsUnder(dir));
  const prefix = IS_ROOT ? ["unshare", "-m", "--propagation", "private"] : [];
  const child = startCsikit(
    t,
    [
      "hostpath",
      `--endpoint=unix://${socket}`,
      "--nodeid=csi-node",
      `--state-dir=${join(dir, "state")}`,
      `--allowed-path-roots=${dir}`,
      ...extra,
    ],
    prefix,
  );
  await waitForDriver(socket, child);
  return { socket, process: child };
}

/** Waits for a child to exit, bounded. */
export async function exitOf(process: CsikitProcess, timeoutMs = 30_000): Promise<number | string | null> {
  const timer = setTimeout(() => process.child.kill("SIGKILL"), timeoutMs);
  try {
    return await process.exited;
  } finally {
    clearTimeout(timer);
  }
}
