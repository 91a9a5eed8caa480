// The diagnostics HTTP server of every sidecar (--http-endpoint, --metrics-path): prom-client
// metrics at `metricsPath`, an aggregate health check at `/healthz`, and each named check at
// `/healthz/<name>` (the leader-election check at `/healthz/leader-election`, where upstream
// sidecars serve it). A check passes when its function returns or resolves; a throw or
// rejection fails it with HTTP 500. Like Kubernetes' healthz, failure bodies say which check
// failed but withhold the reason unless `?verbose` is asked for (reasons are logged).
//
// Address: Go's net.Listen semantics, because upstream Deployments pass `--http-endpoint=:8080`
// and the kubelet probes the pod IP — ":8080" listens on all interfaces, "127.0.0.1:8080" on
// loopback only, "[::1]:8080" on IPv6 loopback. Security by default comes from the flag being
// empty (server off) unless asked for, and from `csikit up` passing a loopback address.
//
// Lifecycle: `startHttpEndpoint` resolves once listening (so callers learn the port when they
// asked for port 0); `stopped` resolves after `signal` aborts and the server has closed.

import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import type { Registry } from "prom-client";
import { FlagError, errorMessage, silentLogger, type Logger } from "../base/index.ts";

// node:http through getBuiltinModule, not an ESM import: importing a builtin as ESM reads all
// of its exports, and node:http's lazy WebSocket / MessageEvent / CloseEvent exports then load
// Node's bundled undici (about 1.5 MiB of heap) into every sidecar (`npm run bench:rss`).
const { createServer, STATUS_CODES } = process.getBuiltinModule("node:http");

/** TLS for a secure port (kube-controller-manager's --secure-port, the kubelet's --port). */
export interface EndpointTls {
  certPem: string;
  keyPem: string;
}

/** A refusal of a request by the endpoint's authenticator or authorizer. */
export interface EndpointRefusal {
  status: 401 | 403 | 500;
  message: string;
}

/** Decides whether a request may be served; undefined lets it through. */
export type EndpointAuthorizer = (req: IncomingMessage, url: URL) => Promise<EndpointRefusal | undefined>;

export type HealthCheck = () => Promise<void> | void;

export interface HttpEndpointOptions {
  /** --http-endpoint: "host:port", ":port" (all interfaces) or "[v6]:port". */
  address: string;
  /** --metrics-path. Default "/metrics". */
  metricsPath?: string;
  /** Metrics served at metricsPath. Default none: no metrics path (the registrar has none). */
  registry?: Registry;
  /** Named checks served at /healthz/<name> and aggregated at /healthz. Default none. */
  healthChecks?: Record<string, HealthCheck>;
  /**
   * Extra GET handlers by path prefix (e.g. "/debug/pprof/" for --enable-pprof); the longest
   * matching prefix wins. Default none.
   */
  routes?: Record<string, RouteHandler>;
  logger?: Logger;
  /** Serve HTTPS with this certificate instead of plain HTTP. */
  tls?: EndpointTls;
  /** Checks every request before it is served (delegated authentication and authorization). */
  authorize?: EndpointAuthorizer;
  /**
   * Serves, after authorization, requests of any method the built-in paths do not (the
   * kubelet's /containerLogs); resolves false for a path it does not serve. Default none.
   */
  handler?: (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<boolean>;
  /**
   * Takes over, after authorization, a connection the client asks to upgrade (the kubelet's
   * /exec over WebSocket or SPDY). Default none: upgrades are refused.
   */
  upgrade?: (req: IncomingMessage, socket: Duplex, head: Buffer, url: URL) => void;
}

/** An extra diagnostics route: answers with a status, a body and its content type. */
export type RouteHandler = (
  url: URL,
) => Promise<{ status?: number; body: string | Buffer; contentType?: string }>;

export interface HttpEndpoint {
  host: string;
  port: number;
  /** e.g. "http://127.0.0.1:8080" (loopback when bound to all interfaces). */
  url: string;
  /** Resolves after the signal aborted and the server closed. */
  stopped: Promise<void>;
}

/** Splits an --http-endpoint value; host "" means all interfaces (Go semantics). */
export function parseListenAddress(address: string): { host: string; port: number } {
  const match = /^(?:\[([0-9a-fA-F:.%a-zA-Z]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(address);
  const port = match ? Number(match[3]) : NaN;
  if (!match || port > 65535)
    throw new FlagError(
      `invalid value ${JSON.stringify(address)} for flag -http-endpoint: want host:port or :port`,
    );
  return { host: match[1] ?? match[2] ?? "", port };
}

async function runChecks(
  checks: [string, HealthCheck][],
): Promise<{ name: string; error: string | undefined }[]> {
  return Promise.all(
    checks.map(async ([name, check]) => {
      try {
        await check();
        return { name, error: undefined };
      } catch (error) {
        return { name, error: errorMessage(error) };
      }
    }),
  );
}

function send(
  res: ServerResponse,
  status: number,
  body: string,
  contentType = "text/plain; charset=utf-8",
): void {
  res.writeHead(status, { "content-type": contentType, "x-content-type-options": "nosniff" });
  res.end(body);
}

export async function startHttpEndpoint(
  options: HttpEndpointOptions,
  signal: AbortSignal,
): Promise<HttpEndpoint> {
  const { host, port } = parseListenAddress(options.address);
  const metricsPath = options.metricsPath ?? "/metrics";
  const logger = options.logger ?? silentLogger;
  const checks = options.healthChecks ?? {};

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? "/", "http://endpoint");
    const readOnly = req.method === "GET" || req.method === "HEAD";
    if (!readOnly && !options.handler) {
      send(res, 405, "method not allowed\n");
      return;
    }
    const refusal = await options.authorize?.(req, url);
    if (refusal) {
      send(res, refusal.status, refusal.message + "\n");
      return;
    }
    if (options.handler && (await options.handler(req, res, url))) return;
    if (!readOnly) {
      send(res, 405, "method not allowed\n");
      return;
    }
    if (options.registry && url.pathname === metricsPath) {
      send(res, 200, await options.registry.metrics(), options.registry.contentType);
      return;
    }
    const prefix = Object.keys(options.routes ?? {})
      .filter((p) => url.pathname.startsWith(p))
      .sort((a, b) => b.length - a.length)[0];
    if (prefix !== undefined) {
      const answer = await options.routes![prefix]!(url);
      res.writeHead(answer.status ?? 200, {
        "content-type": answer.contentType ?? "text/plain; charset=utf-8",
        "x-content-type-options": "nosniff",
      });
      res.end(answer.body);
      return;
    }
    let selected: [string, HealthCheck][];
    if (url.pathname === "/healthz" || url.pathname === "/healthz/") selected = Object.entries(checks);
    else if (url.pathname.startsWith("/healthz/")) {
      const name = decodeURIComponent(url.pathname.slice("/healthz/".length));
      const check = Object.hasOwn(checks, name) ? checks[name] : undefined;
      if (!check) {
        send(res, 404, `no health check named ${JSON.stringify(name)}\n`);
        return;
      }
      selected = [[name, check]];
    } else {
      send(res, 404, "not found\n");
      return;
    }
    const results = await runChecks(selected);
    const verbose = url.searchParams.has("verbose");
    const failed = results.filter((r) => r.error !== undefined);
    for (const f of failed) logger.warn("health check failed", { check: f.name, err: f.error });
    if (failed.length === 0 && !verbose) {
      send(res, 200, "ok");
      return;
    }
    const lines = results.map((r) =>
      r.error === undefined
        ? `[+]${r.name} ok`
        : `[-]${r.name} failed: ${verbose ? r.error : "reason withheld"}`,
    );
    lines.push(failed.length === 0 ? "healthz check passed" : "healthz check failed");
    send(res, failed.length === 0 ? 200 : 500, lines.join("\n") + "\n");
  };

  const listener = (req: IncomingMessage, res: ServerResponse): void => {
    handle(req, res).catch((error: unknown) => {
      logger.error("diagnostics request failed", { path: req.url, err: errorMessage(error) });
      if (!res.headersSent) send(res, 500, "internal error\n");
      else res.destroy();
    });
  };
  const server = options.tls
    ? process
        .getBuiltinModule("node:https")
        .createServer({ cert: options.tls.certPem, key: options.tls.keyPem, minVersion: "TLSv1.2" }, listener)
    : createServer(listener);
  // Upgraded connections leave the server's keeping: they are ended here when it stops.
  const upgraded = new Set<Duplex>();
  const upgrade = options.upgrade;
  if (upgrade)
    server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const url = new URL(req.url ?? "/", "http://endpoint");
      socket.on("error", () => undefined);
      const refuse = (status: number, message: string) =>
        socket.end(
          `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ""}\r\n` +
            `Content-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(message) + 1}\r\nConnection: close\r\n\r\n${message}\n`,
        );
      Promise.resolve(options.authorize?.(req, url))
        .then((refusal) => {
          if (refusal) {
            refuse(refusal.status, refusal.message);
            return;
          }
          upgraded.add(socket);
          socket.once("close", () => upgraded.delete(socket));
          upgrade(req, socket, head, url);
        })
        .catch((error: unknown) => {
          logger.error("upgrade request failed", { path: url.pathname, err: errorMessage(error) });
          refuse(500, "internal error");
        });
    });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    const onListening = (): void => {
      server.off("error", reject);
      resolve();
    };
    if (host === "") server.listen(port, onListening);
    else server.listen(port, host, onListening);
  });
  const info = server.address() as AddressInfo;
  const urlHost = host === "" || host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
  const stopped = new Promise<void>((resolve) => {
    const close = (): void => {
      server.close(() => resolve());
      server.closeAllConnections();
      for (const socket of upgraded) socket.destroy();
    };
    if (signal.aborted) close();
    else signal.addEventListener("abort", close, { once: true });
  });
  logger.info(1, "diagnostics endpoint listening", { address: options.address, port: info.port });
  return {
    host,
    port: info.port,
    url: `${options.tls ? "https" : "http"}://${urlHost.includes(":") ? `[${urlHost}]` : urlHost}:${info.port}`,
    stopped,
  };
}
