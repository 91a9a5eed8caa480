// One running instance of a container: bwrap started with the sandbox spec, its stdout and
// stderr written to the instance's CRI log, the sandbox's pid 1 (as the host sees it) read
// from bwrap's --json-status-fd so exec can enter it and signals reach the container's own
// pid 1. Resolves `exited` with the exit code (128+signal when killed), or with a start
// failure (bwrap could not build the sandbox) and bwrap's message.

import { spawn, type ChildProcess } from "node:child_process";
import type { Readable } from "node:stream";
import type { CriLogWriter } from "./cri-log.ts";
import { bwrapArgs, type SandboxSpec } from "./sandbox.ts";

export type Exit = { kind: "exited"; code: number } | { kind: "start-failed"; message: string };

export class ContainerProcess {
  readonly spec: SandboxSpec;
  readonly env: Readonly<Record<string, string>>;
  readonly exited: Promise<Exit>;
  /** The sandbox's pid 1 in the host's PID namespace, once bwrap has built the sandbox. */
  readonly pid: Promise<number | undefined>;
  readonly #child: ChildProcess;
  #pid: number | undefined;

  constructor(spec: SandboxSpec, env: Record<string, string>, log: CriLogWriter) {
    this.spec = spec;
    this.env = env;
    const child = spawn("bwrap", bwrapArgs(spec), {
      env,
      stdio: ["ignore", "pipe", "pipe", "pipe"],
    });
    this.#child = child;
    let resolvePid!: (pid: number | undefined) => void;
    this.pid = new Promise((resolve) => (resolvePid = resolve));
    let status = "";
    // Until bwrap reports the sandbox, stderr may be bwrap's own (a setup failure, reported
    // rather than logged): held back, then logged once the sandbox is known to exist.
    let held: Buffer[] | undefined = [];
    const release = (): void => {
      for (const chunk of held ?? []) log.write("stderr", chunk);
      held = undefined;
    };
    const statusStream = child.stdio[3] as Readable;
    statusStream.setEncoding("utf8");
    statusStream.on("data", (chunk: string) => {
      status += chunk;
      const match = /"child-pid"\s*:\s*(\d+)/.exec(status);
      if (match && this.#pid === undefined) {
        this.#pid = Number(match[1]);
        resolvePid(this.#pid);
        release();
      }
    });
    statusStream.on("error", () => undefined);
    child.stdout!.on("data", (chunk: Buffer) => log.write("stdout", chunk));
    child.stderr!.on("data", (chunk: Buffer) => {
      if (held) held.push(chunk);
      else log.write("stderr", chunk);
    });
    const streamsClosed = Promise.all([
      new Promise((resolve) => child.stdout!.once("close", resolve)),
      new Promise((resolve) => child.stderr!.once("close", resolve)),
      new Promise((resolve) => statusStream.once("close", resolve)),
    ]);
    this.exited = new Promise<Exit>((resolve) => {
      child.once("error", (error) => {
        resolvePid(undefined);
        resolve({ kind: "start-failed", message: error.message });
      });
      child.once("exit", (code, signal) => {
        void streamsClosed.then(() => {
          resolvePid(undefined);
          if (this.#pid === undefined) {
            const message = Buffer.concat(held ?? [])
              .toString("utf8")
              .trim();
            log.close();
            resolve({ kind: "start-failed", message: message || `bwrap exited with ${code ?? signal}` });
            return;
          }
          release();
          log.close();
          const exit = /"exit-code"\s*:\s*(\d+)/.exec(status);
          resolve({
            kind: "exited",
            code: exit ? Number(exit[1]) : (code ?? 128 + signalNumber(signal)),
          });
        });
      });
    });
  }

  /** Signals the container's pid 1 (SIGTERM is ignored by a pid 1 without a handler, as in a container). */
  signal(signal: "SIGTERM" | "SIGKILL"): void {
    const target = this.#pid;
    try {
      if (target !== undefined) process.kill(target, signal);
      else this.#child.kill(signal);
    } catch {
      // Gone already.
    }
  }
}

function signalNumber(signal: NodeJS.Signals | null): number {
  return signal === "SIGKILL" ? 9 : signal === "SIGTERM" ? 15 : 0;
}
