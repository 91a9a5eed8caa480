// The snapshot controller's options: what `csikit snapshot-controller` parses from upstream
// external-snapshotter v8.6's snapshot-controller flags (flags.ts) and what `csikit up` passes.
// Every field names its flag; defaults are upstream's (cmd/snapshot-controller/main.go).

import type { Clock, Logger } from "../../base/index.ts";

/** Feature gates snapshot-controller v8.6 knows (pkg/features), with their defaults. */
export const SNAPSHOT_CONTROLLER_FEATURE_GATE_DEFAULTS: Readonly<Record<string, boolean>> = {
  CSIVolumeGroupSnapshot: true,
  ReleaseLeaderElectionOnExit: false,
};

export interface SnapshotControllerOptions {
  /** --kubeconfig ("" = in-cluster). */
  kubeconfig: string;
  /** --resync-period (15m): every cached object is looked at again. 0 = off. */
  resyncPeriodMs: number;
  /** --worker-threads (10): workers per queue. */
  workers: number;
  leaderElection: {
    /** --leader-election (false). */
    enabled: boolean;
    /** --leader-election-namespace ("" = the pod's namespace). */
    namespace: string;
    /** --leader-election-lease-duration (15s). */
    leaseDurationMs: number;
    /** --leader-election-renew-deadline (10s). */
    renewDeadlineMs: number;
    /** --leader-election-retry-period (5s). */
    retryPeriodMs: number;
    labels: Record<string, string>;
  };
  /** --kube-api-qps (5). */
  kubeApiQps: number;
  /** --kube-api-burst (10). */
  kubeApiBurst: number;
  /** --http-endpoint ("" = no diagnostics server). */
  httpEndpoint: string;
  /** --metrics-path (/metrics). */
  metricsPath: string;
  /** --retry-interval-start (1s). */
  retryIntervalStartMs: number;
  /** --retry-interval-max (5m). */
  retryIntervalMaxMs: number;
  /** --enable-distributed-snapshotting (false): the managed-by label on new contents. */
  enableDistributedSnapshotting: boolean;
  /** --prevent-volume-mode-conversion (true): sourceVolumeMode on new contents. */
  preventVolumeModeConversion: boolean;
  /** --retry-crd-interval-max (30s): how long to wait for the CRDs at start. */
  retryCrdIntervalMaxMs: number;
  /** Resolved --feature-gates. */
  featureGates: Record<string, boolean>;
  logger?: Logger;
  clock?: Clock;
  /** Called with the diagnostics endpoint's URL once it listens (tests, `csikit up`). */
  onHttpEndpoint?: (url: string) => void;
}
