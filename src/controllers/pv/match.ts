// Pure matching rules of the PV controller, as upstream's pv_controller index and
// FindMatchingVolume: which volume a claim binds to. No I/O.
//
// - A volume is a candidate when it is unbound (or bound/pre-bound to this claim), large
//   enough, of the same volumeMode, not being deleted, in the requested class, Available,
//   matching the claim's selector and, when a node is given, whose node affinity that node
//   satisfies.
// - A volume already pointing at the claim (claimRef name/namespace and empty or equal UID)
//   wins over everything else.
// - Volumes are grouped by their access-mode set; groups containing every requested mode are
//   tried from the fewest modes up, and within a group the smallest capacity wins, so a claim
//   for RWO takes an RWO volume before an RWO+ROX one, as upstream's index does.
// - Without a node, claims of WaitForFirstConsumer classes only take volumes pre-bound to
//   them: placing them is the scheduler's job (upstream `delayBinding`).

import {
  compareQuantities,
  labelSelectorMatches,
  tryParseQuantity,
  type Node,
  type NodeSelectorRequirement,
  type NodeSelectorTerm,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Quantity,
} from "../../api/index.ts";

const ZERO: Quantity = Object.freeze({ nanos: 0n, format: "BinarySI" });

export function storageQuantity(list: Record<string, string> | undefined): Quantity {
  return tryParseQuantity(list?.storage) ?? ZERO;
}

/** The claim's class: spec.storageClassName, else the beta annotation, else "". */
export function claimClass(claim: PersistentVolumeClaim): string {
  const beta = claim.metadata?.annotations?.["volume.beta.kubernetes.io/storage-class"];
  if (beta !== undefined) return beta;
  return claim.spec?.storageClassName ?? "";
}

/** The volume's class: the beta annotation, else spec.storageClassName, else "". */
export function volumeClass(volume: PersistentVolume): string {
  const beta = volume.metadata?.annotations?.["volume.beta.kubernetes.io/storage-class"];
  if (beta !== undefined) return beta;
  return volume.spec?.storageClassName ?? "";
}

/** Whether the volume's claimRef points at this claim (an empty UID matches any UID). */
export function isVolumeBoundToClaim(volume: PersistentVolume, claim: PersistentVolumeClaim): boolean {
  const ref = volume.spec?.claimRef;
  if (!ref) return false;
  if (ref.name !== claim.metadata?.name || ref.namespace !== claim.metadata?.namespace) return false;
  if (ref.uid !== undefined && ref.uid !== "" && ref.uid !== claim.metadata?.uid) return false;
  return true;
}

/** Filesystem is the default on both sides; a mismatch forbids binding. */
export function volumeModeMismatch(claim: PersistentVolumeClaim, volume: PersistentVolume): boolean {
  return (claim.spec?.volumeMode ?? "Filesystem") !== (volume.spec?.volumeMode ?? "Filesystem");
}

/** Whether the volume offers every access mode the claim asks for. */
export function accessModesContain(
  offered: readonly string[] | undefined,
  wanted: readonly string[],
): boolean {
  const set = new Set(offered ?? []);
  return wanted.every((mode) => set.has(mode));
}

function requirementMatches(requirement: NodeSelectorRequirement, value: string | undefined): boolean {
  const values = requirement.values ?? [];
  switch (requirement.operator) {
    case "In":
      return value !== undefined && values.includes(value);
    case "NotIn":
      return value === undefined || !values.includes(value);
    case "Exists":
      return value !== undefined;
    case "DoesNotExist":
      return value === undefined;
    case "Gt":
    case "Lt": {
      if (value === undefined || values.length !== 1) return false;
      const have = Number.parseInt(value, 10);
      const limit = Number.parseInt(values[0]!, 10);
      if (Number.isNaN(have) || Number.isNaN(limit)) return false;
      return requirement.operator === "Gt" ? have > limit : have < limit;
    }
    default:
      return false;
  }
}

/** One term: all expressions and fields hold (an empty term matches nothing, as upstream). */
export function nodeSelectorTermMatches(term: NodeSelectorTerm, node: Node): boolean {
  const expressions = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (expressions.length === 0 && fields.length === 0) return false;
  const labels = node.metadata?.labels ?? {};
  for (const expression of expressions) {
    if (
      !requirementMatches(
        expression,
        Object.hasOwn(labels, expression.key) ? labels[expression.key] : undefined,
      )
    )
      return false;
  }
  for (const field of fields) {
    const value = field.key === "metadata.name" ? node.metadata?.name : undefined;
    if (!requirementMatches(field, value)) return false;
  }
  return true;
}

/** The volume's required node affinity holds for the node (no affinity: any node). */
export function volumeNodeAffinityMatches(volume: PersistentVolume, node: Node): boolean {
  const terms = volume.spec?.nodeAffinity?.required?.nodeSelectorTerms;
  if (terms === undefined) return true;
  return terms.some((term) => nodeSelectorTermMatches(term, node));
}

export interface MatchOptions {
  /** The claim's class binds late (WaitForFirstConsumer). */
  delayBinding: boolean;
  /** The node chosen for the claim (selected-node): volumes must be usable there. */
  node?: Node;
}

/** FindMatchingVolume over one group of volumes. */
function findInGroup(
  claim: PersistentVolumeClaim,
  volumes: readonly PersistentVolume[],
  options: MatchOptions,
): PersistentVolume | undefined {
  const requested = storageQuantity(claim.spec?.resources?.requests);
  const requestedClass = claimClass(claim);
  let best: PersistentVolume | undefined;
  let bestSize: Quantity | undefined;
  for (const volume of volumes) {
    if (volume.spec?.claimRef && !isVolumeBoundToClaim(volume, claim)) continue;
    const size = storageQuantity(volume.spec?.capacity);
    if (compareQuantities(size, requested) < 0) continue;
    if (volumeModeMismatch(claim, volume)) continue;
    if (volume.metadata?.deletionTimestamp) continue;
    const affinityOk = options.node === undefined || volumeNodeAffinityMatches(volume, options.node);
    if (isVolumeBoundToClaim(volume, claim)) return affinityOk ? volume : undefined;
    if (options.node === undefined && options.delayBinding) continue;
    if (volume.status?.phase !== "Available") continue;
    if (claim.spec?.selector && !labelSelectorMatches(claim.spec.selector, volume.metadata?.labels ?? {}))
      continue;
    if (volumeClass(volume) !== requestedClass) continue;
    if (!affinityOk) continue;
    if (
      options.node !== undefined &&
      !accessModesContain(volume.spec?.accessModes, claim.spec?.accessModes ?? [])
    )
      continue;
    if (bestSize === undefined || compareQuantities(bestSize, size) > 0) {
      best = volume;
      bestSize = size;
    }
  }
  return best;
}

/** The access-mode set of a volume as an index key (sorted, so order does not matter). */
function modesKey(volume: PersistentVolume): string {
  return [...new Set(volume.spec?.accessModes ?? [])].sort().join(",");
}

/** The volume the claim should bind to, or undefined (upstream findBestMatchForClaim). */
export function findBestMatchForClaim(
  claim: PersistentVolumeClaim,
  volumes: readonly PersistentVolume[],
  options: MatchOptions,
): PersistentVolume | undefined {
  const groups = new Map<string, PersistentVolume[]>();
  for (const volume of volumes) {
    const key = modesKey(volume);
    const group = groups.get(key);
    if (group) group.push(volume);
    else groups.set(key, [volume]);
  }
  const wanted = claim.spec?.accessModes ?? [];
  const candidates = [...groups.entries()]
    .filter(([key]) => accessModesContain(key === "" ? [] : key.split(","), wanted))
    .sort(([a], [b]) => (a === "" ? 0 : a.split(",").length) - (b === "" ? 0 : b.split(",").length));
  for (const [, group] of candidates) {
    const found = findInGroup(claim, group, options);
    if (found) return found;
  }
  return undefined;
}
