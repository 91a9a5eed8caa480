// The node's container runtime: runs pods' containers as sandboxed host processes.
export type { ContainerTarget, ExecIO, LogOptions, ContainerStreams } from "./types.ts";
export { RuntimeNotFoundError, NO_CONTAINER_STREAMS } from "./types.ts";
