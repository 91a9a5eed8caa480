// The livenessprobe sidecar (`csikit livenessprobe`): a drop-in kubernetes-csi livenessprobe.
// /healthz calls the driver's Probe; no Kubernetes API access. See livenessprobe.ts.
export { startLivenessProbe } from "./livenessprobe.ts";
export { NOT_READY } from "./probe.ts";
export type { LivenessProbeOptions } from "./options.ts";
export { LIVENESSPROBE_FLAGS, DEFAULT_HEALTH_PORT, livenessProbeOptionsFromFlags } from "./flags.ts";
