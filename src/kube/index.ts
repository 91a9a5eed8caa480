// The controller plumbing every csikit sidecar and controller shares: client construction with
// client-side rate limiting, work queue and rate limiters, informers, leader election, event
// recording, CSI call metrics, the diagnostics HTTP endpoint and the common sidecar flags.
export * from "./flags.ts";
export * from "./access-modes.ts";
export * from "./csi-errors.ts";
export * from "./secrets.ts";
export * from "./ratelimit.ts";
export * from "./priority.ts";
export * from "./workqueue.ts";
export * from "./workqueue-metrics.ts";
export * from "./metrics.ts";
export * from "./prom.ts";
export * from "./http-endpoint.ts";
export * from "./delegated-auth.ts";
export * from "./serving-cert.ts";
export * from "./secure-serving.ts";
export * from "./pprof.ts";
export * from "./lease-name.ts";
export * from "./types.ts";
export * from "./errors.ts";
export * from "./client.ts";
export * from "./store.ts";
export * from "./reflector.ts";
export * from "./informer.ts";
export * from "./informer-scope.ts";
export * from "./leaderelection.ts";
export * from "./events.ts";
export * from "./controller.ts";
export * from "./access-modes.ts";
export * from "./merge-patch.ts";
export * from "./served-version.ts";
export * from "./sidecar.ts";
export { execInPod, ExecError, type ExecOptions, type ExecResult } from "./exec.ts";
