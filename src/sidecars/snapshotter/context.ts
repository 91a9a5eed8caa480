// What every snapshotter reconcile shares: clients, caches, the driver's capabilities, options
// and the per-content poll count of snapshots cut but not ready yet. Nothing in memory is
// needed for safety after a restart: the being-created annotation and the content status are
// the durable record of what may exist in the backend.

import type {
  VolumeGroupSnapshotClass,
  VolumeGroupSnapshotContent,
  VolumeSnapshotClass,
  VolumeSnapshotContent,
} from "../../api/index.ts";
import type { Clock, Logger } from "../../base/index.ts";
import type { CsiClient } from "../../csi/index.ts";
import type { EventRecorder, KubeClient, Informer } from "../../kube/index.ts";
import type { SnapshotterDriverInfo } from "./driver.ts";
import type { SnapshotterOptions } from "./options.ts";

export interface SnapshotterContext {
  client: KubeClient;
  csi: CsiClient;
  driver: SnapshotterDriverInfo;
  options: SnapshotterOptions;
  contents: Informer<VolumeSnapshotContent>;
  classes: Informer<VolumeSnapshotClass>;
  /** Present with the CSIVolumeGroupSnapshot gate. */
  groupContents: Informer<VolumeGroupSnapshotContent> | undefined;
  groupClasses: Informer<VolumeGroupSnapshotClass> | undefined;
  events: EventRecorder;
  logger: Logger;
  clock: Clock;
  /**
   * Readiness polls in a row per content (group contents under "group/<name>"): a snapshot cut
   * but not ready is looked at again after retry-interval-start doubled this many times, up to
   * retry-interval-max, as upstream requeues it rate-limited.
   */
  polls: Map<string, number>;
}

/** The delay before the next readiness poll of `key`, counting this one. */
export function nextPollDelay(ctx: SnapshotterContext, key: string): number {
  const count = ctx.polls.get(key) ?? 0;
  ctx.polls.set(key, count + 1);
  const delay = ctx.options.retryIntervalStartMs * 2 ** Math.min(count, 30);
  return Math.min(delay, ctx.options.retryIntervalMaxMs);
}
