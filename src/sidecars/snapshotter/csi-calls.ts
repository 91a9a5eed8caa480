// The driver calls the snapshotter makes, built from a content as csi-snapshotter's csiHandler
// builds them, each with the --timeout deadline. Results carry what the content status records:
// creation time in nanoseconds since the epoch (now when the driver gives none), sizes in bytes.
// The status check is GetSnapshot (GET_SNAPSHOT), else ListSnapshots by ID (LIST_SNAPSHOTS),
// else "ready" without a call, as upstream assumes for a driver that cannot list.

import type { VolumeGroupSnapshotContent, VolumeSnapshotContent } from "../../api/index.ts";
import { CsikitError } from "../../base/index.ts";
import type { Snapshot, Timestamp, VolumeGroupSnapshot } from "../../csi/index.ts";
import type { SnapshotterContext } from "./context.ts";
import { groupSnapshotName, snapshotName } from "./names.ts";

export interface SnapshotResult {
  handle: string;
  sourceVolumeId: string;
  /** Nanoseconds since the epoch. */
  creationTime: number;
  /** Bytes (0: the driver did not say). */
  sizeBytes: number;
  readyToUse: boolean;
  /** The group the snapshot belongs to ("" for none). */
  groupSnapshotId: string;
}

export interface GroupSnapshotResult {
  handle: string;
  /** Milliseconds since the epoch (the group status records a metav1.Time). */
  creationTimeMs: number;
  readyToUse: boolean;
  members: SnapshotResult[];
}

function nanos(timestamp: Timestamp | null, nowMs: number): number {
  if (!timestamp || (BigInt(timestamp.seconds) === 0n && timestamp.nanos === 0)) return nowMs * 1e6;
  // int64 nanoseconds; beyond 2^53 a JS number keeps ~0.1 µs, far below any snapshot's clock.
  return Number(BigInt(timestamp.seconds) * 1_000_000_000n + BigInt(timestamp.nanos));
}

function snapshotResult(snapshot: Snapshot, nowMs: number): SnapshotResult {
  return {
    handle: snapshot.snapshotId,
    sourceVolumeId: snapshot.sourceVolumeId,
    creationTime: nanos(snapshot.creationTime, nowMs),
    sizeBytes: Number(snapshot.sizeBytes),
    readyToUse: snapshot.readyToUse,
    groupSnapshotId: snapshot.groupSnapshotId,
  };
}

function call(ctx: SnapshotterContext, signal: AbortSignal) {
  return { timeoutMs: ctx.options.timeoutMs, signal };
}

export async function createSnapshot(
  ctx: SnapshotterContext,
  content: VolumeSnapshotContent,
  request: { parameters: Record<string, string>; secrets: Record<string, string> },
  signal: AbortSignal,
): Promise<SnapshotResult> {
  const uid = content.spec.volumeSnapshotRef?.uid ?? "";
  if (uid === "")
    throw new CsikitError(
      "CSIKIT_ERR_VALIDATION",
      `cannot create snapshot. Snapshot content ${content.metadata.name} not bound to a snapshot`,
    );
  const volumeHandle = content.spec.source.volumeHandle;
  if (!volumeHandle)
    throw new CsikitError(
      "CSIKIT_ERR_VALIDATION",
      `cannot create snapshot. Volume handle not found in snapshot content ${content.metadata.name}`,
    );
  const name = snapshotName(ctx.options.snapshotNamePrefix, uid, ctx.options.snapshotNameUuidLength);
  const response = await ctx.csi.controller.createSnapshot(
    { sourceVolumeId: volumeHandle, name, parameters: request.parameters, secrets: request.secrets },
    call(ctx, signal),
  );
  if (!response.snapshot)
    throw new CsikitError("CSIKIT_ERR_DRIVER", `CreateSnapshot of ${name} answered without a snapshot`);
  return snapshotResult(response.snapshot, ctx.clock.now());
}

/** The handle a content's backend snapshot has: the status's, else the pre-provisioned one. */
export function contentSnapshotHandle(content: VolumeSnapshotContent): string | undefined {
  return content.status?.snapshotHandle ?? content.spec.source.snapshotHandle;
}

export async function deleteSnapshot(
  ctx: SnapshotterContext,
  content: VolumeSnapshotContent,
  secrets: Record<string, string>,
  signal: AbortSignal,
): Promise<void> {
  const handle = contentSnapshotHandle(content);
  if (!handle)
    throw new CsikitError(
      "CSIKIT_ERR_VALIDATION",
      `failed to delete snapshot content ${content.metadata.name}: snapshotHandle is missing`,
    );
  await ctx.csi.controller.deleteSnapshot({ snapshotId: handle, secrets }, call(ctx, signal));
}

export async function snapshotStatus(
  ctx: SnapshotterContext,
  content: VolumeSnapshotContent,
  secrets: Record<string, string>,
  signal: AbortSignal,
): Promise<SnapshotResult> {
  const handle = contentSnapshotHandle(content);
  if (!handle)
    throw new CsikitError(
      "CSIKIT_ERR_VALIDATION",
      `failed to list snapshot for content ${content.metadata.name}: snapshotHandle is missing`,
    );
  const now = ctx.clock.now();
  if (ctx.driver.getSnapshot) {
    const response = await ctx.csi.controller.getSnapshot({ snapshotId: handle, secrets }, call(ctx, signal));
    if (!response.snapshot)
      throw new CsikitError("CSIKIT_ERR_DRIVER", `can not find snapshot for snapshotID ${handle}`);
    return snapshotResult(response.snapshot, now);
  }
  if (ctx.driver.listSnapshots) {
    const response = await ctx.csi.controller.listSnapshots(
      { snapshotId: handle, secrets },
      call(ctx, signal),
    );
    const found = response.entries[0]?.snapshot;
    if (!found) throw new CsikitError("CSIKIT_ERR_DRIVER", `can not find snapshot for snapshotID ${handle}`);
    return snapshotResult(found, now);
  }
  // A driver that cannot list: the handle is taken as valid and ready.
  return {
    handle,
    sourceVolumeId: "",
    creationTime: now * 1e6,
    sizeBytes: 0,
    readyToUse: true,
    groupSnapshotId: "",
  };
}

function groupResult(group: VolumeGroupSnapshot, nowMs: number): GroupSnapshotResult {
  const created = nanos(group.creationTime, nowMs);
  return {
    handle: group.groupSnapshotId,
    creationTimeMs: Math.floor(created / 1e6),
    readyToUse: group.readyToUse,
    members: group.snapshots.map((snapshot) => snapshotResult(snapshot, nowMs)),
  };
}

export async function createGroupSnapshot(
  ctx: SnapshotterContext,
  content: VolumeGroupSnapshotContent,
  request: { parameters: Record<string, string>; secrets: Record<string, string> },
  signal: AbortSignal,
): Promise<GroupSnapshotResult> {
  const uid = content.spec.volumeGroupSnapshotRef?.uid ?? "";
  if (uid === "")
    throw new CsikitError(
      "CSIKIT_ERR_VALIDATION",
      `cannot create group snapshot. Group snapshot content ${content.metadata.name} not bound to a group snapshot`,
    );
  const volumeHandles = content.spec.source.volumeHandles ?? [];
  if (volumeHandles.length === 0)
    throw new CsikitError(
      "CSIKIT_ERR_VALIDATION",
      `cannot create group snapshot. PVCs to be snapshotted not found in group snapshot content ${content.metadata.name}`,
    );
  const name = groupSnapshotName(
    ctx.options.groupSnapshotNamePrefix,
    uid,
    ctx.options.groupSnapshotNameUuidLength,
  );
  const response = await ctx.csi.groupController.createVolumeGroupSnapshot(
    { name, sourceVolumeIds: volumeHandles, parameters: request.parameters, secrets: request.secrets },
    call(ctx, signal),
  );
  if (!response.groupSnapshot)
    throw new CsikitError(
      "CSIKIT_ERR_DRIVER",
      `CreateVolumeGroupSnapshot of ${name} answered without a group`,
    );
  return groupResult(response.groupSnapshot, ctx.clock.now());
}

/** The group's handle: the status's, else the pre-provisioned one. */
export function groupContentHandle(content: VolumeGroupSnapshotContent): string | undefined {
  return (
    content.status?.volumeGroupSnapshotHandle ??
    content.spec.source.groupSnapshotHandles?.volumeGroupSnapshotHandle
  );
}

export async function deleteGroupSnapshot(
  ctx: SnapshotterContext,
  content: VolumeGroupSnapshotContent,
  request: { snapshotIds: string[]; secrets: Record<string, string> },
  signal: AbortSignal,
): Promise<void> {
  if (request.snapshotIds.length === 0)
    throw new CsikitError(
      "CSIKIT_ERR_VALIDATION",
      `cannot delete group snapshot content ${content.metadata.name}. No snapshots found in the group snapshot`,
    );
  const handle = groupContentHandle(content);
  if (!handle)
    throw new CsikitError(
      "CSIKIT_ERR_VALIDATION",
      `failed to delete group snapshot content ${content.metadata.name}: groupsnapshotHandle is missing`,
    );
  await ctx.csi.groupController.deleteVolumeGroupSnapshot(
    { groupSnapshotId: handle, snapshotIds: request.snapshotIds, secrets: request.secrets },
    call(ctx, signal),
  );
}

export async function groupSnapshotStatus(
  ctx: SnapshotterContext,
  content: VolumeGroupSnapshotContent,
  request: { snapshotIds: string[]; secrets: Record<string, string> },
  signal: AbortSignal,
): Promise<GroupSnapshotResult> {
  if (request.snapshotIds.length === 0)
    throw new CsikitError(
      "CSIKIT_ERR_VALIDATION",
      `cannot list group snapshot ${content.metadata.name}. No snapshots found in the group snapshot content`,
    );
  const handle = groupContentHandle(content);
  if (!handle)
    throw new CsikitError(
      "CSIKIT_ERR_VALIDATION",
      `failed to list group snapshot for group snapshot content ${content.metadata.name}: groupSnapshotHandle is missing`,
    );
  const response = await ctx.csi.groupController.getVolumeGroupSnapshot(
    { groupSnapshotId: handle, snapshotIds: request.snapshotIds, secrets: request.secrets },
    call(ctx, signal),
  );
  if (!response.groupSnapshot)
    throw new CsikitError("CSIKIT_ERR_DRIVER", `can not find group snapshot ${handle}`);
  return groupResult(response.groupSnapshot, ctx.clock.now());
}
