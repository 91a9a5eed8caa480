// The kubelet's streaming endpoints on the node's secure port: GET /containerLogs/{ns}/{pod}/
// {container} (PodLogOptions in the query) and /exec/{ns}/{pod}[/{uid}]/{container} (command,
// stdin, stdout, stderr, tty in the query) over WebSocket or SPDY. The API server reaches them
// for pods/log and pods/exec as kube-apiserver reaches a kubelet; the authorizer in front maps
// both to nodes/proxy. The pod and container are checked against the node's own pods first
// (the kubelet's 404s and its "waiting to start" refusal), then the runtime does the work.

import type { IncomingMessage, ServerResponse } from "node:http";
import { Writable, type Duplex } from "node:stream";
import type { Pod } from "../../api/index.ts";
import { errorMessage, type Logger } from "../../base/index.ts";
import type { ContainerStreams, LogOptions } from "../runtime/index.ts";
import { RuntimeNotFoundError } from "../runtime/index.ts";
import { serveExec, type ExecParams } from "./remote-command.ts";
import { isSpdyRequest, openSpdyStreams } from "./spdy-exec.ts";
import { isWebSocketRequest, openChannels } from "./ws-channels.ts";

export interface KubeletStreamingOptions {
  runtime: ContainerStreams;
  /** The node's view of a pod bound to it (undefined: not on this node). */
  podOf: (namespace: string, name: string) => Pod | undefined;
  /** How long the SPDY client has to open its streams (the kubelet's --streaming-connection... 30s). */
  streamCreationTimeoutMs?: number;
  logger: Logger;
}

class RequestError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/** Go's strconv.ParseBool, as the kubelet's query decoding reads booleans. */
function parseBool(value: string | null, name: string): boolean | undefined {
  if (value === null) return undefined;
  if (["1", "t", "T", "TRUE", "true", "True"].includes(value)) return true;
  if (["0", "f", "F", "FALSE", "false", "False", ""].includes(value)) return false;
  throw new RequestError(400, `invalid value for ${name}: ${JSON.stringify(value)}`);
}

function parseInteger(value: string | null, name: string): number | undefined {
  if (value === null) return undefined;
  if (!/^-?\d+$/.test(value))
    throw new RequestError(400, `invalid value for ${name}: ${JSON.stringify(value)}`);
  return Number(value);
}

/** PodLogOptions from the query, validated as the API's ValidatePodLogOptions. */
export function parseLogOptions(query: URLSearchParams): LogOptions {
  const options: LogOptions = {};
  const follow = parseBool(query.get("follow"), "follow");
  const previous = parseBool(query.get("previous"), "previous");
  const timestamps = parseBool(query.get("timestamps"), "timestamps");
  const tailLines = parseInteger(query.get("tailLines"), "tailLines");
  const limitBytes = parseInteger(query.get("limitBytes"), "limitBytes");
  const sinceSeconds = parseInteger(query.get("sinceSeconds"), "sinceSeconds");
  const sinceTime = query.get("sinceTime");
  const problems: string[] = [];
  if (tailLines !== undefined && tailLines < 0)
    problems.push("tailLines: Invalid value: must be greater than or equal to 0");
  if (limitBytes !== undefined && limitBytes < 1)
    problems.push("limitBytes: Invalid value: must be greater than 0");
  if (sinceSeconds !== undefined && sinceSeconds < 1)
    problems.push("sinceSeconds: Invalid value: must be greater than 0");
  if (sinceSeconds !== undefined && sinceTime !== null)
    problems.push("[]: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified");
  if (sinceTime !== null && Number.isNaN(Date.parse(sinceTime)))
    problems.push(`sinceTime: Invalid value: ${JSON.stringify(sinceTime)}: not an RFC 3339 time`);
  if (problems.length > 0) throw new RequestError(422, problems.join(", "));
  if (follow !== undefined) options.follow = follow;
  if (previous !== undefined) options.previous = previous;
  if (timestamps !== undefined) options.timestamps = timestamps;
  if (tailLines !== undefined) options.tailLines = tailLines;
  if (limitBytes !== undefined) options.limitBytes = limitBytes;
  if (sinceSeconds !== undefined) options.sinceSeconds = sinceSeconds;
  if (sinceTime !== null) options.sinceTime = sinceTime;
  return options;
}

/** The path's parts after the prefix, decoded; undefined when it is not one of the prefix's shapes. */
function pathParts(pathname: string, prefix: string, counts: readonly number[]): string[] | undefined {
  if (!pathname.startsWith(prefix + "/")) return undefined;
  const parts = pathname
    .slice(prefix.length + 1)
    .split("/")
    .map((part) => decodeURIComponent(part));
  if (!counts.includes(parts.length) || parts.some((part) => part === "")) return undefined;
  return parts;
}

/**
 * The query of an /exec request as the kubelet reads it: core/v1's exec parameters `input`,
 * `output`, `error`, `tty` ("1" to enable; what the API server sends) and `command` repeated.
 * The PodExecOptions names (stdin, stdout, stderr), which a client may use against the kubelet
 * directly, are read too. A tty has no separate stderr (the kubelet's NewOptions drops it).
 */
export function parseExecParams(pathname: string, query: URLSearchParams): ExecParams | undefined {
  const parts = pathParts(pathname, "/exec", [3, 4]);
  if (!parts) return undefined;
  const [namespace, pod] = parts as [string, string];
  const container = parts[parts.length - 1]!;
  const podUID = parts.length === 4 ? parts[2] : undefined;
  const flag = (...names: string[]) => names.some((name) => ["1", "true"].includes(query.get(name) ?? ""));
  const tty = flag("tty");
  const params: ExecParams = {
    target: { namespace, pod, container, ...(podUID !== undefined ? { podUID } : {}) },
    command: query.getAll("command"),
    stdin: flag("input", "stdin"),
    stdout: flag("output", "stdout"),
    stderr: flag("error", "stderr") && !tty,
    tty,
  };
  if (!params.stdin && !params.stdout && !params.stderr)
    throw new RequestError(400, "you must specify at least 1 of stdin, stdout, stderr");
  if (params.command.length === 0) throw new RequestError(400, "you must specify a command");
  return params;
}

/** A waiting state's reason as the kubelet prints it (ContainerCreating when none is given). */
function waitingReason(waiting: Record<string, unknown>): string {
  return typeof waiting.reason === "string" && waiting.reason !== "" ? waiting.reason : "ContainerCreating";
}

function plain(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8", "x-content-type-options": "nosniff" });
  res.end(message + "\n");
}

function rawRefusal(socket: Duplex, status: number, message: string): void {
  const { STATUS_CODES } = process.getBuiltinModule("node:http");
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ""}\r\nContent-Type: text/plain; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(message) + 1}\r\nConnection: close\r\n\r\n${message}\n`,
  );
}

export class KubeletStreaming {
  readonly #options: KubeletStreamingOptions;

  constructor(options: KubeletStreamingOptions) {
    this.#options = options;
  }

  /** The pod on this node and its container, as the kubelet finds them (404 otherwise). */
  #find(namespace: string, name: string, container: string, podUID?: string): Pod {
    const pod = this.#options.podOf(namespace, name);
    if (!pod || (podUID !== undefined && pod.metadata?.uid !== podUID))
      throw new RequestError(404, `pod "${namespace}/${name}" does not exist`);
    const spec = pod.spec;
    const names = [...(spec?.containers ?? []), ...(spec?.initContainers ?? [])].map((c) => c.name);
    if (!names.includes(container))
      throw new RequestError(404, `container "${container}" not found in pod "${namespace}/${name}"`);
    return pod;
  }

  /** Serves /containerLogs and a non-upgrade /exec; false for any other path. */
  handle = async (req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> => {
    if (url.pathname.startsWith("/exec/")) {
      plain(res, 400, "Upgrade request required");
      return true;
    }
    if (!url.pathname.startsWith("/containerLogs/")) return false;
    try {
      if (req.method !== "GET" && req.method !== "HEAD") throw new RequestError(405, "method not allowed");
      const parts = pathParts(url.pathname, "/containerLogs", [3]);
      if (!parts) throw new RequestError(404, "not found");
      const [namespace, name, container] = parts as [string, string, string];
      const options = parseLogOptions(url.searchParams);
      const pod = this.#find(namespace, name, container);
      const statuses = [
        ...(pod.status?.containerStatuses ?? []),
        ...(pod.status?.initContainerStatuses ?? []),
      ];
      const status = statuses.find((s) => s.name === container);
      // A container waiting with no earlier instance has no log yet (the kubelet's refusal, from
      // the pod's status; one in a crash loop serves its last run's). Whether a previous instance
      // exists is the runtime's to say.
      const waiting = status?.state?.waiting;
      if (!options.previous && waiting && !status?.lastState?.terminated)
        throw new RequestError(
          400,
          `container "${container}" in pod "${name}" is waiting to start: ${waitingReason(waiting)}`,
        );
      await this.#streamLogs(req, res, { namespace, pod: name, container }, options);
    } catch (error) {
      if (res.headersSent) res.destroy();
      else if (error instanceof RequestError) plain(res, error.status, error.message);
      else if (error instanceof RuntimeNotFoundError) plain(res, 400, error.message);
      else {
        this.#options.logger.warn("container logs failed", { path: url.pathname, err: errorMessage(error) });
        plain(res, 500, `failed to get container logs: ${errorMessage(error)}`);
      }
    }
    return true;
  };

  async #streamLogs(
    req: IncomingMessage,
    res: ServerResponse,
    target: { namespace: string; pod: string; container: string },
    options: LogOptions,
  ): Promise<void> {
    const stop = new AbortController();
    const onClose = () => stop.abort();
    res.once("close", onClose);
    req.once("aborted", onClose);
    const start = () => {
      if (!res.headersSent)
        res.writeHead(200, { "content-type": "text/plain", "x-content-type-options": "nosniff" });
    };
    // The head goes out with the first line, so that a runtime refusal can still be an error answer.
    const out = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        start();
        if (res.write(chunk)) callback();
        else res.once("drain", () => callback());
      },
    });
    try {
      await this.#options.runtime.logs(target, options, out, stop.signal);
      start();
      res.end();
    } finally {
      res.off("close", onClose);
    }
  }

  /** Takes over an upgraded /exec connection (WebSocket or SPDY). */
  upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer, url: URL): void => {
    void this.#upgrade(req, socket, head, url).catch((error: unknown) => {
      this.#options.logger.warn("exec failed", { path: url.pathname, err: errorMessage(error) });
      socket.destroy();
    });
  };

  async #upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, url: URL): Promise<void> {
    let params: ExecParams | undefined;
    try {
      params = parseExecParams(url.pathname, url.searchParams);
      if (!params) throw new RequestError(404, "not found");
      this.#find(params.target.namespace, params.target.pod, params.target.container, params.target.podUID);
    } catch (error) {
      if (!(error instanceof RequestError)) throw error;
      rawRefusal(socket, error.status, error.message);
      return;
    }
    const streams = isWebSocketRequest(req)
      ? await openChannels(req, socket, head, params)
      : isSpdyRequest(req)
        ? await openSpdyStreams(req, socket, head, params, {
            streamCreationTimeoutMs: this.#options.streamCreationTimeoutMs ?? 30_000,
            logger: this.#options.logger,
          })
        : (rawRefusal(socket, 400, "unsupported upgrade: want websocket or SPDY/3.1"), undefined);
    if (!streams) return;
    this.#options.logger.info(4, "exec session", {
      pod: `${params.target.namespace}/${params.target.pod}`,
      container: params.target.container,
      transport: isWebSocketRequest(req) ? "websocket" : "spdy",
      protocol: streams.protocol,
    });
    await serveExec(params, streams, this.#options.runtime, this.#options.logger);
  }
}
