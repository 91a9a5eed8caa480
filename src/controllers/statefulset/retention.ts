// persistentVolumeClaimRetentionPolicy as owner references, pure (upstream's
// isClaimOwnerUpToDate / updateClaimOwnerRefForSetAndPod / PodClaimIsStale): the controller
// never deletes a claim itself, it makes the garbage collector do it —
//   Retain/Retain: no reference from the set or the pod;
//   whenDeleted Delete: the set controls the claim (deleting the set deletes it);
//   whenScaled Delete: the claim of a scaled-down ordinal is controlled by its pod (deleting
//   the condemned pod deletes it); with both Delete, the set controls the claims of the
//   ordinals it keeps and the pod those it scales away.
// A claim controlled by anything else, or holding a reference to an earlier set or pod of the
// same name (another UID), is left alone, as upstream leaves it.

import type { OwnerReference, PersistentVolumeClaim, Pod, StatefulSet } from "../../api/index.ts";
import { controllerRef } from "../common/index.ts";
import { inOrdinalRange } from "./identity.ts";

interface Named {
  metadata?: { name?: string; uid?: string } | undefined;
}

function policyOf(set: StatefulSet): { whenDeleted: string; whenScaled: string } {
  const policy = set.spec?.persistentVolumeClaimRetentionPolicy;
  return { whenDeleted: policy?.whenDeleted ?? "Retain", whenScaled: policy?.whenScaled ?? "Retain" };
}

function refsOf(claim: PersistentVolumeClaim): OwnerReference[] {
  return claim.metadata.ownerReferences ?? [];
}

function matchesRef(ref: OwnerReference, object: Named, apiVersion: string, kind: string): boolean {
  return ref.apiVersion === apiVersion && ref.kind === kind && ref.name === object.metadata?.name;
}

const isSetRef = (ref: OwnerReference, set: StatefulSet): boolean =>
  matchesRef(ref, set, "apps/v1", "StatefulSet");
const isPodRef = (ref: OwnerReference, pod: Pod): boolean => matchesRef(ref, pod, "v1", "Pod");

function hasOwnerRef(claim: PersistentVolumeClaim, owner: Named): boolean {
  const uid = owner.metadata?.uid;
  return refsOf(claim).some((ref) => ref.uid === uid);
}

/** A reference naming this object's kind and name but another UID (an earlier incarnation). */
export function hasStaleOwnerRef(
  claim: PersistentVolumeClaim,
  owner: Named,
  apiVersion: string,
  kind: string,
): boolean {
  const ref = refsOf(claim).find((candidate) => matchesRef(candidate, owner, apiVersion, kind));
  return ref !== undefined && ref.uid !== (owner.metadata?.uid ?? "");
}

function hasUnexpectedController(claim: PersistentVolumeClaim, set: StatefulSet, pod: Pod): boolean {
  const policy = policyOf(set);
  if (policy.whenScaled === "Retain" && policy.whenDeleted === "Retain") return false;
  for (const ref of refsOf(claim)) {
    if (isSetRef(ref, set)) {
      if (ref.uid !== set.metadata.uid) return true;
      continue;
    }
    if (isPodRef(ref, pod)) {
      if (ref.uid !== pod.metadata?.uid) return true;
      continue;
    }
    if (ref.controller === true) return true;
  }
  return false;
}

function hasNonControllerOwner(claim: PersistentVolumeClaim, set: StatefulSet, pod: Pod): boolean {
  return refsOf(claim).some(
    (ref) => (ref.uid === set.metadata.uid || ref.uid === pod.metadata?.uid) && ref.controller !== true,
  );
}

/** Whether the claim's references already say what the policy wants (or must not be touched). */
export function isClaimOwnerUpToDate(claim: PersistentVolumeClaim, set: StatefulSet, pod: Pod): boolean {
  if (hasStaleOwnerRef(claim, set, "apps/v1", "StatefulSet") || hasStaleOwnerRef(claim, pod, "v1", "Pod"))
    return true;
  if (hasUnexpectedController(claim, set, pod)) return !(hasOwnerRef(claim, set) || hasOwnerRef(claim, pod));
  if (hasNonControllerOwner(claim, set, pod)) return false;
  const policy = policyOf(set);
  const scaledDown = !inOrdinalRange(pod, set);
  const setOwns = hasOwnerRef(claim, set);
  const podOwns = hasOwnerRef(claim, pod);
  if (policy.whenScaled === "Delete" && policy.whenDeleted === "Delete")
    return scaledDown !== setOwns && scaledDown === podOwns;
  if (policy.whenScaled === "Delete") return !setOwns && scaledDown === podOwns;
  if (policy.whenDeleted === "Delete") return setOwns && !podOwns;
  return !setOwns && !podOwns;
}

/** The claim's owner references as the policy wants them. */
export function ownerRefsForPolicy(
  claim: PersistentVolumeClaim,
  set: StatefulSet,
  pod: Pod,
): OwnerReference[] {
  const unexpected = hasUnexpectedController(claim, set, pod);
  const refs = refsOf(claim).filter((ref) => !isSetRef(ref, set) && !isPodRef(ref, pod));
  if (unexpected) return refs;
  const add = (owner: Named, kind: string, apiVersion: string): void => {
    if (!refs.some((ref) => ref.uid === owner.metadata?.uid))
      refs.push(controllerRef({ metadata: owner.metadata ?? {} }, kind, apiVersion));
  };
  const policy = policyOf(set);
  const scaledDown = !inOrdinalRange(pod, set);
  if (policy.whenScaled === "Delete" && scaledDown) add(pod, "Pod", "v1");
  else if (policy.whenDeleted === "Delete" && (policy.whenScaled === "Retain" || !scaledDown))
    add(set, "StatefulSet", "apps/v1");
  return refs;
}

/**
 * A claim left by an earlier pod of this ordinal that the policy has the garbage collector
 * delete: the new pod must wait for it to go rather than adopt doomed storage.
 */
export function claimIsStale(claim: PersistentVolumeClaim, set: StatefulSet, pod: Pod): boolean {
  if (policyOf(set).whenScaled === "Retain") return false;
  return hasStaleOwnerRef(claim, pod, "v1", "Pod");
}
