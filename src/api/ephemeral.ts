// Generic ephemeral volumes (pod.spec.volumes[].ephemeral): the claim's name and the ownership
// rule every consumer applies before using it, as upstream's
// k8s.io/component-helpers/storage/ephemeral (VolumeClaimName, VolumeIsForPod). The
// ephemeral-volume controller creates the claim; the scheduler, the attach/detach controller
// and the kubelet refuse a claim of that name the pod does not control, so a claim someone
// else created cannot be mounted into the pod by name collision.

import type { PersistentVolumeClaim, Pod, Volume } from "./core.ts";

/** The claim of a generic ephemeral volume: "<pod name>-<volume name>". */
export function ephemeralClaimName(pod: Pod, volume: Pick<Volume, "name">): string {
  return `${pod.metadata?.name ?? ""}-${volume.name}`;
}

/**
 * Why `claim` may not serve as the pod's generic ephemeral volume (upstream's message), or
 * undefined when the pod is its controller in the same namespace.
 */
export function ephemeralClaimRefusal(pod: Pod, claim: PersistentVolumeClaim): string | undefined {
  const podNamespace = pod.metadata?.namespace ?? "";
  const claimNamespace = claim.metadata?.namespace ?? "";
  const claimName = claim.metadata?.name ?? "";
  if (podNamespace !== claimNamespace)
    return `ephemeral volume ${claimName}: pod namespace ${podNamespace} does not match PVC namespace ${claimNamespace}`;
  const controlled = (claim.metadata?.ownerReferences ?? []).some(
    (ref) => ref.controller === true && ref.uid === pod.metadata?.uid,
  );
  if (!controlled)
    return `PVC ${claimNamespace}/${claimName} was not created for pod ${podNamespace}/${pod.metadata?.name ?? ""} (pod is not owner)`;
  return undefined;
}
