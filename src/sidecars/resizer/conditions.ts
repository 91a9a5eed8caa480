// Pure helpers over a claim's status, as external-resizer's util and resize_status.go compute
// them: merging resize and modify conditions, and reading the size fields. Everything returns
// new values; cached objects are never changed.

import {
  compareQuantities,
  parseQuantity,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type PersistentVolumeClaimCondition,
} from "../../api/index.ts";
import { CONDITION, RESIZE_CONDITIONS } from "./names.ts";

/**
 * MergeResizeConditionsOfPVC: conditions of other kinds stay; a resize condition of a type in
 * `next` is replaced by it; other resize conditions are dropped unless `keepOld`; new types are
 * appended.
 */
export function mergeResizeConditions(
  old: readonly PersistentVolumeClaimCondition[] | undefined,
  next: readonly PersistentVolumeClaimCondition[],
  keepOld: boolean,
): PersistentVolumeClaimCondition[] {
  const wanted = new Map(next.map((c) => [c.type, c]));
  const out: PersistentVolumeClaimCondition[] = [];
  for (const condition of old ?? []) {
    const replacement = wanted.get(condition.type);
    if (replacement) {
      out.push(replacement);
      wanted.delete(condition.type);
    } else if (!RESIZE_CONDITIONS.has(condition.type) || keepOld) {
      out.push(condition);
    } else {
      // OBSERVATION: an old resize condition the new state no longer has: dropped.
    }
  }
  out.push(...wanted.values());
  return out;
}

/** MergeModifyVolumeConditionsOfPVC: modify conditions replaced by `next`, the rest kept. */
export function mergeModifyConditions(
  old: readonly PersistentVolumeClaimCondition[] | undefined,
  next: readonly PersistentVolumeClaimCondition[],
): PersistentVolumeClaimCondition[] {
  return [...clearModifyConditions(old), ...next];
}

export function clearModifyConditions(
  old: readonly PersistentVolumeClaimCondition[] | undefined,
): PersistentVolumeClaimCondition[] {
  return (old ?? []).filter(
    (c) => c.type !== CONDITION.modifyingVolume && c.type !== CONDITION.modifyVolumeError,
  );
}

export function condition(type: string, now: Date, message?: string): PersistentVolumeClaimCondition {
  return {
    type,
    status: "True",
    lastTransitionTime: now.toISOString().replace(/\.\d{3}Z$/, "Z"),
    ...(message !== undefined && message !== "" ? { message } : {}),
  };
}

export function hasCondition(claim: PersistentVolumeClaim, type: string): boolean {
  return (claim.status?.conditions ?? []).some((c) => c.type === type && c.status === "True");
}

/** a < b → -1, a = b → 0, a > b → 1; a missing quantity counts as 0. */
export function compareSizes(a: string | undefined, b: string | undefined): -1 | 0 | 1 {
  return compareQuantities(parseQuantity(a ?? "0"), parseQuantity(b ?? "0"));
}

export const requestedSize = (claim: PersistentVolumeClaim): string | undefined =>
  claim.spec?.resources?.requests?.storage;
export const statusSize = (claim: PersistentVolumeClaim): string | undefined =>
  claim.status?.capacity?.storage;
export const allocatedSize = (claim: PersistentVolumeClaim): string | undefined =>
  claim.status?.allocatedResources?.storage;
export const resizeStatus = (claim: PersistentVolumeClaim): string =>
  claim.status?.allocatedResourceStatuses?.storage ?? "";
export const volumeSize = (pv: PersistentVolume): string | undefined => pv.spec?.capacity?.storage;

/** pvcNeedResize: a Bound claim with a volume whose request exceeds its status capacity. */
export function claimNeedsResize(claim: PersistentVolumeClaim): boolean {
  if (claim.status?.phase !== "Bound" || !claim.spec?.volumeName) return false;
  return compareSizes(requestedSize(claim), statusSize(claim)) > 0;
}
