// Early refreshes after provisioning, as upstream's provisionWrapper: a created or deleted
// volume changes the capacity of its topology segment, so the provisioner tells the capacity
// controller, which re-polls the affected objects now instead of at the next poll interval.
// The provisioner holds a CapacityRefresh (created by whoever wires both) and calls it after
// each Provision/Delete; the running capacity controller attaches itself. Calls while no
// controller is attached are dropped: with nothing running there is nothing to refresh.

import type { PersistentVolume } from "../../../api/index.ts";
import { termSegment, type Segment } from "./segment.ts";

export interface CapacityRefreshTarget {
  /** Re-poll every object of this segment. */
  refreshSegment(segment: Segment): void;
  /** Re-poll every object of this storage class. */
  refreshStorageClass(storageClassName: string): void;
}

export class CapacityRefresh {
  #target: CapacityRefreshTarget | undefined;

  /** Attaches the running controller; returns the detach function. */
  attach(target: CapacityRefreshTarget): () => void {
    this.#target = target;
    return () => {
      if (this.#target === target) this.#target = undefined;
    };
  }

  /**
   * A volume was provisioned: refresh its topology (the PV's node affinity terms), or, for a
   * volume without topology, its storage class.
   */
  provisioned(pv: PersistentVolume, storageClassName?: string): void {
    const target = this.#target;
    if (target === undefined) return;
    const terms = pv.spec?.nodeAffinity?.required?.nodeSelectorTerms;
    if (terms !== undefined) {
      for (const term of terms) {
        const segment = termSegment(term);
        if (segment !== undefined) target.refreshSegment(segment);
      }
      return;
    }
    if (storageClassName !== undefined && storageClassName !== "")
      target.refreshStorageClass(storageClassName);
  }

  /** Provisioning failed with a state other than "no change": capacity may be short. */
  provisionFailed(storageClassName?: string): void {
    if (storageClassName !== undefined && storageClassName !== "")
      this.#target?.refreshStorageClass(storageClassName);
  }

  /** A volume was deleted: refresh its topology (the class is not known any more). */
  deleted(pv: PersistentVolume): void {
    const target = this.#target;
    if (target === undefined) return;
    for (const term of pv.spec?.nodeAffinity?.required?.nodeSelectorTerms ?? []) {
      const segment = termSegment(term);
      if (segment !== undefined) target.refreshSegment(segment);
    }
  }
}
