// Driver-server scaffolding: serves any subset of the CSI services (and kubelet plugin
// registration) on a Unix socket with @grpc/grpc-js.
// Invariants:
// - A stale socket at the path is removed first; any other kind of file there, or a socket a
//   live process still serves, is left alone and serveCsi fails naming the path (a typo must
//   never delete someone's file).
// - The socket is chmod 0660 right after bind, before serveCsi resolves.
// - A method a service object lacks answers UNIMPLEMENTED; a service not given is not
//   registered, so grpc-js answers UNIMPLEMENTED for all of its methods.
// - A handler's CsiError becomes that status and message; anything else thrown becomes
//   INTERNAL "internal error" (logged here, never sent: no stack traces to clients).
// - close() stops accepting, lets in-flight calls finish (up to shutdownGraceMs, then cancels
//   them), and removes the socket.

import * as grpc from "@grpc/grpc-js";
import { chmod, lstat, mkdir, unlink } from "node:fs/promises";
import { connect } from "node:net";
import { dirname } from "node:path";
import type { Logger } from "../base/index.ts";
import { CsikitError, errorMessage, isErrno, silentLogger } from "../base/index.ts";
import { parseEndpoint, grpcTarget } from "./endpoint.ts";
import { CsiError, GrpcStatus } from "./errors.ts";
import { serviceDefinition } from "./loader.ts";
import { SERVICE_KEYS, SERVICE_SPECS, type MethodSpec } from "./services.ts";
import { traceCall } from "./trace.ts";
import type {
  CallContext,
  ControllerService,
  GroupControllerService,
  IdentityService,
  NodeService,
  RegistrationService,
  SnapshotMetadataService,
} from "./types.ts";

export interface CsiServerOptions {
  /** unix:///abs/path, unix:path or a path (see parseEndpoint). */
  endpoint: string;
  identity?: Partial<IdentityService>;
  controller?: Partial<ControllerService>;
  node?: Partial<NodeService>;
  groupController?: Partial<GroupControllerService>;
  snapshotMetadata?: Partial<SnapshotMetadataService>;
  /** Kubelet plugin registration (served by registrars on <kubelet>/plugins_registry/). */
  registration?: Partial<RegistrationService>;
  /** Request/response traces at -v 5 (sanitized), internal errors always. Default: silent. */
  logger?: Logger;
  /** Aborting closes the server as close() does. */
  signal?: AbortSignal;
  /** How long close() waits for in-flight calls before cancelling them, in ms. Default 30000. */
  shutdownGraceMs?: number;
  /** Socket file mode. Default 0o660; a looser mode is refused. */
  socketMode?: number;
}

export interface CsiServer {
  /** Absolute path of the socket. */
  readonly path: string;
  /** Graceful: stop accepting, finish in-flight calls, then remove the socket. Idempotent. */
  close(): Promise<void>;
}

const DEFAULT_SOCKET_MODE = 0o660;
const DEFAULT_SHUTDOWN_GRACE_MS = 30_000;

/** Starts serving; resolves once the socket is bound and has its mode. */
export async function serveCsi(options: CsiServerOptions): Promise<CsiServer> {
  const path = parseEndpoint(options.endpoint);
  const logger = options.logger ?? silentLogger;
  const mode = options.socketMode ?? DEFAULT_SOCKET_MODE;
  if ((mode & ~DEFAULT_SOCKET_MODE) !== 0) {
    throw new CsikitError(
      "CSIKIT_ERR_SOCKET",
      `socket mode ${mode.toString(8)} is looser than 0660: CSI sockets must not be world-accessible`,
    );
  }
  await removeStaleSocket(path);
  await mkdir(dirname(path), { recursive: true });

  const inFlight = new Set<AbortController>();
  const server = new grpc.Server();
  for (const key of SERVICE_KEYS) {
    const service: object | undefined = options[key];
    if (service === undefined) continue;
    const spec = SERVICE_SPECS[key];
    const definition = serviceDefinition(spec.name);
    const implementation: grpc.UntypedServiceImplementation = {};
    for (const method of Object.values(spec.methods)) {
      const handler = memberOf(service, lowerFirst(method.name));
      const call = { method, handler, owner: service, logger, inFlight };
      implementation[method.name] = method.responseStream ? streamHandler(call) : unaryHandler(call);
    }
    server.addService(definition, implementation);
  }

  await new Promise<void>((resolve, reject) => {
    server.bindAsync(grpcTarget(path), grpc.ServerCredentials.createInsecure(), (error) => {
      if (error) reject(new CsikitError("CSIKIT_ERR_SOCKET", `cannot listen on ${path}: ${error.message}`));
      else resolve();
    });
  });
  try {
    await chmod(path, mode);
  } catch (error) {
    server.forceShutdown();
    throw new CsikitError("CSIKIT_ERR_SOCKET", `cannot set mode of ${path}: ${errorMessage(error)}`);
  }
  logger.info(2, "CSI server listening", {
    endpoint: path,
    services: SERVICE_KEYS.filter((k) => options[k]),
  });

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= shutdown({
      server,
      path,
      inFlight,
      graceMs: options.shutdownGraceMs ?? DEFAULT_SHUTDOWN_GRACE_MS,
    });
    return closing;
  };
  options.signal?.addEventListener(
    "abort",
    () => {
      close().catch((error: unknown) => logger.error("CSI server shutdown failed", { error }));
    },
    { once: true },
  );
  if (options.signal?.aborted) await close();
  return { path, close };
}

/**
 * Removes a leftover socket from an earlier run. Refuses to touch anything that is not a
 * socket, and a socket some live process still accepts connections on (two drivers on one
 * path would silently steal each other's traffic).
 */
export async function removeStaleSocket(path: string): Promise<void> {
  let stat;
  try {
    stat = await lstat(path);
  } catch (error) {
    if (isErrno(error, "ENOENT")) return;
    throw error;
  }
  if (!stat.isSocket()) {
    throw new CsikitError(
      "CSIKIT_ERR_SOCKET",
      `cannot listen on ${path}: it exists and is not a socket (refusing to delete it)`,
    );
  }
  if (await isListening(path)) {
    throw new CsikitError("CSIKIT_ERR_SOCKET", `cannot listen on ${path}: another process is serving on it`);
  }
  await unlink(path);
}

/** True when something accepts connections on the socket; a stale socket refuses them. */
function isListening(path: string): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const socket = connect(path);
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => {
      socket.destroy();
      resolve(false);
    });
  });
}

async function shutdown(options: {
  server: grpc.Server;
  path: string;
  inFlight: Set<AbortController>;
  graceMs: number;
}): Promise<void> {
  const { server, path, inFlight } = options;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      for (const controller of inFlight) {
        controller.abort(new CsiError(GrpcStatus.UNAVAILABLE, "the CSI server is shutting down"));
      }
      server.forceShutdown();
      resolve();
    }, options.graceMs);
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve();
    });
  });
  try {
    const stat = await lstat(path);
    if (stat.isSocket()) await unlink(path);
  } catch (error) {
    if (!isErrno(error, "ENOENT")) throw error;
  }
}

export interface HandlerBinding {
  method: MethodSpec;
  handler: unknown;
  owner: object;
  logger: Logger;
  inFlight: Set<AbortController>;
}

/** The CallContext of a call, plus a dispose that stops tracking it. */
function callContext(
  call: grpc.ServerUnaryCall<unknown, unknown> | grpc.ServerWritableStream<unknown, unknown>,
  inFlight: Set<AbortController>,
): { context: CallContext; dispose: () => void } {
  const controller = new AbortController();
  const onCancel = (): void => controller.abort(new CsiError(GrpcStatus.CANCELLED, "the call was cancelled"));
  call.on("cancelled", onCancel);
  inFlight.add(controller);
  const context: CallContext = { signal: controller.signal, metadata: call.metadata };
  const deadline = call.getDeadline();
  const deadlineMs = deadline instanceof Date ? deadline.getTime() : deadline;
  if (Number.isFinite(deadlineMs)) context.deadline = deadlineMs;
  return {
    context,
    dispose: () => {
      inFlight.delete(controller);
      call.removeListener("cancelled", onCancel);
    },
  };
}

/** What a failure looks like on the wire: CsiError as is, anything else INTERNAL. */
function toStatus(error: unknown, binding: HandlerBinding): Partial<grpc.StatusObject> {
  if (error instanceof CsiError) return { code: error.code, details: error.message };
  binding.logger.error("CSI handler failed with an unexpected error", {
    method: binding.method.path,
    error: errorMessage(error),
  });
  return { code: GrpcStatus.INTERNAL, details: "internal error" };
}

function unimplemented(method: MethodSpec): CsiError {
  return new CsiError(GrpcStatus.UNIMPLEMENTED, `${method.name} is not implemented by this plugin`);
}

function unaryHandler(binding: HandlerBinding): grpc.handleUnaryCall<unknown, unknown> {
  return (call, callback) => {
    const { context, dispose } = callContext(call, binding.inFlight);
    const trace = traceCall(binding.logger, binding.method, call.request);
    const run = async (): Promise<unknown> => {
      if (typeof binding.handler !== "function") throw unimplemented(binding.method);
      const result: unknown = await Reflect.apply(binding.handler, binding.owner, [call.request, context]);
      return result ?? {};
    };
    run().then(
      (response) => {
        dispose();
        trace.response(response);
        callback(null, response);
      },
      (error: unknown) => {
        dispose();
        trace.failure(error);
        callback(toStatus(error, binding));
      },
    );
  };
}

export function streamHandler(binding: HandlerBinding): grpc.handleServerStreamingCall<unknown, unknown> {
  return (call) => {
    const { context, dispose } = callContext(call, binding.inFlight);
    const trace = traceCall(binding.logger, binding.method, call.request);
    const run = async (): Promise<void> => {
      if (typeof binding.handler !== "function") throw unimplemented(binding.method);
      const stream: unknown = Reflect.apply(binding.handler, binding.owner, [call.request, context]);
      if (!isAsyncIterable(stream))
        throw new CsikitError(
          "CSIKIT_ERR_INTERNAL",
          `${binding.method.name} handler did not return an async iterable`,
        );
      for await (const message of stream) {
        if (context.signal.aborted) break;
        trace.message(message);
        if (!call.write(message)) await waitForDrain(call, context.signal);
      }
    };
    run().then(
      () => {
        dispose();
        trace.response(undefined);
        call.end();
      },
      (error: unknown) => {
        dispose();
        trace.failure(error);
        call.emit("error", toStatus(error, binding));
      },
    );
  };
}

function waitForDrain(call: grpc.ServerWritableStream<unknown, unknown>, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = (): void => {
      call.removeListener("drain", done);
      signal.removeEventListener("abort", done);
      resolve();
    };
    call.once("drain", done);
    signal.addEventListener("abort", done, { once: true });
  });
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof value === "object" && value !== null && Symbol.asyncIterator in value;
}

function memberOf(target: object, key: string): unknown {
  return (target as Record<string, unknown>)[key];
}

function lowerFirst(name: string): string {
  return name.charAt(0).toLowerCase() + name.slice(1);
}
