// Small pure helpers the checks share: naming an object in a finding, telling whether a
// deletion has been pending long enough to count as stuck, and who uses a claim.

import { ephemeralClaimName, type KubeResource, type PersistentVolumeClaim, type Pod } from "../api/index.ts";
import type { DoctorInputs, ObjectRef } from "./types.ts";

export function refOf(kind: string, object: KubeResource): ObjectRef {
  const { name = "", namespace, uid } = object.metadata;
  return { kind, name, ...(namespace ? { namespace } : {}), ...(uid ? { uid } : {}) };
}

/** "PersistentVolume pv-1", "PersistentVolumeClaim default/data". */
export function describeRef(ref: ObjectRef): string {
  return `${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ""}${ref.name}`;
}

/** How long the object has been waiting for deletion (ms), or undefined when it is not being deleted. */
export function deletionAge(object: KubeResource, now: number): number | undefined {
  const since = object.metadata.deletionTimestamp;
  if (since === undefined) return undefined;
  const at = Date.parse(since);
  return Number.isNaN(at) ? 0 : Math.max(0, now - at);
}

/** Whether the object has been waiting for deletion at least --min-age: stuck, not in progress. */
export function stuckInDeletion(
  object: KubeResource,
  inputs: Pick<DoctorInputs, "now" | "minAgeMs">,
): boolean {
  const age = deletionAge(object, inputs.now);
  return age !== undefined && age >= inputs.minAgeMs;
}

/** "3m20s" for a finding's why. */
export function formatAge(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m${seconds % 60}s`;
  const hours = Math.floor(minutes / 60);
  return hours < 48 ? `${hours}h${minutes % 60}m` : `${Math.floor(hours / 24)}d`;
}

/** A pod that ended (Succeeded/Failed) no longer holds its claims (the PVC protection rule). */
function podEnded(pod: Pod): boolean {
  return pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed";
}

/** The pods (not ended) that use `claim`: by claimName or through a generic ephemeral volume. */
export function podsUsingClaim(pods: readonly Pod[], claim: PersistentVolumeClaim): Pod[] {
  const namespace = claim.metadata.namespace;
  const name = claim.metadata.name;
  return pods.filter(
    (pod) =>
      pod.metadata.namespace === namespace &&
      !podEnded(pod) &&
      (pod.spec?.volumes ?? []).some(
        (volume) =>
          volume.persistentVolumeClaim?.claimName === name ||
          (volume.ephemeral !== undefined && ephemeralClaimName(pod, volume) === name),
      ),
  );
}

/** The claims in `namespace` still being provisioned (Pending) from a data source of `kind`/`name`. */
export function pendingClaimsFromSource(
  claims: readonly PersistentVolumeClaim[],
  source: { namespace: string | undefined; kind: string; name: string },
): PersistentVolumeClaim[] {
  return claims.filter((claim) => {
    if (claim.metadata.namespace !== source.namespace || claim.status?.phase === "Bound") return false;
    const refs = [claim.spec?.dataSource, claim.spec?.dataSourceRef];
    return refs.some((ref) => ref?.kind === source.kind && ref.name === source.name);
  });
}
