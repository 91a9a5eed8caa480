// Starts probe-child.ts against a server and hands back a `measure` for the disk suite's
// underLoad: the GETs run in their own process (see probe-child.ts for why).

import { spawn } from "node:child_process";
import { join } from "node:path";
import type { ServerProcess } from "./server-process.ts";
import type { RunResult } from "./stats.ts";

export interface ProbeProcess {
  /** Runs the child's GETs now; resolves with their latencies. */
  measure(): Promise<RunResult>;
  destroy(): void;
}

const BOUND_MS = 120_000;

export async function startProbeProcess(
  server: ServerProcess,
  path: string,
  count: number,
): Promise<ProbeProcess> {
  const child = spawn(process.execPath, [join(import.meta.dirname, "probe-child.ts")], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  let stdout = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => void (stderr += chunk));
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => void (stdout += chunk));
  const destroy = (): void => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  };
  /** Waits (bounded) until stdout holds a complete line after `skip` lines; returns it. */
  const line = (index: number, what: string): Promise<string> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        const lines = stdout.split("\n");
        if (lines.length > index + 1) {
          cleanup();
          resolve(lines[index]!);
        }
      };
      const exited = (code: number | null): void => {
        cleanup();
        reject(new Error(`probe process exited (${code}) before ${what}: ${stderr}`));
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`probe process: no ${what} in ${BOUND_MS / 1000} s: ${stderr}`));
      }, BOUND_MS);
      const cleanup = (): void => {
        clearTimeout(timer);
        child.stdout.off("data", check);
        child.off("exit", exited);
      };
      child.stdout.on("data", check);
      child.once("exit", exited);
      check();
    });
  try {
    child.stdin.write(
      JSON.stringify({ url: server.url, token: server.token, ca: server.caCertPem, path, count }) + "\n",
    );
    if ((await line(0, "ready")) !== "ready") throw new Error(`probe process: ${stdout}`);
  } catch (error) {
    destroy();
    throw error;
  }
  return {
    async measure() {
      child.stdin.write("go\n");
      const result = JSON.parse(await line(1, "result")) as { seconds: number; samples: number[] };
      return {
        ops: result.samples.length,
        seconds: result.seconds,
        samples: Float64Array.from(result.samples),
      };
    },
    destroy,
  };
}
