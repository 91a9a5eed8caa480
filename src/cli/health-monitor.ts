// `csikit health-monitor`: the external-health-monitor-controller sidecar. Flags are upstream
// v0.18's (see src/sidecars/health-monitor/flags.ts); this file only turns them into options
// and starts it.

import {
  HEALTH_MONITOR_FLAGS,
  healthMonitorOptionsFromFlags,
  startHealthMonitor,
} from "../sidecars/health-monitor/index.ts";
import type { Command } from "./command.ts";

export const healthMonitorCommand: Command = {
  name: "health-monitor",
  summary:
    "Run the external-health-monitor-controller sidecar: volume conditions as VolumeConditionAbnormal events on claims",
  usage: "csikit health-monitor --csi-address=/run/csi/socket [--kubeconfig=FILE] [flags]",
  description:
    "A drop-in for registry.k8s.io/sig-storage/csi-external-health-monitor-controller, whose flags match\n" +
    "upstream v0.18.0: same flags, events, Lease and RBAC. With the driver's VOLUME_CONDITION capability it\n" +
    "asks for the condition of every Bound volume of the driver — one ListVolumes every\n" +
    "--list-volumes-interval when the driver has LIST_VOLUMES, else ControllerGetVolume per volume\n" +
    "(--worker-threads workers, one volume each every --monitor-interval) — and records a Warning\n" +
    "VolumeConditionAbnormal event on the claim of each abnormal volume, with the driver's message.\n" +
    "With --enable-node-watcher, the claims used by pods on a deleted, terminated or (5 minutes) NotReady\n" +
    "node get NodeFailed, and NodeRecovered once it is Ready again. Environment: POD_NAMESPACE\n" +
    "(leader-election namespace).",
  flags: HEALTH_MONITOR_FLAGS,
  async run({ flags, logger, signal }) {
    const options = healthMonitorOptionsFromFlags(flags);
    await startHealthMonitor({ ...options, logger }, signal);
    return 0;
  },
};
