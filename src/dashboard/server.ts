// The dashboard's HTTPS server, on loopback only. Every request needs the random token: once as
// `?token=` (answered with a redirect that sets it as an HttpOnly, SameSite=Strict, Secure
// cookie and drops it from the address bar), then the cookie; anything else gets 401. The page
// is static files (static/, plain ES modules); live state goes out as Server-Sent Events from
// the watch-fed model (live.ts) and the metrics scraper (metrics.ts). Actions are POSTs with a
// JSON body and a custom header (a cross-site form can send neither), checked in actions.ts.

import { randomBytes, timingSafeEqual } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import { isIP, type AddressInfo } from "node:net";
import { extname, join } from "node:path";
import { errorMessage, silentLogger, type Logger } from "../base/index.ts";
import { isNotFound, selfSignedServingCert, type KubeClient } from "../kube/index.ts";
import { explain, renderText } from "../why/index.ts";
import { ActionError, formOptions, runAction } from "./actions.ts";
import { LiveModel, type LiveMessage } from "./live.ts";
import { MetricsScraper, type Endpoint } from "./metrics.ts";

const STATIC_DIR = join(import.meta.dirname, "static");
const COOKIE = "csikit_dashboard";
const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
};
const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
};

export interface DashboardOptions {
  client: KubeClient;
  /** host:port; the host must be a loopback address. Default 127.0.0.1:0 (a free port). */
  listen?: string;
  /** PEM serving certificate and key (up: the API server's, signed by the cluster's CA). Default: self-signed in memory. */
  tls?: { certPem: string; keyPem: string };
  /** The components' /metrics endpoints (their /healthz beside). */
  endpoints?: readonly Endpoint[];
  /** Scrape period, ms. Default 2000. */
  scrapeMs?: number;
  logger?: Logger;
  /** The token (tests); default 24 random bytes. */
  token?: string;
}

export interface Dashboard {
  url: string;
  /** The URL with ?token=…: what `up` prints. */
  loginUrl: string;
  port: number;
  close(): Promise<void>;
}

/** Reads host:port and refuses a host that is not loopback. */
export function parseListen(listen: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(listen);
  const host = match?.[1] ?? match?.[2];
  const port = Number(match?.[3]);
  if (!match || !host || !Number.isInteger(port) || port < 0 || port > 65535)
    throw new ActionError(`invalid listen address ${JSON.stringify(listen)}: want 127.0.0.1:PORT`);
  if (!(host === "localhost" || (isIP(host) === 4 && host.startsWith("127.")) || host === "::1"))
    throw new ActionError(`listen address ${host} is not loopback: the dashboard serves on loopback only`);
  return { host, port };
}

function staticFiles(): Map<string, { body: Buffer; type: string }> {
  const files = new Map<string, { body: Buffer; type: string }>();
  for (const name of readdirSync(STATIC_DIR))
    files.set(`/static/${name}`, {
      body: readFileSync(join(STATIC_DIR, name)),
      type: TYPES[extname(name)] ?? "application/octet-stream",
    });
  return files;
}

function sameToken(given: string, token: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

function cookieOf(req: IncomingMessage): string {
  for (const part of (req.headers.cookie ?? "").split(";")) {
    const [name, ...value] = part.trim().split("=");
    if (name === COOKIE) return value.join("=");
  }
  return "";
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  let body = "";
  for await (const chunk of req) {
    body += String(chunk);
    if (body.length > 64 << 10) throw new ActionError("request body too large");
  }
  const value: unknown = JSON.parse(body);
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new ActionError("want a JSON object");
  return value as Record<string, unknown>;
}

export async function startDashboard(options: DashboardOptions, signal: AbortSignal): Promise<Dashboard> {
  const logger = options.logger ?? silentLogger;
  const { host, port } = parseListen(options.listen ?? "127.0.0.1:0");
  const token = options.token ?? randomBytes(24).toString("base64url");
  const tls = options.tls ?? (await selfSignedServingCert(host, Date.now()));
  const files = staticFiles();
  const live = new LiveModel({ client: options.client, logger });
  const scraper = new MetricsScraper(options.endpoints ?? []);
  const stop = new AbortController();
  const stopSignal = AbortSignal.any([signal, stop.signal]);
  const streams = new Set<ServerResponse>();
  await live.start(stopSignal);

  const send = (res: ServerResponse, message: unknown): void =>
    void res.write(`data: ${JSON.stringify(message)}\n\n`);
  const broadcast = (message: unknown): void => {
    for (const res of streams) send(res, message);
  };
  live.subscribe((message: LiveMessage) => broadcast(message));

  // Metrics: one round at a time, the next after a pause (never two rounds piling up).
  let scrapeTimer: NodeJS.Timeout | undefined;
  const scrapeRound = async (): Promise<void> => {
    if (stopSignal.aborted) return;
    const point = await scraper.scrape().catch(() => undefined);
    if (point) broadcast({ type: "metrics", points: [point], components: scraper.components });
    if (!stopSignal.aborted) scrapeTimer = setTimeout(() => void scrapeRound(), options.scrapeMs ?? 2000);
  };
  if (!scraper.empty) void scrapeRound();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? "/", "https://dashboard");
    const query = url.searchParams.get("token");
    if (query !== null && sameToken(query, token)) {
      res.writeHead(303, {
        ...SECURITY_HEADERS,
        location: url.pathname,
        "set-cookie": `${COOKIE}=${token}; Path=/; HttpOnly; Secure; SameSite=Strict`,
      });
      res.end();
      return;
    }
    if (!sameToken(cookieOf(req), token)) {
      res.writeHead(401, { ...SECURITY_HEADERS, "content-type": "text/plain; charset=utf-8" });
      res.end("401 Unauthorized: open the dashboard with the address csikit printed (…/?token=…)\n");
      return;
    }
    const path = url.pathname;
    if (req.method === "GET" && (path === "/" || path === "/index.html")) {
      const page = files.get("/static/index.html")!;
      res.writeHead(200, { ...SECURITY_HEADERS, "content-type": page.type });
      res.end(page.body);
      return;
    }
    const file = req.method === "GET" ? files.get(path) : undefined;
    if (file) {
      res.writeHead(200, { ...SECURITY_HEADERS, "content-type": file.type });
      res.end(file.body);
      return;
    }
    if (req.method === "GET" && path === "/live") {
      res.writeHead(200, {
        ...SECURITY_HEADERS,
        "content-type": "text/event-stream",
        connection: "keep-alive",
      });
      for (const message of live.snapshot()) send(res, message);
      send(res, {
        type: "metrics",
        points: scraper.points,
        components: scraper.components,
        scraping: !scraper.empty,
      });
      streams.add(res);
      req.on("close", () => streams.delete(res));
      return;
    }
    if (req.method === "GET" && path === "/api/options") {
      json(res, 200, await formOptions(options.client));
      return;
    }
    if (req.method === "GET" && path === "/api/why") {
      const namespace = url.searchParams.get("namespace") ?? "";
      const name = url.searchParams.get("name") ?? "";
      try {
        const diagnosis = await explain(options.client, { kind: "pvc", namespace, name });
        json(res, 200, { text: renderText(diagnosis), diagnosis });
      } catch (error) {
        json(res, isNotFound(error) ? 404 : 502, { error: errorMessage(error) });
      }
      return;
    }
    if (req.method === "POST" && path === "/api/action") {
      if (
        req.headers["x-csikit-dashboard"] !== "1" ||
        !/^application\/json\b/.test(req.headers["content-type"] ?? "")
      ) {
        json(res, 403, {
          error: "actions need a JSON body and the X-Csikit-Dashboard header (the page sends both)",
        });
        return;
      }
      try {
        json(res, 200, { message: await runAction(options.client, await readJson(req)) });
      } catch (error) {
        json(res, error instanceof ActionError || error instanceof SyntaxError ? 400 : 502, {
          error: errorMessage(error),
        });
      }
      return;
    }
    json(res, 404, { error: `no ${req.method} ${path}` });
  };

  const server: Server = createServer({ cert: tls.certPem, key: tls.keyPem }, (req, res) => {
    handle(req, res).catch((error: unknown) => {
      logger.info(2, "dashboard request failed", { err: errorMessage(error) });
      if (!res.headersSent) json(res, 500, { error: "internal error" });
      else res.end();
    });
  });
  // Keep the SSE streams alive through proxies and idle timeouts.
  const heartbeat = setInterval(() => {
    for (const res of streams) res.write(": ping\n\n");
  }, 15_000);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  const hostPart = host.includes(":") ? `[${host}]` : host;
  const url = `https://${hostPart}:${bound}/`;
  let closed: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closed ??= new Promise<void>((resolve) => {
      stop.abort();
      clearInterval(heartbeat);
      clearTimeout(scrapeTimer);
      for (const res of streams) res.end();
      streams.clear();
      server.close(() => resolve());
      server.closeAllConnections();
    }));
  signal.addEventListener("abort", () => void close(), { once: true });
  return { url, loginUrl: `${url}?token=${token}`, port: bound, close };
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { ...SECURITY_HEADERS, "content-type": "application/json" });
  res.end(JSON.stringify(body));
}
