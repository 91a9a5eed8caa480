// The selinux-warning-controller's memory of which pods use which volume, with what mount
// label and seLinuxChangePolicy — and the conflicts between them. In memory only, rebuilt
// from the pod informer after a restart (as upstream's); pods leave it when deleted or finished.
//
// Adding a pod's volume returns the conflicts that addition makes, each once per pod of the
// pair (both get an event); adding the same pod with the same values again returns none, so a
// resync does not repeat events. A conflict is a different seLinuxChangePolicy, or mount
// labels that differ in a part both set (labels.ts).

import { labelsConflict } from "./labels.ts";

export type ConflictProperty = "SELinuxLabel" | "SELinuxChangePolicy";

/** One side of a conflict: the event goes to `pod`, about `otherPod`. */
export interface Conflict {
  /** The metric's "property" label and the message's property name. */
  property: ConflictProperty;
  /** The event reason: SELinuxLabelConflict or SELinuxChangePolicyConflict. */
  reason: "SELinuxLabelConflict" | "SELinuxChangePolicyConflict";
  pod: PodRef;
  value: string;
  otherPod: PodRef;
  otherValue: string;
}

export interface PodRef {
  namespace: string;
  name: string;
}

interface PodUse {
  label: string;
  changePolicy: string;
}

interface UsedVolume {
  csiDriver: string;
  pods: Map<string, PodUse>;
}

const keyOf = (pod: PodRef): string => `${pod.namespace}/${pod.name}`;
function refOf(key: string): PodRef {
  const slash = key.indexOf("/");
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

function conflictsBetween(a: string, useA: PodUse, b: string, useB: PodUse): Conflict[] {
  const found: Conflict[] = [];
  if (useA.changePolicy !== useB.changePolicy)
    found.push({
      property: "SELinuxChangePolicy",
      reason: "SELinuxChangePolicyConflict",
      pod: refOf(a),
      value: useA.changePolicy,
      otherPod: refOf(b),
      otherValue: useB.changePolicy,
    });
  if (labelsConflict(useA.label, useB.label))
    found.push({
      property: "SELinuxLabel",
      reason: "SELinuxLabelConflict",
      pod: refOf(a),
      value: useA.label,
      otherPod: refOf(b),
      otherValue: useB.label,
    });
  return found;
}

/**
 * The event message for one side. Across namespaces the other pod is not named (nor its
 * namespace), so an event does not leak what another namespace runs; the text is upstream's,
 * including the missing space before the value in that case.
 */
export function conflictMessage(conflict: Conflict): string {
  const tail = " If both pods land on the same node, only one of them may access the volume.";
  if (conflict.pod.namespace === conflict.otherPod.namespace)
    return (
      `${conflict.property} "${conflict.value}" conflicts with pod ${conflict.otherPod.name} that uses the same ` +
      `volume as this pod with ${conflict.property} "${conflict.otherValue}".${tail}`
    );
  return (
    `${conflict.property}"${conflict.value}" conflicts with another pod that uses the same volume as this pod ` +
    `with a different ${conflict.property}.${tail}`
  );
}

export class VolumeLabelCache {
  readonly #volumes = new Map<string, UsedVolume>();

  /** Records that `pod` uses `volume`; returns the conflicts this causes (both sides). */
  addVolume(volume: string, pod: PodRef, use: PodUse & { csiDriver: string }): Conflict[] {
    const key = keyOf(pod);
    const entry = { label: use.label, changePolicy: use.changePolicy };
    const known = this.#volumes.get(volume);
    if (known === undefined) {
      this.#volumes.set(volume, { csiDriver: use.csiDriver, pods: new Map([[key, entry]]) });
      return [];
    }
    const before = known.pods.get(key);
    if (before?.label === entry.label && before.changePolicy === entry.changePolicy) return [];
    known.pods.set(key, entry);
    const conflicts: Conflict[] = [];
    for (const [otherKey, other] of known.pods) {
      if (otherKey === key) continue;
      conflicts.push(...conflictsBetween(key, entry, otherKey, other));
      conflicts.push(...conflictsBetween(otherKey, other, key, entry));
    }
    return conflicts;
  }

  /** Forgets the pod everywhere (deleted or finished: its volumes are unmounted). */
  deletePod(pod: PodRef): void {
    const key = keyOf(pod);
    for (const [name, volume] of this.#volumes) {
      volume.pods.delete(key);
      if (volume.pods.size === 0) this.#volumes.delete(name);
    }
  }

  /** The pods using volumes of this CSI driver (to re-evaluate when its CSIDriver changes). */
  podsForCSIDriver(driver: string): PodRef[] {
    const pods = new Map<string, PodRef>();
    for (const volume of this.#volumes.values())
      if (volume.csiDriver === driver) for (const key of volume.pods.keys()) pods.set(key, refOf(key));
    return [...pods.values()];
  }

  /** Every current conflict, one entry per ordered pair (the metric's series). */
  conflicts(): Conflict[] {
    const all: Conflict[] = [];
    for (const volume of this.#volumes.values())
      for (const [key, use] of volume.pods)
        for (const [otherKey, other] of volume.pods)
          if (key !== otherKey) all.push(...conflictsBetween(key, use, otherKey, other));
    return all;
  }
}
