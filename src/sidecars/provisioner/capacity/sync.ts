// The decisions of one capacity work item, as pure functions (CONVENTIONS §3): the GetCapacity
// request for a (segment, class) pair, the quantities its answer means, and what to write —
// create, update or nothing — given the object that exists, if any.
//
// As upstream:
// - the request carries the class parameters, the segment as accessible_topology, and one
//   arbitrary mount capability with access mode UNKNOWN (capacity is assumed independent of
//   capabilities, but the spec requires something);
// - capacity is available_capacity and maximumVolumeSize is maximum_volume_size when the driver
//   sends one, both as BinarySI quantities; minimum_volume_size has no field in
//   storage.k8s.io/v1 CSIStorageCapacity and is not published;
// - an object is written even for zero capacity (the scheduler then knows the segment is full);
// - an existing object is left alone when capacity, maximumVolumeSize and owner are right; an
//   update adds our owner reference when it is missing but never removes another.

import {
  CAPACITY_GENERATE_NAME,
  LABELS,
  formatQuantity,
  quantityFromValue,
  quantityValue,
  tryParseQuantity,
  type CSIStorageCapacity,
  type OwnerReference,
  type StorageClass,
} from "../../../api/index.ts";
import type { GetCapacityRequestInput, GetCapacityResponse } from "../../../csi/index.ts";
import { segmentLabels, segmentSelector, type Segment } from "./segment.ts";

export function capacityRequest(storageClass: StorageClass, segment: Segment): GetCapacityRequestInput {
  return {
    parameters: { ...(storageClass.parameters ?? {}) },
    volumeCapabilities: [{ mount: {}, accessType: "mount", accessMode: { mode: "UNKNOWN" } }],
    accessibleTopology: { segments: segmentLabels(segment) },
  };
}

export interface ReportedCapacity {
  /** available_capacity in bytes. */
  capacity: bigint;
  /** maximum_volume_size in bytes, null when the driver sent none. */
  maximumVolumeSize: bigint | null;
}

export function reportedCapacity(response: GetCapacityResponse): ReportedCapacity {
  return {
    capacity: BigInt(response.availableCapacity || "0"),
    maximumVolumeSize: response.maximumVolumeSize ? BigInt(response.maximumVolumeSize.value || "0") : null,
  };
}

function bytes(value: bigint): string {
  return formatQuantity(quantityFromValue(value, "BinarySI"));
}

function sameSize(existing: string | undefined, wanted: bigint | null): boolean {
  if (existing === undefined || wanted === null) return existing === undefined && wanted === null;
  const parsed = tryParseQuantity(existing);
  return parsed !== undefined && quantityValue(parsed) === wanted;
}

/** Whether the object has our owner as its controller (metav1.IsControlledBy by UID). */
export function isOwnedBy(object: CSIStorageCapacity, owner: OwnerReference): boolean {
  return (object.metadata?.ownerReferences ?? []).some(
    (ref) => ref.controller === true && ref.uid === owner.uid,
  );
}

export interface CapacityIdentity {
  driverName: string;
  managedBy: string;
  namespace: string;
  owner: OwnerReference | null;
}

export type CapacityPlan =
  | { action: "create"; object: CSIStorageCapacity }
  | { action: "update"; object: CSIStorageCapacity }
  | { action: "none" };

/** What to write for (segment, class) given the driver's answer and the existing object. */
export function planCapacity(
  identity: CapacityIdentity,
  item: { segment: Segment; storageClassName: string },
  reported: ReportedCapacity,
  existing: CSIStorageCapacity | null,
): CapacityPlan {
  if (existing === null) {
    const object: CSIStorageCapacity = {
      apiVersion: "storage.k8s.io/v1",
      kind: "CSIStorageCapacity",
      metadata: {
        generateName: CAPACITY_GENERATE_NAME,
        namespace: identity.namespace,
        labels: {
          [LABELS.capacityDriverName.key]: identity.driverName,
          [LABELS.capacityManagedBy.key]: identity.managedBy,
        },
        ...(identity.owner ? { ownerReferences: [{ ...identity.owner }] } : {}),
      },
      storageClassName: item.storageClassName,
      nodeTopology: segmentSelector(item.segment),
      capacity: bytes(reported.capacity),
      ...(reported.maximumVolumeSize !== null
        ? { maximumVolumeSize: bytes(reported.maximumVolumeSize) }
        : {}),
    };
    return { action: "create", object };
  }
  const ownerRight = identity.owner === null || isOwnedBy(existing, identity.owner);
  if (
    sameSize(existing.capacity, reported.capacity) &&
    sameSize(existing.maximumVolumeSize, reported.maximumVolumeSize) &&
    ownerRight
  ) {
    return { action: "none" };
  }
  const object = structuredClone(existing);
  object.capacity = bytes(reported.capacity);
  if (reported.maximumVolumeSize !== null) object.maximumVolumeSize = bytes(reported.maximumVolumeSize);
  else delete object.maximumVolumeSize;
  if (!ownerRight && identity.owner !== null) {
    object.metadata = {
      ...object.metadata,
      ownerReferences: [...(object.metadata?.ownerReferences ?? []), { ...identity.owner }],
    };
  }
  return { action: "update", object };
}
