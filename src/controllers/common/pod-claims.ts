// The pod → claims index shared by the loops that ask "which pods use this claim" (PV
// controller for WaitForPodScheduled, pvc-protection). Index values are "namespace/claim",
// covering persistentVolumeClaim volumes and generic ephemeral volumes (claim
// "<pod>-<volume>", as upstream's ephemeral.VolumeClaimName).

import type { Pod } from "../../api/index.ts";
import type { SharedInformer } from "../../kube/index.ts";

export const POD_CLAIM_INDEX = "pvc";

/** The keys of the claims a pod's volumes use. */
export function podClaimKeys(pod: Pod): string[] {
  const namespace = pod.metadata?.namespace ?? "";
  const keys: string[] = [];
  for (const volume of pod.spec?.volumes ?? []) {
    const claimName = volume.persistentVolumeClaim?.claimName;
    if (claimName) keys.push(`${namespace}/${claimName}`);
    else if (volume.ephemeral) keys.push(`${namespace}/${pod.metadata?.name ?? ""}-${volume.name}`);
  }
  return keys;
}

/** Adds the index once per shared informer (several loops may ask). */
export function ensurePodClaimIndex(informer: SharedInformer<Pod>): void {
  try {
    informer.addIndexer(POD_CLAIM_INDEX, podClaimKeys);
  } catch (error) {
    if (!(error instanceof Error && error.message.includes("already exists"))) throw error;
  }
}
