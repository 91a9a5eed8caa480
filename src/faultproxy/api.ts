// The fault proxy's control API: plain HTTP with JSON, on loopback only (it changes what a
// driver answers: nothing off the machine may reach it).
//   GET    /rules        {seed, rules: [rule + spec, calls, injected]}
//   PUT    /rules        replace all: {rules: [...]} or [...]          → the new list
//   POST   /rules        add one: a rule object or {spec: "..."}       → 201 the rule
//   DELETE /rules        remove all
//   GET    /rules/{id}   one rule (404 if none)
//   PUT    /rules/{id}   set that rule (added, or replaced in place with fresh counters)
//   DELETE /rules/{id}   remove it (404 if none)
// A rule that does not parse is 400 with the field named; every change is logged.

import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { isIP } from "node:net";
import type { Logger } from "../base/index.ts";
import { CsikitError, ValidationError, errorMessage } from "../base/index.ts";
import type { FaultRules, RuleStatus } from "./rule-set.ts";
import { formatRule, parseRuleJson } from "./rules.ts";

/** Largest request body accepted (a rule list is a few KiB). */
const MAX_BODY_BYTES = 1 << 20;

export interface FaultApi {
  /** host:port it listens on (the port resolved when 0 was asked). */
  readonly address: string;
  close(): Promise<void>;
}

/** host and port of a loopback address ("127.0.0.1:0", "[::1]:9000", "localhost:9000"). */
export function parseLoopbackAddress(address: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(address.trim());
  if (!match)
    throw new ValidationError(
      `API address ${JSON.stringify(address)} is not host:port (e.g. 127.0.0.1:9811)`,
    );
  const host = match[1] ?? match[2]!;
  const port = Number(match[3]);
  const loopback = host === "localhost" || host === "::1" || (isIP(host) === 4 && host.startsWith("127."));
  if (!loopback)
    throw new ValidationError(
      `API address ${JSON.stringify(address)} is not on loopback (127.0.0.1, ::1, localhost): the API changes what the driver answers`,
    );
  if (port > 65535)
    throw new ValidationError(`API address ${JSON.stringify(address)}: port ${port} is out of range`);
  return { host, port };
}

function view(rule: RuleStatus): RuleStatus & { spec: string } {
  return { ...rule, spec: formatRule(rule) };
}

class HttpError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

async function readJson(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, `body larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch (error) {
    throw new HttpError(400, `body is not JSON: ${errorMessage(error)}`);
  }
}

export async function startFaultApi(address: string, rules: FaultRules, logger: Logger): Promise<FaultApi> {
  const { host, port } = parseLoopbackAddress(address);
  const changed = (what: string): void =>
    logger.info(0, "fault rules changed", {
      change: what,
      rules: rules.list().map((rule) => `${rule.id}=${formatRule(rule)}`),
    });

  const route = async (request: IncomingMessage): Promise<[number, unknown]> => {
    const url = new URL(request.url ?? "/", "http://localhost");
    const match = /^\/rules(?:\/([^/]+))?\/?$/.exec(url.pathname);
    if (!match) throw new HttpError(404, `no such resource ${url.pathname} (see /rules)`);
    const id = match[1] === undefined ? undefined : decodeURIComponent(match[1]);
    const method = request.method ?? "GET";
    if (id === undefined) {
      switch (method) {
        case "GET":
          return [200, { seed: rules.seed, rules: rules.list().map(view) }];
        case "PUT": {
          const body = await readJson(request);
          const list = Array.isArray(body) ? body : (body as { rules?: unknown } | null)?.rules;
          if (!Array.isArray(list)) throw new HttpError(400, "want {rules: [...]} or a list of rules");
          rules.replace(list.map((item: unknown, i) => parseRuleJson(item, `rules[${i}]`, rules.nextId)));
          changed("replace");
          return [200, { seed: rules.seed, rules: rules.list().map(view) }];
        }
        case "POST": {
          const rule = parseRuleJson(await readJson(request), "rule", rules.nextId);
          if (rules.get(rule.id))
            throw new HttpError(409, `rule ${rule.id} exists (PUT /rules/${rule.id} replaces it)`);
          rules.put(rule);
          changed(`add ${rule.id}`);
          return [201, view(rules.get(rule.id)!)];
        }
        case "DELETE":
          rules.replace([]);
          changed("clear");
          return [200, { seed: rules.seed, rules: [] }];
      }
    } else {
      switch (method) {
        case "GET": {
          const rule = rules.get(id);
          if (!rule) throw new HttpError(404, `no rule ${id}`);
          return [200, view(rule)];
        }
        case "PUT": {
          const body = await readJson(request);
          const rule = parseRuleJson(body, "rule", rules.nextId);
          rules.put({ ...rule, id });
          changed(`set ${id}`);
          return [200, view(rules.get(id)!)];
        }
        case "DELETE":
          if (!rules.remove(id)) throw new HttpError(404, `no rule ${id}`);
          changed(`remove ${id}`);
          return [204, undefined];
      }
    }
    throw new HttpError(405, `${method} is not allowed on ${url.pathname}`);
  };

  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    route(request).then(
      ([status, body]) => send(response, status, body),
      (error: unknown) => {
        const status =
          error instanceof HttpError ? error.status : error instanceof ValidationError ? 400 : 500;
        send(response, status, { error: errorMessage(error) });
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error) =>
      reject(new CsikitError("CSIKIT_ERR_LISTEN", `cannot listen on ${address}: ${errorMessage(error)}`)),
    );
    server.listen(port, host, resolve);
  });
  const bound = server.address();
  const actualPort = typeof bound === "object" && bound !== null ? bound.port : port;
  return {
    address: `${host.includes(":") ? `[${host}]` : host}:${actualPort}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function send(response: ServerResponse, status: number, body: unknown): void {
  if (body === undefined) {
    response.writeHead(status).end();
    return;
  }
  const text = `${JSON.stringify(body, null, 2)}\n`;
  response
    .writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
    .end(text);
}
