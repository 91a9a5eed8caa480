// The attacher's two VolumeAttachment lanes: attaches and detaches wait in separate work queues,
// each with its own --worker-threads workers, so a burst of detaches (a node drained, a
// StatefulSet scaled down) cannot hold every worker while new pods wait for their volumes
// (external-attacher#761 asks for this; upstream shares one queue and one pool).
//
// Invariants:
// - A key goes to the lane its cached object asks for: being deleted → detach, else attach. A
//   lane that takes a key whose object has changed sides hands it to the other lane, so a stale
//   queue entry never runs the wrong operation.
// - One key is synced by at most one worker across both lanes (the work queue guarantees it
//   within a lane; the gate here across them): a ControllerUnpublish never overlaps a
//   ControllerPublish of the same attachment. A key that finds the other lane busy with it is
//   handed back to its own queue when that run ends — nothing waits on a timer.

import type { VolumeAttachment } from "../../api/index.ts";
import type { ProcessResult, ReconcileContext, Store, WorkQueue } from "../../kube/index.ts";

export type Lane = "attach" | "detach";

/** Upstream's queue name stays on the attach lane, so dashboards of pending attaches read on. */
export const LANE_QUEUE_NAMES: Readonly<Record<Lane, string>> = {
  attach: "csi-attacher-va",
  detach: "csi-attacher-va-detach",
};

export function laneOf(va: VolumeAttachment): Lane {
  return va.metadata.deletionTimestamp ? "detach" : "attach";
}

export interface AttachmentLanesOptions {
  queues: Readonly<Record<Lane, WorkQueue<string>>>;
  attachments: Store<VolumeAttachment>;
  sync: (key: string, rc: ReconcileContext) => Promise<ProcessResult | void>;
}

export class AttachmentLanes {
  readonly #options: AttachmentLanesOptions;
  /** Keys a worker of either lane is syncing now. */
  readonly #busy = new Set<string>();
  /** Keys that found the other lane busy with them: re-added to this lane when it is done. */
  readonly #deferred = new Map<string, Lane>();

  constructor(options: AttachmentLanesOptions) {
    this.#options = options;
  }

  /** Queues `key` in the lane of its cached object (attach when it is not cached). */
  enqueue(key: string): void {
    const va = this.#options.attachments.get(key);
    this.#options.queues[va ? laneOf(va) : "attach"].add(key);
  }

  /** The start of a deletion: straight into the detach lane, whatever the attach lane holds. */
  enqueueDetach(key: string): void {
    this.#options.queues.detach.expedite(key);
  }

  /** The reconcile function of `lane`'s controller. */
  reconciler(lane: Lane): (key: string, rc: ReconcileContext) => Promise<ProcessResult | void> {
    return async (key, rc) => {
      const va = this.#options.attachments.get(key);
      if (va && laneOf(va) !== lane) {
        rc.logger.info(4, `handing over to the ${laneOf(va)} lane`);
        this.#options.queues[laneOf(va)].add(key);
        return;
      }
      if (this.#busy.has(key)) {
        rc.logger.info(4, "the other lane is syncing this attachment; deferred until it is done");
        this.#deferred.set(key, lane);
        return;
      }
      this.#busy.add(key);
      try {
        return await this.#options.sync(key, rc);
      } finally {
        this.#busy.delete(key);
        const waiting = this.#deferred.get(key);
        this.#deferred.delete(key);
        if (waiting) this.#options.queues[waiting].add(key);
      }
    };
  }
}
