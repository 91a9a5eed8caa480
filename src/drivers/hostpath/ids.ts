// Identifiers this driver generates, and the checks that keep untrusted IDs from ever becoming
// paths. Every volume, snapshot and group-snapshot ID is a fixed prefix plus 32 lowercase hex
// digits (a random UUID without dashes), so a well-formed ID is always a safe single path
// component. Inline ephemeral volumes get their IDs from the CO (kubelet uses
// `csi-<sha256>`), so their on-disk name is the SHA-256 of the ID, never the ID itself.

import { createHash, randomUUID } from "node:crypto";

const VOLUME_ID = /^vol-[0-9a-f]{32}$/;
const SNAPSHOT_ID = /^snap-[0-9a-f]{32}$/;
const GROUP_SNAPSHOT_ID = /^group-[0-9a-f]{32}$/;

function randomHex(): string {
  return randomUUID().replaceAll("-", "");
}

export function newVolumeId(): string {
  return `vol-${randomHex()}`;
}

export function newSnapshotId(): string {
  return `snap-${randomHex()}`;
}

export function newGroupSnapshotId(): string {
  return `group-${randomHex()}`;
}

export function isVolumeId(id: string): boolean {
  return VOLUME_ID.test(id);
}

export function isSnapshotId(id: string): boolean {
  return SNAPSHOT_ID.test(id);
}

export function isGroupSnapshotId(id: string): boolean {
  return GROUP_SNAPSHOT_ID.test(id);
}

/** The on-disk directory name of an inline ephemeral volume: safe whatever the CO sent. */
export function ephemeralDirName(volumeId: string): string {
  return `eph-${createHash("sha256").update(volumeId).digest("hex")}`;
}

/** A file-name-safe form of a node ID (node IDs come from flags or from requests). */
export function nodeFileName(nodeId: string): string {
  return createHash("sha256").update(nodeId).digest("hex").slice(0, 32);
}
