// A VolumeSnapshot's status as copied from its content (upstream's updateSnapshotStatus and
// needsUpdateSnapshotStatus): boundVolumeSnapshotContentName, creationTime (content: int64 ns →
// RFC 3339), readyToUse, restoreSize (content: bytes → a binary-SI quantity), error, and the
// group snapshot's name for a member. `nextSnapshotStatus` is pure: undefined means the status
// already says all of it, so nothing is written.

import type { VolumeSnapshot, VolumeSnapshotContent, VolumeSnapshotStatus } from "../../api/index.ts";

/** int64 nanoseconds since the epoch → RFC 3339 seconds, as metav1.Time serializes. */
export function nanosToTime(nanos: number | string): string {
  const ms = Math.floor(Number(BigInt(String(nanos)) / 1_000_000n));
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** Bytes → the canonical binary-SI quantity resource.NewQuantity(n, BinarySI) prints. */
export function bytesToQuantity(bytes: number | string): string {
  let value = BigInt(String(bytes));
  if (value === 0n) return "0";
  const suffixes = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
  let i = 0;
  while (i < suffixes.length - 1 && value % 1024n === 0n) {
    value /= 1024n;
    i++;
  }
  if (i === 0) return String(bytes);
  return `${value}${suffixes[i]}`;
}

const isZeroQuantity = (quantity: string | undefined): boolean =>
  quantity !== undefined && /^0+(\.0*)?[A-Za-z]*$/.test(quantity);

export function nextSnapshotStatus(
  snapshot: VolumeSnapshot,
  content: VolumeSnapshotContent,
  groupSnapshotName: string | undefined,
): VolumeSnapshotStatus | undefined {
  const from = content.status;
  const createdAt = from?.creationTime !== undefined ? nanosToTime(from.creationTime) : undefined;
  const size = from?.restoreSize;
  const ready = from?.readyToUse ?? false;
  const error = from?.error;
  const current = snapshot.status;
  if (current === undefined) {
    return {
      boundVolumeSnapshotContentName: content.metadata?.name ?? "",
      readyToUse: ready,
      ...(createdAt !== undefined ? { creationTime: createdAt } : {}),
      ...(size !== undefined ? { restoreSize: bytesToQuantity(size) } : {}),
      ...(error !== undefined ? { error } : {}),
      ...(groupSnapshotName ? { volumeGroupSnapshotName: groupSnapshotName } : {}),
    };
  }
  const next: VolumeSnapshotStatus = { ...current };
  let updated = false;
  if (!next.boundVolumeSnapshotContentName) {
    next.boundVolumeSnapshotContentName = content.metadata?.name ?? "";
    updated = true;
  }
  if (next.creationTime === undefined && createdAt !== undefined) {
    next.creationTime = createdAt;
    updated = true;
  }
  if (next.readyToUse !== ready) {
    next.readyToUse = ready;
    updated = true;
    if (ready && next.error !== undefined) delete next.error;
  }
  if (
    size !== undefined &&
    (next.restoreSize === undefined || (isZeroQuantity(next.restoreSize) && Number(size) > 0))
  ) {
    next.restoreSize = bytesToQuantity(size);
    updated = true;
  }
  if (
    (next.error === undefined && error !== undefined) ||
    (next.error !== undefined && error === undefined) ||
    (next.error !== undefined &&
      error !== undefined &&
      (next.error.time !== error.time || next.error.message !== error.message))
  ) {
    if (error === undefined) delete next.error;
    else next.error = error;
    updated = true;
  }
  if (!next.volumeGroupSnapshotName && groupSnapshotName) {
    next.volumeGroupSnapshotName = groupSnapshotName;
    updated = true;
  }
  return updated ? next : undefined;
}

/** Upstream's needsUpdateSnapshotStatus: whether a content change should resync its snapshot. */
export function snapshotLagsContent(snapshot: VolumeSnapshot, content: VolumeSnapshotContent): boolean {
  if (snapshot.status === undefined && content.status !== undefined) return true;
  if (content.status === undefined) return false;
  const status = snapshot.status!;
  if (!status.boundVolumeSnapshotContentName) return true;
  if (status.creationTime === undefined && content.status.creationTime !== undefined) return true;
  if (status.readyToUse === undefined && content.status.readyToUse !== undefined) return true;
  if (
    status.readyToUse !== undefined &&
    content.status.readyToUse !== undefined &&
    status.readyToUse !== content.status.readyToUse
  )
    return true;
  if (status.restoreSize === undefined && content.status.restoreSize !== undefined) return true;
  if (isZeroQuantity(status.restoreSize) && Number(content.status.restoreSize ?? 0) > 0) return true;
  // The sidecar's error (or its clearing) while readyToUse stays false: without this the
  // snapshot would show it only after some other event resynced it.
  if ((status.error?.message ?? "") !== (content.status.error?.message ?? "")) return true;
  return false;
}
