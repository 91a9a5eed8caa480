// snapshot-controller's flags: external-snapshotter v8.6's cmd/snapshot-controller list (its own
// set, not csi-lib-utils' standard sidecar flags: no --csi-address, no --master, no
// --metrics-address) plus component-base's logging flags, which v8.3+ registers instead of klog's.
// `snapshotControllerOptionsFromFlags` validates and names the bad flag.

import { FlagError, type FlagSpecs, type Flags } from "../../base/index.ts";
import { SIDECAR_LOGGING_FLAGS, flagAtLeast, sidecarFeatureGates } from "../../kube/index.ts";
import { SNAPSHOT_CONTROLLER_FEATURE_GATE_DEFAULTS, type SnapshotControllerOptions } from "./options.ts";

export const SNAPSHOT_CONTROLLER_FLAGS: FlagSpecs = {
  ...SIDECAR_LOGGING_FLAGS,
  kubeconfig: {
    type: "string",
    help: "Absolute path to the kubeconfig file. Required only when running out of cluster.",
  },
  "resync-period": { type: "duration", default: "15m", help: "Resync interval of the controller." },
  "worker-threads": { type: "int", default: "10", help: "Number of worker threads." },
  "leader-election": { type: "bool", default: "false", help: "Enables leader election." },
  "leader-election-namespace": {
    type: "string",
    help: "The namespace where the leader election resource exists. Defaults to the pod namespace if not set.",
  },
  "leader-election-lease-duration": {
    type: "duration",
    default: "15s",
    help: "Duration, in seconds, that non-leader candidates will wait to force acquire leadership. Defaults to 15 seconds.",
  },
  "leader-election-renew-deadline": {
    type: "duration",
    default: "10s",
    help: "Duration, in seconds, that the acting leader will retry refreshing leadership before giving up. Defaults to 10 seconds.",
  },
  "leader-election-retry-period": {
    type: "duration",
    default: "5s",
    help: "Duration, in seconds, the LeaderElector clients should wait between tries of actions. Defaults to 5 seconds.",
  },
  "kube-api-qps": {
    type: "float",
    default: "5",
    help: "QPS to use while communicating with the kubernetes apiserver. Defaults to 5.0.",
  },
  "kube-api-burst": {
    type: "int",
    default: "10",
    help: "Burst to use while communicating with the kubernetes apiserver. Defaults to 10.",
  },
  "http-endpoint": {
    type: "string",
    help: "The TCP network address where the HTTP server for diagnostics, including metrics, will listen (example: :8080). The default is empty string, which means the server is disabled.",
  },
  "metrics-path": {
    type: "string",
    default: "/metrics",
    help: "The HTTP path where prometheus metrics will be exposed. Default is `/metrics`.",
  },
  "retry-interval-start": {
    type: "duration",
    default: "1s",
    help: "Initial retry interval of failed volume snapshot creation or deletion. It doubles with each failure, up to retry-interval-max. Default is 1 second.",
  },
  "retry-interval-max": {
    type: "duration",
    default: "5m",
    help: "Maximum retry interval of failed volume snapshot creation or deletion. Default is 5 minutes.",
  },
  "enable-distributed-snapshotting": {
    type: "bool",
    default: "false",
    help: "Enables each node to handle snapshotting for the local volumes created on that node",
  },
  "prevent-volume-mode-conversion": {
    type: "bool",
    default: "true",
    help: "Prevents an unauthorised user from modifying the volume mode when creating a PVC from an existing VolumeSnapshot.",
  },
  "retry-crd-interval-max": {
    type: "duration",
    default: "30s",
    help: "Maximum time to wait for CRDs to appear. The default is 30 seconds.",
  },
  "feature-gates": {
    type: "map",
    help: "Comma-seprated list of key=value pairs that describe feature gates for alpha/experimental features. Options are: CSIVolumeGroupSnapshot=true|false (GA - default=true), ReleaseLeaderElectionOnExit=true|false (ALPHA - default=false).",
  },
};

function positive(flags: Flags, name: string): number {
  const value = flags.number(name);
  if (!(value > 0)) throw new FlagError(`flag -${name} must be greater than zero, got ${value}`);
  return value;
}

/** Typed options from flags parsed with SNAPSHOT_CONTROLLER_FLAGS. */
export function snapshotControllerOptionsFromFlags(flags: Flags): SnapshotControllerOptions {
  const leaseDurationMs = positive(flags, "leader-election-lease-duration");
  const renewDeadlineMs = positive(flags, "leader-election-renew-deadline");
  const retryPeriodMs = positive(flags, "leader-election-retry-period");
  if (leaseDurationMs <= renewDeadlineMs)
    throw new FlagError(
      "flag -leader-election-lease-duration must be greater than -leader-election-renew-deadline",
    );
  if (renewDeadlineMs <= retryPeriodMs * 1.2)
    throw new FlagError(
      "flag -leader-election-renew-deadline must be greater than 1.2 × -leader-election-retry-period",
    );
  const retryStart = positive(flags, "retry-interval-start");
  const retryMax = positive(flags, "retry-interval-max");
  if (retryMax < retryStart)
    throw new FlagError("flag -retry-interval-max must not be smaller than -retry-interval-start");
  const given: Record<string, boolean> = {};
  for (const [key, value] of Object.entries(flags.map("feature-gates"))) {
    const lower = value.toLowerCase();
    if (lower !== "true" && lower !== "false")
      throw new FlagError(`flag -feature-gates: invalid value of ${key}=${value}, want true or false`);
    given[key] = lower === "true";
  }
  return {
    kubeconfig: flags.string("kubeconfig"),
    resyncPeriodMs: flagAtLeast(flags, "resync-period", 0),
    workers: flagAtLeast(flags, "worker-threads", 1),
    leaderElection: {
      enabled: flags.bool("leader-election"),
      namespace: flags.string("leader-election-namespace"),
      leaseDurationMs,
      renewDeadlineMs,
      retryPeriodMs,
      labels: {},
    },
    kubeApiQps: positive(flags, "kube-api-qps"),
    kubeApiBurst: positive(flags, "kube-api-burst"),
    httpEndpoint: flags.string("http-endpoint"),
    metricsPath: flags.string("metrics-path"),
    retryIntervalStartMs: retryStart,
    retryIntervalMaxMs: retryMax,
    enableDistributedSnapshotting: flags.bool("enable-distributed-snapshotting"),
    preventVolumeModeConversion: flags.bool("prevent-volume-mode-conversion"),
    retryCrdIntervalMaxMs: flagAtLeast(flags, "retry-crd-interval-max", 0),
    featureGates: sidecarFeatureGates(given, SNAPSHOT_CONTROLLER_FEATURE_GATE_DEFAULTS),
  };
}
