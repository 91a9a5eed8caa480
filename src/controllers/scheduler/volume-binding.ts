// The volume rules of scheduling, as upstream's VolumeBinding plugin (PreFilter + Filter) and
// its volume binder: which claims of a pod are bound, which wait for this scheduler
// (WaitForFirstConsumer), which block the pod (unbound immediate claims), and, per node, whether
// bound PVs' node affinity fits, whether an available static PV matches each delayed claim, or
// whether the claim can be provisioned there (allowedTopologies, CSIStorageCapacity).
// Pure functions over a read-only view of the caches.

import {
  ephemeralClaimName,
  ephemeralClaimRefusal,
  ANNOTATIONS,
  labelSelectorRequirements,
  labelsMatch,
  parseQuantity,
  quantityValue,
  type CSIDriver,
  type CSIStorageCapacity,
  type Node,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
  type StorageClass,
} from "../../api/index.ts";
import { nodeSelectorMatches, topologyTermsMatch } from "./node-selector.ts";

/** Read-only lookups the rules need (the scheduler's caches, overlaid with its own assumptions). */
export interface VolumeView {
  claim(namespace: string, name: string): PersistentVolumeClaim | undefined;
  volume(name: string): PersistentVolume | undefined;
  volumes(): readonly PersistentVolume[];
  storageClass(name: string): StorageClass | undefined;
  csiDriver(name: string): CSIDriver | undefined;
  capacities(): readonly CSIStorageCapacity[];
}

/** Upstream's filter reasons (volumebinding and CSI limits), verbatim. */
export const VOLUME_REASONS = Object.freeze({
  nodeConflict: "node(s) had volume node affinity conflict",
  bindConflict: "node(s) didn't find available persistent volumes to bind",
  pvNotExist: "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)",
  notEnoughSpace: "node(s) did not have enough free storage",
  maxVolumeCount: "node(s) exceed max volume count",
});

export const UNBOUND_IMMEDIATE_CLAIMS = "pod has unbound immediate PersistentVolumeClaims";

/** Class that marks "no dynamic provisioning" (local volumes). */
const NO_PROVISIONER = "kubernetes.io/no-provisioner";

export interface PodClaims {
  /** Claims bound (volumeName + bind-completed). */
  bound: PersistentVolumeClaim[];
  /** Unbound claims of WaitForFirstConsumer classes: this scheduler decides. */
  delayed: PersistentVolumeClaim[];
}

export type PreFilterResult = { ok: true; claims: PodClaims } | { ok: false; message: string };

export function claimClass(claim: PersistentVolumeClaim): string {
  return claim.spec?.storageClassName ?? "";
}

export function volumeClass(volume: PersistentVolume): string {
  return volume.spec?.storageClassName ?? "";
}

/** Bound as upstream's isPVCBound: a volume name and the bind-completed annotation. */
export function claimFullyBound(claim: PersistentVolumeClaim): boolean {
  return (
    (claim.spec?.volumeName ?? "") !== "" &&
    Object.hasOwn(claim.metadata?.annotations ?? {}, ANNOTATIONS.bindCompleted.key)
  );
}

function delayedBinding(claim: PersistentVolumeClaim, view: VolumeView): boolean {
  const name = claimClass(claim);
  if (name === "") return false;
  return view.storageClass(name)?.volumeBindingMode === "WaitForFirstConsumer";
}

/** The pod's claims, or why it cannot be scheduled anywhere now (PreFilter). */
export function preFilterVolumes(pod: Pod, view: VolumeView): PreFilterResult {
  const namespace = pod.metadata?.namespace ?? "";
  const claims: PodClaims = { bound: [], delayed: [] };
  let immediateUnbound = false;
  for (const volume of pod.spec?.volumes ?? []) {
    const claimName = podVolumeClaimName(pod, volume);
    if (claimName === undefined) continue;
    const claim = view.claim(namespace, claimName);
    if (!claim) {
      // Normal right after a pod with a generic ephemeral volume is created (upstream's wording).
      if (volume.ephemeral)
        return {
          ok: false,
          message: `waiting for ephemeral volume controller to create the persistentvolumeclaim "${claimName}"`,
        };
      return { ok: false, message: `persistentvolumeclaim "${claimName}" not found` };
    }
    if (claim.metadata?.deletionTimestamp) {
      return { ok: false, message: `persistentvolumeclaim "${claimName}" is being deleted` };
    }
    if (volume.ephemeral) {
      const refusal = ephemeralClaimRefusal(pod, claim);
      if (refusal !== undefined) return { ok: false, message: refusal };
    }
    if (claimFullyBound(claim)) claims.bound.push(claim);
    else if (delayedBinding(claim, view) && (claim.spec?.volumeName ?? "") === "") claims.delayed.push(claim);
    else immediateUnbound = true;
  }
  if (immediateUnbound) return { ok: false, message: UNBOUND_IMMEDIATE_CLAIMS };
  return { ok: true, claims };
}

/** The claim a pod volume uses: a PVC source, or the claim of a generic ephemeral volume. */
export function podVolumeClaimName(
  pod: Pod,
  volume: NonNullable<NonNullable<Pod["spec"]>["volumes"]>[number],
): string | undefined {
  if (volume.persistentVolumeClaim) return volume.persistentVolumeClaim.claimName;
  if (volume.ephemeral) return ephemeralClaimName(pod, volume);
  return undefined;
}

/** A PV's required node affinity against a node (none = any node). */
export function volumeFitsNode(volume: PersistentVolume, node: Node): boolean {
  const required = volume.spec?.nodeAffinity?.required;
  return required === undefined || nodeSelectorMatches(required, node);
}

function boundToClaim(volume: PersistentVolume, claim: PersistentVolumeClaim): boolean {
  const ref = volume.spec?.claimRef;
  if (!ref) return false;
  if (ref.name !== claim.metadata?.name || ref.namespace !== claim.metadata?.namespace) return false;
  return !ref.uid || ref.uid === claim.metadata?.uid;
}

/** A quantity in bytes, or undefined when absent or malformed. */
export function storageBytes(quantity: string | undefined): bigint | undefined {
  if (quantity === undefined) return undefined;
  try {
    return quantityValue(parseQuantity(quantity));
  } catch {
    return undefined;
  }
}

function selectorMatches(claim: PersistentVolumeClaim, volume: PersistentVolume): boolean {
  const selector = claim.spec?.selector;
  if (!selector) return true;
  try {
    return labelsMatch(labelSelectorRequirements(selector), volume.metadata?.labels ?? {});
  } catch {
    return false;
  }
}

/**
 * The smallest available PV that fits the claim on this node (upstream's FindMatchingVolume on
 * the scheduler path), or a PV pre-bound to the claim; `chosen` PVs are taken by other claims.
 */
export function findMatchingVolume(
  claim: PersistentVolumeClaim,
  node: Node,
  view: VolumeView,
  chosen: ReadonlySet<string>,
): PersistentVolume | undefined {
  const requested = storageBytes(claim.spec?.resources?.requests?.storage) ?? 0n;
  const claimMode = claim.spec?.volumeMode ?? "Filesystem";
  let best: { volume: PersistentVolume; size: bigint } | undefined;
  for (const volume of view.volumes()) {
    const name = volume.metadata?.name ?? "";
    if (chosen.has(name)) continue;
    if (volume.spec?.claimRef && !boundToClaim(volume, claim)) continue;
    const size = storageBytes(volume.spec?.capacity?.storage) ?? 0n;
    if (size < requested) continue;
    if ((volume.spec?.volumeMode ?? "Filesystem") !== claimMode) continue;
    if (volume.metadata?.deletionTimestamp) continue;
    const fits = volumeFitsNode(volume, node);
    if (boundToClaim(volume, claim)) return fits ? volume : undefined;
    if (volume.status?.phase !== "Available") continue;
    if (!selectorMatches(claim, volume)) continue;
    if (volumeClass(volume) !== claimClass(claim)) continue;
    if (!fits) continue;
    const modes = volume.spec?.accessModes ?? [];
    if (!(claim.spec?.accessModes ?? []).every((mode) => modes.includes(mode))) continue;
    if (!best || size < best.size) best = { volume, size };
  }
  return best?.volume;
}

/**
 * Upstream's hasEnoughCapacity with the capacity it found: `sufficient` says whether the claim
 * can be provisioned on the node; `capacity` is the first CSIStorageCapacity that fits and is
 * reachable from the node (undefined when capacity is not tracked: no request, a driver that did
 * not opt in). StorageCapacityScoring scores nodes by that object.
 */
export function nodeCapacityFor(
  claim: PersistentVolumeClaim,
  storageClass: StorageClass,
  node: Node,
  view: VolumeView,
): { sufficient: boolean; capacity?: CSIStorageCapacity } {
  const requested = storageBytes(claim.spec?.resources?.requests?.storage);
  if (requested === undefined) return { sufficient: true };
  // Only drivers that opt in (CSIDriver storageCapacity: true) are checked.
  if (view.csiDriver(storageClass.provisioner)?.spec?.storageCapacity !== true) return { sufficient: true };
  const capacity = view.capacities().find((candidate) => {
    if (candidate.storageClassName !== storageClass.metadata?.name) return false;
    // maximumVolumeSize, when given, is the more precise limit.
    const limit = storageBytes(candidate.maximumVolumeSize ?? candidate.capacity);
    if (limit === undefined || limit < requested) return false;
    if (!candidate.nodeTopology) return false;
    try {
      return labelsMatch(labelSelectorRequirements(candidate.nodeTopology), node.metadata?.labels ?? {});
    } catch {
      return false;
    }
  });
  return capacity === undefined ? { sufficient: false } : { sufficient: true, capacity };
}

/** CSIStorageCapacity check of upstream's hasEnoughCapacity. */
export function hasEnoughCapacity(
  claim: PersistentVolumeClaim,
  storageClass: StorageClass,
  node: Node,
  view: VolumeView,
): boolean {
  return nodeCapacityFor(claim, storageClass, node, view).sufficient;
}

export interface VolumeDecision {
  /** Filter reasons; empty when the node fits. */
  reasons: string[];
  /** Delayed claims to bind to a static PV on this node: claim → PV. */
  staticBindings: { claim: PersistentVolumeClaim; volume: PersistentVolume }[];
  /** Delayed claims to provision on this node (selected-node). */
  provisions: PersistentVolumeClaim[];
  /** The CSIStorageCapacity that admitted each provision, where capacity is tracked (scoring). */
  nodeCapacities: Map<PersistentVolumeClaim, CSIStorageCapacity>;
}

/** Upstream's FindPodVolumes for one node. */
export function filterVolumes(claims: PodClaims, node: Node, view: VolumeView): VolumeDecision {
  const decision: VolumeDecision = {
    reasons: [],
    staticBindings: [],
    provisions: [],
    nodeCapacities: new Map(),
  };
  let boundFits = true;
  let boundFound = true;
  for (const claim of claims.bound) {
    const volume = view.volume(claim.spec?.volumeName ?? "");
    if (!volume) boundFound = false;
    else if (!volumeFitsNode(volume, node)) boundFits = false;
  }
  let unboundFits = true;
  let enoughSpace = true;
  const nodeName = node.metadata?.name ?? "";
  const chosen = new Set<string>();
  const toProvision: PersistentVolumeClaim[] = [];
  for (const claim of claims.delayed) {
    const selected = claim.metadata?.annotations?.[ANNOTATIONS.selectedNode.key];
    if (selected !== undefined) {
      // A node was already selected for this claim: only that node can host the pod.
      if (selected !== nodeName) unboundFits = false;
      else toProvision.push(claim);
      continue;
    }
    const volume = findMatchingVolume(claim, node, view, chosen);
    if (volume) {
      chosen.add(volume.metadata?.name ?? "");
      decision.staticBindings.push({ claim, volume });
    } else {
      toProvision.push(claim);
    }
  }
  if (unboundFits) {
    for (const claim of toProvision) {
      const storageClass = view.storageClass(claimClass(claim));
      const provisioner = storageClass?.provisioner ?? "";
      if (!storageClass || provisioner === "" || provisioner === NO_PROVISIONER) {
        unboundFits = false;
        break;
      }
      if (!topologyTermsMatch(storageClass.allowedTopologies, node.metadata?.labels ?? {})) {
        unboundFits = false;
        break;
      }
      const { sufficient, capacity } = nodeCapacityFor(claim, storageClass, node, view);
      if (!sufficient) {
        enoughSpace = false;
        break;
      }
      decision.provisions.push(claim);
      if (capacity) decision.nodeCapacities.set(claim, capacity);
    }
  }
  if (!boundFits) decision.reasons.push(VOLUME_REASONS.nodeConflict);
  if (!boundFound) decision.reasons.push(VOLUME_REASONS.pvNotExist);
  if (!unboundFits) decision.reasons.push(VOLUME_REASONS.bindConflict);
  if (!enoughSpace) decision.reasons.push(VOLUME_REASONS.notEnoughSpace);
  return decision;
}
