// Where a DaemonSet's pods belong (upstream's daemon controller NodeShouldRunDaemonPod and
// util): a node runs the pod when the template's nodeName (if any), nodeSelector and required
// node affinity fit it and the pod tolerates its NoSchedule and NoExecute taints; a pod already
// there keeps running as long as it tolerates the NoExecute ones. The tolerations every daemon
// pod gets (node not-ready, unreachable, pressure, unschedulable) and the per-node pod, pinned
// through required node affinity on metadata.name (the scheduler then binds it), are upstream's.

import {
  WORKLOAD_NAMES,
  type DaemonSet,
  type Node,
  type Pod,
  type PodSpec,
  type Toleration,
} from "../../api/index.ts";
import { firstUntoleratedTaint, podFitsNodeAffinity } from "../scheduler/index.ts";

/** AddOrUpdateDaemonPodTolerations. */
export function addDaemonPodTolerations(spec: PodSpec): void {
  const wanted: Toleration[] = [
    { key: WORKLOAD_NAMES.nodeNotReadyTaint, operator: "Exists", effect: "NoExecute" },
    { key: WORKLOAD_NAMES.nodeUnreachableTaint, operator: "Exists", effect: "NoExecute" },
    { key: WORKLOAD_NAMES.nodeDiskPressureTaint, operator: "Exists", effect: "NoSchedule" },
    { key: WORKLOAD_NAMES.nodeMemoryPressureTaint, operator: "Exists", effect: "NoSchedule" },
    { key: WORKLOAD_NAMES.nodePidPressureTaint, operator: "Exists", effect: "NoSchedule" },
    { key: WORKLOAD_NAMES.nodeUnschedulableTaint, operator: "Exists", effect: "NoSchedule" },
  ];
  if (spec.hostNetwork === true)
    wanted.push({
      key: WORKLOAD_NAMES.nodeNetworkUnavailableTaint,
      operator: "Exists",
      effect: "NoSchedule",
    });
  const tolerations = [...(spec.tolerations ?? [])];
  for (const toleration of wanted) {
    const index = tolerations.findIndex((t) => t.key === toleration.key && t.effect === toleration.effect);
    if (index >= 0) tolerations[index] = toleration;
    else tolerations.push(toleration);
  }
  spec.tolerations = tolerations;
}

/** ReplaceDaemonSetPodNodeNameNodeAffinity: the pod may only go to `nodeName`. */
export function pinToNode(spec: PodSpec, nodeName: string): void {
  const affinity = { ...(spec.affinity ?? {}) };
  const nodeAffinity = { ...((affinity.nodeAffinity as Record<string, unknown> | undefined) ?? {}) };
  nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution = {
    nodeSelectorTerms: [{ matchFields: [{ key: "metadata.name", operator: "In", values: [nodeName] }] }],
  };
  affinity.nodeAffinity = nodeAffinity;
  spec.affinity = affinity;
}

export interface NodeDecision {
  shouldRun: boolean;
  shouldContinueRunning: boolean;
}

/** NodeShouldRunDaemonPod. */
export function nodeShouldRunDaemonPod(node: Node, ds: DaemonSet): NodeDecision {
  const spec = structuredClone(ds.spec?.template?.spec ?? { containers: [] });
  addDaemonPodTolerations(spec);
  const pod: Pod = { metadata: { name: "", namespace: ds.metadata?.namespace ?? "" }, spec };
  const name = node.metadata?.name ?? "";
  if (spec.nodeName && spec.nodeName !== name) return { shouldRun: false, shouldContinueRunning: false };
  if (!podFitsNodeAffinity(pod, node)) return { shouldRun: false, shouldContinueRunning: false };
  const taints = node.spec?.taints ?? [];
  const tolerations = spec.tolerations ?? [];
  if (firstUntoleratedTaint(taints, tolerations) !== undefined) {
    const noExecute = firstUntoleratedTaint(
      taints.filter((taint) => taint.effect === "NoExecute"),
      tolerations,
    );
    return { shouldRun: false, shouldContinueRunning: noExecute === undefined };
  }
  return { shouldRun: true, shouldContinueRunning: true };
}

/** The node a daemon pod is for: its spec.nodeName, else the name its node affinity pins. */
export function daemonPodNode(pod: Pod): string | undefined {
  if (pod.spec?.nodeName) return pod.spec.nodeName;
  const required = (pod.spec?.affinity?.nodeAffinity as Record<string, unknown> | undefined)
    ?.requiredDuringSchedulingIgnoredDuringExecution as
    | { nodeSelectorTerms?: { matchFields?: { key: string; operator: string; values?: string[] }[] }[] }
    | undefined;
  for (const term of required?.nodeSelectorTerms ?? [])
    for (const field of term.matchFields ?? [])
      if (field.key === "metadata.name" && field.operator === "In" && field.values?.length === 1)
        return field.values[0];
  return undefined;
}
