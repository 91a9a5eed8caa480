// A client process of the API server benchmark (probe-child.ts, watcher-child.ts): started with
// one JSON line of configuration on stdin, it prints "ready" once set up, then answers with
// lines on stdout. Every wait for a line is bounded, and a child that exits first fails the
// wait with its stderr.

import { spawn } from "node:child_process";
import { join } from "node:path";

export interface BenchChild {
  readonly pid: number | undefined;
  /** Waits (bounded) until stdout holds line `index` (0-based) complete; returns it. */
  line(index: number, what: string): Promise<string>;
  write(text: string): void;
  /** Closes its stdin (the children exit on that) and kills it if it still runs. */
  destroy(): void;
}

const BOUND_MS = 120_000;

/** Starts the child and resolves once it printed "ready" (its line 0). */
export async function startBenchChild(script: string, config: object): Promise<BenchChild> {
  const child = spawn(process.execPath, [join(import.meta.dirname, script)], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  let stdout = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => void (stderr += chunk));
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => void (stdout += chunk));
  child.stdin.on("error", () => {});
  child.stdin.write(JSON.stringify(config) + "\n");
  const handle: BenchChild = {
    pid: child.pid,
    line: (index, what) =>
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
          reject(new Error(`${script} exited (${code}) before ${what}: ${stderr}`));
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`${script}: no ${what} in ${BOUND_MS / 1000} s: ${stderr}`));
        }, BOUND_MS);
        const cleanup = (): void => {
          clearTimeout(timer);
          child.stdout.off("data", check);
          child.off("exit", exited);
        };
        child.stdout.on("data", check);
        child.once("exit", exited);
        check();
      }),
    write: (text) => void child.stdin.write(text),
    destroy: () => {
      child.stdin.end();
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    },
  };
  try {
    const ready = await handle.line(0, "ready");
    if (ready !== "ready") throw new Error(`${script}: ${ready}`);
  } catch (error) {
    handle.destroy();
    throw error;
  }
  return handle;
}
