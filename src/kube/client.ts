// Building a Kubernetes client the way the upstream sidecars do, and funnelling every request
// through one client-side token bucket (--kube-api-qps / --kube-api-burst, client-go's
// flowcontrol semantics: a full bucket of `burst` at start, then `qps` per second).
//
// `loadKubeConfig`: an explicit --kubeconfig wins; else the in-cluster service account
// (KUBERNETES_SERVICE_HOST/PORT + /var/run/secrets/kubernetes.io/serviceaccount/token); else
// $KUBECONFIG (first existing file of the list) or ~/.kube/config. --master replaces the
// server URL of whatever was loaded (or is used alone when nothing was found). The error when
// nothing works names everything that was tried.
//
// `KubeClient`: typed client-node APIs (`api(CoreV1Api)`) whose configuration carries a
// throttling middleware, and a generic GVR transport (`list`, `watch`, `get`, `create`,
// `update`, `updateStatus`, `patch`, `delete`) over node:https with the kubeconfig's TLS and
// credentials, used by the informers. Both share the one bucket, so every request of the
// process counts against it (watches too, as client-go throttles the watch request itself).
// No I/O in the constructor; credentials are read per request (token files rotate).
// Connections are pooled with keep-alive, one pool per client for each transport: client-node
// 2.x builds a fresh undici Agent (so a fresh TLS handshake) for every request, which costs an
// order of magnitude in latency and server CPU (bench/apiserver.bench.ts measures it).

import { existsSync, readFileSync } from "node:fs";
import { request as httpRequest, type IncomingMessage, type RequestOptions } from "node:http";
import {
  Agent as HttpsAgent,
  request as httpsRequest,
  type RequestOptions as HttpsRequestOptions,
} from "node:https";
import { homedir } from "node:os";
import { delimiter, join } from "node:path";
import {
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  EventsV1Api,
  KubeConfig,
  ServerConfiguration,
  StorageV1Api,
  createConfiguration,
  type Configuration,
  type Middleware,
  type RequestContext,
  type ResponseContext,
} from "@kubernetes/client-node";
import { Agent as UndiciAgent } from "undici";
import { CsikitError, realClock, type Clock } from "../base/index.ts";
import { KubeApiError, kubeApiErrorFromResponse } from "./errors.ts";
import { TokenBucket } from "./ratelimit.ts";
import type { GroupVersionResource, KubeList, KubeObject, WatchEvent } from "./types.ts";

const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

export interface LoadKubeConfigOptions {
  /** --kubeconfig path; "" or absent = not given. */
  kubeconfig?: string;
  /** --master URL override; "" or absent = not given. */
  master?: string;
  /** For tests: environment and service-account directory. Defaults: process.env, the real path. */
  env?: NodeJS.ProcessEnv;
  serviceAccountDir?: string;
  homeDir?: string;
}

/** Loads client configuration as the sidecars do; throws a CsikitError naming what was tried. */
export function loadKubeConfig(options: LoadKubeConfigOptions = {}): KubeConfig {
  const env = options.env ?? process.env;
  const master = options.master ?? "";
  const tried: string[] = [];
  let config: KubeConfig | undefined;
  if (options.kubeconfig) {
    if (!existsSync(options.kubeconfig))
      throw new CsikitError(
        "CSIKIT_ERR_KUBECONFIG",
        `flag -kubeconfig: file ${options.kubeconfig} does not exist`,
      );
    config = fromFile(options.kubeconfig, "-kubeconfig");
  } else {
    const saDir = options.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
    const host = env.KUBERNETES_SERVICE_HOST;
    const port = env.KUBERNETES_SERVICE_PORT;
    if (host && port && existsSync(join(saDir, "token"))) {
      config = inClusterConfig(saDir, host, port);
    } else {
      tried.push(
        `in-cluster service account (KUBERNETES_SERVICE_HOST/PORT ${host && port ? "set" : "unset"}, ${join(saDir, "token")} ${existsSync(join(saDir, "token")) ? "present" : "missing"})`,
      );
      const candidates = env.KUBECONFIG
        ? env.KUBECONFIG.split(delimiter).filter((p) => p !== "")
        : [join(options.homeDir ?? homedir(), ".kube", "config")];
      const found = candidates.find((path) => existsSync(path));
      if (found) config = fromFile(found, env.KUBECONFIG ? "$KUBECONFIG" : "~/.kube/config");
      else tried.push(...candidates.map((path) => `kubeconfig ${path} (missing)`));
    }
  }
  if (master) return withServer(config, master);
  if (!config)
    throw new CsikitError(
      "CSIKIT_ERR_KUBECONFIG",
      `no Kubernetes client configuration: give -kubeconfig or -master; tried ${tried.join("; ")}`,
    );
  return config;
}

function fromFile(path: string, source: string): KubeConfig {
  const config = new KubeConfig();
  try {
    config.loadFromFile(path);
  } catch (error) {
    throw new CsikitError(
      "CSIKIT_ERR_KUBECONFIG",
      `${source}: cannot load kubeconfig ${path}: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  if (!config.getCurrentCluster())
    throw new CsikitError("CSIKIT_ERR_KUBECONFIG", `${source}: kubeconfig ${path} has no current cluster`);
  return config;
}

function inClusterConfig(saDir: string, host: string, port: string): KubeConfig {
  const config = new KubeConfig();
  const server = `https://${host.includes(":") ? `[${host}]` : host}:${port}`;
  const namespaceFile = join(saDir, "namespace");
  config.loadFromOptions({
    clusters: [{ name: "inCluster", server, caFile: join(saDir, "ca.crt"), skipTLSVerify: false }],
    users: [
      {
        name: "inClusterUser",
        authProvider: { name: "tokenFile", config: { tokenFile: join(saDir, "token") } },
      },
    ],
    contexts: [
      {
        name: "inClusterContext",
        cluster: "inCluster",
        user: "inClusterUser",
        ...(existsSync(namespaceFile) ? { namespace: readFileSync(namespaceFile, "utf8").trim() } : {}),
      },
    ],
    currentContext: "inClusterContext",
  });
  return config;
}

function withServer(config: KubeConfig | undefined, master: string): KubeConfig {
  const out = new KubeConfig();
  const cluster = config?.getCurrentCluster();
  const user = config?.getCurrentUser();
  const context = config?.getContextObject(config.getCurrentContext());
  out.loadFromOptions({
    clusters: [
      { ...(cluster ?? { name: "master", skipTLSVerify: master.startsWith("http:") }), server: master },
    ],
    users: [user ?? { name: "master-user" }],
    contexts: [
      {
        name: "master-context",
        cluster: cluster?.name ?? "master",
        user: user?.name ?? "master-user",
        ...(context?.namespace ? { namespace: context.namespace } : {}),
      },
    ],
    currentContext: "master-context",
  });
  return out;
}

/** The namespace the process runs in: POD_NAMESPACE, the service-account file, else "default". */
export function podNamespace(env: NodeJS.ProcessEnv = process.env, saDir = SERVICE_ACCOUNT_DIR): string {
  if (env.POD_NAMESPACE) return env.POD_NAMESPACE;
  try {
    const text = readFileSync(join(saDir, "namespace"), "utf8").trim();
    if (text) return text;
  } catch {
    // Not in a pod.
  }
  return "default";
}

export interface KubeClientOptions {
  kubeConfig: KubeConfig;
  /** --kube-api-qps. Default 5. */
  qps?: number;
  /** --kube-api-burst. Default 10. */
  burst?: number;
  /** User-Agent, e.g. "csi-provisioner". Default "csikit". */
  userAgent?: string;
  /** Timeout for non-watch requests in ms. Default 60000. */
  requestTimeoutMs?: number;
  clock?: Clock;
}

export interface ListOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
  resourceVersion?: string;
  resourceVersionMatch?: string;
}

export interface WatchOptions extends ListOptions {
  allowWatchBookmarks?: boolean;
  timeoutSeconds?: number;
}

export type PatchType = "merge" | "json" | "strategic" | "apply";

const PATCH_CONTENT_TYPES: Record<PatchType, string> = {
  merge: "application/merge-patch+json",
  json: "application/json-patch+json",
  strategic: "application/strategic-merge-patch+json",
  apply: "application/apply-patch+yaml",
};

type ApiConstructor<T> = new (configuration: Configuration) => T;

interface SendOptions {
  method: string;
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal | undefined;
  /** Watch: keep the response stream open and do not apply the request timeout. */
  stream?: boolean;
}

export class KubeClient {
  readonly kubeConfig: KubeConfig;
  /** The one bucket every request of this client waits on. */
  readonly limiter: TokenBucket;
  readonly userAgent: string;
  readonly #requestTimeoutMs: number;
  readonly #apis = new Map<ApiConstructor<unknown>, unknown>();
  /** Requests sent so far (after throttling): for metrics and tests. */
  requestCount = 0;

  constructor(options: KubeClientOptions) {
    this.kubeConfig = options.kubeConfig;
    this.limiter = new TokenBucket({
      qps: options.qps ?? 5,
      burst: options.burst ?? 10,
      clock: options.clock ?? realClock,
    });
    this.userAgent = options.userAgent ?? "csikit";
    this.#requestTimeoutMs = options.requestTimeoutMs ?? 60_000;
  }

  get server(): string {
    const cluster = this.kubeConfig.getCurrentCluster();
    if (!cluster) throw new CsikitError("CSIKIT_ERR_KUBECONFIG", "kubeconfig has no current cluster");
    return cluster.server.replace(/\/+$/, "");
  }

  /** A typed client-node API whose every request is throttled by this client's bucket. */
  api<T>(apiClass: ApiConstructor<T>): T {
    const existing = this.#apis.get(apiClass);
    if (existing) return existing as T;
    const throttle: Middleware = {
      pre: async (context: RequestContext): Promise<RequestContext> => {
        await this.limiter.wait(context.getSignal());
        this.requestCount++;
        context.setHeaderParam("User-Agent", this.userAgent);
        const pool = await this.#pooledDispatcher();
        if (pool) context.setDispatcher(pool);
        return context;
      },
      post: (context: ResponseContext): Promise<ResponseContext> => Promise.resolve(context),
    };
    const configuration = createConfiguration({
      baseServer: new ServerConfiguration(this.server, {}),
      authMethods: { default: this.kubeConfig },
      promiseMiddleware: [throttle],
    });
    const api = new apiClass(configuration);
    this.#apis.set(apiClass, api);
    return api;
  }

  get core(): CoreV1Api {
    return this.api(CoreV1Api);
  }
  get storage(): StorageV1Api {
    return this.api(StorageV1Api);
  }
  get coordination(): CoordinationV1Api {
    return this.api(CoordinationV1Api);
  }
  get events(): EventsV1Api {
    return this.api(EventsV1Api);
  }
  get apps(): AppsV1Api {
    return this.api(AppsV1Api);
  }
  get customObjects(): CustomObjectsApi {
    return this.api(CustomObjectsApi);
  }

  /** REST path of a collection (name absent) or an object. */
  resourcePath(
    gvr: GroupVersionResource,
    options: { namespace?: string; name?: string; subresource?: string },
  ): string {
    let path = gvr.group === "" ? `/api/${gvr.version}` : `/apis/${gvr.group}/${gvr.version}`;
    if (options.namespace) path += `/namespaces/${encodeURIComponent(options.namespace)}`;
    path += `/${gvr.resource}`;
    if (options.name !== undefined) path += `/${encodeURIComponent(options.name)}`;
    if (options.subresource) path += `/${options.subresource}`;
    return path;
  }

  async list<T extends KubeObject>(
    gvr: GroupVersionResource,
    options: ListOptions = {},
    signal?: AbortSignal,
  ): Promise<KubeList<T>> {
    const { namespace, ...query } = options;
    return this.#json<KubeList<T>>({
      method: "GET",
      path: this.resourcePath(gvr, namespace ? { namespace } : {}),
      query: { ...query },
      signal,
    });
  }

  async get<T extends KubeObject>(
    gvr: GroupVersionResource,
    name: string,
    options: { namespace?: string; subresource?: string } = {},
    signal?: AbortSignal,
  ): Promise<T> {
    return this.#json<T>({ method: "GET", path: this.resourcePath(gvr, { ...options, name }), signal });
  }

  async create<T extends KubeObject>(gvr: GroupVersionResource, object: T, signal?: AbortSignal): Promise<T> {
    const namespace = object.metadata?.namespace;
    return this.#json<T>({
      method: "POST",
      path: this.resourcePath(gvr, namespace ? { namespace } : {}),
      body: object,
      signal,
    });
  }

  /** PUT of the whole object (optimistic concurrency on metadata.resourceVersion). */
  async update<T extends KubeObject>(
    gvr: GroupVersionResource,
    object: T,
    options: { subresource?: string } = {},
    signal?: AbortSignal,
  ): Promise<T> {
    const name = object.metadata?.name;
    if (!name) throw new CsikitError("CSIKIT_ERR_VALIDATION", "update: object has no metadata.name");
    const namespace = object.metadata?.namespace;
    return this.#json<T>({
      method: "PUT",
      path: this.resourcePath(gvr, { ...(namespace ? { namespace } : {}), name, ...options }),
      body: object,
      signal,
    });
  }

  async updateStatus<T extends KubeObject>(
    gvr: GroupVersionResource,
    object: T,
    signal?: AbortSignal,
  ): Promise<T> {
    return this.update(gvr, object, { subresource: "status" }, signal);
  }

  async patch<T extends KubeObject>(
    gvr: GroupVersionResource,
    name: string,
    patch: unknown,
    options: {
      namespace?: string;
      subresource?: string;
      type?: PatchType;
      fieldManager?: string;
      force?: boolean;
    } = {},
    signal?: AbortSignal,
  ): Promise<T> {
    const { type = "merge", fieldManager, force, ...where } = options;
    return this.#json<T>({
      method: "PATCH",
      path: this.resourcePath(gvr, { ...where, name }),
      query: { fieldManager, force },
      body: patch,
      contentType: PATCH_CONTENT_TYPES[type],
      signal,
    });
  }

  async delete(
    gvr: GroupVersionResource,
    name: string,
    options: {
      namespace?: string;
      propagationPolicy?: "Foreground" | "Background" | "Orphan";
      preconditions?: { uid?: string; resourceVersion?: string };
    } = {},
    signal?: AbortSignal,
  ): Promise<unknown> {
    const { propagationPolicy, preconditions, ...where } = options;
    const body =
      propagationPolicy || preconditions
        ? {
            apiVersion: "v1",
            kind: "DeleteOptions",
            ...(propagationPolicy ? { propagationPolicy } : {}),
            ...(preconditions ? { preconditions } : {}),
          }
        : undefined;
    return this.#json<unknown>({
      method: "DELETE",
      path: this.resourcePath(gvr, { ...where, name }),
      body,
      signal,
    });
  }

  /**
   * Opens a watch and yields its events until the server ends the stream, the signal aborts
   * (ends quietly), or the connection fails (throws). An HTTP error status throws KubeApiError;
   * an in-stream ERROR event (e.g. 410 Gone) is yielded as is, the caller decides.
   */
  async *watch<T extends KubeObject>(
    gvr: GroupVersionResource,
    options: WatchOptions = {},
    signal?: AbortSignal,
  ): AsyncGenerator<WatchEvent<T>> {
    const { namespace, ...query } = options;
    const response = await this.#send({
      method: "GET",
      path: this.resourcePath(gvr, namespace ? { namespace } : {}),
      query: { ...query, watch: true },
      signal,
      stream: true,
    });
    if ((response.statusCode ?? 0) >= 300) {
      const body = await readBody(response);
      throw kubeApiErrorFromResponse(response.statusCode ?? 0, body, `watch ${gvr.resource}`);
    }
    response.setEncoding("utf8");
    let buffer = "";
    try {
      for await (const chunk of response) {
        buffer += String(chunk);
        let newline: number;
        while ((newline = buffer.indexOf("\n")) >= 0) {
          const line = buffer.slice(0, newline).trim();
          buffer = buffer.slice(newline + 1);
          if (line !== "") yield parseWatchLine<T>(line);
        }
      }
    } catch (error) {
      if (signal?.aborted) return;
      throw new KubeApiError(0, "", `watch ${gvr.resource}: stream failed: ${String(error)}`, {
        cause: error,
      });
    } finally {
      response.destroy();
    }
    if (buffer.trim() !== "") yield parseWatchLine<T>(buffer.trim());
  }

  /**
   * Any other request (subresources such as pods/binding, /version, deletecollection), with
   * the same throttling, credentials and error mapping. `path` is absolute ("/api/v1/...").
   */
  async request<T>(
    options: {
      method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
      path: string;
      query?: Record<string, string | number | boolean | undefined>;
      body?: unknown;
      contentType?: string;
    },
    signal?: AbortSignal,
  ): Promise<T> {
    return this.#json<T>({ ...options, signal });
  }

  async #json<T>(options: SendOptions): Promise<T> {
    const response = await this.#send(options);
    const body = await readBody(response);
    const status = response.statusCode ?? 0;
    if (status >= 300) throw kubeApiErrorFromResponse(status, body, `${options.method} ${options.path}`);
    if (body === "") return {} as T;
    return JSON.parse(body) as T;
  }

  #httpsAgent: HttpsAgent | undefined;
  #dispatcher: Promise<UndiciAgent | undefined> | undefined;

  /** Closes pooled idle connections; the client stays usable (pools are rebuilt on demand). */
  close(): void {
    this.#httpsAgent?.destroy();
    this.#httpsAgent = undefined;
    const dispatcher = this.#dispatcher;
    this.#dispatcher = undefined;
    void dispatcher?.then((agent) => agent?.destroy()).catch(() => {});
  }

  /** The keep-alive node:https agent of the generic transport, built once from the kubeconfig's TLS settings. */
  #pooledHttpsAgent(tls: HttpsRequestOptions): HttpsAgent {
    this.#httpsAgent ??= new HttpsAgent({
      keepAlive: true,
      ...tlsSettings(tls),
    });
    return this.#httpsAgent;
  }

  /**
   * The keep-alive undici pool for the typed APIs; undefined (client-node's own dispatcher
   * stays) for plain http and for proxied clusters, whose dispatchers client-node builds.
   */
  #pooledDispatcher(): Promise<UndiciAgent | undefined> {
    this.#dispatcher ??= (async () => {
      const cluster = this.kubeConfig.getCurrentCluster();
      if (!cluster || cluster.proxyUrl || !cluster.server.startsWith("https:")) return undefined;
      const tls: HttpsRequestOptions = {};
      await this.kubeConfig.applyToHTTPSOptions(tls);
      return new UndiciAgent({
        connect: {
          keepAlive: true,
          keepAliveInitialDelay: 30_000,
          ...tlsSettings(tls),
        },
      });
    })();
    return this.#dispatcher;
  }

  async #send(options: SendOptions): Promise<IncomingMessage> {
    await this.limiter.wait(options.signal);
    this.requestCount++;
    const url = new URL(this.server + options.path);
    for (const [key, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined && value !== "") url.searchParams.set(key, String(value));
    }
    const requestOptions: RequestOptions & { headers: Record<string, string> } = {
      method: options.method,
      headers: { accept: "application/json", "user-agent": this.userAgent },
    };
    await this.kubeConfig.applyToHTTPSOptions(requestOptions);
    requestOptions.headers["user-agent"] = this.userAgent;
    if (url.protocol === "https:") requestOptions.agent = this.#pooledHttpsAgent(requestOptions);
    const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
    if (payload !== undefined) {
      requestOptions.headers["content-type"] = options.contentType ?? "application/json";
      requestOptions.headers["content-length"] = String(Buffer.byteLength(payload));
    }
    const signals = [
      options.signal,
      options.stream ? undefined : AbortSignal.timeout(this.#requestTimeoutMs),
    ].filter((s): s is AbortSignal => s !== undefined);
    if (signals.length > 0) requestOptions.signal = AbortSignal.any(signals);
    const send = url.protocol === "http:" ? httpRequest : httpsRequest;
    return new Promise<IncomingMessage>((resolve, reject) => {
      const req = send(url, requestOptions, resolve);
      req.on("error", (error) =>
        reject(
          new KubeApiError(0, "", `${options.method} ${url.pathname}: ${error.message}`, {
            cause: error,
          }),
        ),
      );
      req.end(payload);
    });
  }
}

/** The TLS settings of request options that a connection pool must carry. */
type TlsSettings = Pick<HttpsRequestOptions, "ca" | "cert" | "key" | "rejectUnauthorized" | "servername">;

function tlsSettings(options: HttpsRequestOptions): TlsSettings {
  const out: TlsSettings = {};
  if (options.ca !== undefined) out.ca = options.ca;
  if (options.cert !== undefined) out.cert = options.cert;
  if (options.key !== undefined) out.key = options.key;
  if (options.rejectUnauthorized !== undefined) out.rejectUnauthorized = options.rejectUnauthorized;
  if (options.servername !== undefined) out.servername = options.servername;
  return out;
}

function readBody(response: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    response.on("data", (chunk: Buffer) => chunks.push(chunk));
    response.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    response.on("error", reject);
  });
}

function parseWatchLine<T>(line: string): WatchEvent<T> {
  const parsed: unknown = JSON.parse(line);
  if (typeof parsed !== "object" || parsed === null || !("type" in parsed) || !("object" in parsed))
    throw new KubeApiError(0, "", `malformed watch event: ${line.slice(0, 200)}`);
  return parsed as WatchEvent<T>;
}

export interface KubeClientFlagOptions {
  /** --kubeconfig ("" = not given). */
  kubeconfig: string;
  /** --master ("" = not given). */
  master: string;
  /** --kube-api-qps. */
  kubeApiQps: number;
  /** --kube-api-burst. */
  kubeApiBurst: number;
  /** e.g. "csi-provisioner". Default "csikit". */
  userAgent?: string;
  clock?: Clock;
}

/** The client a sidecar builds from its flags (CommonSidecarOptions fits this shape). */
export function kubeClientFromOptions(options: KubeClientFlagOptions): KubeClient {
  return new KubeClient({
    kubeConfig: loadKubeConfig({ kubeconfig: options.kubeconfig, master: options.master }),
    qps: options.kubeApiQps,
    burst: options.kubeApiBurst,
    ...(options.userAgent !== undefined ? { userAgent: options.userAgent } : {}),
    ...(options.clock !== undefined ? { clock: options.clock } : {}),
  });
}
