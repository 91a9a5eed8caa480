// Running `csikit up` from an e2e test as a user runs it: a child process (in a private mount
// namespace as root; in its own user + mount namespace otherwise), bounded waits, the cluster's
// own view of its mounts, kubectl against its kubeconfig, and a stop that leaves no process.
// Shared by the e2e files (each starts its own cluster).

import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { isNotFound } from "../../src/kube/index.ts";
import { kubectlMissing } from "./kubectl.ts";

export const MAIN = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));

export const isRoot = process.getuid?.() === 0;
export const canNamespace = isRoot
  ? spawnSync("unshare", ["--version"]).status === 0
  : spawnSync("unshare", ["-rm", "true"]).status === 0;
export const hasKubectl = !kubectlMissing();
export const SKIP = canNamespace
  ? false
  : "needs unshare (root: mount namespace; otherwise user + mount namespace)";
/** Generous: 18 Node processes start on a shared, loaded 2-core machine. */
export const START_MS = 240_000;
export const STEP_MS = 90_000;

export interface UpProcess {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

export function startUp(stateDir: string, extra: string[] = []): UpProcess {
  const args = [MAIN, "up", `--state-dir=${stateDir}`, ...extra];
  const child = isRoot
    ? spawn("unshare", ["-m", "--propagation", "private", process.execPath, ...args], {
        stdio: ["ignore", "pipe", "pipe"],
      })
    : spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
  let text = "";
  child.stdout?.on("data", (chunk: Buffer) => (text += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (text += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  return { child, output: () => text, exited };
}

/**
 * up's exit code once it exits; throws after timeoutMs. The timer is cleared either way (a
 * polling wait left running would keep the test file's process alive until its deadline).
 */
export async function exitWithin(up: UpProcess, timeoutMs: number): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`up did not exit within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([up.exited, late]);
  } finally {
    clearTimeout(timer);
  }
}

export async function pids(stateDir: string): Promise<Record<string, number>> {
  return JSON.parse(await readFile(join(stateDir, "pids.json"), "utf8")) as Record<string, number>;
}

/** Mount points under dir as the cluster's processes see them (their mount namespace). */
export async function clusterMounts(stateDir: string, dir: string): Promise<string[]> {
  const { apiserver } = await pids(stateDir);
  const text = await readFile(`/proc/${apiserver}/mountinfo`, "utf8");
  return text
    .split("\n")
    .map((line) => line.split(" ")[4] ?? "")
    .filter((point) => point.startsWith(dir + "/"));
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Stops up (SIGTERM, SIGKILL after 2 min), then ends any of its processes left (up may have died first). */
export async function stopUp(up: UpProcess | undefined, stateDir: string): Promise<void> {
  if (up && up.child.exitCode === null && up.child.signalCode === null) {
    up.child.kill("SIGTERM");
    const timer = setTimeout(() => up.child.kill("SIGKILL"), 120_000);
    await up.exited;
    clearTimeout(timer);
  }
  for (const pid of Object.values(await pids(stateDir).catch(() => ({}))))
    if (alive(pid)) process.kill(pid, "SIGKILL");
}

export async function gone(probe: () => Promise<unknown>): Promise<true | undefined> {
  try {
    await probe();
    return undefined;
  } catch (error) {
    if (isNotFound(error)) return true;
    throw error;
  }
}
