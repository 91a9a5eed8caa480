// TEST STAND-IN — not the node's container runtime, and never used outside tests. A
// ContainerStreams (src/node/runtime's contract) over plain, unsandboxed host processes, so the
// streaming endpoints (/exec, /containerLogs) and the API server's pods/exec and pods/log can be
// driven end to end where no sandbox is available (unprivileged runs): `exec` spawns the command
// on the host with the client's stdin/stdout/stderr, `logs` serves lines the test appended
// (with tail, limitBytes, timestamps, previous and follow as the kubelet reads them). A container
// is known only once the test marks it running.

import { spawn } from "node:child_process";
import { EventEmitter } from "node:events";
import type { Writable } from "node:stream";
import {
  RuntimeNotFoundError,
  type ContainerStreams,
  type ContainerTarget,
  type ExecIO,
  type LogOptions,
} from "../../src/node/index.ts";

interface ContainerLog {
  lines: { at: string; text: string }[];
  previous: { at: string; text: string }[] | undefined;
  running: boolean;
}

function keyOf(target: ContainerTarget): string {
  return `${target.namespace}/${target.pod}/${target.container}`;
}

export class ProcessStreams implements ContainerStreams {
  readonly #containers = new Map<string, ContainerLog>();
  readonly #changes = new EventEmitter();
  /** Every command exec ran, for assertions. */
  readonly commands: string[][] = [];

  /** Marks a container running (exec allowed, logs served). */
  start(target: ContainerTarget): void {
    const existing = this.#containers.get(keyOf(target));
    this.#containers.set(keyOf(target), {
      lines: [],
      previous: existing ? existing.lines : undefined,
      running: true,
    });
    this.#changes.emit("change");
  }

  /** Marks a container stopped: exec refused, following readers end. */
  stop(target: ContainerTarget): void {
    const container = this.#containers.get(keyOf(target));
    if (container) container.running = false;
    this.#changes.emit("change");
  }

  /** Appends a log line (what the container printed). */
  log(target: ContainerTarget, text: string): void {
    const container = this.#containers.get(keyOf(target));
    if (!container) throw new Error(`container ${keyOf(target)} was never started`);
    container.lines.push({ at: new Date().toISOString(), text });
    this.#changes.emit("change");
  }

  exec(target: ContainerTarget, command: string[], io: ExecIO, signal: AbortSignal): Promise<number> {
    const container = this.#containers.get(keyOf(target));
    if (!container?.running)
      return Promise.reject(new RuntimeNotFoundError(`container "${target.container}" is not running`));
    this.commands.push(command);
    return new Promise((resolve, reject) => {
      const child = spawn(command[0]!, command.slice(1), {
        stdio: [io.stdin ? "pipe" : "ignore", io.stdout ? "pipe" : "ignore", io.stderr ? "pipe" : "ignore"],
        signal,
      });
      child.on("error", reject);
      if (io.stdin && child.stdin) {
        child.stdin.on("error", () => undefined);
        io.stdin.pipe(child.stdin);
      }
      const copies: Promise<void>[] = [];
      const copy = (from: NodeJS.ReadableStream | null, to: NodeJS.WritableStream | undefined) => {
        if (!from || !to) return;
        copies.push(
          new Promise((done) => {
            from.on("data", (chunk: Buffer) => (to as Writable).write(chunk));
            from.on("end", () => done());
            from.on("error", () => done());
          }),
        );
      };
      copy(child.stdout, io.stdout);
      copy(child.stderr, io.stderr);
      child.on("close", (code, killed) => {
        void Promise.all(copies).then(() => resolve(code ?? (killed ? 137 : 1)));
      });
    });
  }

  async logs(target: ContainerTarget, options: LogOptions, out: NodeJS.WritableStream, signal: AbortSignal) {
    const container = this.#containers.get(keyOf(target));
    if (!container)
      throw new RuntimeNotFoundError(
        `container "${target.container}" in pod "${target.pod}" is not available`,
      );
    const source = options.previous ? container.previous : container.lines;
    if (!source)
      throw new RuntimeNotFoundError(
        `previous terminated container "${target.container}" in pod "${target.pod}" not found`,
      );
    let budget = options.limitBytes ?? Infinity;
    const write = (line: { at: string; text: string }): boolean => {
      const text = `${options.timestamps ? `${line.at} ` : ""}${line.text}\n`;
      const bytes = Buffer.from(text).subarray(0, budget);
      budget -= bytes.length;
      if (bytes.length > 0) out.write(bytes);
      return budget > 0;
    };
    let sent = options.tailLines !== undefined ? Math.max(0, source.length - options.tailLines) : 0;
    for (; sent < source.length; sent++) if (!write(source[sent]!)) return;
    if (!options.follow || options.previous) return;
    while (container.running && !signal.aborted) {
      await new Promise<void>((resolve) => {
        const wake = () => {
          this.#changes.off("change", wake);
          signal.removeEventListener("abort", wake);
          resolve();
        };
        this.#changes.on("change", wake);
        signal.addEventListener("abort", wake);
      });
      for (; sent < container.lines.length; sent++) if (!write(container.lines[sent]!)) return;
    }
  }
}
