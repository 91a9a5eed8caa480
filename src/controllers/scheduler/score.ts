// The score phase: among the nodes that passed every filter, which one a pod prefers. Upstream
// sums many weighted Score plugins; for a volume-only cluster the one that matters is
// VolumeBinding's storage capacity score (KEP-4049, gate StorageCapacityScoring): per storage
// class, utilization = requested * 100 / capacity (integer; 100 when the capacity is zero or too
// small), mapped through VolumeBindingArgs' default shape — utilization 0 → 10, 100 → 0, scaled
// to the node score range 0..100 — so the node with the most free capacity scores highest; the
// node's score is the rounded mean over classes. Static bindings, when the node has any, are
// scored by their PVs' capacities; otherwise dynamic provisions by the capacity of the
// CSIStorageCapacity that admitted them (provisions of drivers that do not track capacity are
// left out). Pure functions.

import type { PersistentVolume, PersistentVolumeClaim } from "../../api/index.ts";
import { storageBytes, volumeClass, type VolumeDecision } from "./volume-binding.ts";

/** Upstream's framework.MaxNodeScore. */
export const MAX_NODE_SCORE = 100;
/** Upstream's MaxCustomPriorityScore: shape scores are 0..10 and scaled to the node range. */
const MAX_CUSTOM_PRIORITY_SCORE = 10;

export interface ShapePoint {
  /** Utilization in percent, 0..100, ascending along the shape. */
  utilization: number;
  /** Score at that utilization, 0..10. */
  score: number;
}

/** VolumeBindingArgs.shape's default when StorageCapacityScoring is on: prefer free capacity. */
export const DEFAULT_CAPACITY_SHAPE: readonly ShapePoint[] = Object.freeze([
  { utilization: 0, score: MAX_CUSTOM_PRIORITY_SCORE },
  { utilization: 100, score: 0 },
]);

interface ClassResource {
  requested: bigint;
  capacity: bigint;
}

/**
 * Upstream's broken linear function over the shape (scores already in node range): flat before
 * the first and after the last point, linear between, integer arithmetic truncating as Go does.
 */
function brokenLinear(shape: readonly ShapePoint[], utilization: number): number {
  const points = shape.map((p) => ({
    x: p.utilization,
    y: p.score * (MAX_NODE_SCORE / MAX_CUSTOM_PRIORITY_SCORE),
  }));
  for (let i = 0; i < points.length; i++) {
    const point = points[i]!;
    if (utilization <= point.x) {
      if (i === 0) return point.y;
      const previous = points[i - 1]!;
      return (
        previous.y +
        Math.trunc(((point.y - previous.y) * (utilization - previous.x)) / (point.x - previous.x))
      );
    }
  }
  return points[points.length - 1]?.y ?? 0;
}

function classScore(shape: readonly ShapePoint[], resource: ClassResource): number {
  if (resource.capacity === 0n || resource.requested > resource.capacity) return brokenLinear(shape, 100);
  return brokenLinear(shape, Number((resource.requested * 100n) / resource.capacity));
}

function requestedBytes(claim: PersistentVolumeClaim): bigint {
  return storageBytes(claim.spec?.resources?.requests?.storage) ?? 0n;
}

function volumeBytes(volume: PersistentVolume): bigint {
  return storageBytes(volume.spec?.capacity?.storage) ?? 0n;
}

/** Requested and available bytes per storage class, as upstream's Score gathers them. */
function classResources(decision: VolumeDecision): Map<string, ClassResource> {
  const byClass = new Map<string, ClassResource>();
  const entry = (name: string): ClassResource => {
    let resource = byClass.get(name);
    if (!resource) byClass.set(name, (resource = { requested: 0n, capacity: 0n }));
    return resource;
  };
  if (decision.staticBindings.length > 0) {
    for (const { claim, volume } of decision.staticBindings) {
      const resource = entry(volumeClass(volume));
      resource.requested += requestedBytes(claim);
      resource.capacity += volumeBytes(volume);
    }
    return byClass;
  }
  for (const claim of decision.provisions) {
    const nodeCapacity = decision.nodeCapacities.get(claim);
    if (nodeCapacity === undefined) continue;
    const resource = entry(claim.spec?.storageClassName ?? "");
    // One pool per class and topology: two claims share it, so it is not added twice.
    resource.capacity = storageBytes(nodeCapacity.capacity) ?? 0n;
    resource.requested += requestedBytes(claim);
  }
  return byClass;
}

/** The node's VolumeBinding score, 0..100 (0 when nothing of the pod's is scored there). */
export function storageCapacityScore(
  decision: VolumeDecision,
  shape: readonly ShapePoint[] = DEFAULT_CAPACITY_SHAPE,
): number {
  const resources = [...classResources(decision).values()];
  if (resources.length === 0) return 0;
  const total = resources.reduce((sum, resource) => sum + classScore(shape, resource), 0);
  return Math.round(total / resources.length);
}
