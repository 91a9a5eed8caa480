// The request handler: authenticate, route, dispatch to discovery or a REST verb, and turn
// every failure into a Status response. It never lets an exception escape: anything
// unexpected is logged and answered with a 500 Status without a stack trace.

import type { IncomingMessage, ServerResponse } from "node:http";
import { timingSafeEqual } from "node:crypto";
import type { Clock, Logger } from "../base/index.ts";
import { errorMessage } from "../base/index.ts";
import type { KubeObject, ResourceDef } from "./resource.ts";
import { CRD_GROUP, CRD_RESOURCE, type CustomResourceSync } from "./crds.ts";
import {
  AGGREGATED_DISCOVERY_V2,
  AGGREGATED_DISCOVERY_V2BETA1,
  aggregatedDiscovery,
  aggregatedDiscoveryVersion,
} from "./discovery-aggregated.ts";
import { apiGroup, apiGroupList, apiResourceList, apiVersions } from "./discovery.ts";
import type { FaultInjector } from "./faults.ts";
import { decodeJson, decodeObjectBody, mediaType, readBody, sendJson, sendStatus, sendText } from "./http.ts";
import type { NamespaceReaper } from "./namespaces.ts";
import {
  bindPod,
  createObject,
  deleteCollection,
  deleteObject,
  getObject,
  listObjects,
  parseDeleteOptions,
  parseFieldValidation,
  patchObject,
  updateObject,
  type ListQuery,
  type RestContext,
  type RestResult,
} from "./rest.ts";
import { openApiDocument } from "./openapi.ts";
import { resolveRoute, type ResourceRequest, type Route } from "./routing.ts";
import {
  ApiError,
  badRequest,
  internalError,
  methodNotAllowed,
  pathNotFound,
  unauthorized,
} from "./status.ts";
import { parseIncludeObject, toTable, wantsTable } from "./table.ts";
import { serveWatch } from "./watch.ts";

/** The version kubectl sees; a minor close to current kubectl keeps its skew warning quiet. */
export const SERVER_VERSION = {
  major: "1",
  minor: "33",
  gitVersion: "v1.33.0+csikit",
  gitCommit: "0000000000000000000000000000000000000000",
  gitTreeState: "clean",
  buildDate: "2026-01-01T00:00:00Z",
  goVersion: "go1.24.0",
  compiler: "gc",
  platform: "linux/amd64",
};

/** Serves /openapi/... documents; undefined = 404. */
export type OpenApiProvider = (path: string) => unknown;

export interface HandlerOptions {
  ctx: RestContext;
  /** Serves/retires custom resources after CRD writes, when the registry supports CRDs. */
  crds?: CustomResourceSync;
  adminToken: string;
  clock: Clock;
  logger: Logger;
  reaper: NamespaceReaper;
  faults?: FaultInjector;
  openapi?: OpenApiProvider;
  bookmarkIntervalMs: number;
  /** Aborts open watches when the server stops. */
  signal: AbortSignal;
  serverAddress: () => string;
}

const PUBLIC_ROUTES = new Set<Route["kind"]>(["health", "version"]);

export function createRequestHandler(
  options: HandlerOptions,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    handle(options, req, res).catch((error: unknown) => {
      const apiError = error instanceof ApiError ? error : undefined;
      if (!apiError) {
        options.logger.error("request failed", {
          method: req.method,
          path: req.url?.split("?")[0],
          err: errorMessage(error),
        });
      }
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (!req.complete) {
        // An unread body would be parsed as the next request on this keep-alive connection.
        res.setHeader("Connection", "close");
        req.resume();
      }
      sendStatus(res, apiError ?? internalError("the server could not complete the request"));
    });
  };
}

function authorized(header: string | undefined, token: string): boolean {
  if (!header?.startsWith("Bearer ")) return false;
  const presented = Buffer.from(header.slice("Bearer ".length).trim());
  const expected = Buffer.from(token);
  return presented.length === expected.length && timingSafeEqual(presented, expected);
}

async function handle(options: HandlerOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? "/", "https://localhost");
  const query = url.searchParams;
  const watchParam = ["1", "true"].includes(query.get("watch") ?? "");
  const route = resolveRoute(req.method ?? "GET", url.pathname, watchParam);
  if (!PUBLIC_ROUTES.has(route.kind) && !authorized(req.headers.authorization, options.adminToken)) {
    req.resume();
    throw unauthorized();
  }
  options.logger.info(5, "request", { method: req.method, path: url.pathname });
  const { registry } = options.ctx;
  switch (route.kind) {
    case "health":
      return sendText(res, 200, "ok");
    case "version":
      return sendJson(res, 200, SERVER_VERSION);
    case "openapi": {
      const document = options.openapi ? options.openapi(route.path) : openApiDocument(registry, route.path);
      if (document === undefined) throw pathNotFound();
      return sendJson(res, 200, document);
    }
    case "coreVersions":
    case "groupList": {
      // kubectl asks for aggregated discovery first and reads the legacy form otherwise.
      const aggregated = aggregatedDiscoveryVersion(req.headers.accept);
      if (aggregated) {
        const scope = route.kind === "coreVersions" ? "api" : "apis";
        return sendJson(res, 200, aggregatedDiscovery(registry, scope, aggregated), {
          contentType: aggregated === "v2" ? AGGREGATED_DISCOVERY_V2 : AGGREGATED_DISCOVERY_V2BETA1,
        });
      }
      const document =
        route.kind === "coreVersions" ? apiVersions(options.serverAddress()) : apiGroupList(registry);
      return sendJson(res, 200, document);
    }
    case "group": {
      const document = apiGroup(registry, route.group);
      if (!document) throw pathNotFound();
      return sendJson(res, 200, document);
    }
    case "resourceList": {
      const document = apiResourceList(registry, route.group, route.version);
      if (!document) throw pathNotFound();
      return sendJson(res, 200, document);
    }
    case "notFound":
      throw pathNotFound();
    case "resource":
      return handleResource(options, req, res, route.request, query);
  }
}

function resolveDef(options: HandlerOptions, request: ResourceRequest): ResourceDef {
  const def = options.ctx.registry.lookup(request.group, request.version, request.resource);
  if (!def) throw pathNotFound();
  if (def.namespaced) {
    const collectionVerb =
      ["list", "watch", "deletecollection"].includes(request.verb) && request.name === "";
    if (!request.namespaceInPath && !collectionVerb) throw pathNotFound();
  } else if (request.namespaceInPath) {
    throw pathNotFound();
  }
  if (request.subresource !== "" && !def.subresources.includes(request.subresource)) throw pathNotFound();
  if (request.subresource === "" && !def.verbs.includes(request.verb)) {
    throw methodNotAllowed(def.group, def.resource, request.verb);
  }
  return def;
}

function listQuery(query: URLSearchParams): ListQuery {
  return {
    labelSelector: query.get("labelSelector"),
    fieldSelector: query.get("fieldSelector"),
    limit: query.get("limit"),
    continueToken: query.get("continue"),
    resourceVersion: query.get("resourceVersion"),
    resourceVersionMatch: query.get("resourceVersionMatch"),
  };
}

function dryRunOf(query: URLSearchParams): boolean {
  const values = query.getAll("dryRun");
  for (const value of values) {
    if (value !== "All") throw badRequest(`dryRun: Unsupported value: "${value}": supported values: "All"`);
  }
  return values.length > 0;
}

async function handleResource(
  options: HandlerOptions,
  req: IncomingMessage,
  res: ServerResponse,
  request: ResourceRequest,
  query: URLSearchParams,
): Promise<void> {
  const def = resolveDef(options, request);
  const injected = options.faults?.take({
    verb: request.verb,
    group: def.group,
    resource: def.resource,
    subresource: request.subresource,
    name: request.name,
  });
  if (injected) {
    req.resume();
    throw injected;
  }
  const { ctx } = options;
  const target = { def, namespace: request.namespace, name: request.name, subresource: request.subresource };
  const table = wantsTable(req.headers.accept)
    ? { include: parseIncludeObject(query.get("includeObject")) }
    : undefined;
  let result: RestResult;
  const warnings: string[] = [];
  switch (request.verb) {
    case "get":
      req.resume();
      if (request.subresource !== "" && request.subresource !== "status") {
        throw methodNotAllowed(def.group, `${def.resource}/${request.subresource}`, "get");
      }
      result = getObject(ctx, target);
      if (table && result.body.kind !== "Status") {
        const object = result.body as KubeObject;
        result = {
          code: 200,
          body: toTable({ def, objects: [object], include: table.include, now: options.clock.now() }),
        };
      }
      break;
    case "list": {
      req.resume();
      const page = listObjects(ctx, def, request.namespace, listQuery(query));
      const metadata: Record<string, unknown> = { resourceVersion: String(page.revision) };
      if (page.continueToken) metadata.continue = page.continueToken;
      if (page.remainingItemCount !== undefined) metadata.remainingItemCount = page.remainingItemCount;
      const body = table
        ? toTable({
            def,
            objects: page.items,
            include: table.include,
            now: options.clock.now(),
            listMeta: metadata,
          })
        : {
            apiVersion: def.group === "" ? def.version : `${def.group}/${def.version}`,
            kind: def.listKind,
            metadata,
            items: page.items,
          };
      result = { code: 200, body };
      break;
    }
    case "watch":
      req.resume();
      await serveWatch(
        { def, namespace: request.namespace, name: request.name, query, ...(table ? { table } : {}) },
        res,
        { ctx, clock: options.clock, bookmarkIntervalMs: options.bookmarkIntervalMs, signal: options.signal },
      );
      return;
    case "create": {
      const dryRun = dryRunOf(query);
      const writeOptions = {
        dryRun,
        fieldValidation: parseFieldValidation(query.get("fieldValidation")),
        warnings,
      };
      const body = decodeObjectBody(await readBody(req), req.headers["content-type"]);
      if (request.subresource === "binding" && def.group === "" && def.resource === "pods") {
        result = bindPod(ctx, target, body, writeOptions);
      } else if (request.name !== "" || request.subresource !== "") {
        throw methodNotAllowed(def.group, def.resource, "create");
      } else {
        result = createObject(ctx, def, request.namespace, body, writeOptions);
      }
      break;
    }
    case "update": {
      const dryRun = dryRunOf(query);
      const fieldValidation = parseFieldValidation(query.get("fieldValidation"));
      const body = decodeObjectBody(await readBody(req), req.headers["content-type"]);
      result = updateObject(ctx, target, body, { dryRun, fieldValidation, warnings });
      break;
    }
    case "patch": {
      const dryRun = dryRunOf(query);
      const contentType = mediaType(req.headers["content-type"]);
      const raw = await readBody(req);
      if (raw.length === 0) throw badRequest("the body of the request is empty; expected a patch");
      const body = contentType === "application/apply-patch+yaml" ? undefined : decodeJson(raw);
      const fieldValidation = parseFieldValidation(query.get("fieldValidation"));
      result = patchObject(ctx, target, { contentType, body }, { dryRun, fieldValidation, warnings });
      break;
    }
    case "delete": {
      const raw = await readBody(req);
      const deleteOptions = parseDeleteOptions(raw.length > 0 ? decodeJson(raw) : undefined, query);
      dryRunOf(query);
      if (def.group === "" && def.resource === "namespaces" && request.subresource === "") {
        result = options.reaper.deleteNamespace(request.name, deleteOptions.dryRun);
      } else {
        result = deleteObject(ctx, target, deleteOptions);
      }
      break;
    }
    case "deletecollection": {
      const raw = await readBody(req);
      const deleteOptions = parseDeleteOptions(raw.length > 0 ? decodeJson(raw) : undefined, query);
      result = deleteCollection(ctx, def, request.namespace, listQuery(query), deleteOptions);
      break;
    }
  }
  if (options.crds && def.group === CRD_GROUP && def.resource === CRD_RESOURCE)
    syncCrds(options.crds, result);
  sendJson(res, result.code, result.body, { warnings });
}

/** After a CRD write, serve or retire the resources of every CRD the answer names. */
function syncCrds(crds: CustomResourceSync, result: RestResult): void {
  const body = result.body as KubeObject;
  const objects = Array.isArray(body.items)
    ? (body.items as KubeObject[])
    : body.kind === "Status"
      ? []
      : [body];
  for (const object of objects) {
    const name = object.metadata?.name;
    if (typeof name === "string") crds.changed(name);
  }
  if (body.kind === "Status") {
    const details = (body as { details?: { name?: unknown } }).details;
    if (typeof details?.name === "string") crds.changed(details.name);
  }
}
