// An exec session over SPDY, as the kubelet serves older clients: the protocol version is agreed
// from the client's X-Stream-Protocol-Version headers (the first one the client lists that the
// kubelet speaks; none in common is a 403 naming both lists), the connection is upgraded to
// SPDY/3.1, and the client opens one stream per `streamtype` (error, then stdin, stdout, stderr,
// resize with a tty) before the command starts; streams that do not all arrive within the
// creation timeout end the session.

import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { Logger } from "../../base/index.ts";
import type { RemoteStreams, StreamStatus } from "./remote-command.ts";
import { SpdyServerSession, type SpdyStream } from "./spdy-session.ts";

/** remotecommand's protocol names; v5 is v4 on SPDY (CLOSE is WebSocket-only). */
export const STREAM_PROTOCOL_V5 = "v5.channel.k8s.io";
export const STREAM_PROTOCOL_V4 = "v4.channel.k8s.io";
/** The versions served over SPDY, in the kubelet's order of preference. */
export const SPDY_STREAM_PROTOCOLS = [STREAM_PROTOCOL_V5, STREAM_PROTOCOL_V4] as const;

export const HEADER_PROTOCOL_VERSION = "X-Stream-Protocol-Version";
export const HEADER_ACCEPTED_PROTOCOL_VERSIONS = "X-Accepted-Stream-Protocol-Versions";

/** Whether the request asks to upgrade to SPDY/3.1. */
export function isSpdyRequest(req: IncomingMessage): boolean {
  return String(req.headers.upgrade ?? "").toLowerCase() === "spdy/3.1";
}

/** httpstream.Handshake's choice: the first version the client lists that the server speaks. */
export function negotiateStreamProtocol(clientProtocols: readonly string[]): string | undefined {
  return clientProtocols.find((p) => (SPDY_STREAM_PROTOCOLS as readonly string[]).includes(p));
}

function clientProtocols(req: IncomingMessage): string[] {
  return (req.headersDistinct["x-stream-protocol-version"] ?? [])
    .flatMap((value) => value.split(","))
    .map((value) => value.trim())
    .filter((value) => value !== "");
}

/**
 * Upgrades the connection and waits for the client's streams; undefined when the handshake was
 * refused or the streams did not come in time (the connection is then closed).
 */
export async function openSpdyStreams(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  wants: { stdin: boolean; stdout: boolean; stderr: boolean; tty: boolean },
  options: { streamCreationTimeoutMs: number; logger: Logger },
): Promise<RemoteStreams | undefined> {
  const offered = clientProtocols(req);
  const protocol = negotiateStreamProtocol(offered);
  if (protocol === undefined) {
    const message =
      offered.length === 0
        ? "unable to upgrade: unable to negotiate protocol: the client did not name a protocol version"
        : `unable to upgrade: unable to negotiate protocol: client supports ${JSON.stringify(offered)}, server supports ${JSON.stringify(SPDY_STREAM_PROTOCOLS)}`;
    socket.end(
      `HTTP/1.1 403 Forbidden\r\n${HEADER_ACCEPTED_PROTOCOL_VERSIONS}: ${SPDY_STREAM_PROTOCOLS.join(", ")}\r\n` +
        `Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n${message}\n`,
    );
    return undefined;
  }
  socket.write(
    "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n" +
      `${HEADER_PROTOCOL_VERSION}: ${protocol}\r\n\r\n`,
  );
  const expected = 1 + Number(wants.stdin) + Number(wants.stdout) + Number(wants.stderr) + Number(wants.tty);
  const byType = new Map<string, SpdyStream>();
  let arrived!: () => void;
  const allArrived = new Promise<void>((resolve) => (arrived = resolve));
  const session = new SpdyServerSession(socket, head, {
    logger: options.logger,
    onStream: (stream) => {
      const type = stream.headers.get("streamtype")?.[0] ?? "";
      if (!["error", "stdin", "stdout", "stderr", "resize"].includes(type)) {
        options.logger.info(2, "unexpected stream type", { type });
        return;
      }
      byType.set(type, stream);
      if (byType.size >= expected) arrived();
    },
  });
  const gone = new AbortController();
  void session.done.then(() => gone.abort());
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), options.streamCreationTimeoutMs);
  });
  const outcome = await Promise.race([allArrived, timedOut, session.done.then(() => "gone" as const)]);
  clearTimeout(timer);
  if (outcome !== undefined) {
    options.logger.info(2, "exec streams not created", { outcome, got: [...byType.keys()] });
    await session.close();
    return undefined;
  }
  const error = byType.get("error");
  const stdin = byType.get("stdin");
  const stdout = byType.get("stdout");
  const stderr = byType.get("stderr");
  const resize = byType.get("resize");
  // What the client never reads from must not hold the connection open.
  error?.incoming.resume();
  stdout?.incoming.resume();
  stderr?.incoming.resume();
  return {
    protocol,
    ...(stdin ? { stdin: stdin.incoming } : {}),
    ...(stdout ? { stdout: stdout.outgoing } : {}),
    ...(stderr ? { stderr: stderr.outgoing } : {}),
    ...(resize ? { resize: resize.incoming } : {}),
    gone: gone.signal,
    writeStatus: async (status: StreamStatus) => {
      if (!error) return;
      await new Promise<void>((resolve) => {
        error.outgoing.once("error", () => resolve());
        error.outgoing.end(Buffer.from(JSON.stringify(status), "utf8"), () => resolve());
      });
    },
    close: () => session.close(),
  };
}
