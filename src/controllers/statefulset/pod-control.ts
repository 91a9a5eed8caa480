// The StatefulSet controller's writes, each with the event upstream's StatefulPodControl
// records on the set: create a pod's claims and then the pod ("create Claim <c> Pod <p> in
// StatefulSet <s> success", "create Pod <p> in StatefulSet <s> successful"), conform a pod,
// delete a pod, and put a claim's owner references in line with the retention policy.
//
// Crash safety: every object has a deterministic name, so a write repeated after a crash or on
// a stale cache answers AlreadyExists / NotFound / Conflict and changes nothing twice; claims
// are always written before the pod that mounts them.

import { GVR, type PersistentVolumeClaim, type Pod, type StatefulSet } from "../../api/index.ts";
import { errorMessage, type Logger } from "../../base/index.ts";
import {
  isAlreadyExists,
  isNotFound,
  type EventRecorder,
  type KubeClient,
  type Store,
} from "../../kube/index.ts";
import { claimsForOrdinal, conformedPod, ordinalOf } from "./identity.ts";
import { claimIsStale, isClaimOwnerUpToDate, ownerRefsForPolicy } from "./retention.ts";

export interface PodControlContext {
  client: KubeClient;
  recorder: EventRecorder;
  logger: Logger;
  signal: AbortSignal;
  /** The claims cache (key "namespace/name"). */
  claims: Store<PersistentVolumeClaim>;
}

type Verb = "create" | "update" | "delete";

const titled = (verb: Verb): string => verb[0]!.toUpperCase() + verb.slice(1);

function recordPodEvent(
  ctx: PodControlContext,
  verb: Verb,
  set: StatefulSet,
  pod: Pod,
  error?: unknown,
): void {
  const podName = pod.metadata.name ?? "";
  const setName = set.metadata.name ?? "";
  if (error === undefined)
    ctx.recorder.event(
      set,
      "Normal",
      `Successful${titled(verb)}`,
      `${verb} Pod ${podName} in StatefulSet ${setName} successful`,
    );
  else
    ctx.recorder.event(
      set,
      "Warning",
      `Failed${titled(verb)}`,
      `${verb} Pod ${podName} in StatefulSet ${setName} failed error: ${errorMessage(error)}`,
    );
}

function recordClaimEvent(
  ctx: PodControlContext,
  verb: Verb,
  set: StatefulSet,
  pod: Pod,
  claim: PersistentVolumeClaim,
  error?: unknown,
): void {
  const names = {
    claim: claim.metadata.name ?? "",
    pod: pod.metadata.name ?? "",
    set: set.metadata.name ?? "",
  };
  if (error === undefined)
    ctx.recorder.event(
      set,
      "Normal",
      `Successful${titled(verb)}`,
      `${verb} Claim ${names.claim} Pod ${names.pod} in StatefulSet ${names.set} success`,
    );
  else
    ctx.recorder.event(
      set,
      "Warning",
      `Failed${titled(verb)}`,
      `${verb} Claim ${names.claim} for Pod ${names.pod} in StatefulSet ${names.set} failed error: ${errorMessage(error)}`,
    );
}

function cachedClaim(
  ctx: PodControlContext,
  namespace: string,
  name: string,
): PersistentVolumeClaim | undefined {
  return ctx.claims.get(`${namespace}/${name}`);
}

/** Creates the pod's missing claims (owner references as the policy wants from the start). */
export async function createMissingClaims(ctx: PodControlContext, set: StatefulSet, pod: Pod): Promise<void> {
  const errors: string[] = [];
  for (const claim of claimsForOrdinal(set, ordinalOf(pod)).values()) {
    const namespace = claim.metadata.namespace ?? "";
    const existing = cachedClaim(ctx, namespace, claim.metadata.name ?? "");
    if (existing) {
      if (existing.metadata.deletionTimestamp) errors.push(`pvc ${claim.metadata.name} is being deleted`);
      continue;
    }
    const refs = ownerRefsForPolicy(claim, set, pod);
    if (refs.length > 0) claim.metadata.ownerReferences = refs;
    try {
      await ctx.client.create(GVR.persistentVolumeClaims, claim, ctx.signal);
      recordClaimEvent(ctx, "create", set, pod, claim);
    } catch (error) {
      // Created by an earlier attempt whose answer was lost (or a cache not caught up): done.
      if (isAlreadyExists(error)) continue;
      errors.push(`failed to create PVC ${claim.metadata.name}: ${errorMessage(error)}`);
      recordClaimEvent(ctx, "create", set, pod, claim, error);
    }
  }
  if (errors.length > 0) throw new Error(errors.join(", "));
}

/** Claims first, then the pod. AlreadyExists is returned to the caller without an event. */
export async function createStatefulPod(ctx: PodControlContext, set: StatefulSet, pod: Pod): Promise<Pod> {
  try {
    await createMissingClaims(ctx, set, pod);
  } catch (error) {
    recordPodEvent(ctx, "create", set, pod, error);
    throw error;
  }
  try {
    const created = await ctx.client.create<Pod>(GVR.pods, pod, ctx.signal);
    recordPodEvent(ctx, "create", set, pod);
    return created;
  } catch (error) {
    if (!isAlreadyExists(error)) recordPodEvent(ctx, "create", set, pod, error);
    throw error;
  }
}

/** Puts the pod's identity labels and claim volumes right (creating missing claims first). */
export async function updateStatefulPod(ctx: PodControlContext, set: StatefulSet, pod: Pod): Promise<void> {
  try {
    await createMissingClaims(ctx, set, pod);
    await ctx.client.update(GVR.pods, conformedPod(set, pod), {}, ctx.signal);
  } catch (error) {
    recordPodEvent(ctx, "update", set, pod, error);
    throw error;
  }
  recordPodEvent(ctx, "update", set, pod);
}

export async function deleteStatefulPod(ctx: PodControlContext, set: StatefulSet, pod: Pod): Promise<void> {
  try {
    await ctx.client.delete(
      GVR.pods,
      pod.metadata.name ?? "",
      { namespace: pod.metadata.namespace ?? "", preconditions: { uid: pod.metadata.uid ?? "" } },
      ctx.signal,
    );
  } catch (error) {
    if (isNotFound(error)) return;
    recordPodEvent(ctx, "delete", set, pod, error);
    throw error;
  }
  recordPodEvent(ctx, "delete", set, pod);
}

/** Whether every existing claim of the pod carries the owner references its policy wants. */
export function claimsMatchRetentionPolicy(ctx: PodControlContext, set: StatefulSet, pod: Pod): boolean {
  for (const claim of claimsForOrdinal(set, ordinalOf(pod)).values()) {
    const existing = cachedClaim(ctx, claim.metadata.namespace ?? "", claim.metadata.name ?? "");
    if (existing && !isClaimOwnerUpToDate(existing, set, pod)) return false;
  }
  return true;
}

/** Rewrites the owner references of the pod's claims for the policy (resourceVersion-guarded). */
export async function updateClaimsForRetentionPolicy(
  ctx: PodControlContext,
  set: StatefulSet,
  pod: Pod,
): Promise<void> {
  for (const claim of claimsForOrdinal(set, ordinalOf(pod)).values()) {
    const existing = cachedClaim(ctx, claim.metadata.namespace ?? "", claim.metadata.name ?? "");
    if (!existing || isClaimOwnerUpToDate(existing, set, pod)) continue;
    const updated = structuredClone(existing);
    const refs = ownerRefsForPolicy(existing, set, pod);
    if (refs.length > 0) updated.metadata.ownerReferences = refs;
    else delete updated.metadata.ownerReferences;
    try {
      await ctx.client.update(GVR.persistentVolumeClaims, updated, {}, ctx.signal);
    } catch (error) {
      if (isNotFound(error)) continue;
      throw new Error(
        `could not update claim ${existing.metadata.name} for delete policy ownerRefs: ${errorMessage(error)}`,
      );
    }
  }
}

/** Whether a claim of this not-yet-created pod is one the garbage collector is about to delete. */
export function podClaimIsStale(ctx: PodControlContext, set: StatefulSet, pod: Pod): boolean {
  for (const claim of claimsForOrdinal(set, ordinalOf(pod)).values()) {
    const existing = cachedClaim(ctx, claim.metadata.namespace ?? "", claim.metadata.name ?? "");
    if (existing && claimIsStale(existing, set, pod)) return true;
  }
  return false;
}
