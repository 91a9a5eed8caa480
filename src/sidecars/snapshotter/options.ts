// The snapshotter's options: what `csikit snapshotter` parses from upstream csi-snapshotter
// v8.6's flags (flags.ts) and what `csikit up` passes in-process. Every field names its flag;
// defaults are upstream's (cmd/csi-snapshotter/main.go).

import type { Clock, Logger } from "../../base/index.ts";
import type { SharedSidecarRuntime, CommonSidecarOptions } from "../../kube/index.ts";

/** Feature gates csi-snapshotter v8.6 knows (pkg/features), with their defaults. */
export const SNAPSHOTTER_FEATURE_GATE_DEFAULTS: Readonly<Record<string, boolean>> = {
  // GA and on: VolumeGroupSnapshotContents are handled (a driver without the GroupController
  // service only gets a warning at start, as upstream).
  CSIVolumeGroupSnapshot: true,
  ReleaseLeaderElectionOnExit: false,
};

export interface SnapshotterOptions extends CommonSidecarOptions {
  /** --timeout (1m): deadline of every CSI call. */
  timeoutMs: number;
  /** --worker-threads (10): concurrent content syncs (and as many group content syncs). */
  workerThreads: number;
  /** --resync-period (15m): informer resync; every cached content is looked at again. 0 = off. */
  resyncPeriodMs: number;
  /** --snapshot-name-prefix ("snapshot"): CSI snapshot name = prefix + "-" + VolumeSnapshot UID. */
  snapshotNamePrefix: string;
  /** --snapshot-name-uuid-length (-1 = whole UID): UID without dashes cut to this length. */
  snapshotNameUuidLength: number;
  /** --groupsnapshot-name-prefix ("groupsnapshot"). */
  groupSnapshotNamePrefix: string;
  /** --groupsnapshot-name-uuid-length (-1). */
  groupSnapshotNameUuidLength: number;
  /** --extra-create-metadata (false): VolumeSnapshot name/namespace and content name as parameters. */
  extraCreateMetadata: boolean;
  /**
   * --node-deployment (false): distributed snapshotting; only contents labelled
   * snapshot.storage.kubernetes.io/managed-by=<nodeName> (NODE_NAME) are handled.
   */
  nodeDeployment: { enabled: boolean; nodeName: string };
  /** CSIVolumeGroupSnapshot (GA, default true): VolumeGroupSnapshotContents are handled. */
  volumeGroupSnapshots: boolean;
  /** ReleaseLeaderElectionOnExit (alpha, default false): give the Lease up on shutdown. */
  releaseLeaderElectionOnExit: boolean;
  logger?: Logger;
  clock?: Clock;
  /** Called once the HTTP endpoint listens (tests use port 0). */
  onHttpEndpoint?: (url: string) => void;
  /** Set by `csikit sidecars`: the CSI connection, informers and endpoint shared in the process. */
  shared?: SharedSidecarRuntime;
}
