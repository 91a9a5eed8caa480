// The snapshotter's flags: csi-snapshotter v8.6's list (cmd/csi-snapshotter/main.go on
// csi-lib-utils' standard flags, plus component-base's logging flags), with its defaults and
// meaning. `snapshotterOptionsFromFlags` validates ranges, feature gates and the node
// deployment's environment, and names the bad flag.

import { FlagError, type FlagSpecs, type Flags } from "../../base/index.ts";
import {
  COMMON_SIDECAR_FLAGS,
  SIDECAR_LOGGING_FLAGS,
  commonSidecarOptions,
  flagAtLeast,
  sidecarFeatureGates,
} from "../../kube/index.ts";
import { SNAPSHOTTER_FEATURE_GATE_DEFAULTS, type SnapshotterOptions } from "./options.ts";

/** Hex digits of a UID without its dashes: the most a UUID length can keep. */
const UID_HEX_DIGITS = 32;

export const SNAPSHOTTER_FLAGS: FlagSpecs = {
  ...COMMON_SIDECAR_FLAGS,
  ...SIDECAR_LOGGING_FLAGS,
  "resync-period": {
    type: "duration",
    default: "15m",
    help: "Resync interval of the controller. Default is 15 minutes",
  },
  "snapshot-name-prefix": {
    type: "string",
    default: "snapshot",
    help: "Prefix to apply to the name of a created snapshot",
  },
  "snapshot-name-uuid-length": {
    type: "int",
    default: "-1",
    help: "Length in characters for the generated uuid of a created snapshot. Defaults behavior is to NOT truncate.",
  },
  "worker-threads": { type: "int", default: "10", help: "Number of worker threads." },
  timeout: {
    type: "duration",
    default: "1m",
    help: "The timeout for any RPCs to the CSI driver. Default is 1 minute.",
  },
  "extra-create-metadata": {
    type: "bool",
    default: "false",
    help: "If set, add snapshot metadata to plugin snapshot requests as parameters.",
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
  "node-deployment": {
    type: "bool",
    default: "false",
    help: "Enables deploying the sidecar controller together with a CSI driver on nodes to manage snapshots for node-local volumes (needs the NODE_NAME environment variable).",
  },
  "groupsnapshot-name-prefix": {
    type: "string",
    default: "groupsnapshot",
    help: "Prefix to apply to the name of a created group snapshot",
  },
  "groupsnapshot-name-uuid-length": {
    type: "int",
    default: "-1",
    help: "Length in characters for the generated uuid of a created group snapshot. Defaults behavior is to NOT truncate.",
  },
  automaxprocs: {
    type: "bool",
    default: "false",
    help: "Automatically set GOMAXPROCS to match Linux container CPU quota. Accepted for compatibility; a Node.js process has no GOMAXPROCS.",
  },
  "feature-gates": {
    type: "map",
    help: "Comma-seprated list of key=value pairs that describe feature gates for alpha/experimental features. Options are: CSIVolumeGroupSnapshot=true|false (GA - default=true), ReleaseLeaderElectionOnExit=true|false (ALPHA - default=false).",
  },
};

function uuidLength(flags: Flags, name: string): number {
  const value = flags.number(name);
  if (value !== -1 && (value < 1 || value > UID_HEX_DIGITS))
    throw new FlagError(`flag -${name} must be -1 or between 1 and ${UID_HEX_DIGITS}, got ${value}`);
  return value;
}

function prefix(flags: Flags, name: string, what: string): string {
  const value = flags.string(name);
  if (value === "") throw new FlagError(`flag -${name}: ${what} name prefix cannot be of length 0`);
  return value;
}

/** Typed options from flags parsed with SNAPSHOTTER_FLAGS and the environment (NODE_NAME). */
export function snapshotterOptionsFromFlags(
  flags: Flags,
  env: NodeJS.ProcessEnv = process.env,
): Omit<SnapshotterOptions, "logger" | "clock"> {
  const common = commonSidecarOptions(flags);
  const gates = sidecarFeatureGates(common.featureGates, SNAPSHOTTER_FEATURE_GATE_DEFAULTS);
  const nodeDeployment = flags.bool("node-deployment");
  if (nodeDeployment && common.leaderElection.enabled)
    throw new FlagError("Leader election cannot happen when node-deployment is set to true");
  const nodeName = env.NODE_NAME ?? "";
  if (nodeDeployment && nodeName === "")
    throw new FlagError("The NODE_NAME environment variable must be set when using --node-deployment.");
  return {
    ...common,
    featureGates: gates,
    timeoutMs: flagAtLeast(flags, "timeout", 1),
    workerThreads: flagAtLeast(flags, "worker-threads", 1),
    resyncPeriodMs: flagAtLeast(flags, "resync-period", 0),
    snapshotNamePrefix: prefix(flags, "snapshot-name-prefix", "Snapshot"),
    snapshotNameUuidLength: uuidLength(flags, "snapshot-name-uuid-length"),
    groupSnapshotNamePrefix: prefix(flags, "groupsnapshot-name-prefix", "group snapshot"),
    groupSnapshotNameUuidLength: uuidLength(flags, "groupsnapshot-name-uuid-length"),
    extraCreateMetadata: flags.bool("extra-create-metadata"),
    nodeDeployment: { enabled: nodeDeployment, nodeName },
    volumeGroupSnapshots: gates.CSIVolumeGroupSnapshot!,
    releaseLeaderElectionOnExit: gates.ReleaseLeaderElectionOnExit!,
  };
}
