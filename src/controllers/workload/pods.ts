// Pure pod predicates and builders the workload loops share (upstream's pkg/controller
// controller_utils.go and podutil): which pods count as active, ready and available, the
// controller reference of an object, and the pod a template describes for an owner.

import type { OwnerReference, Pod, PodTemplateSpec } from "../../api/index.ts";
import type { KubeObject } from "../../kube/index.ts";

/** Upstream's IsPodActive: not finished and not being deleted. */
export function isPodActive(pod: Pod): boolean {
  return (
    pod.status?.phase !== "Succeeded" &&
    pod.status?.phase !== "Failed" &&
    pod.metadata?.deletionTimestamp === undefined
  );
}

export function isPodTerminating(pod: Pod): boolean {
  return pod.metadata?.deletionTimestamp !== undefined;
}

function readyCondition(pod: Pod): { status: string; lastTransitionTime?: string } | undefined {
  return pod.status?.conditions?.find((condition) => condition.type === "Ready");
}

/** podutil.IsPodReady: the Ready condition is True. */
export function isPodReady(pod: Pod): boolean {
  return readyCondition(pod)?.status === "True";
}

/** podutil.IsPodAvailable: ready for at least minReadySeconds at `now` (ms). */
export function isPodAvailable(pod: Pod, minReadySeconds: number, now: number): boolean {
  const condition = readyCondition(pod);
  if (condition?.status !== "True") return false;
  if (minReadySeconds <= 0) return true;
  const since = Date.parse(condition.lastTransitionTime ?? "");
  return !Number.isNaN(since) && since + minReadySeconds * 1000 <= now;
}

/** The Ready condition's transition time in ms (0 when unknown), for deletion ranking. */
export function podReadyTime(pod: Pod): number {
  const condition = readyCondition(pod);
  if (condition?.status !== "True") return 0;
  const at = Date.parse(condition.lastTransitionTime ?? "");
  return Number.isNaN(at) ? 0 : at;
}

/** metav1.GetControllerOf. */
export function controllerOf(object: KubeObject): OwnerReference | undefined {
  return object.metadata?.ownerReferences?.find((ref) => ref.controller === true);
}

/** metav1.NewControllerRef. */
export function newControllerRef(
  owner: KubeObject,
  kind: { apiVersion: string; kind: string },
): OwnerReference {
  return {
    apiVersion: kind.apiVersion,
    kind: kind.kind,
    name: owner.metadata?.name ?? "",
    uid: owner.metadata?.uid ?? "",
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** Upstream's getPodsPrefix: `<owner>-`, cut so the generated name stays a valid DNS label. */
export function podNamePrefix(ownerName: string): string {
  const prefix = `${ownerName}-`;
  // generateName adds 5 characters; a pod name is at most 253 (a DNS subdomain), and upstream
  // only trims when the prefix alone would be invalid (ValidatePodName(prefix, true)).
  return prefix.length > 253 - 5 ? prefix.slice(0, 253 - 5) : prefix;
}

/**
 * GetPodFromTemplate: a new pod for `owner` with the template's labels, annotations,
 * finalizers and spec, generateName `<owner>-`, and the controller reference.
 */
export function podFromTemplate(
  template: PodTemplateSpec | undefined,
  owner: KubeObject,
  controllerRef: OwnerReference,
  extra: { labels?: Record<string, string>; finalizers?: string[]; generateName?: string } = {},
): Pod {
  const labels = { ...(template?.metadata?.labels ?? {}), ...(extra.labels ?? {}) };
  const annotations = { ...(template?.metadata?.annotations ?? {}) };
  const finalizers = [...(template?.metadata?.finalizers ?? []), ...(extra.finalizers ?? [])];
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      generateName: extra.generateName ?? podNamePrefix(owner.metadata?.name ?? ""),
      namespace: owner.metadata?.namespace ?? "",
      labels,
      ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
      ...(finalizers.length > 0 ? { finalizers } : {}),
      ownerReferences: [controllerRef],
    },
    spec: structuredClone(template?.spec ?? { containers: [] }),
  };
}

/** metav1.Time on the wire: RFC 3339 in seconds. */
export function timestamp(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}
