// The cluster `csikit e2e` runs the suites on when no --kubeconfig is given: `csikit up` around
// the driver, started as a child process on a fresh state dir (as a root user starts it, in a
// private mount namespace, so its mounts die with it), waited for (bounded) until it prints
// "cluster ready", and stopped with SIGTERM — its own teardown unpublishes and detaches every
// volume — then SIGKILL after a bound, and any of its processes still alive (pids.json) killed,
// and the state dir removed. Nothing is left behind, also when the start fails.

import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CsikitError, errorMessage } from "../base/index.ts";
import { ClusterLayout } from "../cluster/index.ts";

export interface UpClusterOptions {
  /** The csikit entry point (src/cli/main.ts) the child runs. */
  cliMain: string;
  /** `--driver-command` of up ({statedir} replaced by the cluster's state dir); none: csikit's hostpath. */
  driverCommand?: string;
  driverName: string;
  /** Virtual nodes of the cluster. */
  nodes: number;
  /** Bound on the start (until "cluster ready"). */
  startTimeoutMs: number;
  /** Bound on the teardown before SIGKILL. */
  stopTimeoutMs: number;
  /** Each line up prints (progress), for the terminal. */
  onLine?: (line: string) => void;
}

export interface UpCluster {
  kubeconfig: string;
  stateDir: string;
  /** The lines up printed so far (for an error report). */
  output(): string;
  stop(): Promise<void>;
}

const READY = /^cluster ready in /m;

function canUnshare(): boolean {
  return process.getuid?.() === 0 && spawnSync("unshare", ["--version"], { stdio: "ignore" }).status === 0;
}

/** Whether a process with this pid is running (signal 0 probes without signalling). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function stopChild(
  child: ChildProcess,
  exited: Promise<unknown>,
  stateDir: string,
  timeoutMs: number,
): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    await exited;
    clearTimeout(timer);
  }
  // up may have died before its children (SIGKILL): end whatever it recorded as still running.
  const pids = await readFile(join(stateDir, "pids.json"), "utf8")
    .then((text) => JSON.parse(text) as Record<string, number>)
    .catch(() => ({}));
  for (const pid of Object.values(pids))
    if (typeof pid === "number" && alive(pid)) process.kill(pid, "SIGKILL");
  await rm(stateDir, { recursive: true, force: true, maxRetries: 3 });
}

/** Starts `csikit up` and resolves once it is ready; on any failure it is stopped before the throw. */
export async function startUpCluster(options: UpClusterOptions, signal: AbortSignal): Promise<UpCluster> {
  const stateDir = await mkdtemp(join(tmpdir(), "csikit-e2e-"));
  const args = [
    options.cliMain,
    "up",
    `--state-dir=${stateDir}`,
    `--nodes=${options.nodes}`,
    `--driver-name=${options.driverName}`,
    // {statedir}: the cluster's state dir, known only here (a driver may need to be told where
    // the nodes' targets live); up replaces {endpoint}, {nodeid} and {mode} itself.
    ...(options.driverCommand !== undefined
      ? [`--driver-command=${options.driverCommand.replaceAll("{statedir}", stateDir)}`]
      : []),
  ];
  const child = canUnshare()
    ? spawn("unshare", ["-m", "--propagation", "private", process.execPath, ...args], {
        stdio: ["ignore", "pipe", "pipe"],
      })
    : spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
  let text = "";
  let pending = "";
  const take = (chunk: Buffer): void => {
    text += chunk.toString();
    pending += chunk.toString();
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) options.onLine?.(line);
  };
  child.stdout?.on("data", take);
  child.stderr?.on("data", take);
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  const stop = (): Promise<void> => stopChild(child, exited, stateDir, options.stopTimeoutMs);
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new CsikitError(
              "CSIKIT_ERR_TIMEOUT",
              `csikit up was not ready within ${options.startTimeoutMs / 1000}s`,
            ),
          ),
        options.startTimeoutMs,
      );
      const check = setInterval(() => {
        if (READY.test(text)) done(resolve);
      }, 100);
      const onAbort = (): void =>
        done(() => reject(new CsikitError("CSIKIT_ERR_ABORTED", "stopped while csikit up started")));
      const done = (settle: () => void): void => {
        clearTimeout(timer);
        clearInterval(check);
        signal.removeEventListener("abort", onAbort);
        settle();
      };
      signal.addEventListener("abort", onAbort, { once: true });
      void exited.then((code) =>
        done(() =>
          reject(new CsikitError("CSIKIT_ERR_UP", `csikit up exited (${code}) before it was ready`)),
        ),
      );
    });
  } catch (error) {
    await stop();
    // up says why it did not start (a flag, a path too long for a socket…): its last lines.
    const tail = text.trimEnd().split("\n").slice(-15).join("\n");
    throw new CsikitError(
      "CSIKIT_ERR_UP",
      `${errorMessage(error)}${tail ? `; its output ends:\n${tail}` : ""}`,
    );
  }
  return { kubeconfig: new ClusterLayout(stateDir).adminKubeconfig, stateDir, output: () => text, stop };
}
