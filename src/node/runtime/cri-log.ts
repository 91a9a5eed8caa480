// Container logs as the CRI runtimes write them and the kubelet reads them: one file per
// container instance at <logs>/<namespace>_<pod>_<uid>/<container>/<restartCount>.log, each
// line "<RFC3339Nano> <stdout|stderr> <F|P> <text>" (P: a partial line, continued by the next
// entry of the same stream; lines longer than 16 KiB are split as containerd splits them).
// The reader gives the kubelet's /containerLogs view: the text only (or prefixed with its
// timestamp), with tailLines, sinceTime/sinceSeconds, limitBytes and follow.

import { closeSync, openSync, writeSync } from "node:fs";
import { open, readFile } from "node:fs/promises";
import { join } from "node:path";
import { StringDecoder } from "node:string_decoder";

/** containerd's maximum size of one log entry's text before it is split (16 KiB). */
export const MAX_LOG_LINE = 16 * 1024;

export function podLogDir(logsRoot: string, namespace: string, pod: string, uid: string): string {
  return join(logsRoot, `${namespace}_${pod}_${uid}`);
}

export function containerLogPath(podDir: string, container: string, restartCount: number): string {
  return join(podDir, container, `${restartCount}.log`);
}

/** Go's time.RFC3339Nano: fraction without trailing zeros, "Z" for UTC. */
export function rfc3339Nano(ms: number, extraNanos = 0): string {
  const iso = new Date(Math.floor(ms)).toISOString(); // 2026-01-02T03:04:05.678Z
  const nanos = (Math.floor(ms) % 1000) * 1_000_000 + (extraNanos % 1_000_000);
  const fraction = String(nanos).padStart(9, "0").replace(/0+$/, "");
  return `${iso.slice(0, 19)}${fraction ? `.${fraction}` : ""}Z`;
}

type Stream = "stdout" | "stderr";

/** One container instance's log file, written synchronously so readers see an exact offset. */
export class CriLogWriter {
  readonly path: string;
  readonly #fd: number;
  readonly #now: () => number;
  readonly #decoders = { stdout: new StringDecoder("utf8"), stderr: new StringDecoder("utf8") };
  readonly #listeners = new Set<() => void>();
  #closed = false;
  #bytes = 0;
  #seq = 0;

  constructor(path: string, now: () => number) {
    this.path = path;
    this.#now = now;
    this.#fd = openSync(path, "a", 0o640);
  }

  /** Bytes written so far (a follower reads the file up to here, then listens). */
  get bytes(): number {
    return this.#bytes;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Called after every write and once when closed. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  write(stream: Stream, chunk: Buffer): void {
    if (this.#closed) return;
    const text = this.#decoders[stream].write(chunk);
    this.#pending[stream] += text;
    this.#flush(stream, false);
  }

  readonly #pending = { stdout: "", stderr: "" };

  #flush(stream: Stream, final: boolean): void {
    let buffer = this.#pending[stream];
    let out = "";
    const stamp = (): string => rfc3339Nano(this.#now(), this.#seq++);
    for (;;) {
      const newline = buffer.indexOf("\n");
      if (newline >= 0 && newline <= MAX_LOG_LINE) {
        out += `${stamp()} ${stream} F ${buffer.slice(0, newline)}\n`;
        buffer = buffer.slice(newline + 1);
      } else if (buffer.length > MAX_LOG_LINE) {
        out += `${stamp()} ${stream} P ${buffer.slice(0, MAX_LOG_LINE)}\n`;
        buffer = buffer.slice(MAX_LOG_LINE);
      } else break;
    }
    // A last line without its newline at exit is written whole, as a runtime does at EOF.
    if (final && buffer !== "") {
      out += `${stamp()} ${stream} F ${buffer}\n`;
      buffer = "";
    }
    this.#pending[stream] = buffer;
    if (out !== "") {
      const data = Buffer.from(out, "utf8");
      writeSync(this.#fd, data);
      this.#bytes += data.length;
      for (const listener of this.#listeners) listener();
    }
  }

  close(): void {
    if (this.#closed) return;
    for (const stream of ["stdout", "stderr"] as const) {
      this.#pending[stream] += this.#decoders[stream].end();
      this.#flush(stream, true);
    }
    this.#closed = true;
    closeSync(this.#fd);
    for (const listener of this.#listeners) listener();
    this.#listeners.clear();
  }
}

export interface LogEntry {
  time: string;
  timeMs: number;
  stream: Stream;
  partial: boolean;
  text: string;
}

export function parseLogLine(line: string): LogEntry | undefined {
  const first = line.indexOf(" ");
  const second = line.indexOf(" ", first + 1);
  const third = line.indexOf(" ", second + 1);
  if (first < 0 || second < 0) return undefined;
  const stream = line.slice(first + 1, second);
  if (stream !== "stdout" && stream !== "stderr") return undefined;
  const tag = third < 0 ? line.slice(second + 1) : line.slice(second + 1, third);
  const time = line.slice(0, first);
  const timeMs = Date.parse(time);
  if (Number.isNaN(timeMs)) return undefined;
  return { time, timeMs, stream, partial: tag === "P", text: third < 0 ? "" : line.slice(third + 1) };
}

export interface ReadOptions {
  tailLines?: number;
  timestamps?: boolean;
  /** Only entries at or after this time (ms). */
  sinceMs?: number;
  limitBytes?: number;
}

/**
 * Formats complete lines of a CRI log for a reader: partial entries joined with the rest of
 * their line, a timestamp (the line's first entry's) when asked.
 */
export class LogFormatter {
  readonly #options: ReadOptions;
  readonly #partial = { stdout: "", stderr: "" };
  readonly #partialTime = { stdout: "", stderr: "" };
  #sent = 0;

  constructor(options: ReadOptions) {
    this.#options = options;
  }

  /** Whether limitBytes is reached. */
  get full(): boolean {
    return this.#options.limitBytes !== undefined && this.#sent >= this.#options.limitBytes;
  }

  /** The output lines of these raw file lines (without limitBytes applied). */
  lines(raw: string[]): { time: number; text: string }[] {
    const out: { time: number; text: string }[] = [];
    for (const line of raw) {
      const entry = parseLogLine(line);
      if (!entry) continue;
      if (this.#options.sinceMs !== undefined && entry.timeMs < this.#options.sinceMs) continue;
      if (this.#partialTime[entry.stream] === "") this.#partialTime[entry.stream] = entry.time;
      if (entry.partial) {
        this.#partial[entry.stream] += entry.text;
        continue;
      }
      const text = this.#partial[entry.stream] + entry.text + "\n";
      const time = this.#partialTime[entry.stream];
      this.#partial[entry.stream] = "";
      this.#partialTime[entry.stream] = "";
      out.push({ time: entry.timeMs, text: this.#options.timestamps ? `${time} ${text}` : text });
    }
    return out;
  }

  /** Writes lines to out, cut at limitBytes; resolves false once the limit is reached. */
  async send(lines: { text: string }[], out: NodeJS.WritableStream): Promise<boolean> {
    for (const { text } of lines) {
      let data = Buffer.from(text, "utf8");
      const limit = this.#options.limitBytes;
      if (limit !== undefined) {
        if (this.#sent >= limit) return false;
        if (this.#sent + data.length > limit) data = data.subarray(0, limit - this.#sent);
      }
      this.#sent += data.length;
      if (!out.write(data)) await new Promise<void>((resolve) => out.once("drain", resolve));
    }
    return !this.full;
  }
}

/** The file's complete lines, and the byte offset after the last one. */
export async function readLogFile(
  path: string,
  from = 0,
  to?: number,
): Promise<{ lines: string[]; end: number }> {
  if (to !== undefined && to <= from) return { lines: [], end: from };
  let data: Buffer;
  if (from === 0 && to === undefined) {
    data = await readFile(path);
  } else {
    const handle = await open(path, "r");
    try {
      const length = to !== undefined ? to - from : (await handle.stat()).size - from;
      data = Buffer.alloc(Math.max(0, length));
      if (length > 0) await handle.read(data, 0, length, from);
    } finally {
      await handle.close();
    }
  }
  const last = data.lastIndexOf(0x0a);
  if (last < 0) return { lines: [], end: from };
  const text = data.subarray(0, last).toString("utf8");
  return { lines: text === "" ? [""] : text.split("\n"), end: from + last + 1 };
}
