// A Kubernetes client the way the upstream sidecars use one, funnelling every request through
// one client-side token bucket (--kube-api-qps / --kube-api-burst, client-go's flowcontrol
// semantics: a full bucket of `burst` at start, then `qps` per second).
//
// `KubeClient` is a generic GVR transport (`list`, `watch`, `get`, `create`, `update`,
// `updateStatus`, `patch`, `delete`, `request`) over node:https with the TLS settings and
// credentials of a ClientConfig (kubeconfig.ts). It does not load @kubernetes/client-node:
// components need only this transport, and loading client-node costs each process ~0.65 s CPU.
// Every request, watches included (client-go throttles the watch request itself), waits on the
// bucket. No I/O in the constructor; credentials are asked for per request (token files rotate,
// exec credentials expire). Connections are pooled with keep-alive per client, watches in a
// pool of their own: a fresh TLS handshake per request costs an order of magnitude in latency
// and server CPU (bench/apiserver.bench.ts measures it), so ordinary requests share at most
// MAX_REQUEST_CONNECTIONS connections.

import { request as httpRequest, type IncomingMessage, type RequestOptions } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { CsikitError, realClock, type Clock } from "../base/index.ts";
import { KubeApiError, kubeApiErrorFromResponse } from "./errors.ts";
import { loadKubeConfig, type ClientConfig, type Credentials, type TlsSettings } from "./kubeconfig.ts";

export { loadKubeConfig, podNamespace, type LoadKubeConfigOptions } from "./kubeconfig.ts";
import { requestPriority } from "./priority.ts";
import { TokenBucket } from "./ratelimit.ts";
import type { GroupVersionResource, KubeList, KubeObject, WatchEvent } from "./types.ts";

export interface KubeClientOptions {
  kubeConfig: ClientConfig;
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

/**
 * How long a pooled connection may stay idle, as client-go's transport (90 s). Node's agent
 * honours a server's `Keep-Alive: timeout=N` hint (retiring the connection a second before N)
 * only when this is set; without it, a connection the server had just closed as idle could be
 * picked for the next request, which then failed with "socket hang up".
 */
const IDLE_CONNECTION_TIMEOUT_MS = 90_000;

/**
 * Connections one client opens for ordinary requests; a request beyond them waits for a free
 * one. Unbounded, a burst (100 workers sending at once) opened a TLS connection per request in
 * flight: handshakes that cost both ends more CPU than the requests themselves, for throughput
 * a single-threaded API server cannot give anyway (bench/snapshot.bench.ts). client-go sends
 * everything over one HTTP/2 connection. Watches hold theirs for minutes, so they have a pool
 * of their own and never take one of these.
 */
const MAX_REQUEST_CONNECTIONS = 16;

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
  readonly kubeConfig: ClientConfig;
  /** The one bucket every request of this client waits on. */
  readonly limiter: TokenBucket;
  readonly userAgent: string;
  readonly #requestTimeoutMs: number;
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
    if (!this.kubeConfig.server)
      throw new CsikitError("CSIKIT_ERR_KUBECONFIG", `${this.kubeConfig.source}: no server URL`);
    return this.kubeConfig.server;
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
      /** 0: a force deletion (`kubectl delete --force --grace-period=0`). */
      gracePeriodSeconds?: number;
    } = {},
    signal?: AbortSignal,
  ): Promise<unknown> {
    const { propagationPolicy, preconditions, gracePeriodSeconds, ...where } = options;
    const body =
      propagationPolicy || preconditions || gracePeriodSeconds !== undefined
        ? {
            apiVersion: "v1",
            kind: "DeleteOptions",
            ...(propagationPolicy ? { propagationPolicy } : {}),
            ...(preconditions ? { preconditions } : {}),
            ...(gracePeriodSeconds !== undefined ? { gracePeriodSeconds } : {}),
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

  /** Ordinary requests' pool (at most MAX_REQUEST_CONNECTIONS) and the watches' own. */
  #httpsAgents: { requests: HttpsAgent; watches: HttpsAgent } | undefined;
  /** The exec-plugin client certificate the pools were built with (a new one needs new pools). */
  #agentCert: Buffer | undefined;

  /** Closes pooled idle connections; the client stays usable (the pools are rebuilt on demand). */
  close(): void {
    this.#httpsAgents?.requests.destroy();
    this.#httpsAgents?.watches.destroy();
    this.#httpsAgents = undefined;
  }

  /** The keep-alive node:https agent, built from the config's TLS settings and credentials. */
  #pooledHttpsAgent(credentials: Credentials, watch: boolean): HttpsAgent {
    if (this.#httpsAgents && this.#agentCert !== credentials.cert) this.close();
    this.#agentCert = credentials.cert;
    const tls: TlsSettings = { ...this.kubeConfig.tls };
    if (credentials.cert && credentials.key) {
      tls.cert = credentials.cert;
      tls.key = credentials.key;
    }
    const options = { keepAlive: true, timeout: IDLE_CONNECTION_TIMEOUT_MS, ...tls };
    this.#httpsAgents ??= {
      requests: new HttpsAgent({ ...options, maxSockets: MAX_REQUEST_CONNECTIONS }),
      watches: new HttpsAgent(options),
    };
    return watch ? this.#httpsAgents.watches : this.#httpsAgents.requests;
  }

  async #send(options: SendOptions): Promise<IncomingMessage> {
    await this.limiter.acquire(requestPriority(), options.signal);
    this.requestCount++;
    const url = new URL(this.server + options.path);
    for (const [key, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined && value !== "") url.searchParams.set(key, String(value));
    }
    const credentials = await this.kubeConfig.auth.credentials();
    const requestOptions: RequestOptions & { headers: Record<string, string | string[]> } = {
      method: options.method,
      headers: { ...credentials.headers, accept: "application/json", "user-agent": this.userAgent },
    };
    if (url.protocol === "https:")
      requestOptions.agent = this.#pooledHttpsAgent(credentials, options.stream === true);
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
      const req = send(url, requestOptions, (response) => {
        // As client-go's exec authenticator: a 401 drops the credential so the next request
        // gets a fresh one (the failed request itself is not retried).
        if (response.statusCode === 401) this.kubeConfig.auth.unauthorized(credentials);
        resolve(response);
      });
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
