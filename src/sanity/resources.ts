// Per-test resource tracker: records everything a test made on the driver (volumes, controller
// and node publications, stagings, snapshots, group snapshots) and the directories it made on
// disk, and undoes all of it after the test — also when the test failed or timed out.
//
// Undo order is the CO's teardown order: node unpublish → node unstage → controller unpublish →
// group snapshots → snapshots → volumes, newest first within each kind. Snapshots and volumes
// get a few rounds because a driver may refuse (FAILED_PRECONDITION) to delete one while a
// dependent of it still exists. Directories are removed without recursion, so a path that is
// still a mount point is reported, never emptied.

import type { PathKind, PathOps } from "./paths.ts";
import { errorCode, errorMessage } from "../base/index.ts";
import { GrpcStatus } from "../csi/index.ts";
import type { CsiClient } from "../csi/index.ts";
import type { SanitySecrets } from "./config.ts";

type Entry =
  | { kind: "nodePublish"; volumeId: string; targetPath: string }
  | { kind: "nodeStage"; volumeId: string; stagingPath: string }
  | { kind: "controllerPublish"; volumeId: string; nodeId: string }
  | { kind: "groupSnapshot"; groupSnapshotId: string; snapshotIds: string[] }
  | { kind: "snapshot"; snapshotId: string }
  | { kind: "volume"; volumeId: string };

export type EntryKind = Entry["kind"];

const PHASES: readonly EntryKind[] = [
  "nodePublish",
  "nodeStage",
  "controllerPublish",
  "groupSnapshot",
  "snapshot",
  "volume",
];

/** Kinds whose deletion may have to wait for another deletion. */
const RETRIED: ReadonlySet<EntryKind> = new Set(["groupSnapshot", "snapshot", "volume"]);
const DELETE_ROUNDS = 3;

export interface ResourceTrackerOptions {
  node: CsiClient;
  controller: CsiClient;
  secrets: SanitySecrets;
  paths: PathOps;
}

export class ResourceTracker {
  readonly #options: ResourceTrackerOptions;
  #entries: Entry[] = [];
  /** Directories made for the test, removed last, deepest (newest) first. */
  #paths: { path: string; kind: PathKind }[] = [];

  constructor(options: ResourceTrackerOptions) {
    this.#options = options;
  }

  volume(volumeId: string): void {
    this.#add({ kind: "volume", volumeId });
  }
  controllerPublished(volumeId: string, nodeId: string): void {
    this.#add({ kind: "controllerPublish", volumeId, nodeId });
  }
  staged(volumeId: string, stagingPath: string): void {
    this.#add({ kind: "nodeStage", volumeId, stagingPath });
  }
  published(volumeId: string, targetPath: string): void {
    this.#add({ kind: "nodePublish", volumeId, targetPath });
  }
  snapshot(snapshotId: string): void {
    this.#add({ kind: "snapshot", snapshotId });
  }
  groupSnapshot(groupSnapshotId: string, snapshotIds: string[]): void {
    this.#add({ kind: "groupSnapshot", groupSnapshotId, snapshotIds });
  }
  /** A path (file or directory) the suite made or the driver may have left: removed non-recursively. */
  path(path: string, kind: PathKind): void {
    if (!this.#paths.some((p) => p.path === path)) this.#paths.push({ path, kind });
  }

  /** The test undid something itself: stop tracking it. */
  forget(kind: EntryKind, id: string, second?: string): void {
    this.#entries = this.#entries.filter((entry) => !matches(entry, kind, id, second));
  }

  /** How many driver-side resources are still tracked (for tests of the suite). */
  get size(): number {
    return this.#entries.length;
  }

  /** Undoes everything still tracked; returns one message per thing it could not undo. */
  async cleanup(): Promise<string[]> {
    const problems: string[] = [];
    for (const phase of PHASES) {
      let pending = this.#entries.filter((e) => e.kind === phase).reverse();
      const rounds = RETRIED.has(phase) ? DELETE_ROUNDS : 1;
      for (let round = 1; round <= rounds && pending.length > 0; round++) {
        const failed: { entry: Entry; error: unknown }[] = [];
        for (const entry of pending) {
          try {
            await this.#undo(entry);
          } catch (error) {
            if (!isGone(error)) failed.push({ entry, error });
          }
        }
        pending = failed.map((f) => f.entry);
        if (round === rounds) {
          for (const { entry, error } of failed) problems.push(`${describe(entry)}: ${errorMessage(error)}`);
        }
      }
    }
    this.#entries = [];
    for (const { path, kind } of this.#paths.reverse()) {
      try {
        await this.#options.paths.remove(path, kind);
      } catch (error) {
        problems.push(`cleanup left ${path} behind: ${errorMessage(error)}`);
      }
    }
    this.#paths = [];
    return problems;
  }

  #add(entry: Entry): void {
    const [id, second] = ids(entry);
    if (!this.#entries.some((e) => matches(e, entry.kind, id, second))) this.#entries.push(entry);
  }

  async #undo(entry: Entry): Promise<void> {
    const { node, controller, secrets } = this.#options;
    switch (entry.kind) {
      case "nodePublish":
        await node.node.nodeUnpublishVolume({ volumeId: entry.volumeId, targetPath: entry.targetPath });
        return;
      case "nodeStage":
        await node.node.nodeUnstageVolume({ volumeId: entry.volumeId, stagingTargetPath: entry.stagingPath });
        return;
      case "controllerPublish":
        await controller.controller.controllerUnpublishVolume({
          volumeId: entry.volumeId,
          nodeId: entry.nodeId,
          secrets: secrets.ControllerUnpublishVolumeSecret ?? {},
        });
        return;
      case "groupSnapshot":
        await controller.groupController.deleteVolumeGroupSnapshot({
          groupSnapshotId: entry.groupSnapshotId,
          snapshotIds: entry.snapshotIds,
          secrets: secrets.DeleteVolumeGroupSnapshotSecret ?? {},
        });
        return;
      case "snapshot":
        await controller.controller.deleteSnapshot({
          snapshotId: entry.snapshotId,
          secrets: secrets.DeleteSnapshotSecret ?? {},
        });
        return;
      case "volume":
        await controller.controller.deleteVolume({
          volumeId: entry.volumeId,
          secrets: secrets.DeleteVolumeSecret ?? {},
        });
        return;
    }
  }
}

function ids(entry: Entry): [string, string | undefined] {
  switch (entry.kind) {
    case "nodePublish":
      return [entry.volumeId, entry.targetPath];
    case "nodeStage":
      return [entry.volumeId, entry.stagingPath];
    case "controllerPublish":
      return [entry.volumeId, entry.nodeId];
    case "groupSnapshot":
      return [entry.groupSnapshotId, undefined];
    case "snapshot":
      return [entry.snapshotId, undefined];
    case "volume":
      return [entry.volumeId, undefined];
  }
}

function matches(entry: Entry, kind: EntryKind, id: string, second: string | undefined): boolean {
  if (entry.kind !== kind) return false;
  const [entryId, entrySecond] = ids(entry);
  return entryId === id && (second === undefined || entrySecond === second);
}

function describe(entry: Entry): string {
  const [id, second] = ids(entry);
  const verb: Record<EntryKind, string> = {
    nodePublish: "NodeUnpublishVolume",
    nodeStage: "NodeUnstageVolume",
    controllerPublish: "ControllerUnpublishVolume",
    groupSnapshot: "DeleteVolumeGroupSnapshot",
    snapshot: "DeleteSnapshot",
    volume: "DeleteVolume",
  };
  return `cleanup ${verb[entry.kind]} ${id}${second === undefined ? "" : ` ${second}`}`;
}

/** NOT_FOUND while undoing means there is nothing left to undo. */
function isGone(error: unknown): boolean {
  return errorCode(error) === GrpcStatus.NOT_FOUND;
}
