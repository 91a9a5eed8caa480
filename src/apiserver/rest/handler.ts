// The request handler: authenticate, route, dispatch to discovery or a REST verb, and turn
// every failure into a Status response. It never lets an exception escape: anything
// unexpected is logged and answered with a 500 Status without a stack trace.

import type { IncomingMessage, ServerResponse } from "node:http";
import type { Clock, Logger } from "../../base/index.ts";
import { CsikitError, errorMessage } from "../../base/index.ts";
import type { KubeRelease } from "../../api/index.ts";
import type { KubeObject, ResourceDef } from "./resource.ts";
import { CRD_GROUP, CRD_RESOURCE, type CustomResourceSync } from "../admission/crds.ts";
import {
  AGGREGATED_DISCOVERY_V2,
  AGGREGATED_DISCOVERY_V2BETA1,
  aggregatedDiscovery,
  aggregatedDiscoveryVersion,
} from "../discovery/discovery-aggregated.ts";
import { apiGroup, apiGroupList, apiResourceList, apiVersions } from "../discovery/discovery.ts";
import { apiVersionOf } from "./objects.ts";
import type { FaultInjector } from "../transport/faults.ts";
import { impersonatedUser, wantsImpersonation } from "../auth/impersonation.ts";
import { readBody, sendJson, sendObject, sendStatus, sendText } from "../transport/http.ts";
import { negotiateResponse, type WireFormat } from "../encoding/negotiation.ts";
import { toPartialMetadata } from "../encoding/partial-metadata.ts";
import { protobufType } from "../encoding/protobuf.ts";
import type { Authenticator, UserInfo } from "../auth/authn.ts";
import { forbiddenError, type Authorizer, type RequestAttributes } from "../auth/authz.ts";
import { checkRbacEscalation } from "../auth/escalation.ts";
import { RBAC_GROUP } from "../resources/rbac.ts";
import {
  selfSubjectAccessReview,
  selfSubjectReview,
  subjectAccessReview,
  tokenReview,
} from "../auth/review-handlers.ts";
import { auditEvent, type AuditBackend } from "../auth/audit.ts";
import type { ServiceAccountTokens } from "../auth/sa-tokens.ts";
import type { NamespaceReaper } from "../admission/namespaces.ts";
import {
  deleteObject,
  parseDeleteOptions,
  validateAdmission,
  type RestContext,
  type RestResult,
} from "./rest.ts";
import { openApiBody } from "../discovery/openapi.ts";
import { resolveRoute, type ResourceRequest, type Route } from "../transport/routing.ts";
import {
  ApiError,
  badRequest,
  internalError,
  methodNotAllowed,
  pathNotFound,
  unauthorized,
} from "../transport/status.ts";
import { parseIncludeObject } from "../encoding/table.ts";
import { objectBody, optionsBody, VERBS, type VerbCall } from "./verbs.ts";
import { serveWatch } from "./watch.ts";
import { restContextFor } from "./storage-view.ts";
import { isKubeletSubresource, servePodLog, type KubeletClientConfig } from "./kubelet-proxy.ts";

/**
 * /version of a server acting as `release` (--kubernetes-version): kubectl's skew warning and
 * client-go's discovery read major/minor; gitVersion carries csikit's build metadata.
 */
export function serverVersion(release: KubeRelease): Record<string, string> {
  const [major = "1", minor = ""] = release.minor.split(".");
  return {
    major,
    minor,
    // Upstream's own builds read "v1.37.2"; the suffix says this is not kube-apiserver.
    gitVersion: `${release.gitVersion}+csikit`,
    gitCommit: "0000000000000000000000000000000000000000",
    gitTreeState: "clean",
    buildDate: "2026-01-01T00:00:00Z",
    goVersion: "go1.24.0",
    compiler: "gc",
    platform: "linux/amd64",
  };
}

/** Whether an If-None-Match header names `etag` (or is "*"). */
function ifNoneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  return header.split(",").some((tag) => {
    const trimmed = tag.trim().replace(/^W\//, "");
    return trimmed === "*" || trimmed === etag;
  });
}

/** Serves /openapi/... documents; undefined = 404. */
export type OpenApiProvider = (path: string) => unknown;

export interface HandlerOptions {
  ctx: RestContext;
  /** The Kubernetes release the server acts as (/version). */
  release: KubeRelease;
  /** Serves/retires custom resources after CRD writes, when the registry supports CRDs. */
  crds?: CustomResourceSync;
  authenticator: Authenticator;
  authorizer: Authorizer;
  /** Issues TokenRequest tokens (serviceaccounts/token). */
  serviceAccounts: ServiceAccountTokens;
  clock: Clock;
  logger: Logger;
  reaper: NamespaceReaper;
  faults?: FaultInjector;
  /** Receives one audit event per authenticated request (none: no auditing). */
  audit?: AuditBackend;
  openapi?: OpenApiProvider;
  bookmarkIntervalMs: number;
  /** Unsent bytes one watch may hold before it is ended as unresponsive. */
  watchMaxPendingBytes: number;
  /** Aborts open watches when the server stops. */
  signal: AbortSignal;
  serverAddress: () => string;
  /** How pods/log and pods/exec reach kubelets; none: those subresources answer 400. */
  kubelet?: KubeletClientConfig;
}

/**
 * A write whose COMMIT failed (disk full, I/O error): a 500 that says the write was not made,
 * so a client knows it may retry; the database path stays in the server's log only.
 */
function storageFailure(error: unknown): ApiError | undefined {
  if (!(error instanceof CsikitError) || error.code !== "CSIKIT_ERR_STORE_WRITE") return undefined;
  const cause = error.cause instanceof Error ? error.cause.message : error.message;
  return internalError(`storage commit failed, the write was not persisted: ${cause}`);
}

const PUBLIC_ROUTES = new Set<Route["kind"]>(["health", "version"]);

export function createRequestHandler(
  options: HandlerOptions,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    handle(options, req, res).catch((error: unknown) => {
      const apiError = error instanceof ApiError ? error : storageFailure(error);
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
      sendStatus(
        res,
        apiError ?? internalError("the server could not complete the request"),
        responseFormats.get(res),
      );
    });
  };
}

/** The format a resource request negotiated, so that its errors are sent in it too. */
const responseFormats = new WeakMap<ServerResponse, WireFormat>();

async function handle(options: HandlerOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? "/", "https://localhost");
  const query = url.searchParams;
  const watchParam = ["1", "true"].includes(query.get("watch") ?? "");
  const route = resolveRoute(req.method ?? "GET", url.pathname, watchParam);
  let user: UserInfo | undefined;
  if (!PUBLIC_ROUTES.has(route.kind)) {
    user = options.authenticator.authenticate(req.headers.authorization);
    if (!user) {
      req.resume();
      throw unauthorized();
    }
    if (wantsImpersonation(req.headersDistinct)) {
      try {
        user = impersonatedUser(user, req.headersDistinct, options.authorizer);
      } catch (error) {
        req.resume();
        throw error;
      }
    }
    const attributes =
      route.kind === "resource"
        ? resourceAttributes(user, route.request, query.get("fieldSelector"))
        : nonResourceAttributes(user, req, url.pathname);
    const decision = options.authorizer.authorize(attributes);
    const audit = options.audit;
    if (audit) {
      const uri = req.url ?? "/";
      const userAgent = req.headers["user-agent"];
      // "finish" when the response was sent; "close" alone when it never ends on its own (a
      // watch, until the client or the server goes): one event either way.
      let recorded = false;
      const record = (): void => {
        if (recorded) return;
        recorded = true;
        audit(auditEvent(attributes, { uri, userAgent, code: res.statusCode, allowed: decision.allowed }));
      };
      res.once("finish", record);
      res.once("close", record);
    }
    if (!decision.allowed) {
      req.resume();
      throw forbiddenError(attributes, decision.reason);
    }
  }
  options.logger.info(5, "request", { method: req.method, path: url.pathname });
  const { registry } = options.ctx;
  switch (route.kind) {
    case "health":
      return sendText(res, 200, "ok");
    case "version":
      return sendJson(res, 200, serverVersion(options.release));
    case "openapi": {
      if (options.openapi) {
        const document = options.openapi(route.path);
        if (document === undefined) throw pathNotFound();
        return sendJson(res, 200, document);
      }
      // Encoded once per registry state, with an entity tag: kubectl fetches the root and the
      // documents it validates against on every invocation (its HTTP cache revalidates them).
      const body = openApiBody(
        registry,
        `${route.path}${url.search}`,
        serverVersion(options.release).gitVersion,
      );
      if (body === undefined) throw pathNotFound();
      const cacheControl = body.immutable ? "public, immutable" : "no-cache, private";
      if (ifNoneMatch(req.headers["if-none-match"], body.etag)) {
        res.writeHead(304, { ETag: body.etag, "Cache-Control": cacheControl });
        res.end();
        return;
      }
      return sendJson(res, 200, undefined, { encoded: body.encoded, etag: body.etag, cacheControl });
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
      if (isKubeletSubresource(route.request))
        return handleKubeletSubresource(options, req, res, route.request, query);
      return handleResource(options, req, res, route.request, query, user!);
  }
}

/** pods/log (streamed from the kubelet) and pods/exec without an upgrade (refused as upstream). */
async function handleKubeletSubresource(
  options: HandlerOptions,
  req: IncomingMessage,
  res: ServerResponse,
  request: ResourceRequest,
  query: URLSearchParams,
): Promise<void> {
  resolveDef(options, request);
  req.resume();
  if (request.subresource === "exec") throw badRequest("Upgrade request required");
  if (request.verb !== "get") throw methodNotAllowed("", "pods/log", request.verb);
  if (!options.kubelet) throw badRequest("this server does not reach kubelets");
  await servePodLog(
    { ctx: options.ctx, kubelet: options.kubelet, logger: options.logger },
    request,
    query,
    req,
    res,
  );
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

async function handleResource(
  options: HandlerOptions,
  req: IncomingMessage,
  res: ServerResponse,
  request: ResourceRequest,
  query: URLSearchParams,
  user: UserInfo,
): Promise<void> {
  const def = resolveDef(options, request);
  if (options.faults)
    await options.faults.gate({
      verb: request.verb,
      resource: def.resource,
      subresource: request.subresource,
    });
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
  // Every verb and watch of this request sees the store through the resource (storage-view.ts).
  // Roles and bindings are written only within what the requester holds (escalation.ts).
  const viewed: RestContext = { ...restContextFor(options.ctx, def), user };
  const ctx: RestContext =
    def.group === RBAC_GROUP
      ? { ...viewed, checkWrite: (write) => checkRbacEscalation(options.authorizer, user, write) }
      : viewed;
  // Custom resources and kinds without a message (CRDs) speak JSON and YAML only, as upstream.
  const protobuf = def.custom !== true && protobufType(apiVersionOf(def), def.kind) !== undefined;
  const negotiated = negotiateResponse(req.headers.accept, protobuf);
  const table =
    negotiated.convert === "Table" ? { include: parseIncludeObject(query.get("includeObject")) } : undefined;
  const partial =
    negotiated.convert === "PartialObjectMetadata" || negotiated.convert === "PartialObjectMetadataList"
      ? negotiated.convert
      : undefined;
  // Tables are JSON (a YAML Accept included), as before; upstream has no protobuf Table.
  const format: WireFormat = table ? "json" : negotiated.format;
  responseFormats.set(res, format);
  const call: VerbCall = {
    ctx,
    def,
    request,
    target: { def, namespace: request.namespace, name: request.name, subresource: request.subresource },
    query,
    req,
    now: options.clock.now(),
    warnings: [],
    table,
    format,
    protobuf,
    ...(partial ? { partial } : {}),
  };
  if (def.deprecationWarning !== undefined) call.warnings.push(def.deprecationWarning);
  if (request.verb === "watch") {
    req.resume();
    await serveWatch(
      {
        def,
        namespace: request.namespace,
        name: request.name,
        query,
        format,
        ...(call.table ? { table: call.table } : {}),
        ...(partial === "PartialObjectMetadata" ? { partial: true } : {}),
      },
      res,
      {
        ctx,
        clock: options.clock,
        logger: options.logger,
        bookmarkIntervalMs: options.bookmarkIntervalMs,
        maxPendingBytes: options.watchMaxPendingBytes,
        signal: options.signal,
      },
    );
    return;
  }
  const special = await specialCreate(options, call, user);
  if (special) {
    const body = partial
      ? toPartialMetadata(def, partial, special.body as Record<string, unknown>)
      : special.body;
    sendObject(res, special.code, body, format);
    return;
  }
  if (request.verb === "create" && def.custom === true && options.crds?.terminating(def)) {
    req.resume();
    throw options.crds.refuseCreate(def);
  }
  const isCrd = def.group === CRD_GROUP && def.resource === CRD_RESOURCE;
  let result: RestResult;
  try {
    result =
      request.verb === "delete" &&
      def.group === "" &&
      def.resource === "namespaces" &&
      request.subresource === ""
        ? await deleteNamespace(call, options.reaper)
        : request.verb === "delete" && isCrd && options.crds && request.subresource === ""
          ? await deleteCrd(call, options.crds)
          : await VERBS[request.verb](call);
  } catch (error) {
    // A refusal may reflect a write still in the open batch (AlreadyExists, Conflict): it is
    // told only once that write is durable.
    await ctx.store.whenDurable(ctx.store.currentRevision()).catch(() => {});
    throw error;
  }
  // Nothing is acknowledged before it is durable: a write waits for its batch's fsync; a GET
  // waits only if the object it shows is still in the open batch.
  await ctx.store.whenDurable(shownRevision(ctx, request.verb, result));
  if (options.crds && def.group === CRD_GROUP && def.resource === CRD_RESOURCE)
    syncCrds(options.crds, result);
  if (partial) {
    // The stored forms (spliced JSON, cached protobuf) are of the whole objects: not sent.
    const body = toPartialMetadata(def, partial, result.body as Record<string, unknown>);
    sendObject(res, result.code, body, format, { warnings: call.warnings });
    return;
  }
  // With the answer already encoded, `body` is not read for JSON or YAML (reading it may decode
  // the stored object: RestResult.encoded).
  const body = result.encoded !== undefined && format !== "protobuf" ? undefined : result.body;
  sendObject(res, result.code, body, format, {
    warnings: call.warnings,
    ...(result.encoded !== undefined ? { encoded: result.encoded } : {}),
    ...(result.bytes !== undefined ? { bytes: result.bytes } : {}),
  });
}

/** The revision an answer reveals: the object's own for a GET, else the newest applied one. */
function shownRevision(ctx: RestContext, verb: string, result: RestResult): number {
  if (verb === "get") {
    const text = (result.body as KubeObject).metadata?.resourceVersion;
    const revision = typeof text === "string" ? Number(text) : Number.NaN;
    if (Number.isSafeInteger(revision)) return revision;
  }
  return ctx.store.currentRevision();
}

/**
 * The request attributes the authorizer sees for a resource request. A list or watch that
 * selects one name (fieldSelector metadata.name=<name>) is for that name, as upstream's
 * RequestInfoFactory reads it (a node may watch the one Secret its pod uses).
 */
function resourceAttributes(
  user: UserInfo,
  request: ResourceRequest,
  fieldSelector: string | null,
): RequestAttributes {
  let name = request.name;
  if (name === "" && (request.verb === "list" || request.verb === "watch") && fieldSelector) {
    const terms = fieldSelector.split(",").map((term) => /^\s*metadata\.name\s*==?\s*(.*?)\s*$/.exec(term));
    name = terms.find((match) => match !== null)?.[1] ?? "";
  }
  return {
    user,
    verb: request.verb,
    resourceRequest: true,
    path: "",
    apiGroup: request.group,
    resource: request.resource,
    subresource: request.subresource,
    namespace: request.namespace,
    name,
    ...(fieldSelector !== null ? { fieldSelector } : {}),
  };
}

function nonResourceAttributes(user: UserInfo, req: IncomingMessage, path: string): RequestAttributes {
  const method = (req.method ?? "GET").toUpperCase();
  const verb =
    { GET: "get", HEAD: "get", POST: "post", PUT: "put", PATCH: "patch", DELETE: "delete" }[method] ??
    method.toLowerCase();
  return {
    user,
    verb,
    resourceRequest: false,
    path,
    apiGroup: "",
    resource: "",
    subresource: "",
    namespace: "",
    name: "",
  };
}

/** Creates answered without storage: the review kinds and serviceaccounts/token (TokenRequest). */
async function specialCreate(
  options: HandlerOptions,
  call: VerbCall,
  user: UserInfo,
): Promise<RestResult | undefined> {
  const { def, request } = call;
  if (request.verb !== "create") return undefined;
  const isReview = (group: string, resource: string) =>
    def.group === group && def.resource === resource && request.subresource === "";
  const token = def.group === "" && def.resource === "serviceaccounts" && request.subresource === "token";
  if (
    !token &&
    !isReview("authentication.k8s.io", "selfsubjectreviews") &&
    !isReview("authentication.k8s.io", "tokenreviews") &&
    !isReview("authorization.k8s.io", "selfsubjectaccessreviews") &&
    !isReview("authorization.k8s.io", "subjectaccessreviews")
  )
    return undefined;
  const body = await objectBody(call, { dryRun: false, warnings: call.warnings });
  if (token) {
    validateAdmission(call.ctx, {
      operation: "CREATE",
      def,
      subresource: "token",
      namespace: request.namespace,
      name: request.name,
      object: typeof body === "object" && body !== null ? (body as KubeObject) : {},
    });
    return options.serviceAccounts.request(request.namespace, request.name, body);
  }
  if (def.resource === "selfsubjectreviews") return selfSubjectReview(user, body);
  if (def.resource === "tokenreviews") return tokenReview(body, options.authenticator);
  if (def.resource === "selfsubjectaccessreviews")
    return selfSubjectAccessReview(user, body, options.authorizer);
  return subjectAccessReview(body, options.authorizer);
}

/** DELETE of a CRD: the first marks it terminating (crds.ts), a later one is a plain delete. */
async function deleteCrd(call: VerbCall, crds: CustomResourceSync): Promise<RestResult> {
  const raw = await readBody(call.req);
  const deleteOptions = parseDeleteOptions(optionsBody(raw, call.req.headers["content-type"]), call.query);
  return (
    crds.beginDelete(call.def, call.target, deleteOptions) ??
    deleteObject(call.ctx, call.target, deleteOptions)
  );
}

async function deleteNamespace(call: VerbCall, reaper: NamespaceReaper): Promise<RestResult> {
  const raw = await readBody(call.req);
  const deleteOptions = parseDeleteOptions(optionsBody(raw, call.req.headers["content-type"]), call.query);
  return reaper.deleteNamespace(call.request.name, deleteOptions.dryRun);
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
