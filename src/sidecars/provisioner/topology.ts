// CreateVolume accessibility requirements exactly as the external-provisioner README's topology
// table (and upstream's GenerateAccessibilityRequirements) define them, as a pure function over
// cached CSINodes and Nodes:
//
// | delayed | strict | allowedTopologies | immediate-topology | result                                   |
// | yes     | yes    | -                 | -                  | requisite = preferred = selected node     |
// | yes     | no     | no                | -                  | requisite = aggregated cluster topology,  |
// |         |        |                   |                    | preferred = requisite, selected node 1st  |
// | yes     | no     | yes               | -                  | requisite = allowed topologies, same pref |
// | no      | -      | yes               | -                  | requisite = allowed; preferred rotated by |
// |         |        |                   |                    | the StatefulSet-name hash                 |
// | no      | -      | no                | yes                | requisite = aggregated; rotated as above  |
// | no      | -      | no                | no                 | none                                      |
//
// Aggregation takes the topology keys from ONE CSINode (the selected node's, or for immediate
// binding the first CSINode carrying keys for the driver) and collects the values of those keys
// from every Node labelled with all of them. Terms are sorted (length, then key/value) and
// de-duplicated so the request is deterministic; "random node first" for immediate binding is
// upstream's FNV hash of the claim name with the StatefulSet index offset.

import type { CSINode, Node, TopologySelectorTerm } from "../../api/index.ts";
import type { TopologyInput, TopologyRequirementInput } from "../../csi/index.ts";

/** One AND-ed topology term: [key, value] pairs sorted by key. */
export type TopologyTerm = readonly (readonly [string, string])[];

export interface TopologyInputs {
  driverName: string;
  claimName: string;
  /** "" for immediate binding. */
  selectedNode: string;
  allowedTopologies: readonly TopologySelectorTerm[];
  strictTopology: boolean;
  immediateTopology: boolean;
  csiNodes: readonly CSINode[];
  nodes: readonly Node[];
}

export class TopologyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TopologyError";
  }
}

/**
 * The selected node's Node or CSINode object does not exist (the node was deleted after the
 * scheduler picked it): waiting cannot help, the scheduler must pick again
 * (external-provisioner#1437, fixed upstream in v6.1.0 by #1438).
 */
export class SelectedNodeMissingError extends TopologyError {
  constructor(message: string) {
    super(message);
    this.name = "SelectedNodeMissingError";
  }
}

function sortTerm(term: [string, string][]): TopologyTerm {
  return term.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
}

export function compareTerms(a: TopologyTerm, b: TopologyTerm): number {
  if (a.length !== b.length) return a.length - b.length;
  for (let i = 0; i < a.length; i++) {
    const [ka, va] = a[i]!;
    const [kb, vb] = b[i]!;
    if (ka !== kb) return ka < kb ? -1 : 1;
    if (va !== vb) return va < vb ? -1 : 1;
  }
  return 0;
}

/** Every pair of `term` appears in `other` (both sorted). */
export function isSubset(term: TopologyTerm, other: TopologyTerm): boolean {
  return term.every(([k, v]) => other.some(([k2, v2]) => k2 === k && v2 === v));
}

/** allowedTopologies (OR of AND of OR) distributed into an OR of AND-ed terms. */
export function flattenAllowedTopologies(allowed: readonly TopologySelectorTerm[]): TopologyTerm[] {
  const out: TopologyTerm[] = [];
  for (const selector of allowed) {
    let terms: [string, string][][] = [];
    for (const expression of selector.matchLabelExpressions ?? []) {
      const next: [string, string][][] = [];
      for (const value of expression.values) {
        if (terms.length === 0) next.push([[expression.key, value]]);
        else for (const old of terms) next.push([...old, [expression.key, value]]);
      }
      terms = next;
    }
    out.push(...terms.map(sortTerm));
  }
  return out;
}

function topologyKeysOf(csiNode: CSINode | undefined, driverName: string): string[] {
  return csiNode?.spec.drivers.find((d) => d.name === driverName)?.topologyKeys ?? [];
}

function termFromLabels(
  labels: Record<string, string> | undefined,
  keys: readonly string[],
): TopologyTerm | undefined {
  const term: [string, string][] = [];
  for (const key of keys) {
    const value = labels?.[key];
    if (value === undefined) return undefined;
    term.push([key, value]);
  }
  return sortTerm(term);
}

/** FNV-1 32-bit, as Go's hash/fnv New32. */
function fnv32(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, "utf8")) {
    hash = Math.imul(hash, 0x01000193) >>> 0;
    hash = (hash ^ byte) >>> 0;
  }
  return hash >>> 0;
}

/** Upstream's getPVCNameHashAndIndexOffset: StatefulSet claims `<claim>-<set>-<n>` spread by n. */
export function claimNameHashAndIndex(claimName: string): { hash: number; index: number } {
  let hashString = claimName;
  let index = 0;
  const lastDash = claimName.lastIndexOf("-");
  if (lastDash !== -1) {
    const suffix = claimName.slice(lastDash + 1);
    if (/^\d+$/.test(suffix) && Number(suffix) <= 0xffffffff) {
      index = Number(suffix);
      hashString = claimName.slice(0, lastDash);
      const prefixDash = hashString.lastIndexOf("-");
      if (prefixDash !== -1) hashString = hashString.slice(prefixDash + 1);
    }
  }
  return { hash: fnv32(hashString), index };
}

function aggregate(keys: readonly string[], nodes: readonly Node[]): TopologyTerm[] {
  const terms: TopologyTerm[] = [];
  for (const node of nodes) {
    const term = termFromLabels(node.metadata?.labels, keys);
    if (term && term.length > 0) terms.push(term);
  }
  return terms;
}

function toCsi(terms: readonly TopologyTerm[]): TopologyInput[] {
  return terms.filter((t) => t.length > 0).map((t) => ({ segments: Object.fromEntries(t) }));
}

/**
 * The accessibility requirements to send, or undefined for "none". Throws TopologyError when the
 * cluster does not (yet) carry the topology needed (retried by the caller).
 */
export function accessibilityRequirements(input: TopologyInputs): TopologyRequirementInput | undefined {
  let selectedTerm: TopologyTerm | undefined;
  let keys: string[] = [];
  let requisite: TopologyTerm[] = [];
  if (input.selectedNode !== "") {
    const csiNode = input.csiNodes.find((n) => n.metadata?.name === input.selectedNode);
    const node = input.nodes.find((n) => n.metadata?.name === input.selectedNode);
    // A CSINode that exists but lacks the driver may still get it (the driver is registering):
    // that one is retried; a missing object is not coming back under this name in time.
    if (!node)
      throw new SelectedNodeMissingError(`selected node ${JSON.stringify(input.selectedNode)} not found`);
    if (!csiNode)
      throw new SelectedNodeMissingError(
        `CSINode of selected node ${JSON.stringify(input.selectedNode)} not found`,
      );
    keys = topologyKeysOf(csiNode, input.driverName);
    if (keys.length === 0) throw new TopologyError(`no topology key found for node ${input.selectedNode}`);
    selectedTerm = termFromLabels(node?.metadata?.labels, keys);
    if (!selectedTerm)
      throw new TopologyError(
        `topology labels from selected node ${input.selectedNode} do not match topology keys from CSINode ${JSON.stringify(keys)}`,
      );
    if (input.strictTopology) {
      if (input.allowedTopologies.length > 0) {
        const allowed = flattenAllowedTopologies(input.allowedTopologies);
        if (!allowed.some((t) => isSubset(t, selectedTerm!)))
          throw new TopologyError(
            `selected node ${JSON.stringify(input.selectedNode)} topology ${JSON.stringify(Object.fromEntries(selectedTerm))} is not in allowed topologies`,
          );
      }
      requisite = [selectedTerm];
    }
  }
  if (requisite.length === 0) {
    if (input.allowedTopologies.length > 0) requisite = flattenAllowedTopologies(input.allowedTopologies);
    else {
      if (input.selectedNode === "" && !input.immediateTopology) return undefined;
      if (input.selectedNode === "") {
        const source = input.csiNodes.find((n) => topologyKeysOf(n, input.driverName).length > 0);
        keys = topologyKeysOf(source, input.driverName);
        // No node has registered keys: upstream sends no requirement.
        if (keys.length === 0) return undefined;
      }
      requisite = aggregate(keys, input.nodes);
      if (requisite.length === 0)
        throw new TopologyError(`topology keys ${JSON.stringify(keys)} were not found on any nodes`);
    }
  }
  if (requisite.length === 0) return undefined;
  requisite.sort(compareTerms);
  requisite = requisite.filter((t, i) => i === 0 || compareTerms(t, requisite[i - 1]!) !== 0);
  let preferred: TopologyTerm[];
  if (input.selectedNode === "") {
    const { hash, index } = claimNameHashAndIndex(input.claimName);
    const shift = Number((BigInt(hash) + BigInt(index)) % 0x100000000n) % requisite.length;
    preferred = [...requisite.slice(shift), ...requisite.slice(0, shift)];
  } else if (input.strictTopology) {
    preferred = requisite;
  } else {
    const at = requisite.findIndex((t) => isSubset(t, selectedTerm!));
    if (at < 0)
      throw new TopologyError(
        `topology ${JSON.stringify(Object.fromEntries(selectedTerm!))} from selected node ${JSON.stringify(input.selectedNode)} is not in requisite`,
      );
    preferred = [...requisite.slice(at), ...requisite.slice(0, at)];
  }
  return { requisite: toCsi(requisite), preferred: toCsi(preferred) };
}

/** PV nodeAffinity from a CreateVolume response's accessible_topology (seed 000 "Form 1"). */
export function volumeNodeAffinity(accessibleTopology: readonly { segments: Record<string, string> }[]):
  | {
      required: {
        nodeSelectorTerms: { matchExpressions: { key: string; operator: "In"; values: string[] }[] }[];
      };
    }
  | undefined {
  const terms = accessibleTopology
    .filter((t) => Object.keys(t.segments).length > 0)
    .map((t) => ({
      matchExpressions: Object.keys(t.segments)
        .sort()
        .map((key) => ({ key, operator: "In" as const, values: [t.segments[key]!] })),
    }));
  return terms.length === 0 ? undefined : { required: { nodeSelectorTerms: terms } };
}

/** Whether a PV's nodeAffinity admits a node with these topology labels (node deployment). */
export function affinityMatches(
  affinity:
    | {
        required?: {
          nodeSelectorTerms?: { matchExpressions?: { key: string; operator: string; values?: string[] }[] }[];
        };
      }
    | undefined,
  labels: Record<string, string>,
): boolean {
  const terms = affinity?.required?.nodeSelectorTerms;
  if (!terms || terms.length === 0) return true;
  return terms.some((term) =>
    (term.matchExpressions ?? []).every((e) => {
      const value = labels[e.key];
      switch (e.operator) {
        case "In":
          return value !== undefined && (e.values ?? []).includes(value);
        case "NotIn":
          return value === undefined || !(e.values ?? []).includes(value);
        case "Exists":
          return value !== undefined;
        case "DoesNotExist":
          return value === undefined;
        default:
          return false;
      }
    }),
  );
}
