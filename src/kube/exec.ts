// The client side of pods/exec, as client-go's WebSocket executor speaks it (what `kubectl exec`
// does): a WebSocket to the API server with subprotocol v5.channel.k8s.io, stdin sent on channel
// 0 and closed with v5's CLOSE signal, stdout and stderr read from channels 1 and 2, and the
// outcome from channel 3 — a metav1.Status whose NonZeroExitCode failure carries the exit code.
// For `csikit up`'s walkthrough, which writes and reads a volume through its pods.

import { errorMessage } from "../base/index.ts";
import type { KubeClient } from "./client.ts";

const V5 = "v5.channel.k8s.io";
const CLOSE_SIGNAL = 255;

export interface ExecOptions {
  container?: string;
  /** Sent to the command's stdin, which is then closed. Default: no stdin. */
  stdin?: string | Buffer;
  /** Bound on the whole exec in ms. Default 60000. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface ExecResult {
  /** The command's exit code. */
  code: number;
  stdout: string;
  stderr: string;
}

export class ExecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ExecError";
  }
}

interface StreamStatus {
  status?: string;
  message?: string;
  reason?: string;
  details?: { causes?: { reason?: string; message?: string }[] };
}

/** The exit code a status reports (0 for Success); throws for a failure that is not an exit code. */
export function exitCodeOf(status: StreamStatus): number {
  if (status.status === "Success") return 0;
  if (status.reason === "NonZeroExitCode") {
    const cause = status.details?.causes?.find((c) => c.reason === "ExitCode");
    const code = Number(cause?.message);
    if (Number.isInteger(code)) return code;
  }
  throw new ExecError(status.message ?? "exec failed without a message");
}

/** Runs `command` in a pod's container through the API server and returns its exit code and output. */
export async function execInPod(
  client: KubeClient,
  namespace: string,
  pod: string,
  command: readonly string[],
  options: ExecOptions = {},
): Promise<ExecResult> {
  const config = client.kubeConfig;
  const query = new URLSearchParams();
  if (options.container) query.set("container", options.container);
  for (const part of command) query.append("command", part);
  query.set("stdout", "true");
  query.set("stderr", "true");
  if (options.stdin !== undefined) query.set("stdin", "true");
  const base = config.server.replace(/^http/, "ws").replace(/\/+$/, "");
  const url = `${base}/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(pod)}/exec?${query.toString()}`;
  const credentials = await config.auth.credentials();
  const { WebSocket } = await import("ws");
  const ws = new WebSocket(url, [V5], {
    headers: credentials.headers as Record<string, string>,
    ...(config.tls.ca ? { ca: config.tls.ca } : {}),
    ...(credentials.cert ? { cert: credentials.cert } : config.tls.cert ? { cert: config.tls.cert } : {}),
    ...(credentials.key ? { key: credentials.key } : config.tls.key ? { key: config.tls.key } : {}),
    ...(config.tls.rejectUnauthorized === false ? { rejectUnauthorized: false } : {}),
    ...(config.tls.servername ? { servername: config.tls.servername } : {}),
    perMessageDeflate: false,
  });
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  let status: StreamStatus | undefined;
  return new Promise<ExecResult>((resolve, reject) => {
    const timer = setTimeout(() => fail(new ExecError("exec timed out")), options.timeoutMs ?? 60_000);
    const onAbort = () => fail(new ExecError("exec aborted"));
    options.signal?.addEventListener("abort", onAbort, { once: true });
    let settled = false;
    const settle = () => {
      settled = true;
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", onAbort);
    };
    function fail(error: Error) {
      if (settled) return;
      settle();
      ws.terminate();
      reject(error);
    }
    ws.on("unexpected-response", (_req, res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
      res.on("end", () => {
        let message = body.trim();
        try {
          message = (JSON.parse(body) as { message?: string }).message ?? message;
        } catch {
          // Not a Status: the body's text is the message.
        }
        fail(new ExecError(`exec refused (HTTP ${res.statusCode}): ${message}`));
      });
    });
    ws.on("error", (error) => fail(new ExecError(`exec failed: ${errorMessage(error)}`)));
    ws.on("open", () => {
      if (ws.protocol !== V5)
        return fail(new ExecError(`the server speaks ${ws.protocol || "no subprotocol"}, not ${V5}`));
      if (options.stdin !== undefined) {
        const data = typeof options.stdin === "string" ? Buffer.from(options.stdin) : options.stdin;
        if (data.length > 0) ws.send(Buffer.concat([Buffer.from([0]), data]));
        ws.send(Buffer.from([CLOSE_SIGNAL, 0]));
      }
    });
    ws.on("message", (message: Buffer) => {
      if (message.length === 0) return;
      const data = message.subarray(1);
      if (message[0] === 1) stdout.push(data);
      else if (message[0] === 2) stderr.push(data);
      else if (message[0] === 3 && data.length > 0) {
        try {
          status = JSON.parse(data.toString("utf8")) as StreamStatus;
        } catch {
          status = { status: "Failure", message: data.toString("utf8") };
        }
      }
    });
    ws.on("close", () => {
      if (settled) return;
      settle();
      if (!status) return reject(new ExecError("the exec connection closed without a status"));
      try {
        resolve({
          code: exitCodeOf(status),
          stdout: Buffer.concat(stdout).toString("utf8"),
          stderr: Buffer.concat(stderr).toString("utf8"),
        });
      } catch (error) {
        reject(error instanceof Error ? error : new ExecError(String(error)));
      }
    });
  });
}
