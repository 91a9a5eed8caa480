// The node's container runtime: runs pods' containers as sandboxed host processes.
export type { ContainerTarget, ExecIO, LogOptions, ContainerStreams } from "./types.ts";
export { RuntimeNotFoundError } from "./types.ts";
export { PodRuntime, type PodRuntimeOptions } from "./runtime.ts";
export type { HostVolume } from "./pod-volumes.ts";
export { sandboxUnavailable } from "./sandbox.ts";
export { podLogDir, containerLogPath } from "./cri-log.ts";
