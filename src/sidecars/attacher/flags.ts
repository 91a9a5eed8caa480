// The attacher's flags: upstream external-attacher v4.12.0's own flags (v4.8.1's plus
// csi-lib-utils' --automaxprocs and --leader-election-labels) (names, types, defaults
// and help as its --help gives them) on top of the common sidecar flags, component-base's
// logging flags (klog's come with every csikit command: LOGGING_FLAGS).
// `attacherOptionsFromFlags` validates ranges and names the bad flag.

import type { FlagSpecs, Flags } from "../../base/index.ts";
import {
  COMMON_SIDECAR_FLAGS,
  SIDECAR_LOGGING_FLAGS,
  commonSidecarOptions,
  flagAtLeast,
  sidecarFeatureGates,
} from "../../kube/index.ts";
import { ATTACHER_FEATURE_GATE_DEFAULTS, type AttacherOptions } from "./options.ts";

export const ATTACHER_FLAGS: FlagSpecs = {
  ...COMMON_SIDECAR_FLAGS,
  ...SIDECAR_LOGGING_FLAGS,
  resync: {
    type: "duration",
    default: "10m",
    help: "Resync interval of the controller.",
  },
  timeout: {
    type: "duration",
    default: "15s",
    help: "Timeout for waiting for attaching or detaching the volume.",
  },
  "worker-threads": {
    type: "int",
    default: "10",
    help: "Number of attacher worker threads. csikit runs this many for attaches and as many again for detaches (separate queues), so a burst of detaches cannot starve attaches.",
  },
  "max-entries": {
    type: "int",
    default: "0",
    help: "Max entries per each page in volume lister call, 0 means no limit.",
  },
  "retry-interval-start": {
    type: "duration",
    default: "1s",
    help: "Initial retry interval of failed create volume or deletion. It doubles with each failure, up to retry-interval-max.",
  },
  "retry-interval-max": {
    type: "duration",
    default: "5m",
    help: "Maximum retry interval of failed create volume or deletion.",
  },
  "reconcile-sync": {
    type: "duration",
    default: "1m",
    help: "Resync interval of the VolumeAttachment reconciler.",
  },
  "default-fstype": {
    type: "string",
    help: "The default filesystem type of the volume to publish. Defaults to empty string",
  },
  "max-grpc-log-length": {
    type: "int",
    default: "-1",
    help: "The maximum amount of characters logged for every grpc responses. Defaults to no limit",
  },
  "feature-gates": {
    type: "map",
    help: "A set of key=value pairs that describe feature gates for alpha/experimental features. Options are: MutableCSINodeAllocatableCount=true|false (GA - default=true), ReleaseLeaderElectionOnExit=true|false (ALPHA - default=false).",
  },
};

/** Typed options from flags parsed with ATTACHER_FLAGS; FlagError names any bad flag. */
export function attacherOptionsFromFlags(flags: Flags): Omit<AttacherOptions, "logger" | "clock"> {
  const common = commonSidecarOptions(flags);
  const gates = sidecarFeatureGates(common.featureGates, ATTACHER_FEATURE_GATE_DEFAULTS);
  return {
    ...common,
    featureGates: gates,
    timeoutMs: flagAtLeast(flags, "timeout", 1),
    workerThreads: flagAtLeast(flags, "worker-threads", 1),
    resyncMs: flagAtLeast(flags, "resync", 0),
    reconcileSyncMs: flagAtLeast(flags, "reconcile-sync", 1),
    maxEntries: flagAtLeast(flags, "max-entries", 0),
    defaultFsType: flags.string("default-fstype"),
    maxGrpcLogLength: flags.number("max-grpc-log-length"),
    releaseLeaderElectionOnExit: gates.ReleaseLeaderElectionOnExit!,
  };
}
