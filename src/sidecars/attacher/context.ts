// What every attacher sync function shares: the clients, the informers' caches, the driver's
// capabilities, the finalizer and the forced-sync marks the ListVolumes reconcile leaves for
// the VolumeAttachment workers. Built once per leadership term by controller.ts.

import type { CSINode, PersistentVolume, VolumeAttachment } from "../../api/index.ts";
import type { Clock, Logger } from "../../base/index.ts";
import type { CsiClient } from "../../csi/index.ts";
import type { EventRecorder, KubeClient, Store } from "../../kube/index.ts";
import type { AttacherDriverInfo } from "./driver.ts";

export interface AttacherContext {
  client: KubeClient;
  csi: CsiClient;
  driver: AttacherDriverInfo;
  /** `external-attacher/<sanitized driver>`, on VolumeAttachments and PVs. */
  finalizer: string;
  timeoutMs: number;
  /**
   * MutableCSINodeAllocatableCount (GA in v4.12, on by default): a saved attach or detach error
   * carries the driver's gRPC code in errorCode, which the kubelet reads (ResourceExhausted →
   * refresh CSINode allocatable). Off: the message only, as upstream with the gate off.
   */
  errorCodes: boolean;
  defaultFsType: string;
  maxEntries: number;
  attachments: Store<VolumeAttachment>;
  volumes: Store<PersistentVolume>;
  csiNodes: Store<CSINode>;
  events: EventRecorder;
  /**
   * Names of VolumeAttachments whose `attached` disagreed with ListVolumes: their next sync
   * attaches (or detaches) again even though the object says it is done. Consumed once.
   */
  forceSync: Set<string>;
  /**
   * Per VolumeAttachment, resourceVersions this process has itself replaced by a completed
   * attach or detach. A sync that finds one of them in the cache is looking at the past (the
   * watch has not delivered our write yet): it waits for the newer object instead of calling
   * the driver a second time.
   */
  superseded: Map<string, Set<string>>;
  logger: Logger;
  clock: Clock;
}

/** Takes the force-sync mark of `name`, if any. */
export function consumeForceSync(ctx: AttacherContext, name: string): boolean {
  return ctx.forceSync.delete(name);
}

/**
 * Records that our writes replaced these versions of `name`, leaving `current`. A write that
 * changed nothing (a forced re-attach of an attached volume) leaves the version it started
 * from: that one is never marked, or every later sync would wait for a watch event that never
 * comes.
 */
export function noteSuperseded(
  ctx: AttacherContext,
  name: string,
  versions: (string | undefined)[],
  current: string | undefined,
): void {
  const set = ctx.superseded.get(name) ?? new Set<string>();
  for (const version of versions) if (version) set.add(version);
  if (current !== undefined) set.delete(current);
  if (set.size > 0) ctx.superseded.set(name, set);
  else ctx.superseded.delete(name);
}

/**
 * Whether the cached object is older than a write of ours; once the cache shows anything
 * else, the record is dropped (the cache has caught up or moved on).
 */
export function isSuperseded(ctx: AttacherContext, name: string, version: string | undefined): boolean {
  const set = ctx.superseded.get(name);
  if (!set) return false;
  if (version !== undefined && set.has(version)) return true;
  ctx.superseded.delete(name);
  return false;
}
