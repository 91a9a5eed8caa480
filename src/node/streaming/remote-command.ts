// One `exec` session once its transport (WebSocket channels or SPDY streams) is set up: the
// command runs through the node's runtime with the client's stdin/stdout/stderr, and its outcome
// is written to the error stream as the kubelet writes it (remotecommand v4 and later: a
// metav1.Status in JSON; a NonZeroExitCode failure carries the exit code as an ExitCode cause,
// which kubectl turns into its own exit code). Older protocols get the kubelet's v1 form: the
// error text alone, nothing on success.

import type { Readable, Writable } from "node:stream";
import { errorMessage, type Logger } from "../../base/index.ts";
import type { ContainerStreams, ContainerTarget, ExecIO } from "../runtime/index.ts";

/** What an /exec request asks for (the kubelet's query: command, stdin, stdout, stderr, tty). */
export interface ExecParams {
  target: ContainerTarget;
  command: string[];
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/** metav1.Status as the kubelet marshals it on the error stream (no kind/apiVersion). */
export interface StreamStatus {
  metadata: Record<string, never>;
  status: "Success" | "Failure";
  message?: string;
  reason?: string;
  details?: { causes: { reason?: string; message: string }[] };
  code?: number;
}

/** The streams of one session, whichever transport carries them. */
export interface RemoteStreams {
  /** The negotiated protocol (WebSocket subprotocol, or SPDY's X-Stream-Protocol-Version). */
  protocol: string;
  stdin?: Readable;
  stdout?: Writable;
  stderr?: Writable;
  /** The raw resize stream: JSON TerminalSize objects ({"Width":…,"Height":…}) back to back. */
  resize?: Readable;
  /** Writes the outcome on the error stream and closes it. */
  writeStatus(status: StreamStatus): Promise<void>;
  /** Ends the session (all streams, then the connection). */
  close(): Promise<void>;
  /** Aborted when the client goes away. */
  gone: AbortSignal;
}

export const SUCCESS_STATUS: StreamStatus = { metadata: {}, status: "Success" };

/** The status of a command that exited non-zero (remotecommand's NonZeroExitCode, cause ExitCode). */
export function exitCodeStatus(command: readonly string[], code: number): StreamStatus {
  return {
    metadata: {},
    status: "Failure",
    message: `command terminated with non-zero exit code: error executing command [${command.join(" ")}], exit code ${code}`,
    reason: "NonZeroExitCode",
    details: { causes: [{ reason: "ExitCode", message: String(code) }] },
  };
}

/** apierrors.NewInternalError as the kubelet writes it when the command could not run. */
export function internalErrorStatus(message: string): StreamStatus {
  return {
    metadata: {},
    status: "Failure",
    message: `Internal error occurred: ${message}`,
    reason: "InternalError",
    details: { causes: [{ message }] },
    code: 500,
  };
}

/** The kubelet's v1 error-stream form: the error's text, nothing for success. */
export function v1StatusText(status: StreamStatus): string {
  return status.status === "Success" ? "" : (status.message ?? "");
}

/** Terminal sizes from the resize stream: JSON objects back to back, as Go's json.Decoder reads them. */
export async function* terminalSizes(stream: Readable): AsyncIterable<{ width: number; height: number }> {
  let pending = "";
  for await (const chunk of stream) {
    pending += (chunk as Buffer).toString("utf8");
    for (;;) {
      const end = pending.indexOf("}");
      if (end < 0) break;
      const text = pending.slice(pending.indexOf("{"), end + 1);
      pending = pending.slice(end + 1);
      try {
        const size = JSON.parse(text) as { Width?: unknown; Height?: unknown };
        if (typeof size.Width === "number" && typeof size.Height === "number")
          yield { width: size.Width, height: size.Height };
      } catch {
        // A malformed size ends nothing: the kubelet's decoder stops reading sizes, we skip it.
      }
    }
  }
}

function endQuietly(stream: Writable | undefined): Promise<void> {
  if (!stream || stream.writableEnded || stream.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    stream.once("error", () => resolve());
    stream.end(() => resolve());
  });
}

/** Runs the command and reports its outcome; resolves when the session is closed. */
export async function serveExec(
  params: ExecParams,
  streams: RemoteStreams,
  runtime: ContainerStreams,
  logger: Logger,
): Promise<void> {
  const io: ExecIO = {
    tty: params.tty,
    ...(streams.stdin ? { stdin: streams.stdin } : {}),
    ...(streams.stdout ? { stdout: streams.stdout } : {}),
    ...(streams.stderr ? { stderr: streams.stderr } : {}),
    ...(streams.resize && params.tty ? { resize: terminalSizes(streams.resize) } : {}),
  };
  let status: StreamStatus;
  try {
    const code = await runtime.exec(params.target, params.command, io, streams.gone);
    status = code === 0 ? SUCCESS_STATUS : exitCodeStatus(params.command, code);
  } catch (error) {
    const message = `error executing command in container: ${errorMessage(error)}`;
    logger.info(2, "exec failed", { pod: `${params.target.namespace}/${params.target.pod}`, err: message });
    status = internalErrorStatus(message);
  }
  try {
    await endQuietly(streams.stdout);
    await endQuietly(streams.stderr);
    if (!streams.gone.aborted) await streams.writeStatus(status);
  } finally {
    await streams.close();
  }
}
