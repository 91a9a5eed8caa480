// What the kubelet writes to a pod when it runs no containers: once every volume is
// published, phase Running with the kubelet's conditions (PodReadyToStartContainers,
// Initialized, ContainersReady, Ready, PodScheduled), startTime, hostIP and a running status
// per container; and, after a graceful deletion's volumes are torn down, the final delete
// with gracePeriodSeconds=0 and the pod's UID as precondition.

import { GVR, type Pod, type PodCondition, type ContainerStatus } from "../api/index.ts";
import { isConflict, isNotFound, type KubeClient } from "../kube/index.ts";

function time(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

export function podIsRunning(pod: Pod): boolean {
  return (
    pod.status?.phase === "Running" &&
    (pod.status.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True")
  );
}

/** The status a kubelet reports for a pod whose volumes are all mounted (containers "running"). */
export function runningStatus(pod: Pod, nowMs: number): NonNullable<Pod["status"]> {
  const now = time(nowMs);
  const previous = new Map((pod.status?.conditions ?? []).map((c) => [c.type, c]));
  const condition = (type: string): PodCondition => {
    const old = previous.get(type);
    return {
      type,
      status: "True",
      lastProbeTime: null,
      lastTransitionTime: old?.status === "True" ? (old.lastTransitionTime ?? now) : now,
    };
  };
  const startTime = pod.status?.startTime ?? now;
  const containerStatuses: ContainerStatus[] = (pod.spec?.containers ?? []).map((container) => ({
    name: container.name,
    ready: true,
    restartCount: 0,
    image: typeof container.image === "string" ? container.image : "",
    imageID: "",
    containerID: `csikit://${pod.metadata?.uid ?? ""}/${container.name}`,
    started: true,
    state: { running: { startedAt: startTime } },
  }));
  return {
    phase: "Running",
    conditions: [
      condition("PodReadyToStartContainers"),
      condition("Initialized"),
      condition("Ready"),
      condition("ContainersReady"),
      condition("PodScheduled"),
    ],
    hostIP: "127.0.0.1",
    startTime,
    containerStatuses,
    qosClass: pod.status?.qosClass ?? "BestEffort",
  };
}

export async function setPodRunning(
  client: KubeClient,
  pod: Pod,
  nowMs: number,
  signal: AbortSignal,
): Promise<void> {
  const status = runningStatus(pod, nowMs);
  await client.patch(
    GVR.pods,
    pod.metadata?.name ?? "",
    { status: { ...status, hostIPs: [{ ip: "127.0.0.1" }] } },
    { namespace: pod.metadata?.namespace ?? "", subresource: "status" },
    signal,
  );
}

/** The kubelet's final delete: grace 0, UID precondition; gone or replaced already is success. */
export async function finishPodDeletion(client: KubeClient, pod: Pod, signal: AbortSignal): Promise<void> {
  const namespace = pod.metadata?.namespace ?? "";
  const name = pod.metadata?.name ?? "";
  try {
    await client.request(
      {
        method: "DELETE",
        path: client.resourcePath(GVR.pods, { namespace, name }),
        body: {
          apiVersion: "v1",
          kind: "DeleteOptions",
          gracePeriodSeconds: 0,
          preconditions: { uid: pod.metadata?.uid ?? "" },
        },
      },
      signal,
    );
  } catch (error) {
    if (isNotFound(error) || isConflict(error)) return;
    throw error;
  }
}
