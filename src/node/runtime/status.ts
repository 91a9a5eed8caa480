// A pod's status as the kubelet computes it from its containers (getPhase, the container
// statuses, the pod conditions), for what `kubectl get pods` reads: READY (ready containers),
// STATUS (the phase, or a container's waiting/terminated reason, "Init:N/M"), RESTARTS.

import type { ContainerStatus, Pod, PodCondition, PodStatus } from "../../api/index.ts";
import type { VolumeMountStatus } from "./recursive-read-only.ts";

export type ContainerState =
  | { kind: "waiting"; reason: string; message?: string }
  | { kind: "running"; startedAt: number }
  | {
      kind: "terminated";
      exitCode: number;
      reason: string;
      message?: string;
      startedAt?: number;
      finishedAt: number;
      containerID: string;
    };

export interface ContainerView {
  name: string;
  image: string;
  restartCount: number;
  containerID: string;
  state: ContainerState;
  lastTerminated?: Extract<ContainerState, { kind: "terminated" }>;
  /** The container's volumeMounts as its status reports them (RecursiveReadOnlyMounts). */
  volumeMounts?: VolumeMountStatus[];
}

/** Go's metav1.Time: whole seconds, RFC 3339. */
export function apiTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

function stateOf(state: ContainerState): Record<string, Record<string, unknown>> {
  switch (state.kind) {
    case "waiting":
      return { waiting: { reason: state.reason, ...(state.message ? { message: state.message } : {}) } };
    case "running":
      return { running: { startedAt: apiTime(state.startedAt) } };
    case "terminated":
      return {
        terminated: {
          exitCode: state.exitCode,
          reason: state.reason,
          ...(state.message ? { message: state.message } : {}),
          ...(state.startedAt !== undefined ? { startedAt: apiTime(state.startedAt) } : {}),
          finishedAt: apiTime(state.finishedAt),
          containerID: state.containerID,
        },
      };
  }
}

export function containerStatus(view: ContainerView): ContainerStatus {
  const running = view.state.kind === "running";
  return {
    name: view.name,
    state: stateOf(view.state),
    lastState: view.lastTerminated ? stateOf(view.lastTerminated) : {},
    ready: running,
    restartCount: view.restartCount,
    image: view.image,
    imageID: "",
    ...(view.state.kind !== "waiting" ? { containerID: view.containerID } : {}),
    started: running,
    ...(view.volumeMounts ? { volumeMounts: view.volumeMounts } : {}),
  };
}

/** The kubelet's getPhase for regular init containers and containers. */
export function podPhase(
  pod: Pod,
  init: readonly ContainerView[],
  main: readonly ContainerView[],
): NonNullable<PodStatus["phase"]> {
  const policy = pod.spec?.restartPolicy ?? "Always";
  let pendingInit = 0;
  let failedInit = 0;
  for (const view of init) {
    if (view.state.kind === "terminated" && view.state.exitCode === 0) continue;
    if (view.state.kind === "terminated") failedInit++;
    else if (view.state.kind === "waiting" && view.lastTerminated && view.lastTerminated.exitCode !== 0)
      failedInit++;
    pendingInit++;
  }
  if (failedInit > 0 && policy === "Never") return "Failed";
  let running = 0;
  let waiting = 0;
  let stopped = 0;
  let succeeded = 0;
  for (const view of main) {
    if (view.state.kind === "running") running++;
    else if (view.state.kind === "terminated") {
      stopped++;
      if (view.state.exitCode === 0) succeeded++;
    } else if (view.lastTerminated) stopped++;
    else waiting++;
  }
  if (pendingInit > 0 || waiting > 0) return "Pending";
  if (running > 0) return "Running";
  if (stopped > 0) {
    if (policy === "Always") return "Running";
    if (stopped === succeeded) return "Succeeded";
    if (policy === "Never") return "Failed";
    return "Running";
  }
  return "Pending";
}

export interface StatusInput {
  pod: Pod;
  init: readonly ContainerView[];
  main: readonly ContainerView[];
  startTime: number;
  now: number;
  hostIP: string;
  /** The sandbox is up (volumes set up): PodReadyToStartContainers. */
  sandboxReady: boolean;
  /** The pod is being stopped (deleted, or ended from outside): it ends terminal, never restarts. */
  terminating: boolean;
}

/**
 * The phase of a pod being stopped (the kubelet's getPhase with podIsTerminal): a phase already
 * terminal stays; once nothing runs, Succeeded if every container exited 0, else Failed.
 */
function terminatingPhase(
  pod: Pod,
  main: readonly ContainerView[],
  computed: NonNullable<PodStatus["phase"]>,
) {
  const current = pod.status?.phase;
  if (current === "Succeeded" || current === "Failed") return current;
  if (main.some((v) => v.state.kind === "running")) return computed;
  const allSucceeded = main.every((v) => v.state.kind === "terminated" && v.state.exitCode === 0);
  return allSucceeded && main.length > 0 ? "Succeeded" : "Failed";
}

export function podStatus(input: StatusInput): PodStatus & Record<string, unknown> {
  const { pod, init, main } = input;
  const computed = podPhase(pod, init, main);
  const phase = input.terminating ? terminatingPhase(pod, main, computed) : computed;
  const previous = new Map((pod.status?.conditions ?? []).map((c) => [c.type, c]));
  const now = apiTime(input.now);
  const condition = (type: string, ok: boolean, reason?: string, message?: string): PodCondition => {
    const status = ok ? "True" : "False";
    const old = previous.get(type);
    return {
      type,
      status,
      lastProbeTime: null,
      lastTransitionTime: old?.status === status ? (old.lastTransitionTime ?? now) : now,
      ...(reason ? { reason } : {}),
      ...(message ? { message } : {}),
    };
  };
  const incompleteInit = init
    .filter((v) => !(v.state.kind === "terminated" && v.state.exitCode === 0))
    .map((v) => v.name);
  const completed = phase === "Succeeded" || phase === "Failed";
  const unready = main.filter((v) => v.state.kind !== "running").map((v) => v.name);
  const initialized =
    incompleteInit.length === 0
      ? condition("Initialized", true)
      : condition(
          "Initialized",
          false,
          "ContainersNotInitialized",
          `containers with incomplete status: [${incompleteInit.join(" ")}]`,
        );
  const ready = (type: string): PodCondition =>
    completed
      ? condition(type, false, "PodCompleted")
      : unready.length === 0
        ? condition(type, true)
        : condition(
            type,
            false,
            "ContainersNotReady",
            `containers with unready status: [${unready.join(" ")}]`,
          );
  return {
    phase,
    conditions: [
      condition("PodReadyToStartContainers", input.sandboxReady && !completed),
      initialized,
      ready("Ready"),
      ready("ContainersReady"),
      condition("PodScheduled", true),
    ],
    hostIP: input.hostIP,
    hostIPs: [{ ip: input.hostIP }],
    podIP: input.hostIP,
    podIPs: [{ ip: input.hostIP }],
    startTime: apiTime(input.startTime),
    ...(init.length > 0 ? { initContainerStatuses: init.map(containerStatus) } : {}),
    containerStatuses: main.map(containerStatus),
    qosClass: pod.status?.qosClass ?? "BestEffort",
  };
}
