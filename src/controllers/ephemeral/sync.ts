// One pod's generic ephemeral volumes (upstream's ephemeral controller syncHandler and
// handleVolume): for each `ephemeral` volume, the claim "<pod>-<volume>" is created from the
// volume's template with the pod as its controller (so the garbage collector deletes it with the
// pod); a claim of that name the pod does not control is refused, with a FailedBinding event
// on the pod ("ephemeral volume <volume>: PVC <ns>/<claim> was not created for pod <ns>/<pod>
// (pod is not owner)") and a retry with backoff. A pod being deleted is left alone.

import {
  EVENT_REASONS,
  GVR,
  ephemeralClaimName,
  ephemeralClaimRefusal,
  type PersistentVolumeClaim,
  type Pod,
  type Volume,
} from "../../api/index.ts";
import { errorMessage, type Logger } from "../../base/index.ts";
import { isAlreadyExists, type EventRecorder, type KubeClient, type Store } from "../../kube/index.ts";
import { controllerRef } from "../common/index.ts";

export interface EphemeralSyncContext {
  client: KubeClient;
  recorder: EventRecorder;
  logger: Logger;
  signal: AbortSignal;
  claims: Store<PersistentVolumeClaim>;
}

/** The claim a generic ephemeral volume wants: its template, named for the pod, owned by it. */
export function ephemeralClaim(pod: Pod, volume: Volume): PersistentVolumeClaim {
  const template = volume.ephemeral?.volumeClaimTemplate;
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: {
      name: ephemeralClaimName(pod, volume),
      namespace: pod.metadata.namespace ?? "",
      ownerReferences: [controllerRef(pod, "Pod", "v1")],
      ...(template?.metadata?.annotations ? { annotations: { ...template.metadata.annotations } } : {}),
      ...(template?.metadata?.labels ? { labels: { ...template.metadata.labels } } : {}),
    },
    spec: structuredClone(template?.spec ?? {}),
  };
}

async function handleVolume(ctx: EphemeralSyncContext, pod: Pod, volume: Volume): Promise<void> {
  if (!volume.ephemeral) return;
  const namespace = pod.metadata.namespace ?? "";
  const name = ephemeralClaimName(pod, volume);
  const existing = ctx.claims.get(`${namespace}/${name}`);
  if (existing) {
    const refusal = ephemeralClaimRefusal(pod, existing);
    if (refusal !== undefined) throw new Error(refusal);
    return;
  }
  try {
    await ctx.client.create(GVR.persistentVolumeClaims, ephemeralClaim(pod, volume), ctx.signal);
  } catch (error) {
    if (!isAlreadyExists(error))
      throw new Error(`create PVC ${name}: ${errorMessage(error)}`, { cause: error });
    // Ours from an attempt whose answer was lost, or someone else's that the cache has not
    // seen yet: the server's copy tells which, so the event names the real cause.
    const current = await ctx.client.get<PersistentVolumeClaim>(
      GVR.persistentVolumeClaims,
      name,
      { namespace },
      ctx.signal,
    );
    const refusal = ephemeralClaimRefusal(pod, current);
    if (refusal !== undefined) throw new Error(refusal);
  }
}

export async function syncPodEphemeralVolumes(ctx: EphemeralSyncContext, pod: Pod): Promise<void> {
  if (pod.metadata.deletionTimestamp) return;
  const key = `${pod.metadata.namespace ?? ""}/${pod.metadata.name ?? ""}`;
  for (const volume of pod.spec?.volumes ?? []) {
    try {
      await handleVolume(ctx, pod, volume);
    } catch (error) {
      ctx.recorder.event(
        pod,
        "Warning",
        EVENT_REASONS.failedBinding.key,
        `ephemeral volume ${volume.name}: ${errorMessage(error)}`,
      );
      throw new Error(`pod ${key}, ephemeral volume ${volume.name}: ${errorMessage(error)}`, {
        cause: error,
      });
    }
  }
}
