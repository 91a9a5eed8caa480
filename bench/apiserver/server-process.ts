// Runs server-child.ts as a child process and hands back what clients need: the URL, and the
// CA and admin token read from the kubeconfig the server wrote into its state directory.
// `stop()` sends SIGTERM, waits for the exit (SIGKILL after a bound) and is safe to call twice.

import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { parse } from "yaml";

export interface ServerProcess {
  url: string;
  kubeconfigPath: string;
  caCertPem: string;
  token: string;
  pid: number;
  /** CPU seconds (user + system) the server process has used so far; NaN where /proc is absent. */
  cpuSeconds(): number;
  stop(): Promise<void>;
}

export interface ServerProcessOptions {
  stateDir: string;
  /** Write a V8 CPU profile of the server into this directory (node --cpu-prof). */
  cpuProfileDir?: string;
  /** Append one line per authenticated request to this file (server-child.ts says the format). */
  auditFile?: string;
}

const STARTUP_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 10_000;

interface Kubeconfig {
  clusters?: { cluster?: { "certificate-authority-data"?: string } }[];
  users?: { user?: { token?: string } }[];
}

export async function startServerProcess(options: ServerProcessOptions): Promise<ServerProcess> {
  const profile = options.cpuProfileDir ? ["--cpu-prof", `--cpu-prof-dir=${options.cpuProfileDir}`] : [];
  const child = spawn(
    process.execPath,
    [...profile, join(import.meta.dirname, "server-child.ts"), options.stateDir],
    {
      stdio: ["pipe", "pipe", "pipe"],
      ...(options.auditFile ? { env: { ...process.env, CSIKIT_BENCH_AUDIT_FILE: options.auditFile } } : {}),
    },
  );
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => {
    stderr = (stderr + chunk).slice(-16_384);
  });
  const stop = once(() => stopChild(child));
  try {
    const ready = await new Promise<{ url: string; kubeconfig: string }>((resolve, reject) => {
      let stdout = "";
      const timer = setTimeout(
        () => reject(new Error(`API server did not start within ${STARTUP_TIMEOUT_MS} ms:\n${stderr}`)),
        STARTUP_TIMEOUT_MS,
      );
      child.stdout.setEncoding("utf8");
      child.stdout.on("data", (chunk: string) => {
        stdout += chunk;
        const newline = stdout.indexOf("\n");
        if (newline < 0) return;
        clearTimeout(timer);
        try {
          resolve(JSON.parse(stdout.slice(0, newline)) as { url: string; kubeconfig: string });
        } catch (error) {
          reject(error instanceof Error ? error : new Error(String(error)));
        }
      });
      child.once("exit", (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`API server exited at start (code ${code}, signal ${signal}):\n${stderr}`));
      });
    });
    const kubeconfig = parse(await readFile(ready.kubeconfig, "utf8")) as Kubeconfig;
    const caData = kubeconfig.clusters?.[0]?.cluster?.["certificate-authority-data"];
    const token = kubeconfig.users?.[0]?.user?.token;
    if (caData === undefined || token === undefined) {
      throw new Error(`${ready.kubeconfig}: no certificate-authority-data or token`);
    }
    return {
      url: ready.url,
      kubeconfigPath: ready.kubeconfig,
      caCertPem: Buffer.from(caData, "base64").toString("utf8"),
      token,
      pid: child.pid ?? 0,
      cpuSeconds: () => processCpuSeconds(child.pid),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let result: Promise<void> | undefined;
  return () => (result ??= fn());
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}

/** Clock ticks per second of /proc/<pid>/stat times: USER_HZ, 100 on every Linux build in use. */
const USER_HZ = 100;

export function processCpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces) start at state = field 3.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / USER_HZ; // utime, stime
  } catch {
    return Number.NaN;
  }
}
