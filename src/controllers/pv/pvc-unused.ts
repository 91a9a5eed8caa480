// The PVC "Unused" condition (KEP-5541, gate PersistentVolumeClaimUnusedSinceTime: alpha and
// off in 1.36, beta and on in 1.37), kept by the pvc-protection loop: the decisions only, no
// I/O (pvc-protection.ts wires them).
//
// As upstream's controller: only a Bound claim that is not being deleted carries the
// condition (an unbound claim is left alone so the binder's writes are not raced; a claim being
// deleted gains nothing from it). The claim is in use while a pod that is not terminated
// references it — scheduled or not, a pending pod counts; a Succeeded or Failed pod, or one
// being deleted whose containers all stopped, does not. Generic ephemeral claims count for
// their owning pod. The condition flips between True (NoPodsUsingPVC) and False (PodUsingPVC);
// its lastTransitionTime is the controller's clock at the flip, so an "unused since" time that
// may be later than the real last unmount, never earlier. A claim whose condition already says
// the right thing is not written.

import type {
  ContainerStatus,
  PersistentVolumeClaim,
  PersistentVolumeClaimCondition,
  Pod,
} from "../../api/index.ts";

export const PVC_UNUSED_GATE = "PersistentVolumeClaimUnusedSinceTime";

/** The condition's type and its two states, with upstream's reasons and messages. */
export const PVC_UNUSED = {
  type: "Unused",
  unused: { status: "True", reason: "NoPodsUsingPVC", message: "No pods are currently referencing this PVC" },
  used: { status: "False", reason: "PodUsingPVC", message: "A pod is currently referencing this PVC" },
} as const;

function containersStopped(statuses: readonly ContainerStatus[] | undefined): boolean {
  return (statuses ?? []).every(
    (status) => status.state?.terminated !== undefined || status.state?.waiting !== undefined,
  );
}

/**
 * volumeutil.IsPodTerminated: Succeeded or Failed, or being deleted with every (init, app,
 * ephemeral) container terminated or waiting — a pod the kubelet is done with.
 */
export function isPodTerminated(pod: Pod): boolean {
  const status = pod.status as
    (Pod["status"] & { ephemeralContainerStatuses?: ContainerStatus[] }) | undefined;
  if (status?.phase === "Succeeded" || status?.phase === "Failed") return true;
  return (
    pod.metadata?.deletionTimestamp !== undefined &&
    containersStopped(status?.initContainerStatuses) &&
    containersStopped(status?.containerStatuses) &&
    containersStopped(status?.ephemeralContainerStatuses)
  );
}

/** Whether this pod keeps the claim "used" for the condition (unscheduled pods included). */
export function podUsesClaimForUnused(pod: Pod, claim: PersistentVolumeClaim): boolean {
  if (isPodTerminated(pod)) return false;
  const claimName = claim.metadata?.name;
  return (pod.spec?.volumes ?? []).some(
    (volume) =>
      volume.persistentVolumeClaim?.claimName === claimName ||
      (volume.ephemeral !== undefined &&
        `${pod.metadata?.name}-${volume.name}` === claimName &&
        (claim.metadata?.ownerReferences ?? []).some(
          (ref) => ref.controller === true && ref.uid === pod.metadata?.uid,
        )),
  );
}

/** Whether the claim is one the condition is kept on (Bound, not being deleted). */
export function claimTracksUnused(claim: PersistentVolumeClaim): boolean {
  return claim.metadata?.deletionTimestamp === undefined && claim.status?.phase === "Bound";
}

export function unusedCondition(claim: PersistentVolumeClaim): PersistentVolumeClaimCondition | undefined {
  return (claim.status?.conditions ?? []).find((condition) => condition.type === PVC_UNUSED.type);
}

/**
 * The claim's conditions with Unused saying `inUse`, or undefined when they already do (no
 * write). The transition time moves only when the status flips.
 */
export function conditionsWithUnused(
  claim: PersistentVolumeClaim,
  inUse: boolean,
  nowMs: number,
): PersistentVolumeClaimCondition[] | undefined {
  const want = inUse ? PVC_UNUSED.used : PVC_UNUSED.unused;
  const current = unusedCondition(claim);
  if (current?.status === want.status && current.reason === want.reason && current.message === want.message)
    return undefined;
  const lastTransitionTime =
    current?.status === want.status && current.lastTransitionTime !== undefined
      ? current.lastTransitionTime
      : new Date(Math.floor(nowMs / 1000) * 1000).toISOString().replace(".000Z", "Z");
  const next: PersistentVolumeClaimCondition = { type: PVC_UNUSED.type, ...want, lastTransitionTime };
  const others = (claim.status?.conditions ?? []).filter((condition) => condition.type !== PVC_UNUSED.type);
  return [...others, next];
}
