// Runs each component of `csikit up` as its own child process and keeps it running, as a
// kubelet keeps a pod's containers running: a child that exits is started again after a
// backoff (doubling from 500 ms to 10 s, reset once it has run for 10 s), its output appended
// to <state-dir>/logs/<component>.log. Children get their own process group, so a Ctrl-C in
// the terminal reaches `up` alone and `up` stops them in order (SIGTERM, SIGKILL after a
// grace period). Their pids are recorded in <state-dir>/pids.json ({component: pid}) so a later
// `up` can end leftovers of a run that was itself killed with -9 (and tests can crash one).
// Each child also holds one end of a pipe whose other end only `up` holds (base/supervision.ts):
// when `up` is gone, however it ended, a csikit child reads end-of-file and stops; a command that
// is not csikit's (a user's driver) runs under a small shell that does the same for it.

import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { Socket } from "node:net";
import { readFile } from "node:fs/promises";
import {
  Backoff,
  isErrno,
  isRecord,
  type Logger,
  CsikitError,
  SUPERVISOR_FD,
  SUPERVISOR_FD_ENV,
  SUPERVISOR_GONE_GRACE_MS,
  writeAtomic,
} from "../base/index.ts";

export interface ProcessSpec {
  /** Component name: its log file and its line in messages. */
  name: string;
  /** Program and arguments. */
  command: string;
  args: readonly string[];
  env?: Readonly<Record<string, string>>;
  logFile: string;
  /**
   * Whether the command itself stops when the supervisor's pipe closes (a csikit subcommand
   * does). Otherwise a shell watches the pipe for it. Default false.
   */
  watchesSupervisor?: boolean;
}

/**
 * Runs "$@" with the supervisor's pipe (fd 3) watched on its behalf: the command never sees the
 * pipe; SIGTERM/SIGINT to the shell are passed on; once the pipe reads end-of-file (the
 * supervisor is gone) the command gets SIGTERM, then SIGKILL after the grace period. The shell
 * exits with the command's status.
 */
const WATCH_FOR_COMMAND = `
unset ${SUPERVISOR_FD_ENV}
"$@" 3<&- &
command=$!
trap 'kill -TERM "$command" 2>/dev/null' TERM INT
(read -r _ <&3; kill -TERM "$command" 2>/dev/null; sleep ${SUPERVISOR_GONE_GRACE_MS / 1000}; kill -KILL "$command" 2>/dev/null) &
watcher=$!
exec 3<&-
status=0
while kill -0 "$command" 2>/dev/null; do wait "$command"; status=$?; done
kill "$watcher" 2>/dev/null
exit "$status"
`;

const RESTART_INITIAL_MS = 500;
const RESTART_MAX_MS = 10_000;
const HEALTHY_AFTER_MS = 10_000;
const STOP_GRACE_MS = 10_000;

export interface SupervisedProcess {
  readonly name: string;
  readonly pid: number | undefined;
  /** How many times it was started (1 = never restarted). */
  readonly starts: number;
  /** Sends SIGKILL to the running child (tests: a crash); the supervisor restarts it. */
  kill(signal?: NodeJS.Signals): void;
  /** Stops it for good: SIGTERM, SIGKILL after the grace period; resolves once it exited. */
  stop(): Promise<void>;
}

class Supervised implements SupervisedProcess {
  readonly #spec: ProcessSpec;
  readonly #logger: Logger;
  readonly #onChange: () => void;
  readonly #backoff = new Backoff({ initial: RESTART_INITIAL_MS, max: RESTART_MAX_MS });
  #child: ChildProcess | undefined;
  #exited: Promise<void> = Promise.resolve();
  #stopping = false;
  #restartTimer: NodeJS.Timeout | undefined;
  starts = 0;

  constructor(spec: ProcessSpec, logger: Logger, onChange: () => void) {
    this.#spec = spec;
    this.#logger = logger;
    this.#onChange = onChange;
  }

  get name(): string {
    return this.#spec.name;
  }
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  start(): void {
    if (this.#stopping) return;
    const log = openSync(this.#spec.logFile, "a", 0o600);
    const startOffset = fstatSync(log).size;
    const { command, args } = this.#spec.watchesSupervisor
      ? this.#spec
      : {
          command: "/bin/sh",
          args: ["-c", WATCH_FOR_COMMAND, this.name, this.#spec.command, ...this.#spec.args],
        };
    let child: ChildProcess;
    try {
      child = spawn(command, args, {
        // fd 3: the supervisor's pipe (see the header).
        stdio: ["ignore", log, log, "pipe"],
        detached: true,
        env: { ...process.env, ...this.#spec.env, [SUPERVISOR_FD_ENV]: String(SUPERVISOR_FD) },
      });
    } finally {
      closeSync(log);
    }
    this.starts += 1;
    this.#child = child;
    const startedAt = Date.now();
    // up's end stays open while up lives; it must neither keep up running nor wait for the
    // child's descendants (which may have inherited the child's end) once the child exited.
    const pipe = child.stdio[SUPERVISOR_FD];
    if (pipe instanceof Socket) pipe.unref();
    child.once("exit", () => pipe?.destroy());
    this.#exited = new Promise<void>((resolve) => {
      child.once("error", (error) => {
        this.#logger.warn("component failed to start", { component: this.name, reason: error.message });
      });
      child.once("close", (code, signal) => {
        this.#child = undefined;
        resolve();
        this.#onChange();
        if (this.#stopping) return;
        if (Date.now() - startedAt >= HEALTHY_AFTER_MS) this.#backoff.reset();
        const delay = this.#backoff.next();
        this.#logger.warn("component exited; restarting", {
          component: this.name,
          code,
          signal,
          restartInMs: delay,
          log: this.#spec.logFile,
          // Why it exited, without opening the log: its last lines.
          lastLines: logTail(this.#spec.logFile, startOffset),
        });
        this.#restartTimer = setTimeout(() => this.start(), delay);
      });
    });
    this.#onChange();
  }

  kill(signal: NodeJS.Signals = "SIGKILL"): void {
    // A wrapped command: the shell and the command together (the child leads its own group).
    if (!this.#spec.watchesSupervisor && this.#child?.pid) killGroup(this.#child.pid, signal);
    else this.#child?.kill(signal);
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    clearTimeout(this.#restartTimer);
    const child = this.#child;
    if (!child) return;
    child.kill("SIGTERM");
    // Past the grace period the whole group, so that nothing it started outlives it.
    const timer = setTimeout(() => (child.pid ? killGroup(child.pid, "SIGKILL") : undefined), STOP_GRACE_MS);
    await this.#exited;
    clearTimeout(timer);
  }
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

/** The set of supervised children of one `up`. */
export class Supervisor {
  readonly #logger: Logger;
  readonly #pidsFile: string;
  readonly #children = new Map<string, Supervised>();

  constructor(options: { logger: Logger; pidsFile: string }) {
    this.#logger = options.logger;
    this.#pidsFile = options.pidsFile;
  }

  start(spec: ProcessSpec): SupervisedProcess {
    if (this.#children.has(spec.name))
      throw new CsikitError("CSIKIT_ERR_COMPONENT", `component ${spec.name} is already running`);
    const child = new Supervised(spec, this.#logger, () => void this.#recordPids());
    this.#children.set(spec.name, child);
    child.start();
    return child;
  }

  get(name: string): SupervisedProcess | undefined {
    return this.#children.get(name);
  }

  /** Stops the named children together (each SIGTERM → exit). */
  async stop(names: readonly string[]): Promise<void> {
    await Promise.all(names.map((name) => this.#children.get(name)?.stop() ?? Promise.resolve()));
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.#children.values()].map((child) => child.stop()));
    await this.#recordPids();
  }

  #recording: Promise<void> = Promise.resolve();
  async #recordPids(): Promise<void> {
    const pids = Object.fromEntries(
      [...this.#children.values()].flatMap((c) => (c.pid ? [[c.name, c.pid]] : [])),
    );
    this.#recording = this.#recording.then(() =>
      writeAtomic(this.#pidsFile, JSON.stringify(pids) + "\n", 0o600).catch(() => {}),
    );
    await this.#recording;
  }
}

/**
 * Ends children a previous `up` on this state dir left running (it was killed with -9): each
 * recorded pid whose command line still names the state dir gets SIGKILL.
 */
export async function killLeftovers(pidsFile: string, stateDir: string): Promise<number> {
  let pids: unknown;
  try {
    pids = JSON.parse(await readFile(pidsFile, "utf8"));
  } catch (error) {
    if (isErrno(error, "ENOENT")) return 0;
    return 0;
  }
  let killed = 0;
  for (const pid of isRecord(pids) ? Object.values(pids) : []) {
    if (typeof pid !== "number") continue;
    let cmdline: string;
    try {
      cmdline = (await readFile(`/proc/${pid}/cmdline`, "utf8")).replaceAll("\0", " ");
    } catch {
      continue;
    }
    if (!cmdline.includes(stateDir)) continue;
    try {
      process.kill(pid, "SIGKILL");
      killed += 1;
    } catch {
      // already gone
    }
  }
  return killed;
}

/** Bytes of a crashed run's log shown with its restart warning. */
const TAIL_BYTES = 600;

/** The last lines a run wrote to its log (from `from`), at most TAIL_BYTES; "" when unreadable. */
export function logTail(logFile: string, from: number): string {
  let fd: number | undefined;
  try {
    fd = openSync(logFile, "r");
    const size = fstatSync(fd).size;
    const start = Math.max(from, size - TAIL_BYTES);
    const buffer = Buffer.alloc(size - start);
    readSync(fd, buffer, 0, buffer.length, start);
    const text = buffer.toString("utf8");
    // Drop a first line cut in the middle.
    const cut = start > from ? text.slice(text.indexOf("\n") + 1) : text;
    return cut.trimEnd();
  } catch {
    return "";
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
