// `csikit up` as a benchmark's child: started as a user runs it (in a private mount namespace as
// root), its stdout collected; ready() resolves when it prints that the cluster is ready and
// fails at once, with what it printed, when it exits first (a start-up error), rather than
// waiting out the timeout.

import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

const MAIN = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url));

export interface UpChild {
  child: ChildProcess;
  output(): string;
  /** Resolves once up says the cluster is ready; rejects when up exits first or after timeoutMs. */
  ready(timeoutMs: number): Promise<void>;
  /** Resolves when up has exited. */
  exited: Promise<void>;
}

export function startUpChild(stateDir: string, extra: readonly string[]): UpChild {
  const args = [MAIN, "up", `--state-dir=${stateDir}`, ...extra];
  const child: ChildProcess =
    process.getuid?.() === 0
      ? spawn("unshare", ["-m", "--propagation", "private", process.execPath, ...args], {
          stdio: ["ignore", "pipe", "pipe"],
        })
      : spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  // up's stderr still reaches the bench's, and is kept for the failure message.
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
    process.stderr.write(chunk);
  });
  let exitCode: string | undefined;
  const exited = new Promise<void>((resolve) =>
    child.once("close", (code, signal) => {
      exitCode = signal ?? String(code);
      resolve();
    }),
  );
  const ready = async (timeoutMs: number): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (/cluster ready in/.test(output)) return;
      if (exitCode !== undefined)
        throw new Error(
          `csikit up exited (${exitCode}) before the cluster was ready; it printed:\n${output}`,
        );
      if (Date.now() > deadline)
        throw new Error(`csikit up not ready within ${timeoutMs / 1000} s; it printed:\n${output}`);
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 20))]);
    }
  };
  return { child, output: () => output, ready, exited };
}
