// The fault proxy's data path: an HTTP/2 (h2c) server on a Unix socket that forwards every gRPC
// call to the driver's socket stream by stream: request headers (metadata, grpc-timeout), body
// bytes, response headers, body and trailers pass unchanged. Nothing is decoded, so any method
// (CSI, plugin registration, a newer CSI than ours), unknown fields and metadata survive; a
// cancelled call is cancelled at the driver too. A rule (rule-set.ts) may act on a call before
// the driver sees it, or after the driver answered (the answer is held, then replaced or
// delayed). Every injected fault is logged with the rule, method and call number; request and
// response contents are never read, so no secret can reach a log.

import { mkdir, chmod, lstat, unlink } from "node:fs/promises";
import http2 from "node:http2";
import { connect } from "node:net";
import { dirname } from "node:path";
import type { Logger } from "../base/index.ts";
import { CsikitError, errorMessage, formatDuration, isErrno } from "../base/index.ts";
import { GrpcStatus, removeStaleSocket } from "../csi/index.ts";
import type { FaultRules } from "./rule-set.ts";
import { INJECTED_MESSAGE, codeNumber, formatRule, type FaultRule } from "./rules.ts";

const { NGHTTP2_CANCEL, NGHTTP2_FLAG_END_STREAM } = http2.constants;
/** Socket mode, as serveCsi: owner and group may connect. */
const SOCKET_MODE = 0o660;
const FORWARDED_PSEUDO = new Set([":method", ":path", ":scheme", ":authority"]);

export interface FaultProxyOptions {
  /** Socket path the proxy serves (the CO connects here). */
  listen: string;
  /** Socket path of the driver. */
  target: string;
  rules: FaultRules;
  logger: Logger;
  /** Called by an `exit` rule after it is logged; the command ends the process with `code`. */
  onExit: (code: number) => void;
}

export interface FaultProxy {
  readonly path: string;
  close(): Promise<void>;
}

type Headers = http2.IncomingHttpHeaders;
type OutgoingHeaders = http2.OutgoingHttpHeaders;

/** A response held for an `after` rule. */
interface HeldResponse {
  headers: OutgoingHeaders;
  trailersOnly: boolean;
  chunks: Buffer[];
  trailers: OutgoingHeaders | undefined;
}

/** ms of a grpc-timeout header ("100m", "5S", "1H"); undefined without one. */
export function grpcTimeoutMs(value: string | string[] | undefined): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  const match = /^(\d{1,8})([HMSmun])$/.exec(text ?? "");
  if (!match) return undefined;
  const unit = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 }[match[2] as "H"];
  return Number(match[1]) * unit;
}

/** gRPC's percent-encoding of grpc-message: bytes outside printable ASCII, and "%". */
export function encodeGrpcMessage(message: string): string {
  let out = "";
  for (const byte of Buffer.from(message, "utf8")) {
    out +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

function statusHeaders(code: number, message: string): OutgoingHeaders {
  return {
    ":status": 200,
    "content-type": "application/grpc",
    "grpc-status": String(code),
    "grpc-message": encodeGrpcMessage(message),
  };
}

function copyHeaders(headers: Headers, keepPseudo: ReadonlySet<string>): OutgoingHeaders {
  const out: OutgoingHeaders = {};
  for (const [key, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    if (key.startsWith(":") && !keepPseudo.has(key)) continue;
    out[key] = value;
  }
  return out;
}

/** Answers a call with a status (trailers-only), or ends it with that status if headers went out. */
function endWithStatus(stream: http2.ServerHttp2Stream, code: number, message: string): void {
  if (stream.closed || stream.destroyed) return;
  if (!stream.headersSent) {
    stream.respond(statusHeaders(code, message), { endStream: true });
    return;
  }
  // Headers were sent with waitForTrailers: the pending trailers carry the status.
  pendingTrailers.set(stream, { "grpc-status": String(code), "grpc-message": encodeGrpcMessage(message) });
  stream.end();
}

const pendingTrailers = new WeakMap<http2.ServerHttp2Stream, OutgoingHeaders>();

/** Responds with response headers that are followed by body and trailers (or trailers-only). */
function respond(stream: http2.ServerHttp2Stream, headers: OutgoingHeaders, trailersOnly: boolean): void {
  if (trailersOnly) {
    stream.respond(headers, { endStream: true });
    return;
  }
  stream.respond(headers, { waitForTrailers: true });
  stream.once("wantTrailers", () => {
    stream.sendTrailers(
      pendingTrailers.get(stream) ?? {
        "grpc-status": String(GrpcStatus.UNAVAILABLE),
        "grpc-message": encodeGrpcMessage("fault-proxy: the driver ended the call without a status"),
      },
    );
  });
}

export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const { listen: path, target, rules, logger } = options;
  let upstream: http2.ClientHttp2Session | undefined;
  const sessions = new Set<http2.ServerHttp2Session>();
  const timers = new Set<NodeJS.Timeout>();

  const later = (ms: number, stream: http2.ServerHttp2Stream, run: () => void): void => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (!stream.closed) run();
    }, ms);
    timers.add(timer);
    stream.once("close", () => {
      clearTimeout(timer);
      timers.delete(timer);
    });
  };

  /** The one connection to the driver, dialled again after it closed (driver restarted). */
  const driver = (): http2.ClientHttp2Session => {
    if (upstream && !upstream.closed && !upstream.destroyed) return upstream;
    const session = http2.connect("http://localhost", { createConnection: () => connect(target) });
    // A failed connection surfaces on each call as UNAVAILABLE; nothing to do at session level.
    session.on("error", (error) =>
      logger.info(4, "driver connection failed", { target, err: errorMessage(error) }),
    );
    const forget = (): void => {
      if (upstream === session) upstream = undefined;
    };
    session.on("close", forget);
    session.on("goaway", forget);
    upstream = session;
    return session;
  };

  /**
   * Sends the call to the driver. Without `hold` the response streams back as it comes; with it,
   * the whole response is collected and handed to `hold` (an `after` rule).
   */
  const forward = (
    stream: http2.ServerHttp2Stream,
    headers: Headers,
    hold?: (response: HeldResponse) => void,
  ): void => {
    let request: http2.ClientHttp2Stream;
    try {
      request = driver().request(copyHeaders(headers, FORWARDED_PSEUDO));
    } catch (error) {
      endWithStatus(
        stream,
        GrpcStatus.UNAVAILABLE,
        `fault-proxy: cannot reach the driver at ${target}: ${errorMessage(error)}`,
      );
      return;
    }
    let finished = false;
    const held: HeldResponse = { headers: {}, trailersOnly: false, chunks: [], trailers: undefined };
    stream.pipe(request);
    stream.once("close", () => {
      if (!request.closed) request.close(NGHTTP2_CANCEL);
    });
    request.on("response", (responseHeaders, flags) => {
      held.headers = copyHeaders(responseHeaders, new Set([":status"]));
      held.trailersOnly = (flags & NGHTTP2_FLAG_END_STREAM) !== 0;
      if (hold || stream.closed) return;
      respond(stream, held.headers, held.trailersOnly);
      if (held.trailersOnly) finished = true;
      else request.pipe(stream);
    });
    request.on("trailers", (trailers: Headers) => {
      held.trailers = copyHeaders(trailers, new Set());
      if (!hold) pendingTrailers.set(stream, held.trailers);
    });
    if (hold) request.on("data", (chunk: Buffer) => held.chunks.push(chunk));
    request.on("error", (error) => {
      logger.info(4, "driver call failed", { method: headers[":path"], err: errorMessage(error) });
    });
    request.once("close", () => {
      const complete = held.trailersOnly || held.trailers !== undefined;
      if (hold) {
        if (complete) hold(held);
        else
          endWithStatus(
            stream,
            GrpcStatus.UNAVAILABLE,
            `fault-proxy: the driver at ${target} did not answer`,
          );
        return;
      }
      if (finished || stream.closed) return;
      if (!complete) {
        endWithStatus(
          stream,
          GrpcStatus.UNAVAILABLE,
          `fault-proxy: the driver at ${target} did not answer (${request.rstCode === undefined ? "connection failed" : `stream reset ${request.rstCode}`})`,
        );
      }
    });
  };

  /** Delivers a held response unchanged. */
  const deliver = (stream: http2.ServerHttp2Stream, held: HeldResponse): void => {
    if (stream.closed) return;
    if (held.trailers) pendingTrailers.set(stream, held.trailers);
    respond(stream, held.headers, held.trailersOnly);
    if (held.trailersOnly) return;
    for (const chunk of held.chunks) stream.write(chunk);
    stream.end();
  };

  /** Applies a rule's action to a call (before forwarding, or to its held response). */
  const inject = (
    rule: FaultRule,
    stream: http2.ServerHttp2Stream,
    headers: Headers,
    started: number,
    held: HeldResponse | undefined,
  ): void => {
    switch (rule.action) {
      case "latency":
        later(rule.latencyMs ?? 0, stream, () => (held ? deliver(stream, held) : forward(stream, headers)));
        return;
      case "code":
        endWithStatus(stream, codeNumber(rule.code!), rule.message ?? INJECTED_MESSAGE);
        return;
      case "timeout": {
        // Held until the caller's own deadline, then answered as a server past it answers.
        const timeout = grpcTimeoutMs(headers["grpc-timeout"]);
        if (timeout !== undefined) {
          later(Math.max(0, started + timeout - performance.now()), stream, () =>
            endWithStatus(stream, GrpcStatus.DEADLINE_EXCEEDED, rule.message ?? "Deadline Exceeded"),
          );
        }
        return;
      }
      case "hang":
        // Never answered; the request body is drained so the caller's writes do not stall.
        stream.resume();
        return;
      case "drop":
        // The socket itself, as a crashed peer or a cut connection: no GOAWAY, no RST_STREAM
        // (destroying the session would end the call with RST_STREAM 0, which gRPC reads as
        // INTERNAL, not the UNAVAILABLE of a lost connection).
        stream.session?.socket.destroy();
        return;
      case "exit":
        options.onExit(rule.exitCode ?? 1);
        return;
    }
  };

  const handle = (stream: http2.ServerHttp2Stream, headers: Headers): void => {
    stream.on("error", () => undefined);
    const method = String(headers[":path"] ?? "");
    const started = performance.now();
    const decision = rules.decide(method);
    if (!decision) {
      forward(stream, headers);
      return;
    }
    const { rule, call } = decision;
    const fields = {
      rule: rule.id,
      fault: formatRule(rule),
      method,
      call,
      action: rule.action,
      when: rule.when,
      ...(rule.code === undefined ? {} : { code: rule.code }),
      ...(rule.latencyMs === undefined ? {} : { latency: formatDuration(rule.latencyMs) }),
    };
    if (rule.when === "before") {
      logger.info(0, "fault injected", fields);
      inject(rule, stream, headers, started, undefined);
      return;
    }
    forward(stream, headers, (held) => {
      logger.info(0, "fault injected", {
        ...fields,
        driverStatus: held.trailers?.["grpc-status"] ?? held.headers["grpc-status"],
      });
      inject(rule, stream, headers, started, held);
    });
  };

  const server = http2.createServer();
  server.on("session", (session) => {
    sessions.add(session);
    session.on("error", () => undefined);
    session.on("close", () => sessions.delete(session));
  });
  server.on("stream", handle);
  await mkdir(dirname(path), { recursive: true });
  await removeStaleSocket(path);
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error) =>
      reject(new CsikitError("CSIKIT_ERR_SOCKET", `cannot listen on ${path}: ${errorMessage(error)}`)),
    );
    server.listen(path, resolve);
  });
  await chmod(path, SOCKET_MODE);

  return {
    path,
    async close() {
      for (const timer of timers) clearTimeout(timer);
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const session of sessions) session.destroy();
      upstream?.destroy();
      await closed;
      try {
        if ((await lstat(path)).isSocket()) await unlink(path);
      } catch (error) {
        if (!isErrno(error, "ENOENT")) throw error;
      }
    },
  };
}
