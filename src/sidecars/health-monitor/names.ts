// The health monitor's contract strings, as upstream external-health-monitor writes them:
// event reasons, the event source component and the node watcher's messages.

import { EVENT_REASONS } from "../../api/index.ts";

/** Event reasons (all Warning, as upstream records them). */
export const REASON = {
  /** On the claim: the driver reports its volume abnormal; the message is the driver's. */
  volumeConditionAbnormal: EVENT_REASONS.volumeConditionAbnormal.key,
  /** On the claim: pods using it are on a deleted, terminated or long-NotReady node. */
  nodeFailed: EVENT_REASONS.nodeFailed.key,
  /** On the claim: the node of the pods using it, once reported failed, is Ready again. */
  nodeRecovered: EVENT_REASONS.nodeRecovered.key,
} as const;

/** source.component of the events (upstream: csi-pv-monitor-controller-<driver>). */
export function eventComponent(driverName: string): string {
  return `csi-pv-monitor-controller-${driverName}`;
}

/** NodeFailed's message, word for word as upstream builds it. */
export function nodeFailedMessage(
  pods: readonly string[],
  claim: { namespace: string; name: string },
  node: string,
): string {
  return `Pods: [ ${pods.map((p) => `${p} `).join("")}] consuming PVC: ${claim.name} in namespace: ${claim.namespace} are now on a failed node: ${node}`;
}

/** NodeRecovered's message. */
export function nodeRecoveredMessage(node: string): string {
  return `Node: ${node} recovered`;
}

/** Upstream's DefaultNodeNotReadyTimeDuration: NotReady this long counts as failed. */
export const DEFAULT_NODE_NOT_READY_TIMEOUT_MS = 5 * 60_000;
