// What the snapshot controller's sync functions work with: the latest known snapshots, contents
// and claims (cache plus our own writes, so a sync that runs again before the watch delivered
// our last write neither fails on a stale resourceVersion nor writes twice), the other caches,
// the event recorder, the operation metrics and the knobs. Built once by controller.ts.

import type {
  Node,
  PersistentVolume,
  PersistentVolumeClaim,
  VolumeGroupSnapshot,
  VolumeGroupSnapshotClass,
  VolumeGroupSnapshotContent,
  VolumeSnapshot,
  VolumeSnapshotClass,
  VolumeSnapshotContent,
} from "../../api/index.ts";
import type { Logger } from "../../base/index.ts";
import type { EventRecorder, KubeClient, Store } from "../../kube/index.ts";
import type { LatestObjects } from "../common/index.ts";
import type { SnapshotOperationMetrics } from "./metrics.ts";

/** Snapshot store index: dynamic snapshots by "<namespace>/<source claim>". */
export const SNAPSHOTS_BY_CLAIM = "snapshot-controller/by-claim";
/** Snapshot store index: group members by "<namespace>^<group>" (upstream's ByVolumeGroupSnapshotMembership key). */
export const SNAPSHOTS_BY_GROUP = "ByVolumeGroupSnapshotMembership";
/** PV store index: "<driver>^<volumeHandle>". */
export const VOLUMES_BY_HANDLE = "ByVolumeHandle";
/** Claim store index: claims restoring from a snapshot, by "<namespace>/<snapshot>". */
export const CLAIMS_BY_SNAPSHOT_SOURCE = "snapshot-controller/by-snapshot-source";

export interface GroupCaches {
  groups: LatestObjects<VolumeGroupSnapshot>;
  groupContents: LatestObjects<VolumeGroupSnapshotContent>;
  groupClasses: Store<VolumeGroupSnapshotClass>;
}

export interface SnapshotSyncContext {
  /** Requests to the snapshot API groups (upstream's snapshot clientset). */
  client: KubeClient;
  /** Requests to the core API, claims here (upstream's kube clientset: its own token bucket). */
  coreClient: KubeClient;
  recorder: EventRecorder;
  logger: Logger;
  signal: AbortSignal;
  snapshots: LatestObjects<VolumeSnapshot>;
  /** The snapshot informer's store (for its indexes). */
  snapshotStore: Store<VolumeSnapshot>;
  contents: LatestObjects<VolumeSnapshotContent>;
  classes: Store<VolumeSnapshotClass>;
  claims: LatestObjects<PersistentVolumeClaim>;
  claimStore: Store<PersistentVolumeClaim>;
  volumes: Store<PersistentVolume>;
  /** Only with --enable-distributed-snapshotting. */
  nodes: Store<Node> | undefined;
  /** Only with the CSIVolumeGroupSnapshot gate. */
  group: GroupCaches | undefined;
  metrics: SnapshotOperationMetrics;
  /** --prevent-volume-mode-conversion. */
  preventVolumeModeConversion: boolean;
  /** --enable-distributed-snapshotting. */
  distributed: boolean;
  /**
   * Claims a content is being created from right now, by claim key (how many creates): their
   * pvc-as-source-protection stays until the create has answered (claim-protection.ts). One map
   * per controller, shared by every reconcile.
   */
  claimsInContentCreation: Map<string, number>;
  enqueueSnapshot(key: string): void;
  enqueueContent(name: string): void;
  enqueueGroup(key: string): void;
  enqueueClaim(key: string): void;
  now(): number;
}
