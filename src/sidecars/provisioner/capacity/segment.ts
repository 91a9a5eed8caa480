// Topology segments of capacity tracking: a set of topology key/value pairs, sorted by key, as
// upstream's topology.Segment. A segment is identified by its canonical key (the sorted pairs
// as JSON), so two nodes with the same labels share one segment and a map can be keyed by it.
// An empty segment (a driver without topology keys) matches every node.

import type { CSINode, LabelSelector, Node, NodeSelectorTerm } from "../../../api/index.ts";

export interface SegmentEntry {
  readonly key: string;
  readonly value: string;
}

export interface Segment {
  /** Sorted by key, then value; keys unique. */
  readonly entries: readonly SegmentEntry[];
  /** Canonical identity: the sorted pairs as JSON. */
  readonly id: string;
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A segment from key/value pairs in any order. */
export function segmentOf(pairs: Readonly<Record<string, string>>): Segment {
  const entries = Object.entries(pairs)
    .map(([key, value]) => Object.freeze({ key, value }))
    .sort((a, b) => compareStrings(a.key, b.key) || compareStrings(a.value, b.value));
  return Object.freeze({
    entries: Object.freeze(entries),
    id: JSON.stringify(entries.map((e) => [e.key, e.value])),
  });
}

/** The pairs as a map: GetCapacity's accessible_topology.segments. */
export function segmentLabels(segment: Segment): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const { key, value } of segment.entries) labels[key] = value;
  return labels;
}

/**
 * The CSIStorageCapacity nodeTopology of a segment: matchLabels with every pair; `{}` (every
 * node) for the empty segment, as upstream's Go JSON omits the empty map.
 */
export function segmentSelector(segment: Segment): LabelSelector {
  return segment.entries.length === 0 ? {} : { matchLabels: segmentLabels(segment) };
}

/** "key: value+ key2: value2", as upstream logs segments. */
export function segmentString(segment: Segment): string {
  return segment.entries.map((e) => `${e.key}: ${e.value}`).join("+ ");
}

/**
 * Whether an existing object's nodeTopology is exactly the segment's selector: matchLabels equal
 * to the pairs and no matchExpressions (upstream compares the two selectors deeply).
 */
export function selectorMatchesSegment(selector: LabelSelector | undefined, segment: Segment): boolean {
  if (selector?.matchExpressions !== undefined && selector.matchExpressions.length > 0) return false;
  const labels = selector?.matchLabels ?? {};
  const keys = Object.keys(labels);
  if (keys.length !== segment.entries.length) return false;
  return segment.entries.every((e) => labels[e.key] === e.value);
}

/**
 * The driver's topology keys on a CSINode: undefined when the driver is not registered there,
 * otherwise the keys (possibly none).
 */
export function driverTopologyKeys(csiNode: CSINode, driverName: string): readonly string[] | undefined {
  const driver = csiNode.spec.drivers.find((d) => d.name === driverName);
  if (driver === undefined) return undefined;
  return driver.topologyKeys ?? [];
}

/**
 * The segment of one node: the values of the driver's keys among the Node's labels. Undefined
 * when a label is missing (kubelet recorded the key in CSINode before the Node update arrived;
 * the node counts once its labels catch up), as upstream.
 */
export function nodeSegment(keys: readonly string[], node: Node): Segment | undefined {
  const labels = node.metadata?.labels ?? {};
  const pairs: Record<string, string> = {};
  for (const key of keys) {
    const value = labels[key];
    if (value === undefined) return undefined;
    pairs[key] = value;
  }
  return segmentOf(pairs);
}

/**
 * The segment a PV node-affinity term names (only `In` with one value per key, as the
 * provisioner writes them), for refreshing after a provision or delete; undefined otherwise.
 */
export function termSegment(term: NodeSelectorTerm): Segment | undefined {
  if (term.matchFields !== undefined && term.matchFields.length > 0) return undefined;
  const pairs: Record<string, string> = {};
  for (const match of term.matchExpressions ?? []) {
    if (match.operator !== "In" || match.values?.length !== 1) return undefined;
    pairs[match.key] = match.values[0]!;
  }
  return segmentOf(pairs);
}
