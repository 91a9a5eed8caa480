// The health monitor (`csikit health-monitor`): a drop-in external-health-monitor-controller
// v0.18 — volume conditions from the driver's controller (ListVolumes or ControllerGetVolume)
// as VolumeConditionAbnormal events on claims, and with the node watcher NodeFailed /
// NodeRecovered for claims used on failed nodes. See controller.ts.
export { startHealthMonitor } from "./controller.ts";
export { HEALTH_MONITOR_FLAGS, healthMonitorOptionsFromFlags } from "./flags.ts";
export type { HealthMonitorOptions } from "./options.ts";
export { REASON as HEALTH_MONITOR_REASON, eventComponent as healthMonitorEventComponent } from "./names.ts";
