// The contract between the node's container runtime (src/node/runtime) and whoever streams
// from it (the kubelet's /containerLogs and /exec endpoints, proxied by the API server's
// pods/log and pods/exec). The runtime implements ContainerStreams; the streaming server only
// calls it.

/** One container of one pod on this node (podUID, when given, must match the running pod). */
export interface ContainerTarget {
  namespace: string;
  pod: string;
  podUID?: string;
  container: string;
}

export interface ExecIO {
  stdin?: NodeJS.ReadableStream;
  stdout?: NodeJS.WritableStream;
  stderr?: NodeJS.WritableStream;
  tty: boolean;
  /** terminal size changes (tty only) */
  resize?: AsyncIterable<{ width: number; height: number }>;
}

/** The kubelet's /containerLogs query (PodLogOptions). */
export interface LogOptions {
  previous?: boolean;
  follow?: boolean;
  tailLines?: number;
  timestamps?: boolean;
  sinceSeconds?: number;
  sinceTime?: string;
  limitBytes?: number;
}

export interface ContainerStreams {
  /** Runs command inside the running container's sandbox (same namespaces, mounts, user); resolves with its exit code. Throws RuntimeNotFoundError if no such running container. */
  exec(target: ContainerTarget, command: string[], io: ExecIO, signal: AbortSignal): Promise<number>;
  /** Writes the container's log lines (the kubelet's /containerLogs semantics) to out; with follow, until the container stops or signal aborts. */
  logs(
    target: ContainerTarget,
    options: LogOptions,
    out: NodeJS.WritableStream,
    signal: AbortSignal,
  ): Promise<void>;
}

/** No such pod, container, or (for exec) running container on this node. */
export class RuntimeNotFoundError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RuntimeNotFoundError";
  }
}
