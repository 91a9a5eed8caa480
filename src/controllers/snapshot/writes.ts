// The snapshot controller's writes. Each is a no-op when the object already says what we want
// (no needless write: external-snapshotter#1344, where every write waits for a client-side
// token), each is guarded by the resourceVersion we decided on (a stale cache answers 409 and
// the key is retried), and every answer is remembered in the latest-objects view before the
// next step reads it. Error statuses and their Events are upstream's (updateSnapshotErrorStatus-
// WithEvent): written only when the message changes, the Event recorded even if the write fails.

import {
  GVR,
  type PersistentVolumeClaim,
  type SnapshotError,
  type VolumeGroupSnapshot,
  type VolumeSnapshot,
  type VolumeSnapshotContent,
} from "../../api/index.ts";
import { CsikitError } from "../../base/index.ts";
import { objectReference, type EventType } from "../../kube/index.ts";
import type { SnapshotSyncContext } from "./context.ts";
import { snapshotKey } from "./names.ts";

/** Upstream's controllerUpdateError text: "snapshot controller failed to update <name> on API server: <why>". */
export function controllerUpdateError(name: string, message: string): CsikitError {
  return new CsikitError(
    "CSIKIT_ERR_SNAPSHOT",
    `snapshot controller failed to update ${name} on API server: ${message}`,
  );
}

export const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error));

export function snapshotEvent(
  ctx: SnapshotSyncContext,
  snapshot: VolumeSnapshot,
  type: EventType,
  reason: string,
  message: string,
): void {
  ctx.recorder.event(
    objectReference(snapshot, { kind: "VolumeSnapshot", apiVersion: "snapshot.storage.k8s.io/v1" }),
    type,
    reason,
    message,
  );
}

export function groupEvent(
  ctx: SnapshotSyncContext,
  group: VolumeGroupSnapshot,
  type: EventType,
  reason: string,
  message: string,
): void {
  ctx.recorder.event(
    objectReference(group, { kind: "VolumeGroupSnapshot", apiVersion: "groupsnapshot.storage.k8s.io/v1" }),
    type,
    reason,
    message,
  );
}

export function contentEvent(
  ctx: SnapshotSyncContext,
  content: VolumeSnapshotContent,
  type: EventType,
  reason: string,
  message: string,
): void {
  ctx.recorder.event(
    objectReference(content, { kind: "VolumeSnapshotContent", apiVersion: "snapshot.storage.k8s.io/v1" }),
    type,
    reason,
    message,
  );
}

function statusError(ctx: SnapshotSyncContext, message: string): SnapshotError {
  return { time: new Date(ctx.now()).toISOString().replace(/\.\d{3}Z$/, "Z"), message };
}

/**
 * Sets status.error (and readyToUse=false when asked) and records the Event, unless the same
 * message is already there. Returns the written snapshot (or the given one).
 */
export async function snapshotErrorStatus(
  ctx: SnapshotSyncContext,
  snapshot: VolumeSnapshot,
  options: { setReadyToFalse: boolean; type: EventType; reason: string; message: string },
): Promise<VolumeSnapshot> {
  const latest = ctx.snapshots.get(snapshotKey(snapshot)) ?? snapshot;
  if (latest.status?.error?.message === options.message) return latest;
  const status = { ...latest.status, error: statusError(ctx, options.message) };
  if (options.setReadyToFalse) status.readyToUse = false;
  try {
    return ctx.snapshots.remember(
      await ctx.client.updateStatus(GVR.volumeSnapshots, { ...latest, status }, ctx.signal),
    );
  } finally {
    snapshotEvent(ctx, latest, options.type, options.reason, options.message);
  }
}

export async function groupErrorStatus(
  ctx: SnapshotSyncContext,
  group: VolumeGroupSnapshot,
  options: { setReadyToFalse: boolean; type: EventType; reason: string; message: string },
): Promise<VolumeGroupSnapshot> {
  const groups = ctx.group!.groups;
  const latest = groups.get(snapshotKey(group)) ?? group;
  if (latest.status?.error?.message === options.message) return latest;
  const status = { ...latest.status, error: statusError(ctx, options.message) };
  if (options.setReadyToFalse) status.readyToUse = false;
  try {
    return groups.remember(
      await ctx.client.updateStatus(GVR.volumeGroupSnapshots, { ...latest, status }, ctx.signal),
    );
  } finally {
    groupEvent(ctx, latest, options.type, options.reason, options.message);
  }
}

/** The finalizer list after adding `add` and removing `remove` (order kept, added at the end). */
export function finalizersAfter(
  current: readonly string[] | undefined,
  add: readonly string[],
  remove: readonly string[],
): string[] | undefined {
  const before = current ?? [];
  const after = before.filter((f) => !remove.includes(f));
  for (const f of add) if (!after.includes(f)) after.push(f);
  if (after.length === before.length && after.every((f, i) => f === before[i])) return undefined;
  return after;
}

/** Updates the snapshot's finalizers (one write, none when nothing changes). */
export async function setSnapshotFinalizers(
  ctx: SnapshotSyncContext,
  snapshot: VolumeSnapshot,
  add: readonly string[],
  remove: readonly string[],
): Promise<VolumeSnapshot> {
  const latest = ctx.snapshots.get(snapshotKey(snapshot)) ?? snapshot;
  const finalizers = finalizersAfter(latest.metadata?.finalizers, add, remove);
  if (finalizers === undefined) return latest;
  try {
    return ctx.snapshots.remember(
      await ctx.client.update(
        GVR.volumeSnapshots,
        { ...latest, metadata: { ...latest.metadata, finalizers } },
        {},
        ctx.signal,
      ),
    );
  } catch (error) {
    throw controllerUpdateError(snapshotKey(snapshot), errorText(error));
  }
}

export async function setClaimFinalizers(
  ctx: SnapshotSyncContext,
  claim: PersistentVolumeClaim,
  add: readonly string[],
  remove: readonly string[],
): Promise<PersistentVolumeClaim> {
  const key = `${claim.metadata?.namespace ?? ""}/${claim.metadata?.name ?? ""}`;
  const latest = ctx.claims.get(key) ?? claim;
  const finalizers = finalizersAfter(latest.metadata?.finalizers, add, remove);
  if (finalizers === undefined) return latest;
  try {
    return ctx.claims.remember(
      await ctx.coreClient.update(
        GVR.persistentVolumeClaims,
        { ...latest, metadata: { ...latest.metadata, finalizers } },
        {},
        ctx.signal,
      ),
    );
  } catch (error) {
    throw controllerUpdateError(latest.metadata?.name ?? "", errorText(error));
  }
}

/** Sets annotations on a content (merge patch; none when already there). */
export async function annotateContent(
  ctx: SnapshotSyncContext,
  content: VolumeSnapshotContent,
  annotations: Record<string, string>,
): Promise<VolumeSnapshotContent> {
  const latest = ctx.contents.get(content.metadata?.name ?? "") ?? content;
  const missing = Object.entries(annotations).filter(([k, v]) => latest.metadata?.annotations?.[k] !== v);
  if (missing.length === 0) return latest;
  try {
    return ctx.contents.remember(
      await ctx.client.patch<VolumeSnapshotContent>(
        GVR.volumeSnapshotContents,
        latest.metadata?.name ?? "",
        { metadata: { annotations: Object.fromEntries(missing) } },
        { type: "merge" },
        ctx.signal,
      ),
    );
  } catch (error) {
    throw controllerUpdateError(latest.metadata?.name ?? "", errorText(error));
  }
}
