// A StatefulSet's members, pure: the ordinal a pod name carries, the names of its pods and
// claims, the pod and claims the set wants at an ordinal, and whether an existing pod still
// has its identity and storage — upstream's stateful_set_utils, the part without revisions.
//
// Names are the contract: pod "<set>-<ordinal>", claim "<template>-<set>-<ordinal>", labels
// statefulset.kubernetes.io/pod-name, apps.kubernetes.io/pod-index and
// controller-revision-hash, claims labelled with the set's selector.matchLabels.

import {
  LABELS,
  type PersistentVolumeClaim,
  type Pod,
  type StatefulSet,
  type Volume,
} from "../../api/index.ts";
import { controllerRef } from "../common/index.ts";

export const STATEFULSET_LABELS = Object.freeze({
  /** The pod's own name, so a Service can select one member. */
  podName: LABELS.statefulSetPodName.key,
  /** The pod's ordinal (PodIndexLabel, GA in Kubernetes 1.32). */
  podIndex: LABELS.podIndex.key,
  /** The ControllerRevision a pod was made from. */
  revision: LABELS.controllerRevisionHash.key,
  /** The hash in a ControllerRevision's name, on the revision itself. */
  revisionHash: LABELS.revisionHash.key,
});

const STATEFUL_POD_NAME = /^(.*)-([0-9]+)$/;

/** Parent set name and ordinal of a pod ("" and -1 when the name has no ordinal). */
export function parentAndOrdinal(pod: Pod): { parent: string; ordinal: number } {
  const match = STATEFUL_POD_NAME.exec(pod.metadata?.name ?? "");
  if (!match) return { parent: "", ordinal: -1 };
  const ordinal = Number.parseInt(match[2] ?? "", 10);
  // Go's ParseInt(…, 10, 32): out of int32 range is no ordinal (the parent still counts).
  return { parent: match[1] ?? "", ordinal: ordinal <= 2 ** 31 - 1 ? ordinal : -1 };
}

export function ordinalOf(pod: Pod): number {
  return parentAndOrdinal(pod).ordinal;
}

export function startOrdinal(set: StatefulSet): number {
  return set.spec?.ordinals?.start ?? 0;
}

export function replicasOf(set: StatefulSet): number {
  return set.spec?.replicas ?? 1;
}

/** Whether the pod's ordinal is one the set keeps at its current size. */
export function inOrdinalRange(pod: Pod, set: StatefulSet): boolean {
  const ordinal = ordinalOf(pod);
  const start = startOrdinal(set);
  return ordinal >= start && ordinal < start + replicasOf(set);
}

export function podNameOf(set: StatefulSet, ordinal: number): string {
  return `${set.metadata.name ?? ""}-${ordinal}`;
}

export function claimNameOf(set: StatefulSet, templateName: string, ordinal: number): string {
  return `${templateName}-${set.metadata.name ?? ""}-${ordinal}`;
}

export function isMemberOf(set: StatefulSet, pod: Pod): boolean {
  return parentAndOrdinal(pod).parent === set.metadata.name;
}

/** The claims the set wants for the pod at `ordinal`, by template name, in template order. */
export function claimsForOrdinal(set: StatefulSet, ordinal: number): Map<string, PersistentVolumeClaim> {
  const claims = new Map<string, PersistentVolumeClaim>();
  for (const template of set.spec?.volumeClaimTemplates ?? []) {
    const templateName = template.metadata?.name ?? "";
    const metadata = structuredClone(template.metadata ?? {});
    metadata.name = claimNameOf(set, templateName, ordinal);
    metadata.namespace = set.metadata.namespace ?? "";
    // The claim carries the set's selector labels so `kubectl get pvc -l` finds a set's claims.
    metadata.labels = { ...(metadata.labels ?? {}), ...(set.spec?.selector?.matchLabels ?? {}) };
    claims.set(templateName, {
      apiVersion: "v1",
      kind: "PersistentVolumeClaim",
      metadata,
      spec: structuredClone(template.spec ?? {}),
    });
  }
  return claims;
}

/** Pod volumes naming the claims of `templates`, then the pod's other volumes (upstream's updateStorage). */
function storageVolumes(set: StatefulSet, ordinal: number, current: readonly Volume[]): Volume[] {
  const claims = claimsForOrdinal(set, ordinal);
  const volumes: Volume[] = [];
  for (const [name, claim] of claims)
    volumes.push({ name, persistentVolumeClaim: { claimName: claim.metadata.name ?? "" } });
  for (const volume of current) if (!claims.has(volume.name)) volumes.push(volume);
  return volumes;
}

/** Whether the pod's name, namespace and pod-name label are those of its ordinal. */
export function identityMatches(set: StatefulSet, pod: Pod): boolean {
  const { parent, ordinal } = parentAndOrdinal(pod);
  return (
    ordinal >= 0 &&
    parent === set.metadata.name &&
    pod.metadata?.name === podNameOf(set, ordinal) &&
    pod.metadata?.namespace === set.metadata.namespace &&
    pod.metadata?.labels?.[STATEFULSET_LABELS.podName] === pod.metadata?.name
  );
}

/** Whether every claim template has a pod volume of its name naming the ordinal's claim. */
export function storageMatches(set: StatefulSet, pod: Pod): boolean {
  const ordinal = ordinalOf(pod);
  if (ordinal < 0) return false;
  const volumes = new Map((pod.spec?.volumes ?? []).map((volume) => [volume.name, volume]));
  for (const template of set.spec?.volumeClaimTemplates ?? []) {
    const templateName = template.metadata?.name ?? "";
    const volume = volumes.get(templateName);
    if (volume?.persistentVolumeClaim?.claimName !== claimNameOf(set, templateName, ordinal)) return false;
  }
  return true;
}

/** A copy of the pod with its identity labels and storage volumes put right (upstream's update path). */
export function conformedPod(set: StatefulSet, pod: Pod): Pod {
  const copy = structuredClone(pod);
  const ordinal = ordinalOf(copy);
  copy.metadata.labels = {
    ...(copy.metadata.labels ?? {}),
    [STATEFULSET_LABELS.podName]: copy.metadata.name ?? "",
    [STATEFULSET_LABELS.podIndex]: String(ordinal),
  };
  if (!storageMatches(set, copy) && copy.spec)
    copy.spec.volumes = storageVolumes(set, ordinal, copy.spec.volumes ?? []);
  return copy;
}

/** The pod the set (at the revision `revisionName`) wants at `ordinal`. */
export function newStatefulSetPod(set: StatefulSet, ordinal: number, revisionName: string): Pod {
  const template = set.spec?.template ?? {};
  const name = podNameOf(set, ordinal);
  const spec = structuredClone(template.spec ?? { containers: [] });
  spec.hostname = name;
  if (set.spec?.serviceName) spec.subdomain = set.spec.serviceName;
  spec.volumes = storageVolumes(set, ordinal, spec.volumes ?? []);
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace: set.metadata.namespace ?? "",
      labels: {
        ...(template.metadata?.labels ?? {}),
        [STATEFULSET_LABELS.podName]: name,
        [STATEFULSET_LABELS.podIndex]: String(ordinal),
        [STATEFULSET_LABELS.revision]: revisionName,
      },
      ...(template.metadata?.annotations ? { annotations: { ...template.metadata.annotations } } : {}),
      ...(template.metadata?.finalizers ? { finalizers: [...template.metadata.finalizers] } : {}),
      ownerReferences: [controllerRef(set, "StatefulSet", "apps/v1")],
    },
    spec,
  };
}

export function podRevision(pod: Pod): string {
  return pod.metadata?.labels?.[STATEFULSET_LABELS.revision] ?? "";
}
