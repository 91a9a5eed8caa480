// One pod's containers on this node, as the kubelet's pod worker runs them: volumes set up,
// init containers one after another (a failure restarts it, or fails the pod under
// restartPolicy Never), then every container; an exit restarts the container as the restart
// policy says, through the crash-loop back-off; each change written to the pod's status.
// While the pod runs, its configMap, secret, downwardAPI and projected volumes are written
// again when an object they use changes (refreshVolumes), when its labels or annotations do,
// and every volumeRefreshMs (the kubelet's remount on pod sync). terminate() stops the containers (SIGTERM, SIGKILL after the grace period) and tears the
// pod's own volumes down; `settled` tells the reconciler when the pod's CSI volumes may go.

import { execFile } from "node:child_process";
import { mkdir, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { GVR, type Container, type Pod } from "../../api/index.ts";
import { errorMessage, type Clock } from "../../base/index.ts";
import { objectKey } from "../../kube/index.ts";
import type { RuntimeContext } from "./context.ts";
import { goDuration, type CrashLoopBackoff } from "./backoff.ts";
import { ContainerProcess, type Exit } from "./container-process.ts";
import { containerLogPath, CriLogWriter, podLogDir } from "./cri-log.ts";
import { buildEnv, DEFAULT_PATH, expand, expandCommand } from "./env.ts";
import {
  refreshPodVolumes,
  setUpPodVolumes,
  unmountPodTmpfs,
  tearDownPodVolumes,
  type HostVolume,
  type VolumeSetupContext,
} from "./pod-volumes.ts";
import { ContainerCreateError, ensureHostToContainer } from "./propagation.ts";
import { resolveSubPath } from "./subpath.ts";
import { execArgs, sandboxUnavailable, type SandboxMount, type SandboxUser } from "./sandbox.ts";
import {
  resolveRecursiveReadOnly,
  volumeMountStatuses,
  type VolumeMountStatus,
} from "./recursive-read-only.ts";
import { podStatus, type ContainerState, type ContainerView } from "./status.ts";

/** Minimum grace period of a kill, in seconds (the kubelet's minimumGracePeriodInSeconds). */
const MIN_GRACE_SECONDS = 2;
/** Retry period of a pod whose volumes or config could not be set up. */
const SETUP_RETRY_MS = 2000;

export interface WorkerDeps {
  context: RuntimeContext;
  clock: Clock;
  backoff: CrashLoopBackoff;
  logsRoot: string;
  hostIP: string;
  objects: VolumeSetupContext["objects"];
  /** Host paths no container may see. */
  hidden: string[];
  /** Period of the file volumes' refresh besides the one a change triggers (the kubelet's sync frequency). */
  volumeRefreshMs: number;
  /** Makes the node's root dir rshared (once), for HostToContainer volumes below it. */
  shareNodeRoot: () => Promise<void>;
  /** The RecursiveReadOnlyMounts gate (the sandbox itself always can). */
  recursiveReadOnlyMounts: boolean;
}

interface Instance {
  process: ContainerProcess;
  startedAt: number;
  containerID: string;
}

export interface RunningContainer {
  process: ContainerProcess;
  user: SandboxUser;
  workingDir: string;
}

class ContainerRecord {
  readonly spec: Container;
  readonly init: boolean;
  restartCount = 0;
  /** Instances started so far (the next log file is <started>.log). */
  started = 0;
  state: ContainerState = { kind: "waiting", reason: "PodInitializing" };
  lastTerminated: Extract<ContainerState, { kind: "terminated" }> | undefined;
  instance: Instance | undefined;
  /** The running instance was killed for failing its liveness probe: it restarts unless policy Never. */
  livenessFailed = false;
  log: CriLogWriter | undefined;
  /** The container has no command: "running" with nothing executed (csikit's behaviour before processes). */
  readonly idle: boolean;

  /** The status' volumeMounts (RecursiveReadOnlyMounts gate on), fixed by the spec. */
  readonly volumeMounts: VolumeMountStatus[] | undefined;

  constructor(spec: Container, init: boolean, recursiveReadOnlyMounts: boolean) {
    this.spec = spec;
    this.init = init;
    this.idle = (spec.command ?? []).length === 0;
    this.volumeMounts = volumeMountStatuses(spec.volumeMounts, recursiveReadOnlyMounts);
  }

  view(): ContainerView {
    return {
      name: this.spec.name,
      image: typeof this.spec.image === "string" ? this.spec.image : "",
      restartCount: this.restartCount,
      containerID:
        this.instance?.containerID ?? (this.state.kind === "terminated" ? this.state.containerID : ""),
      state: this.state,
      ...(this.lastTerminated ? { lastTerminated: this.lastTerminated } : {}),
      ...(this.volumeMounts ? { volumeMounts: this.volumeMounts } : {}),
    };
  }
}

function asRecord(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === "object" ? (value as Record<string, unknown>) : {};
}
function num(value: unknown): number | undefined {
  return typeof value === "number" ? value : undefined;
}

export class PodWorker {
  readonly uid: string;
  #pod: Pod;
  readonly #deps: WorkerDeps;
  readonly #init: ContainerRecord[];
  readonly #main: ContainerRecord[];
  #csiVolumes = new Map<string, HostVolume>();
  #volumes: Map<string, HostVolume> | undefined;
  #startTime: number;
  #terminating = false;
  #finished = false;
  #tornDown = false;
  #kicking = false;
  #again = false;
  #timers = new Set<() => void>();
  #writing: Promise<void> = Promise.resolve();
  #lastWritten = "";
  #settledResolve!: () => void;
  /** Resolves once no process of the pod runs and its own volumes are torn down. */
  readonly settled: Promise<void>;
  readonly #envs = new Map<string, Record<string, string>>();
  readonly #events = new Set<string>();

  constructor(pod: Pod, deps: WorkerDeps) {
    this.uid = pod.metadata?.uid ?? "";
    this.#pod = pod;
    this.#deps = deps;
    const rro = deps.recursiveReadOnlyMounts;
    this.#init = (pod.spec?.initContainers ?? []).map((c) => new ContainerRecord(c, true, rro));
    this.#main = (pod.spec?.containers ?? []).map((c) => new ContainerRecord(c, false, rro));
    this.#startTime = deps.clock.now();
    this.settled = new Promise((resolve) => (this.#settledResolve = resolve));
  }

  get pod(): Pod {
    return this.#pod;
  }

  /** Whether the worker still holds the pod's volumes (processes, or own volumes not torn down). */
  get busy(): boolean {
    return !this.#tornDown;
  }

  get logDir(): string {
    const meta = this.#pod.metadata ?? {};
    return podLogDir(this.#deps.logsRoot, meta.namespace ?? "", meta.name ?? "", this.uid);
  }

  /** Latest pod and its published CSI volumes; starts or advances the containers. */
  update(pod: Pod, csiVolumes: ReadonlyMap<string, HostVolume>): void {
    const changed =
      pod.metadata?.resourceVersion !== this.#pod.metadata?.resourceVersion ||
      csiVolumes.size !== this.#csiVolumes.size ||
      !this.#seen;
    this.#seen = true;
    this.#pod = pod;
    this.#csiVolumes = new Map(csiVolumes);
    if (changed) this.kick();
  }

  #seen = false;

  /** An object the pod's volumes use changed: write them again on the next step. */
  refreshVolumes(): void {
    this.#refreshWanted = true;
    this.kick();
  }

  #refreshWanted = false;
  /** The pod's labels and annotations the downward API files were last written from. */
  #refreshedMetadata = "";

  terminate(pod: Pod | undefined): void {
    if (pod) this.#pod = pod;
    if (this.#terminating) return;
    this.#terminating = true;
    const meta = this.#pod.metadata;
    const grace = Math.max(
      MIN_GRACE_SECONDS,
      meta?.deletionGracePeriodSeconds ?? this.#pod.spec?.terminationGracePeriodSeconds ?? 30,
    );
    for (const record of [...this.#init, ...this.#main]) {
      if (record.idle && record.state.kind === "running") {
        record.state = {
          kind: "terminated",
          exitCode: 0,
          reason: "Completed",
          startedAt: record.state.startedAt,
          finishedAt: this.#deps.clock.now(),
          containerID: this.#containerID(record),
        };
      }
      const instance = record.instance;
      if (!instance) continue;
      this.#event("Normal", "Killing", `Stopping container ${record.spec.name}`, record);
      instance.process.signal("SIGTERM");
      this.#timer(grace * 1000, () => instance.process.signal("SIGKILL"));
    }
    this.kick();
  }

  /** SIGKILL now (the node is stopping); resolves when every process is gone. */
  async kill(): Promise<void> {
    this.#terminating = true;
    const exits: Promise<Exit>[] = [];
    for (const record of [...this.#init, ...this.#main]) {
      if (!record.instance) continue;
      record.instance.process.signal("SIGKILL");
      exits.push(record.instance.process.exited);
    }
    await Promise.all(exits);
    for (const cancel of this.#timers) cancel();
    this.#timers.clear();
    await this.#stepDone();
    if (!this.#tornDown) await unmountPodTmpfs(this.#deps.context.paths, this.uid);
  }

  /** Resolves once no step is running. */
  async #stepDone(): Promise<void> {
    while (this.#kicking) await new Promise((resolve) => setTimeout(resolve, 10));
  }

  /** The running instance of a container, for exec. */
  running(name: string): RunningContainer | undefined {
    const record =
      this.#main.find((r) => r.spec.name === name) ?? this.#init.find((r) => r.spec.name === name);
    if (!record?.instance) return undefined;
    return {
      process: record.instance.process,
      user: record.instance.process.spec.user,
      workingDir: record.instance.process.spec.workingDir,
    };
  }

  /** A container's restart count, log writer of the running instance, and whether it exists. */
  container(
    name: string,
  ): { restartCount: number; started: number; log: CriLogWriter | undefined; idle: boolean } | undefined {
    const record =
      this.#main.find((r) => r.spec.name === name) ?? this.#init.find((r) => r.spec.name === name);
    if (!record) return undefined;
    return {
      restartCount: record.restartCount,
      started: record.started,
      log: record.instance ? record.log : undefined,
      idle: record.idle,
    };
  }

  /** The sandbox of an idle (command-less) container, to run an exec in a fresh one. */
  /** Resolves once the pod's volumes are set up (or the wait is given up). */
  async volumesReady(signal: AbortSignal): Promise<boolean> {
    while (!this.#volumes && !signal.aborted && !this.#terminating) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return this.#volumes !== undefined;
  }

  async idleSandbox(name: string): Promise<
    | {
        mounts: SandboxMount[];
        user: SandboxUser;
        workingDir: string;
        env: Record<string, string>;
        hostname: string;
        hidden: string[];
      }
    | undefined
  > {
    const record = this.#main.find((r) => r.spec.name === name);
    if (!record?.idle || record.state.kind !== "running" || !this.#volumes) return undefined;
    this.#refusePrivileged(record);
    const env = await this.#env(record);
    return {
      mounts: await this.#mounts(record, env),
      user: this.#user(record),
      workingDir: record.spec.workingDir || "/",
      env,
      hostname: this.#hostname(),
      hidden: this.#deps.hidden,
    };
  }

  kick(): void {
    if (this.#kicking) {
      this.#again = true;
      return;
    }
    this.#kicking = true;
    void (async () => {
      try {
        do {
          this.#again = false;
          await this.#step();
        } while (this.#again);
      } catch (error) {
        this.#deps.context.logger.warn("pod worker step failed", {
          pod: objectKey(this.#pod),
          err: errorMessage(error),
        });
      } finally {
        this.#kicking = false;
      }
    })();
  }

  #timer(ms: number, fn: () => void): void {
    const cancel = this.#deps.clock.setTimer(ms, () => {
      this.#timers.delete(cancel);
      fn();
    });
    this.#timers.add(cancel);
  }

  #event(type: "Normal" | "Warning", reason: string, message: string, record?: ContainerRecord): void {
    const meta = this.#pod.metadata ?? {};
    this.#deps.context.events.event(
      {
        kind: "Pod",
        apiVersion: "v1",
        namespace: meta.namespace ?? "",
        name: meta.name ?? "",
        uid: this.uid,
        ...(meta.resourceVersion ? { resourceVersion: meta.resourceVersion } : {}),
        // The kubelet names the container an event is about.
        ...(record
          ? { fieldPath: `spec.${record.init ? "initContainers" : "containers"}{${record.spec.name}}` }
          : {}),
      },
      type,
      reason,
      message,
    );
  }

  /** An event said once per distinct key (a state that persists is not evented every step). */
  #eventOnce(
    key: string,
    type: "Normal" | "Warning",
    reason: string,
    message: string,
    record?: ContainerRecord,
  ): void {
    if (this.#events.has(key)) return;
    this.#events.add(key);
    this.#event(type, reason, message, record);
  }

  #podRef(): string {
    const meta = this.#pod.metadata ?? {};
    return `${meta.name ?? ""}_${meta.namespace ?? ""}(${this.uid})`;
  }

  #containerID(record: ContainerRecord): string {
    return `csikit://${this.uid}-${record.spec.name}-${record.restartCount}`;
  }

  #hostname(): string {
    const spec = this.#pod.spec;
    return (
      typeof spec?.hostname === "string" && spec.hostname !== ""
        ? spec.hostname
        : (this.#pod.metadata?.name ?? "pod")
    ).slice(0, 63);
  }

  #user(record: ContainerRecord): SandboxUser {
    const pod = asRecord(this.#pod.spec?.securityContext);
    const own = asRecord(record.spec.securityContext);
    const runAsUser = num(own.runAsUser) ?? num(pod.runAsUser);
    const uid = runAsUser ?? process.getuid?.() ?? 0;
    // A numeric user without a group runs with gid 0, as a runtime does for a uid the image
    // does not name; without either, the node agent's own ids (the "image" is the host).
    const gid =
      num(own.runAsGroup) ?? num(pod.runAsGroup) ?? (runAsUser !== undefined ? 0 : (process.getgid?.() ?? 0));
    const groups = new Set<number>();
    const fsGroup = num(pod.fsGroup);
    if (fsGroup !== undefined) groups.add(fsGroup);
    for (const g of Array.isArray(pod.supplementalGroups) ? pod.supplementalGroups : [])
      if (typeof g === "number") groups.add(g);
    return { uid, gid, groups: [...groups] };
  }

  async #env(record: ContainerRecord): Promise<Record<string, string>> {
    const built = await buildEnv(this.#pod, record.spec, this.#deps.objects, this.#deps.hostIP);
    for (const source of built.invalid)
      this.#eventOnce(
        `invalid-env:${record.spec.name}:${source.kind}/${source.name}`,
        "Warning",
        "InvalidEnvironmentVariableNames",
        `Keys [${source.keys.join(", ")}] from the EnvFrom ${source.kind} ${this.#pod.metadata?.namespace ?? ""}/${source.name} were skipped since they are considered invalid environment variable names.`,
      );
    const env: Record<string, string> = { PATH: DEFAULT_PATH, HOSTNAME: this.#hostname() };
    for (const [key, value] of built.env) env[key] = value;
    this.#envs.set(record.spec.name, env);
    return env;
  }

  /**
   * A privileged container cannot run here: the sandbox drops every capability, and running it
   * without them would quietly break what it was made privileged for.
   */
  #refusePrivileged(record: ContainerRecord): void {
    if (asRecord(record.spec.securityContext).privileged === true)
      throw new Error(
        `container "${record.spec.name}" is privileged, which csikit cannot run: its sandbox drops every capability (run it on a real cluster's node)`,
      );
  }

  /** The container's binds: volumeMounts (subPath, subPathExpr, readOnly) and volumeDevices. */
  async #mounts(record: ContainerRecord, env: Record<string, string>): Promise<SandboxMount[]> {
    const volumes = this.#volumes ?? new Map<string, HostVolume>();
    const mounts: SandboxMount[] = [];
    for (const mount of record.spec.volumeMounts ?? []) {
      const volume = volumes.get(mount.name);
      if (!volume)
        throw new Error(`cannot find volume "${mount.name}" to mount into container "${record.spec.name}"`);
      // The API server refuses Bidirectional in a container that is not privileged, and a
      // privileged one never gets here (#refusePrivileged).
      if (mount.mountPropagation === "Bidirectional")
        throw new Error("Bidirectional mount propagation is available only to privileged containers");
      let subPath = mount.subPath ?? "";
      if (mount.subPathExpr) {
        subPath = expand(mount.subPathExpr, (name) => env[name]);
        if (/\$\(/.test(subPath))
          throw new Error(
            `failed to prepare subPath for volumeMount "${mount.name}" of container "${record.spec.name}"`,
          );
      }
      let source = volume.path;
      if (subPath !== "")
        source = await resolveSubPath(volume.path, subPath, {
          mount: mount.name,
          container: record.spec.name,
        });
      const propagation = mount.mountPropagation === "HostToContainer" ? "HostToContainer" : "None";
      if (propagation === "HostToContainer")
        await ensureHostToContainer(source, this.#deps.shareNodeRoot, this.#deps.context.paths.root);
      mounts.push({
        source,
        dest: mount.mountPath,
        readOnly: mount.readOnly === true || volume.readOnly,
        device: false,
        propagation,
        recursiveReadOnly: this.#deps.recursiveReadOnlyMounts && resolveRecursiveReadOnly(mount, true),
      });
    }
    for (const device of record.spec.volumeDevices ?? []) {
      const volume = volumes.get(device.name);
      if (!volume?.block)
        throw new Error(
          `cannot find block volume "${device.name}" to map into container "${record.spec.name}"`,
        );
      mounts.push({ source: volume.path, dest: device.devicePath, readOnly: false, device: true });
    }
    return mounts;
  }

  async #start(record: ContainerRecord): Promise<void> {
    const now = this.#deps.clock.now();
    if (record.idle) {
      record.state = { kind: "running", startedAt: now };
      return;
    }
    const unavailable = await sandboxUnavailable();
    if (unavailable) {
      if (record.state.kind === "waiting" && record.state.reason === "CreateContainerError") return;
      const message = `cannot run the container in a sandbox: ${unavailable}`;
      record.state = { kind: "waiting", reason: "CreateContainerError", message };
      this.#eventOnce(`sandbox:${record.spec.name}`, "Warning", "Failed", `Error: ${message}`, record);
      return;
    }
    let env: Record<string, string>;
    let mounts: SandboxMount[];
    try {
      this.#refusePrivileged(record);
      env = await this.#env(record);
      mounts = await this.#mounts(record, env);
    } catch (error) {
      const message = errorMessage(error);
      const reason =
        error instanceof ContainerCreateError ? "CreateContainerError" : "CreateContainerConfigError";
      record.state = { kind: "waiting", reason, message };
      this.#eventOnce(
        `config:${record.spec.name}:${message}`,
        "Warning",
        "Failed",
        `Error: ${message}`,
        record,
      );
      this.#timer(SETUP_RETRY_MS, () => this.kick());
      return;
    }
    const attempt = record.started;
    const dir = join(this.logDir, record.spec.name);
    await mkdir(dir, { recursive: true, mode: 0o755 });
    // The kubelet keeps the current and the previous instance's logs.
    if (attempt >= 2) await rm(containerLogPath(this.logDir, record.spec.name, attempt - 2), { force: true });
    const log = new CriLogWriter(containerLogPath(this.logDir, record.spec.name, attempt), () =>
      this.#deps.clock.now(),
    );
    const process = new ContainerProcess(
      {
        hostname: this.#hostname(),
        mounts,
        user: this.#user(record),
        workingDir: record.spec.workingDir || "/",
        argv: expandCommand(record.spec, new Map(Object.entries(env))),
        hidden: this.#deps.hidden,
      },
      env,
      log,
    );
    record.started++;
    const instance: Instance = { process, startedAt: now, containerID: this.#containerID(record) };
    record.instance = instance;
    record.log = log;
    record.state = { kind: "running", startedAt: now };
    this.#event("Normal", "Created", `Created container: ${record.spec.name}`, record);
    this.#event("Normal", "Started", `Started container ${record.spec.name}`, record);
    record.livenessFailed = false;
    void process.exited.then((exit) => this.#exited(record, instance, exit));
    this.#watchLiveness(record, instance);
  }

  /**
   * The container's exec liveness probe (the kubelet's prober): after initialDelaySeconds, every
   * periodSeconds the command runs in the container (timeoutSeconds); failureThreshold failures
   * in a row kill the container, which then restarts unless the pod's restartPolicy is Never.
   */
  #watchLiveness(record: ContainerRecord, instance: Instance): void {
    const probe = asRecord(record.spec.livenessProbe);
    const command = asRecord(probe.exec).command;
    if (!Array.isArray(command) || command.length === 0 || !command.every((c) => typeof c === "string"))
      return;
    const argv = command;
    const period = Math.max(1, num(probe.periodSeconds) ?? 10);
    const threshold = Math.max(1, num(probe.failureThreshold) ?? 3);
    const timeout = Math.max(1, num(probe.timeoutSeconds) ?? 1);
    const current = (): boolean => record.instance === instance && !this.#terminating;
    let failures = 0;
    const tick = async (): Promise<void> => {
      if (!current()) return;
      const failure = await probeExec(instance, argv, timeout);
      if (!current()) return;
      failures = failure === undefined ? 0 : failures + 1;
      if (failures < threshold) {
        this.#timer(period * 1000, () => void tick());
        return;
      }
      this.#event("Warning", "Unhealthy", `Liveness probe failed: ${failure ?? ""}`, record);
      this.#event(
        "Normal",
        "Killing",
        `Container ${record.spec.name} failed liveness probe, will be restarted`,
        record,
      );
      record.livenessFailed = true;
      instance.process.signal("SIGTERM");
      const grace = Math.max(MIN_GRACE_SECONDS, this.#pod.spec?.terminationGracePeriodSeconds ?? 30);
      this.#timer(grace * 1000, () => instance.process.signal("SIGKILL"));
    };
    this.#timer(Math.max(0, num(probe.initialDelaySeconds) ?? 0) * 1000, () => void tick());
  }

  #exited(record: ContainerRecord, instance: Instance, exit: Exit): void {
    const finishedAt = this.#deps.clock.now();
    record.instance = undefined;
    if (exit.kind === "start-failed") {
      this.#event("Warning", "Failed", `Error: ${exit.message}`, record);
      record.state = {
        kind: "terminated",
        exitCode: 128,
        reason: "StartError",
        message: exit.message,
        startedAt: instance.startedAt,
        finishedAt,
        containerID: instance.containerID,
      };
    } else {
      record.state = {
        kind: "terminated",
        exitCode: exit.code,
        reason: exit.code === 0 ? "Completed" : "Error",
        startedAt: instance.startedAt,
        finishedAt,
        containerID: instance.containerID,
      };
    }
    this.kick();
  }

  #shouldRestart(record: ContainerRecord, exitCode: number): boolean {
    const policy = this.#pod.spec?.restartPolicy ?? "Always";
    if (record.init) return exitCode !== 0 && policy !== "Never";
    if (record.livenessFailed) return policy !== "Never";
    if (policy === "Always") return true;
    if (policy === "OnFailure") return exitCode !== 0;
    return false;
  }

  /** Restarts a terminated container now, or waits in CrashLoopBackOff for its back-off. */
  async #restart(record: ContainerRecord): Promise<void> {
    const state = record.state;
    if (state.kind !== "terminated" && !(state.kind === "waiting" && state.reason === "CrashLoopBackOff"))
      return;
    const last = state.kind === "terminated" ? state : record.lastTerminated!;
    const key = `${this.uid}/${record.spec.name}`;
    const now = this.#deps.clock.now();
    const { backoff } = this.#deps;
    const remaining = backoff.remaining(key, last.finishedAt, now);
    if (state.kind === "terminated") record.lastTerminated = state;
    if (remaining > 0) {
      if (state.kind === "terminated") {
        const message = `back-off ${goDuration(backoff.current(key))} restarting failed container=${record.spec.name} pod=${this.#podRef()}`;
        record.state = { kind: "waiting", reason: "CrashLoopBackOff", message };
        this.#event(
          "Warning",
          "BackOff",
          `Back-off restarting failed container ${record.spec.name} in pod ${this.#podRef()}`,
          record,
        );
        this.#timer(remaining, () => this.kick());
      }
      return;
    }
    backoff.next(key, last.finishedAt, now);
    record.restartCount++;
    await this.#start(record);
  }

  async #step(): Promise<void> {
    // Ended from outside (a node shutdown marks pods Failed): stop the containers, keep the phase.
    const apiPhase = this.#pod.status?.phase;
    if (!this.#terminating && !this.#finished && (apiPhase === "Failed" || apiPhase === "Succeeded")) {
      this.terminate(undefined);
    }
    if (this.#terminating) {
      await this.#writeStatus();
      if (![...this.#init, ...this.#main].some((r) => r.instance)) await this.#settle();
      return;
    }
    if (this.#finished) {
      await this.#writeStatus();
      await this.#settle();
      return;
    }
    if (!this.#recovered) {
      this.#recovered = true;
      await this.#recoverRestartCounts();
    }
    if (!this.#volumes) {
      try {
        this.#volumes = await setUpPodVolumes(this.#pod, this.#csiVolumes, this.#volumeContext());
      } catch (error) {
        const message = errorMessage(error);
        this.#eventOnce(
          `volumes:${message}`,
          "Warning",
          "FailedMount",
          `Unable to attach or mount volumes: ${message}`,
        );
        this.#timer(SETUP_RETRY_MS, () => this.kick());
        return;
      }
      this.#refreshedMetadata = this.#metadataKey();
      this.#scheduleRefresh();
    } else if (this.#refreshWanted || this.#refreshedMetadata !== this.#metadataKey()) {
      await this.#refresh();
    }
    // Init containers, in order: each must complete before the next starts.
    let initialized = true;
    for (const record of this.#init) {
      const state = record.state;
      if (state.kind === "terminated" && state.exitCode === 0) continue;
      initialized = false;
      if (state.kind === "running") break;
      if (state.kind === "waiting" && state.reason !== "CrashLoopBackOff") {
        await this.#start(record); // first start, or a config error retried
      } else if (state.kind === "terminated" || state.reason === "CrashLoopBackOff") {
        const exitCode = state.kind === "terminated" ? state.exitCode : 1;
        if (this.#shouldRestart(record, exitCode)) await this.#restart(record);
      }
      break;
    }
    if (initialized) {
      for (const record of this.#main) {
        const state = record.state;
        if (state.kind === "running") continue;
        if (state.kind === "waiting" && state.reason !== "CrashLoopBackOff") {
          await this.#start(record);
        } else if (state.kind === "terminated" && this.#shouldRestart(record, state.exitCode)) {
          await this.#restart(record);
        } else if (state.kind === "waiting") {
          await this.#restart(record);
        }
      }
    }
    await this.#writeStatus();
    const phase = this.#phase();
    if (
      (phase === "Succeeded" || phase === "Failed") &&
      ![...this.#init, ...this.#main].some((r) => r.instance)
    ) {
      // Terminal: the final status (written again if the exit came after the write above), then teardown.
      this.#finished = true;
      await this.#writeStatus();
      await this.#settle();
    }
  }

  #recovered = false;

  #volumeContext(): VolumeSetupContext {
    return {
      paths: this.#deps.context.paths,
      objects: this.#deps.objects,
      hostIP: this.#deps.hostIP,
      nowMs: this.#deps.clock.now(),
      canMount: process.getuid?.() === 0,
    };
  }

  /** What the downward API reads of the pod that can change while it runs. */
  #metadataKey(): string {
    const meta = this.#pod.metadata ?? {};
    return JSON.stringify([meta.labels ?? {}, meta.annotations ?? {}]);
  }

  /** The periodic refresh, re-armed each time (the worker's timers all stop at teardown). */
  #scheduleRefresh(): void {
    this.#timer(this.#deps.volumeRefreshMs, () => {
      this.refreshVolumes();
      this.#scheduleRefresh();
    });
  }

  /** Writes the file volumes again where their sources changed; a failure keeps the old files. */
  async #refresh(): Promise<void> {
    this.#refreshWanted = false;
    this.#refreshedMetadata = this.#metadataKey();
    const { updated, failed } = await refreshPodVolumes(this.#pod, this.#volumeContext());
    for (const name of updated)
      this.#deps.context.logger.info(4, "pod volume refreshed", { pod: objectKey(this.#pod), volume: name });
    for (const [name, message] of failed)
      this.#eventOnce(
        `refresh:${name}:${message}`,
        "Warning",
        "FailedMount",
        `MountVolume.SetUp failed for volume "${name}" : ${message}`,
      );
  }

  /**
   * A pod this node ran before it restarted: the kubelet's calcRestartCountByLogDir — the next
   * instance is one past the highest <n>.log, so no log file is appended to or lost.
   */
  async #recoverRestartCounts(): Promise<void> {
    for (const record of [...this.#init, ...this.#main]) {
      const names = await readdir(join(this.logDir, record.spec.name)).catch(() => [] as string[]);
      const counts = names
        .map((n) => /^(\d+)\.log$/.exec(n)?.[1])
        .filter((n) => n !== undefined)
        .map(Number);
      if (counts.length === 0) continue;
      record.started = Math.max(...counts) + 1;
      record.restartCount = record.started;
    }
  }

  #phase(): string {
    return podStatus(this.#statusInput()).phase ?? "";
  }

  #statusInput() {
    return {
      pod: this.#pod,
      init: this.#init.map((r) => r.view()),
      main: this.#main.map((r) => r.view()),
      startTime: this.#startTime,
      now: this.#deps.clock.now(),
      hostIP: this.#deps.hostIP,
      sandboxReady: this.#volumes !== undefined,
      terminating: this.#terminating,
    };
  }

  async #settle(): Promise<void> {
    if (this.#tornDown) return;
    for (const cancel of this.#timers) cancel();
    this.#timers.clear();
    try {
      await tearDownPodVolumes(this.#deps.context.paths, this.uid);
    } catch (error) {
      this.#deps.context.logger.warn("pod volume teardown failed", {
        pod: objectKey(this.#pod),
        err: errorMessage(error),
      });
      this.#timer(SETUP_RETRY_MS, () => this.kick());
      return;
    }
    this.#tornDown = true;
    this.#settledResolve();
  }

  /** Patches the pod's status when it changed; a failed write is retried on the next step. */
  async #writeStatus(): Promise<void> {
    const status = podStatus(this.#statusInput());
    const comparable = JSON.stringify({
      ...status,
      conditions: status.conditions?.map(({ lastTransitionTime: _, ...c }) => c),
    });
    if (comparable === this.#lastWritten) return;
    const write = async (): Promise<void> => {
      const { client } = this.#deps.context;
      const meta = this.#pod.metadata ?? {};
      try {
        await client.patch(
          GVR.pods,
          meta.name ?? "",
          { status },
          { namespace: meta.namespace ?? "", subresource: "status" },
        );
        this.#lastWritten = comparable;
      } catch (error) {
        this.#deps.context.logger.info(2, "pod status not written", {
          pod: objectKey(this.#pod),
          err: errorMessage(error),
        });
        if (!this.#tornDown) this.#timer(SETUP_RETRY_MS, () => this.kick());
      }
    };
    this.#writing = this.#writing.then(write);
    await this.#writing;
  }
}

/** Runs a probe's command in the running container; undefined when it exited 0, else why not. */
async function probeExec(
  instance: Instance,
  argv: string[],
  timeoutSeconds: number,
): Promise<string | undefined> {
  const pid = await instance.process.pid;
  if (pid === undefined) return "the container is not running";
  const spec = instance.process.spec;
  return new Promise((resolve) => {
    execFile(
      "nsenter",
      execArgs(pid, spec.user, spec.workingDir, argv),
      { env: instance.process.env, timeout: timeoutSeconds * 1000, maxBuffer: 64 * 1024 },
      (error, stdout, stderr) => {
        if (!error) resolve(undefined);
        else
          resolve(`${String(stderr).trim() || String(stdout).trim() || errorMessage(error)}`.slice(0, 1024));
      },
    );
  });
}
