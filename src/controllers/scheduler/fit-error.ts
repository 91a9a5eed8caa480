// Upstream's scheduling failure messages (framework.FitError): "0/3 nodes are available: 1
// node(s) were unschedulable, 2 node(s) didn't match Pod's node affinity/selector." — the
// reasons counted over nodes and sorted as strings; a PreFilter rejection replaces the
// per-node reasons. Pure functions.

export const NO_NODES_AVAILABLE = "no nodes available to schedule pods";

export const NODE_REASONS = Object.freeze({
  unschedulable: "node(s) were unschedulable",
  nodeAffinity: "node(s) didn't match Pod's node affinity/selector",
});

export function untoleratedTaintReason(key: string, value: string | undefined): string {
  return `node(s) had untolerated taint {${key}: ${value ?? ""}}`;
}

/** The message for `nodeCount` nodes that all failed with the given per-node reasons. */
export function fitErrorMessage(nodeCount: number, perNodeReasons: readonly (readonly string[])[]): string {
  const histogram = new Map<string, number>();
  for (const reasons of perNodeReasons) {
    for (const reason of reasons) histogram.set(reason, (histogram.get(reason) ?? 0) + 1);
  }
  const parts = [...histogram].map(([reason, count]) => `${count} ${reason}`).sort();
  let message = `0/${nodeCount} nodes are available:`;
  if (parts.length > 0) message += ` ${parts.join(", ")}.`;
  return message;
}

/** The message when a PreFilter step rejected the pod before any node was looked at. */
export function preFilterErrorMessage(nodeCount: number, message: string): string {
  return `0/${nodeCount} nodes are available: ${message}.`;
}
