// The health monitor's flags: upstream external-health-monitor-controller v0.18.0's list
// (cmd/csi-external-health-monitor-controller/main.go on csi-lib-utils' standard flags, with
// --automaxprocs, --leader-election-* and --kube-api-*), with its defaults and help, plus
// component-base's logging flags (klog's come with every csikit command).
// `healthMonitorOptionsFromFlags` validates ranges and names the bad flag.

import { FlagError, type FlagSpecs, type Flags } from "../../base/index.ts";
import {
  COMMON_SIDECAR_FLAGS,
  SIDECAR_LOGGING_FLAGS,
  commonSidecarOptions,
  flagAtLeast,
} from "../../kube/index.ts";
import type { HealthMonitorOptions } from "./options.ts";

export const HEALTH_MONITOR_FLAGS: FlagSpecs = {
  ...COMMON_SIDECAR_FLAGS,
  ...SIDECAR_LOGGING_FLAGS,
  "monitor-interval": {
    type: "duration",
    default: "1m",
    help: "Interval for controller to check volumes health condition.",
  },
  resync: { type: "duration", default: "10m", help: "Resync interval of the controller." },
  timeout: {
    type: "duration",
    default: "15s",
    help: "Timeout of all calls to the CSI driver (ListVolumes, ControllerGetVolume, start-up).",
  },
  "list-volumes-interval": {
    type: "duration",
    default: "5m",
    help: "Time interval for calling ListVolumes RPC to check volumes' health condition",
  },
  "volume-list-add-interval": {
    type: "duration",
    default: "5m",
    help: "Time interval for listing volumes and add them to queue",
  },
  "node-list-add-interval": {
    type: "duration",
    default: "5m",
    help: "Time interval for listing nodes and add them to queue",
  },
  "worker-threads": { type: "int", default: "10", help: "Number of pv monitor worker threads" },
  "enable-node-watcher": {
    type: "bool",
    default: "false",
    help: "whether we want to enable node watcher, node watcher will only have effects on local PVs now, it may be useful for block storages too, will take this into account later.",
  },
};

/** Typed options from flags parsed with HEALTH_MONITOR_FLAGS. */
export function healthMonitorOptionsFromFlags(flags: Flags): Omit<HealthMonitorOptions, "logger" | "clock"> {
  const common = commonSidecarOptions(flags);
  if (flags.number("worker-threads") <= 0)
    throw new FlagError("option -worker-threads must be greater than zero");
  return {
    ...common,
    timeoutMs: flagAtLeast(flags, "timeout", 1),
    resyncPeriodMs: flagAtLeast(flags, "resync", 0),
    monitorIntervalMs: flagAtLeast(flags, "monitor-interval", 1),
    listVolumesIntervalMs: flagAtLeast(flags, "list-volumes-interval", 1),
    volumeListAddIntervalMs: flagAtLeast(flags, "volume-list-add-interval", 1),
    nodeListAddIntervalMs: flagAtLeast(flags, "node-list-add-interval", 1),
    workerThreads: flags.number("worker-threads"),
    enableNodeWatcher: flags.bool("enable-node-watcher"),
  };
}
