// The terminal of an exec with a tty. `script` (util-linux) gives the command a pseudo-terminal
// inside the sandbox; its master stays with script, whose own stdin is a pipe, so the window
// size cannot travel through it. The size is set on the pty's other end instead: the process
// script started holds it as fd 0, and TIOCSWINSZ there (`stty -F /proc/<pid>/fd/0`) changes
// the terminal's size and sends SIGWINCH to its foreground process group, as a resize through
// the master does. The first size a client sends (kubectl sends its terminal's at once) is
// applied before the command runs, so even `stty size` as the whole command sees it.

import { execFile } from "node:child_process";
import { readdir, readFile, readlink } from "node:fs/promises";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface TerminalSize {
  width: number;
  height: number;
}

/** How long an exec with a tty waits for the client's first size before it starts without one. */
export const INITIAL_SIZE_WAIT_MS = 1000;
/** How long a resize looks for the pty (script may not have opened it yet). */
const PTY_WAIT_MS = 2000;
const PTY_POLL_MS = 20;

/** A size as Go's remotecommand.TerminalSize (two uint16) accepts it; undefined otherwise. */
export function validSize(size: TerminalSize): TerminalSize | undefined {
  const ok = (n: number) => Number.isInteger(n) && n >= 0 && n <= 0xffff;
  return ok(size.width) && ok(size.height) ? size : undefined;
}

/** The sizes a client sends, read one at a time; the first may be waited for with a bound. */
export class TerminalSizes {
  readonly #iterator: AsyncIterator<TerminalSize>;
  #pending: Promise<IteratorResult<TerminalSize>> | undefined;

  constructor(sizes: AsyncIterable<TerminalSize>) {
    this.#iterator = sizes[Symbol.asyncIterator]();
  }

  /** The next valid size; undefined once the client's resize stream ends. */
  async next(): Promise<TerminalSize | undefined> {
    for (;;) {
      const pending = this.#pending ?? this.#iterator.next();
      this.#pending = undefined;
      const result = await pending;
      if (result.done) return undefined;
      const size = validSize(result.value);
      if (size) return size;
    }
  }

  /** The first size if it comes within ms (else undefined, and next() still returns it later). */
  async first(ms: number, signal: AbortSignal): Promise<TerminalSize | undefined> {
    const pending = this.next();
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const late = new Promise<"late">((resolve) => {
      timer = setTimeout(() => resolve("late"), ms);
      onAbort = () => resolve("late");
      signal.addEventListener("abort", onAbort, { once: true });
    });
    try {
      const outcome = await Promise.race([pending, late]);
      if (outcome !== "late") return outcome;
    } finally {
      clearTimeout(timer);
      if (onAbort) signal.removeEventListener("abort", onAbort);
    }
    const kept: Promise<IteratorResult<TerminalSize>> = pending.then((size) =>
      size ? { done: false, value: size } : { done: true, value: undefined },
    );
    kept.catch(() => undefined); // a failure is seen by whoever calls next(), if anyone does
    this.#pending = kept;
    return undefined;
  }
}

/** The shell text script runs: the command, after setting the pty's size when one is known. */
export function ttyCommandLine(quotedCommand: string, size: TerminalSize | undefined): string {
  if (!size) return quotedCommand;
  return `stty rows ${size.height} cols ${size.width} 2>/dev/null; ${quotedCommand}`;
}

async function parentOf(pid: number): Promise<number | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => undefined);
  if (stat === undefined) return undefined;
  // "pid (comm) state ppid …": comm may hold spaces and parentheses, so read after the last ")".
  const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  return Number.isInteger(ppid) ? ppid : undefined;
}

/** The first process below rootPid (breadth first) whose stdin is a pty: the command script runs. */
async function ptyHolder(rootPid: number): Promise<number | undefined> {
  const children = new Map<number, number[]>();
  for (const name of await readdir("/proc")) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    const parent = await parentOf(pid);
    if (parent === undefined) continue;
    children.set(parent, [...(children.get(parent) ?? []), pid]);
  }
  const queue = [...(children.get(rootPid) ?? [])];
  for (let pid = queue.shift(); pid !== undefined; pid = queue.shift()) {
    const stdin = await readlink(`/proc/${pid}/fd/0`).catch(() => "");
    if (/^\/dev\/pts\/\d+$/.test(stdin)) return pid;
    queue.push(...(children.get(pid) ?? []));
  }
  return undefined;
}

/** Sets the size of the pty the command below rootPid runs on; false when none was found in time. */
export async function resizePty(rootPid: number, size: TerminalSize, signal: AbortSignal): Promise<boolean> {
  for (let waited = 0; waited <= PTY_WAIT_MS && !signal.aborted; waited += PTY_POLL_MS) {
    const holder = await ptyHolder(rootPid);
    if (holder !== undefined) {
      await run("stty", [
        "-F",
        `/proc/${holder}/fd/0`,
        "rows",
        String(size.height),
        "cols",
        String(size.width),
      ]);
      return true;
    }
    await new Promise((resolve) => setTimeout(resolve, PTY_POLL_MS));
  }
  return false;
}
