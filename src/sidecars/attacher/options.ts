// The attacher's options: what `csikit attacher` parses from upstream's flags (flags.ts) and
// what `csikit up` passes in-process. Every field names its flag; defaults are upstream's
// (external-attacher v4.12.0, cmd/csi-attacher/main.go).

import type { Clock, Logger } from "../../base/index.ts";
import type { SharedSidecarRuntime, CommonSidecarOptions } from "../../kube/index.ts";

export const ATTACHER_FEATURE_GATE_DEFAULTS: Readonly<Record<string, boolean>> = {
  // GA in v4.12 (KEP-4876): the attacher's part is VolumeError.errorCode (the API server also
  // drops the field where its own gate is off); =false saves errors without it, as upstream.
  MutableCSINodeAllocatableCount: true,
  ReleaseLeaderElectionOnExit: false,
};

export interface AttacherOptions extends CommonSidecarOptions {
  /** --timeout (15s): deadline of every CSI call. */
  timeoutMs: number;
  /**
   * --worker-threads (10): concurrent attaches, and as many detaches in their own lane (and as
   * many PersistentVolume syncs).
   */
  workerThreads: number;
  /** --resync (10m): informer resync period; every cached object is looked at again. */
  resyncMs: number;
  /** --reconcile-sync (1m): period of the ListVolumes reconcile (LIST_VOLUMES_PUBLISHED_NODES). */
  reconcileSyncMs: number;
  /** --max-entries (0 = no limit): page size of ListVolumes. */
  maxEntries: number;
  /** --default-fstype (""): fsType of a mount capability when the PV gives none. */
  defaultFsType: string;
  /** --max-grpc-log-length (-1 = no limit): longest CSI response a -v 5 trace logs. */
  maxGrpcLogLength: number;
  /** ReleaseLeaderElectionOnExit (alpha, default false): give the Lease up on shutdown. */
  releaseLeaderElectionOnExit: boolean;
  logger?: Logger;
  clock?: Clock;
  /** Called once the HTTP endpoint listens (tests use port 0). */
  onHttpEndpoint?: (url: string) => void;
  /** Set by `csikit sidecars`: the CSI connection, informers and endpoint shared in the process. */
  shared?: SharedSidecarRuntime;
}
