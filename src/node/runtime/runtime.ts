// The node's container runtime: a pod worker per pod that has something to run (a container
// or init container with a command), driven by the reconciler once the pod's CSI volumes are
// published; and the ContainerStreams the kubelet's streaming endpoints use — logs from the
// CRI log files, exec by entering a running container's namespaces with nsenter (or, for a
// container with no command, in a fresh sandbox with its mounts, user and environment).

import { execFile, spawn } from "node:child_process";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { GVR, type ConfigMap, type Pod, type Secret } from "../../api/index.ts";
import { errorMessage, type Clock } from "../../base/index.ts";
import type { RuntimeContext } from "./context.ts";
import { CrashLoopBackoff, INITIAL_BACKOFF_MS, MAX_BACKOFF_MS } from "./backoff.ts";
import { containerLogPath, LogFormatter, readLogFile } from "./cri-log.ts";
import { ObjectManager } from "./object-manager.ts";
import { makeRShared } from "./propagation.ts";
import { PodWorker } from "./pod-worker.ts";
import type { HostVolume, VolumeSetupContext } from "./pod-volumes.ts";
import { bwrapArgs, execArgs, sandboxUnavailable } from "./sandbox.ts";
import { INITIAL_SIZE_WAIT_MS, resizePty, TerminalSizes, ttyCommandLine } from "./terminal.ts";
import {
  RuntimeNotFoundError,
  type ContainerStreams,
  type ContainerTarget,
  type ExecIO,
  type LogOptions,
} from "./types.ts";

export interface PodRuntimeOptions {
  context: RuntimeContext;
  /** Run pods' commands (`--pod-processes`); off: every pod is left to the volume-only path. */
  enabled: boolean;
  /** The clock of restarts, back-off, grace periods and log timestamps. Default the node's. */
  clock?: Clock;
  /** Crash-loop back-off (kubelet: 10s doubling to 5m). */
  backoffInitialMs?: number;
  backoffMaxMs?: number;
  /** Where container logs go (the kubelet's /var/log/pods). Default <root>/logs/pods. */
  logsDir?: string;
  hostIP?: string;
  /** Host paths no sandbox sees besides the node's root dir. */
  hiddenPaths?: string[];
  /**
   * How often a running pod's configMap, secret, downwardAPI and projected volumes are
   * written again from the current objects besides on a watched change (the kubelet's
   * --sync-frequency, 1m).
   */
  volumeRefreshMs?: number;
  /** The RecursiveReadOnlyMounts gate (KEP-3857). Default on, as at every release csikit acts as. */
  recursiveReadOnlyMounts?: boolean;
}

/** A ServiceAccount token is requested again after 80% of its lifetime (the kubelet's token manager). */
const TOKEN_REFRESH_FRACTION = 0.8;

const run = promisify(execFile);

function shellQuote(argv: string[]): string {
  return argv.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(" ");
}

export class PodRuntime implements ContainerStreams {
  readonly #o: PodRuntimeOptions;
  readonly #clock: Clock;
  readonly #backoff: CrashLoopBackoff;
  readonly #workers = new Map<string, PodWorker>();
  readonly #objectManager: ObjectManager;
  /** The node's root dir made rshared (resolves whether that took a bind to undo at stop). */
  #sharedRoot: Promise<void> | undefined;
  #rootBound = false;
  readonly logsDir: string;

  constructor(options: PodRuntimeOptions) {
    this.#o = options;
    this.#clock = options.clock ?? options.context.clock;
    this.#backoff = new CrashLoopBackoff(
      options.backoffInitialMs ?? INITIAL_BACKOFF_MS,
      options.backoffMaxMs ?? MAX_BACKOFF_MS,
    );
    this.logsDir = options.logsDir ?? join(options.context.paths.root, "logs", "pods");
    this.#objectManager = new ObjectManager({
      client: options.context.client,
      clock: options.context.clock,
      logger: options.context.logger,
      onChange: (uids) => {
        for (const uid of uids) this.#workers.get(uid)?.refreshVolumes();
      },
    });
  }

  /** Whether this runtime runs the pod (else it is Running with nothing executed, as before). */
  handles(pod: Pod): boolean {
    if (this.#workers.has(pod.metadata?.uid ?? "")) return true;
    if (!this.#o.enabled) return false;
    const spec = pod.spec;
    return [...(spec?.initContainers ?? []), ...(spec?.containers ?? [])].some(
      (c) => (c.command ?? []).length > 0,
    );
  }

  /** Starts or advances an active pod whose CSI volumes are all published. */
  sync(pod: Pod, csiVolumes: ReadonlyMap<string, HostVolume>): void {
    const uid = pod.metadata?.uid ?? "";
    let worker = this.#workers.get(uid);
    if (!worker) {
      worker = new PodWorker(pod, {
        context: this.#o.context,
        clock: this.#clock,
        backoff: this.#backoff,
        logsRoot: this.logsDir,
        hostIP: this.#o.hostIP ?? "127.0.0.1",
        objects: this.#objects(pod),
        hidden: [this.#o.context.paths.root, ...(this.#o.hiddenPaths ?? [])],
        volumeRefreshMs: this.#o.volumeRefreshMs ?? 60_000,
        shareNodeRoot: () => (this.#sharedRoot ??= this.#shareRoot()),
        recursiveReadOnlyMounts: this.#o.recursiveReadOnlyMounts ?? true,
      });
      this.#workers.set(uid, worker);
      this.#objectManager.register(pod);
    }
    worker.update(pod, csiVolumes);
  }

  /**
   * A pod this runtime does not run (no command anywhere), with its published CSI volumes: an
   * exec into it starts a worker then (its containers stay command-less, their volumes are set
   * up for the exec's sandbox).
   */
  track(pod: Pod, csiVolumes: ReadonlyMap<string, HostVolume>): void {
    this.#tracked.set(pod.metadata?.uid ?? "", { pod, volumes: csiVolumes });
  }

  readonly #tracked = new Map<string, { pod: Pod; volumes: ReadonlyMap<string, HostVolume> }>();

  /** Stops a terminating pod's containers (SIGTERM, then SIGKILL after its grace period). */
  terminate(pod: Pod): void {
    this.#workers.get(pod.metadata?.uid ?? "")?.terminate(pod);
  }

  /** Whether the pod's processes or own volumes are still there (its CSI volumes must stay). */
  busy(uid: string): boolean {
    return this.#workers.get(uid)?.busy ?? false;
  }

  /** Pods gone from the API: their containers stopped, then forgotten with their logs. */
  prune(live: ReadonlySet<string>): void {
    for (const uid of this.#tracked.keys()) if (!live.has(uid)) this.#tracked.delete(uid);
    for (const [uid, worker] of this.#workers) {
      if (live.has(uid)) continue;
      worker.terminate(undefined);
      if (!worker.busy) {
        this.#workers.delete(uid);
        this.#objectManager.unregister(uid);
        this.#backoff.forgetPod(`${uid}/`);
        void rm(worker.logDir, { recursive: true, force: true });
      }
    }
  }

  /** Removes a deleted pod's logs (before its final delete). */
  async cleanup(uid: string): Promise<void> {
    const worker = this.#workers.get(uid);
    if (!worker) return;
    await rm(worker.logDir, { recursive: true, force: true });
  }

  /** SIGKILLs every container (the node is stopping). */
  async stop(): Promise<void> {
    await Promise.all([...this.#workers.values()].map((w) => w.kill()));
    await this.#objectManager.stop();
    // The bind made for HostToContainer goes if nothing is mounted below it any more (volumes
    // left for a restarted node keep it, as a kubelet's root stays shared).
    if (this.#rootBound)
      await run("umount", [this.#o.context.paths.root]).then(
        () => (this.#rootBound = false),
        () => undefined,
      );
  }

  async #shareRoot(): Promise<void> {
    try {
      this.#rootBound = await makeRShared(this.#o.context.paths.root);
    } catch (error) {
      this.#sharedRoot = undefined; // asked again by the next container that needs it
      throw error;
    }
  }

  #objects(pod: Pod): VolumeSetupContext["objects"] {
    const { client } = this.#o.context;
    const namespace = pod.metadata?.namespace ?? "";
    // Tokens are kept until 80% of their lifetime has passed, so a volume refresh does not ask
    // for (and write) a new one each time.
    const tokens = new Map<string, { token: string; refreshAt: number }>();
    const requestToken = async (
      serviceAccount: string,
      audience: string | undefined,
      expirationSeconds: number,
    ): Promise<string> => {
      const response = await client.request<{ status?: { token?: string } }>({
        method: "POST",
        path: client.resourcePath(GVR.serviceAccounts, {
          namespace,
          name: serviceAccount,
          subresource: "token",
        }),
        body: {
          apiVersion: "authentication.k8s.io/v1",
          kind: "TokenRequest",
          spec: {
            ...(audience ? { audiences: [audience] } : {}),
            expirationSeconds,
            boundObjectRef: {
              apiVersion: "v1",
              kind: "Pod",
              name: pod.metadata?.name ?? "",
              uid: pod.metadata?.uid ?? "",
            },
          },
        },
      });
      return response.status?.token ?? "";
    };
    return {
      configMap: (name) => this.#objectManager.get<ConfigMap>("configmap", namespace, name),
      secret: (name) => this.#objectManager.get<Secret>("secret", namespace, name),
      token: async (serviceAccount, audience, expirationSeconds) => {
        const key = JSON.stringify([serviceAccount, audience ?? "", expirationSeconds]);
        const now = this.#clock.now();
        const cached = tokens.get(key);
        if (cached && now < cached.refreshAt) return cached.token;
        const token = await requestToken(serviceAccount, audience, expirationSeconds);
        tokens.set(key, { token, refreshAt: now + expirationSeconds * 1000 * TOKEN_REFRESH_FRACTION });
        return token;
      },
    };
  }

  #worker(target: ContainerTarget): PodWorker {
    const matches = (pod: Pod): boolean => {
      const meta = pod.metadata ?? {};
      if (meta.namespace !== target.namespace || meta.name !== target.pod) return false;
      return target.podUID === undefined || target.podUID === "" || target.podUID === meta.uid;
    };
    for (const worker of this.#workers.values()) if (matches(worker.pod)) return worker;
    if (this.#o.enabled) {
      for (const { pod, volumes } of this.#tracked.values()) {
        if (!matches(pod) || pod.metadata?.deletionTimestamp) continue;
        this.sync(pod, volumes);
        const worker = this.#workers.get(pod.metadata?.uid ?? "");
        if (worker) return worker;
      }
    }
    throw new RuntimeNotFoundError(
      `pod "${target.pod}" in namespace "${target.namespace}" has no running containers on this node`,
    );
  }

  async exec(target: ContainerTarget, command: string[], io: ExecIO, signal: AbortSignal): Promise<number> {
    if (command.length === 0) throw new Error("you must specify at least one command for the container");
    const worker = this.#worker(target);
    const running = worker.running(target.container);
    let file: string;
    let args: string[];
    let env: Record<string, string>;
    // A tty: the client's first size (if it comes soon) is set before the command runs.
    const sizes = io.tty && io.resize ? new TerminalSizes(io.resize) : undefined;
    const initial = await sizes?.first(INITIAL_SIZE_WAIT_MS, signal).catch(() => undefined);
    const argv = io.tty
      ? [
          "script",
          "--quiet",
          "--return",
          "--flush",
          "--command",
          ttyCommandLine(shellQuote(command), initial),
          "/dev/null",
        ]
      : command;
    if (running) {
      const pid = await running.process.pid;
      if (pid === undefined) throw new RuntimeNotFoundError(`container "${target.container}" is not running`);
      file = "nsenter";
      args = execArgs(pid, running.user, running.workingDir, argv);
      env = { ...running.process.env };
    } else {
      await worker.volumesReady(signal);
      const idle = await worker.idleSandbox(target.container);
      if (!idle) throw new RuntimeNotFoundError(`container "${target.container}" is not running`);
      const unavailable = await sandboxUnavailable();
      if (unavailable) throw new Error(`cannot run the command in a sandbox: ${unavailable}`);
      file = "bwrap";
      args = bwrapArgs({ ...idle, argv });
      // bwrap reports its status on fd 3; nobody needs it for an exec.
      args = args.filter((a, i) => !(a === "--json-status-fd" || args[i - 1] === "--json-status-fd"));
      env = idle.env;
    }
    if (io.tty) env = { TERM: "xterm", ...env };
    const child = spawn(file, args, {
      env,
      stdio: [io.stdin ? "pipe" : "ignore", io.stdout ? "pipe" : "ignore", io.stderr ? "pipe" : "ignore"],
      detached: true,
    });
    const kill = (): void => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
      } catch {
        // Gone already.
      }
    };
    signal.addEventListener("abort", kill, { once: true });
    if (io.stdin && child.stdin) {
      io.stdin.pipe(child.stdin);
      child.stdin.on("error", () => undefined);
    }
    if (io.stdout && child.stdout) child.stdout.pipe(io.stdout, { end: false });
    if (io.stderr && child.stderr) child.stderr.pipe(io.stderr, { end: false });
    if (sizes && child.pid !== undefined) void this.#followResizes(child.pid, sizes, signal);
    try {
      return await new Promise<number>((resolve, reject) => {
        child.once("error", reject);
        child.once("close", (code, sig) => resolve(code ?? 128 + (sig === "SIGKILL" ? 9 : 15)));
      });
    } finally {
      signal.removeEventListener("abort", kill);
      if (io.stdin && child.stdin) io.stdin.unpipe(child.stdin);
    }
  }

  /** Applies each later size to the exec's pty, until the client's resize stream ends. */
  async #followResizes(rootPid: number, sizes: TerminalSizes, signal: AbortSignal): Promise<void> {
    const { logger } = this.#o.context;
    try {
      for (let size = await sizes.next(); size && !signal.aborted; size = await sizes.next()) {
        // One failed resize (the process holding the pty just exited) must not end the others.
        await resizePty(rootPid, size, signal).then(
          (found) => found || logger.info(4, "exec resize: no terminal found", { ...size }),
          (error: unknown) => logger.info(4, "exec resize failed", { err: errorMessage(error) }),
        );
      }
    } catch (error) {
      logger.info(4, "exec resize: the client's sizes ended with an error", { err: errorMessage(error) });
    }
  }

  async logs(
    target: ContainerTarget,
    options: LogOptions,
    out: NodeJS.WritableStream,
    signal: AbortSignal,
  ): Promise<void> {
    const worker = this.#worker(target);
    const container = worker.container(target.container);
    if (!container)
      throw new RuntimeNotFoundError(
        `container "${target.container}" in pod "${target.pod}" is not available`,
      );
    if (container.idle) return;
    const instance = options.previous ? container.started - 2 : container.started - 1;
    if (instance < 0) {
      if (options.previous)
        throw new RuntimeNotFoundError(
          `previous terminated container "${target.container}" in pod "${target.pod}" not found`,
        );
      throw new RuntimeNotFoundError(
        `container "${target.container}" in pod "${target.pod}" is waiting to start`,
      );
    }
    const path = containerLogPath(worker.logDir, target.container, instance);
    const live = !options.previous ? container.log : undefined;
    const sinceMs =
      options.sinceTime !== undefined
        ? Date.parse(options.sinceTime)
        : options.sinceSeconds !== undefined
          ? this.#clock.now() - options.sinceSeconds * 1000
          : undefined;
    const formatter = new LogFormatter({
      ...(options.timestamps ? { timestamps: true } : {}),
      ...(sinceMs !== undefined && !Number.isNaN(sinceMs) ? { sinceMs } : {}),
      ...(options.limitBytes !== undefined ? { limitBytes: options.limitBytes } : {}),
    });
    // A follower reads up to what is written now, then every later write, until the instance ends.
    let changed: (() => void) | undefined;
    const unsubscribe = live?.onChange(() => changed?.());
    try {
      const until = live && !live.closed ? live.bytes : undefined;
      const first = await readLogFile(path, 0, until).catch((error: unknown) => {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return { lines: [], end: 0 };
        throw error;
      });
      let lines = formatter.lines(first.lines);
      if (options.tailLines !== undefined) lines = lines.slice(Math.max(0, lines.length - options.tailLines));
      if (!(await formatter.send(lines, out))) return;
      if (!options.follow || !live) return;
      let offset = first.end;
      for (;;) {
        if (signal.aborted) return;
        const closed = live.closed;
        const next = await readLogFile(path, offset, closed ? undefined : live.bytes);
        offset = next.end;
        if (!(await formatter.send(formatter.lines(next.lines), out))) return;
        if (closed) return;
        if (offset < live.bytes) continue;
        await new Promise<void>((resolve) => {
          changed = resolve;
          signal.addEventListener("abort", () => resolve(), { once: true });
          if (live.closed || offset < live.bytes) resolve();
        });
        changed = undefined;
      }
    } finally {
      unsubscribe?.();
    }
  }
}
