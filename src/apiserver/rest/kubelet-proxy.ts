// pods/log and pods/exec, served as kube-apiserver serves them: the pod's node is looked up, the
// request is turned into the kubelet's (/containerLogs/{ns}/{pod}/{container} with PodLogOptions,
// /exec/{ns}/{pod}/{container} with input/output/error/tty/command) and sent to the node's
// kubelet at its Node's InternalIP and status.daemonEndpoints.kubeletEndpoint.Port, as an
// identity the kubelet authorizes for nodes/proxy. Logs stream back as they come; an exec's
// upgraded connection (WebSocket or SPDY) is spliced to the kubelet's both ways. The kubelet's
// refusals reach the client as kube-apiserver relays them (400 → BadRequest with its text).

import type { IncomingMessage, ServerResponse } from "node:http";
import { request as httpsRequest, type RequestOptions } from "node:https";
import type { Duplex } from "node:stream";
import { errorMessage, type Logger } from "../../base/index.ts";
import type { KubeObject } from "./resource.ts";
import type { RestContext } from "./rest.ts";
import { objectKey } from "./objects.ts";
import type { ResourceRequest } from "../transport/routing.ts";
import { ApiError, badRequest, internalError, notFound } from "../transport/status.ts";

/** How the API server reaches kubelets (kube-apiserver's --kubelet-* flags). */
export interface KubeletClientConfig {
  /** Bearer token of the identity the kubelet authorizes (nodes/proxy). */
  token: string;
  /** --kubelet-certificate-authority: PEM the kubelet's serving certificate must chain to; none: not verified, as upstream without the flag. */
  caPem?: string;
  /** --kubelet-timeout for the connection (kube-apiserver's default 5s). */
  timeoutMs?: number;
  /** --kubelet-preferred-address-types, in order. Default PREFERRED_ADDRESS_TYPES. */
  preferredAddressTypes?: readonly string[];
}

/**
 * The node address types tried in order: kubeadm's --kubelet-preferred-address-types (upstream's
 * own default starts with Hostname, which a virtual node's name does not resolve to).
 */
export const PREFERRED_ADDRESS_TYPES = ["InternalIP", "ExternalIP", "Hostname"] as const;

export interface KubeletProxyContext {
  ctx: RestContext;
  kubelet: KubeletClientConfig;
  logger: Logger;
}

interface PodLike extends KubeObject {
  spec?: {
    nodeName?: string;
    containers?: { name: string }[];
    initContainers?: { name: string }[];
    ephemeralContainers?: { name: string }[];
  };
}

interface NodeLike extends KubeObject {
  status?: {
    addresses?: { type: string; address: string }[];
    daemonEndpoints?: { kubeletEndpoint?: { Port?: number } };
  };
}

/** Who the API server is to kubelets (kubeadm's name for the apiserver's kubelet-client identity). */
export const KUBELET_CLIENT_USER = "kube-apiserver-kubelet-client";

/** The pods subresources proxied to the kubelet. */
export const KUBELET_SUBRESOURCES = ["log", "exec"] as const;

export function isKubeletSubresource(request: ResourceRequest): boolean {
  return (
    request.group === "" &&
    request.resource === "pods" &&
    (KUBELET_SUBRESOURCES as readonly string[]).includes(request.subresource)
  );
}

function lookup<T extends KubeObject>(ctx: RestContext, resource: string, namespace: string, name: string) {
  const def = ctx.registry.lookup("", "v1", resource);
  if (!def) throw internalError(`resource ${resource} is not served`);
  return ctx.store.get(objectKey(def, namespace, name))?.object as T | undefined;
}

/** The container the request names, defaulted and checked as kube-apiserver's validateContainer. */
function containerOf(pod: PodLike, requested: string): string {
  const name = typeof pod.metadata?.name === "string" ? pod.metadata.name : "";
  const containers = (pod.spec?.containers ?? []).map((c) => c.name);
  const init = (pod.spec?.initContainers ?? []).map((c) => c.name);
  const ephemeral = (pod.spec?.ephemeralContainers ?? []).map((c) => c.name);
  if (requested === "") {
    if (containers.length === 1) return containers[0]!;
    let message = `a container name must be specified for pod ${name}, choose one of: [${containers.join(" ")}]`;
    if (init.length > 0) message += ` or one of the init containers: [${init.join(" ")}]`;
    if (ephemeral.length > 0) message += ` or one of the ephemeral containers: [${ephemeral.join(" ")}]`;
    throw badRequest(message);
  }
  if (![...containers, ...init, ...ephemeral].includes(requested))
    throw badRequest(`container ${requested} is not valid for pod ${name}`);
  return requested;
}

/** The kubelet's address for a node: the first address of a preferred type, and the kubelet port. */
function kubeletOf(
  ctx: RestContext,
  nodeName: string,
  preferred: readonly string[],
): { host: string; port: number } {
  const node = lookup<NodeLike>(ctx, "nodes", "", nodeName);
  if (!node) throw notFound("", "nodes", nodeName);
  const addresses = node.status?.addresses ?? [];
  const address = preferred
    .map((type) => addresses.find((a) => a.type === type)?.address)
    .find((found) => found !== undefined && found !== "");
  const port = node.status?.daemonEndpoints?.kubeletEndpoint?.Port ?? 0;
  if (!address)
    throw badRequest(
      `no preferred addresses found; known addresses: [${addresses.map((a) => `{${a.type} ${a.address}}`).join(" ")}]`,
    );
  if (!(port > 0)) throw badRequest(`node ${nodeName} does not report its kubelet port`);
  return { host: address, port };
}

/** The pod, its node's kubelet and the container a request is for. */
function locate(
  proxy: KubeletProxyContext,
  request: ResourceRequest,
  query: URLSearchParams,
): { kubelet: { host: string; port: number } | undefined; container: string; pod: PodLike } {
  const pod = lookup<PodLike>(proxy.ctx, "pods", request.namespace, request.name);
  if (!pod) throw notFound("", "pods", request.name);
  const container = containerOf(pod, query.get("container") ?? "");
  const nodeName = pod.spec?.nodeName ?? "";
  const preferred = proxy.kubelet.preferredAddressTypes ?? PREFERRED_ADDRESS_TYPES;
  return { pod, container, kubelet: nodeName === "" ? undefined : kubeletOf(proxy.ctx, nodeName, preferred) };
}

function requestOptions(
  kubelet: { host: string; port: number },
  config: KubeletClientConfig,
  method: string,
  path: string,
  headers: Record<string, string | string[]>,
): RequestOptions {
  return {
    host: kubelet.host,
    port: kubelet.port,
    method,
    path,
    headers: { ...headers, Authorization: `Bearer ${config.token}` },
    ...(config.caPem !== undefined ? { ca: config.caPem } : { rejectUnauthorized: false }),
    servername: kubelet.host.includes(":") || /^[\d.]+$/.test(kubelet.host) ? "" : kubelet.host,
    timeout: config.timeoutMs ?? 5000,
    agent: false,
  };
}

const LOG_PARAMS: readonly [query: string, kind: "bool" | "value"][] = [
  ["follow", "bool"],
  ["previous", "bool"],
  ["timestamps", "bool"],
  ["sinceSeconds", "value"],
  ["sinceTime", "value"],
  ["tailLines", "value"],
  ["limitBytes", "value"],
];

/** The kubelet's answer to a failed logs request, as kube-apiserver's response checker relays it. */
function kubeletRefusal(code: number, text: string, podName: string): ApiError {
  const body = text.trim();
  if (code === 400) return badRequest(body);
  if (code === 500) return internalError(body);
  if (code === 404) return new ApiError(404, "NotFound", body || `pods/log "${podName}" not found`);
  if (code === 403) return new ApiError(403, "Forbidden", body);
  return new ApiError(
    code,
    "",
    `the server responded with the status code ${code} but did not return more information`,
  );
}

function boolParam(value: string | null): boolean {
  return value !== null && ["1", "t", "T", "TRUE", "true", "True"].includes(value);
}

/** GET pods/{name}/log: the kubelet's container log, streamed as it arrives. */
export async function servePodLog(
  proxy: KubeletProxyContext,
  request: ResourceRequest,
  query: URLSearchParams,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  req.resume();
  const { kubelet, container } = locate(proxy, request, query);
  // A pod not on a node yet has no log: an empty answer, as LogLocation's nil location.
  if (!kubelet) {
    res.writeHead(200, { "Content-Type": "text/plain" });
    res.end();
    return;
  }
  const params = new URLSearchParams();
  for (const [name, kind] of LOG_PARAMS) {
    const value = query.get(name);
    if (value === null) continue;
    if (kind === "bool") {
      if (boolParam(value)) params.set(name, "true");
    } else params.set(name, value);
  }
  const path =
    `/containerLogs/${encodeURIComponent(request.namespace)}/${encodeURIComponent(request.name)}/` +
    `${encodeURIComponent(container)}${params.size > 0 ? `?${params.toString()}` : ""}`;
  const upstream = await new Promise<IncomingMessage>((resolve, reject) => {
    const outgoing = httpsRequest(requestOptions(kubelet, proxy.kubelet, "GET", path, {}), resolve);
    outgoing.on("timeout", () => outgoing.destroy(new Error("timed out connecting to the kubelet")));
    outgoing.on("error", reject);
    outgoing.end();
  }).catch((error: unknown) => {
    throw internalError(
      `Get "https://${kubelet.host}:${kubelet.port}${path.split("?")[0]}": ${errorMessage(error)}`,
    );
  });
  upstream.socket.setTimeout(0);
  const code = upstream.statusCode ?? 500;
  if (code < 200 || code >= 300) {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of upstream) {
      if (size < 50_000) chunks.push(chunk as Buffer);
      size += (chunk as Buffer).length;
    }
    throw kubeletRefusal(code, Buffer.concat(chunks).toString("utf8").slice(0, 50_000), request.name);
  }
  res.writeHead(200, { "Content-Type": "text/plain", "Cache-Control": "no-cache, private" });
  res.flushHeaders();
  const stop = () => upstream.destroy();
  res.once("close", stop);
  try {
    for await (const chunk of upstream) {
      if (!res.write(chunk)) await new Promise((resolve) => res.once("drain", resolve));
    }
  } catch {
    // The kubelet went away mid-stream: what was sent stands; the answer ends here.
  } finally {
    res.off("close", stop);
    res.end();
  }
}

/** PodExecOptions → the kubelet's exec query (streamParams: input/output/error/tty = "1"). */
function execQuery(query: URLSearchParams): URLSearchParams {
  const params = new URLSearchParams();
  const map: [from: string, to: string][] = [
    ["stdin", "input"],
    ["stdout", "output"],
    ["stderr", "error"],
    ["tty", "tty"],
  ];
  for (const [from, to] of map) if (boolParam(query.get(from))) params.set(to, "1");
  for (const command of query.getAll("command")) params.append("command", command);
  return params;
}

/** The client's handshake headers the kubelet needs (the upgrade and protocol negotiation). */
const FORWARDED_HEADERS = [
  "connection",
  "upgrade",
  "sec-websocket-key",
  "sec-websocket-version",
  "sec-websocket-protocol",
  "sec-websocket-extensions",
  "x-stream-protocol-version",
  "origin",
];

/** The status line and headers of an answer, as received (the body's framing aside). */
function rawResponseHead(res: IncomingMessage, replaceFraming?: number): string {
  const lines = [`HTTP/1.1 ${res.statusCode ?? 502} ${res.statusMessage ?? ""}`];
  for (let i = 0; i < res.rawHeaders.length; i += 2) {
    const name = res.rawHeaders[i]!;
    if (replaceFraming !== undefined && /^(content-length|transfer-encoding|connection)$/i.test(name))
      continue;
    lines.push(`${name}: ${res.rawHeaders[i + 1]}`);
  }
  if (replaceFraming !== undefined) lines.push(`Content-Length: ${replaceFraming}`, "Connection: close");
  return lines.join("\r\n") + "\r\n\r\n";
}

/** Writes an error Status on a connection that was never upgraded. */
export function refuseUpgrade(socket: Duplex, error: ApiError): void {
  const body = JSON.stringify(error.toStatus());
  const { STATUS_CODES } = process.getBuiltinModule("node:http");
  socket.end(
    `HTTP/1.1 ${error.code} ${STATUS_CODES[error.code] ?? ""}\r\nContent-Type: application/json\r\n` +
      `Cache-Control: no-cache, private\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** pods/{name}/exec with an upgrade: the connection is spliced to the kubelet's /exec. */
export async function servePodExec(
  proxy: KubeletProxyContext,
  request: ResourceRequest,
  query: URLSearchParams,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
): Promise<void> {
  const { kubelet, container } = locate(proxy, request, query);
  if (!kubelet) throw badRequest(`pod ${request.name} does not have a host assigned`);
  const params = execQuery(query);
  const path =
    `/exec/${encodeURIComponent(request.namespace)}/${encodeURIComponent(request.name)}/` +
    `${encodeURIComponent(container)}?${params.toString()}`;
  const headers: Record<string, string | string[]> = {};
  for (const name of FORWARDED_HEADERS) {
    const values = req.headersDistinct[name];
    if (values && values.length > 0) headers[name] = values.length === 1 ? values[0]! : values;
  }
  await new Promise<void>((resolve, reject) => {
    const outgoing = httpsRequest(requestOptions(kubelet, proxy.kubelet, req.method ?? "GET", path, headers));
    outgoing.on("timeout", () => outgoing.destroy(new Error("timed out connecting to the kubelet")));
    outgoing.on("error", (error) => reject(internalError(`error dialing backend: ${errorMessage(error)}`)));
    outgoing.on("upgrade", (answer: IncomingMessage, upstream: Duplex, upstreamHead: Buffer) => {
      (upstream as import("node:net").Socket).setTimeout(0);
      socket.write(rawResponseHead(answer));
      if (upstreamHead.length > 0) socket.write(upstreamHead);
      if (head.length > 0) upstream.write(head);
      socket.pipe(upstream);
      upstream.pipe(socket);
      const end = () => {
        socket.destroy();
        upstream.destroy();
        resolve();
      };
      socket.on("error", end);
      upstream.on("error", end);
      socket.on("close", end);
      upstream.on("close", end);
    });
    // No upgrade: the kubelet's answer goes back as it is (UpgradeAwareHandler does the same).
    outgoing.on("response", (answer: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let size = 0;
      answer.on("data", (chunk: Buffer) => {
        if (size < 64 * 1024) chunks.push(chunk);
        size += chunk.length;
      });
      answer.on("end", () => {
        const body = Buffer.concat(chunks);
        socket.end(Buffer.concat([Buffer.from(rawResponseHead(answer, body.length)), body]));
        resolve();
      });
      answer.on("error", () => {
        socket.destroy();
        resolve();
      });
    });
    outgoing.end();
  });
}
