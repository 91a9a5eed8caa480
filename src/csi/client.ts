// A typed CSI client over a Unix socket: one grpc-js channel, connected lazily, shared by all
// services. Every method returns a promise of the decoded response (see types.ts) and rejects
// with grpc-js's ServiceError (numeric `code`, `details`). A lost connection fails calls with
// UNAVAILABLE; the channel reconnects by itself (backoff capped at 1s, as csi-lib-utils dials)
// so later calls work once the driver is back. waitForReady is the sidecars' start-up wait
// (Connect + ProbeForever, see ready.ts).

import { AsyncResource } from "node:async_hooks";
import * as grpc from "@grpc/grpc-js";
import type { Clock, Logger } from "../base/index.ts";
import { CsikitError, realClock, silentLogger } from "../base/index.ts";
import { grpcTarget, parseEndpoint } from "./endpoint.ts";
import { CsiError, GrpcStatus } from "./errors.ts";
import { serviceDefinition, type MethodDefinition } from "./loader.ts";
import { probeUntilReady, whenConnected } from "./ready.ts";
import { SERVICE_SPECS, type MethodSpec, type ServiceKey } from "./services.ts";
import { traceCall } from "./trace.ts";
import type {
  CallOptions,
  ClientMethods,
  ControllerMethods,
  GroupControllerMethods,
  IdentityMethods,
  NodeMethods,
  RegistrationMethods,
  SnapshotMetadataMethods,
} from "./types.ts";

export interface CsiClientOptions {
  /** Request/response traces at -v 5 (sanitized), Probe failures at -v 4. Default: silent. */
  logger?: Logger;
  /** Deadline of each call in ms unless the call gives its own. Default: none. */
  timeoutMs?: number;
  /**
   * Called once per finished unary call with the full method path
   * ("/csi.v1.Controller/CreateVolume"), the gRPC status code (0 = OK) and the duration in
   * seconds: the hook for csi_sidecar_operations_seconds (kube's CsiOperationMetrics.observer()).
   */
  onCall?: CallObserver;
  /**
   * Longest response (characters of its JSON) a trace logs; longer ones are cut with a note of
   * how much was cut. -1 or 0 = no limit (the default), as the sidecars' --max-grpc-log-length.
   */
  maxLogLength?: number;
}

export type CallObserver = (method: string, code: number, seconds: number) => void;

export interface WaitForReadyOptions {
  signal?: AbortSignal;
  /** Clock for the 1s probe interval, the timeout and the "still connecting" warnings. Default: the real clock. */
  clock?: Clock;
  /**
   * Give up with DEADLINE_EXCEEDED after this many ms, counting the wait for the connection.
   * Default: never, as the sidecars wait (ProbeForever has no overall limit).
   */
  timeoutMs?: number;
}

/** Deadline of one Probe inside waitForReady when the client has no timeoutMs. */
const DEFAULT_PROBE_TIMEOUT_MS = 10_000;

const CHANNEL_OPTIONS: grpc.ChannelOptions = {
  "grpc.initial_reconnect_backoff_ms": 100,
  "grpc.max_reconnect_backoff_ms": 1000,
};

type UntypedMethod = (request: never, options?: CallOptions) => unknown;

export class CsiClient {
  /** Absolute path of the driver's socket. */
  readonly path: string;
  readonly identity: ClientMethods<IdentityMethods>;
  readonly controller: ClientMethods<ControllerMethods>;
  readonly node: ClientMethods<NodeMethods>;
  readonly groupController: ClientMethods<GroupControllerMethods>;
  readonly snapshotMetadata: ClientMethods<SnapshotMetadataMethods>;
  readonly registration: ClientMethods<RegistrationMethods>;
  readonly #channel: grpc.Client;
  readonly #logger: Logger;
  readonly #onCall: CallObserver | undefined;
  readonly #timeoutMs: number | undefined;
  readonly #maxLogLength: number;

  /** A client for `endpoint`; nothing is dialled until the first call. */
  static connect(endpoint: string, options: CsiClientOptions = {}): CsiClient {
    return new CsiClient(parseEndpoint(endpoint), options);
  }

  private constructor(path: string, options: CsiClientOptions) {
    this.path = path;
    this.#logger = options.logger ?? silentLogger;
    this.#onCall = options.onCall;
    this.#timeoutMs = options.timeoutMs;
    this.#maxLogLength = options.maxLogLength ?? -1;
    this.#channel = new grpc.Client(grpcTarget(path), grpc.credentials.createInsecure(), CHANNEL_OPTIONS);
    this.identity = this.#methods("identity") as ClientMethods<IdentityMethods>;
    this.controller = this.#methods("controller") as ClientMethods<ControllerMethods>;
    this.node = this.#methods("node") as ClientMethods<NodeMethods>;
    this.groupController = this.#methods("groupController") as ClientMethods<GroupControllerMethods>;
    this.snapshotMetadata = this.#methods("snapshotMetadata") as ClientMethods<SnapshotMetadataMethods>;
    this.registration = this.#methods("registration") as ClientMethods<RegistrationMethods>;
  }

  /**
   * Waits until the socket is connected and Probe answers ready, as the sidecars do
   * (csi-lib-utils' Connect + ProbeForever; see ready.ts): Probe once a second while the driver
   * answers ready:false or DEADLINE_EXCEEDED, or while the connection is not up; rejects at once
   * with the driver's code on any other Probe error (INTERNAL, FAILED_PRECONDITION, ...), with
   * the signal's reason on abort, and with DEADLINE_EXCEEDED after `timeoutMs`. Each Probe has
   * the client's timeoutMs as deadline (10s without one); every retry is logged at -v 4.
   */
  waitForReady(options: WaitForReadyOptions = {}): Promise<void> {
    const timeoutMs = this.#timeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS;
    return probeUntilReady({
      path: this.path,
      channel: this.#channel.getChannel(),
      probe: (signal) => this.identity.probe({}, { timeoutMs, signal }),
      logger: this.#logger,
      clock: options.clock ?? realClock,
      signal: options.signal,
      timeoutMs: options.timeoutMs,
    });
  }

  /**
   * Waits until the socket accepts the connection, with no limit (csi-lib-utils' Connect, as the
   * registrar and livenessprobe use it: they must not crash while the driver starts); warns
   * every 10s meanwhile. Rejects only with the signal's reason or when the client is closed.
   */
  async waitForConnection(options: Pick<WaitForReadyOptions, "signal" | "clock"> = {}): Promise<void> {
    const signal = options.signal ?? new AbortController().signal;
    await whenConnected(
      {
        path: this.path,
        channel: this.#channel.getChannel(),
        logger: this.#logger,
        clock: options.clock ?? realClock,
      },
      signal,
    );
  }

  /** Plugin capability names: service types (CONTROLLER_SERVICE, ...) and expansion types (ONLINE, OFFLINE). */
  async pluginCapabilities(options?: CallOptions): Promise<Set<string>> {
    const response = await this.identity.getPluginCapabilities({}, options);
    const names = new Set<string>();
    for (const capability of response.capabilities) {
      if (capability.service) names.add(capability.service.type);
      if (capability.volumeExpansion) names.add(capability.volumeExpansion.type);
    }
    names.delete("UNKNOWN");
    return names;
  }

  /** Controller RPC capability names (CREATE_DELETE_VOLUME, ...). */
  async controllerCapabilities(options?: CallOptions): Promise<Set<string>> {
    const response = await this.controller.controllerGetCapabilities({}, options);
    return rpcTypes(response.capabilities);
  }

  /** Node RPC capability names (STAGE_UNSTAGE_VOLUME, ...). */
  async nodeCapabilities(options?: CallOptions): Promise<Set<string>> {
    const response = await this.node.nodeGetCapabilities({}, options);
    return rpcTypes(response.capabilities);
  }

  /** Group controller RPC capability names (CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT). */
  async groupControllerCapabilities(options?: CallOptions): Promise<Set<string>> {
    const response = await this.groupController.groupControllerGetCapabilities({}, options);
    return rpcTypes(response.capabilities);
  }

  /** Closes the channel; calls in flight fail with CANCELLED or UNAVAILABLE. */
  close(): void {
    this.#channel.close();
  }

  #methods(key: ServiceKey): Record<string, UntypedMethod> {
    const spec = SERVICE_SPECS[key];
    const definition = serviceDefinition(spec.name);
    const methods: Record<string, UntypedMethod> = {};
    for (const [name, method] of Object.entries(spec.methods)) {
      const wire = definition[method.name];
      if (!wire)
        throw new CsikitError("CSIKIT_ERR_PROTO", `${method.path} is missing from the loaded protos`);
      methods[name] = method.responseStream
        ? this.#streamMethod(method, wire)
        : this.#unaryMethod(method, wire);
    }
    return methods;
  }

  #callOptions(options: CallOptions): grpc.CallOptions {
    const timeoutMs = options.timeoutMs ?? this.#timeoutMs;
    return timeoutMs === undefined ? {} : { deadline: Date.now() + timeoutMs };
  }

  #unaryMethod(method: MethodSpec, wire: MethodDefinition): UntypedMethod {
    return (request: unknown, options: CallOptions = {}) =>
      new Promise<unknown>((resolve, reject) => {
        options.signal?.throwIfAborted();
        const trace = traceCall(this.#logger, method, request, this.#maxLogLength);
        const started = performance.now();
        // Bound to the caller's async context: observers may read context it set (metrics'
        // `migrated` label), which grpc-js's completion callback would otherwise lose.
        const observe = AsyncResource.bind((code: number): void =>
          this.#onCall?.(method.path, code, (performance.now() - started) / 1000),
        );
        const onAbort = (): void => call.cancel();
        const call = this.#channel.makeUnaryRequest<unknown, unknown>(
          wire.path,
          (value) => wire.requestSerialize(toObject(value)),
          (bytes) => wire.responseDeserialize(bytes),
          request,
          new grpc.Metadata(),
          this.#callOptions(options),
          (error, response) => {
            options.signal?.removeEventListener("abort", onAbort);
            if (error) {
              trace.failure(error);
              observe(error.code);
              reject(error);
            } else {
              trace.response(response);
              observe(GrpcStatus.OK);
              resolve(response);
            }
          },
        );
        options.signal?.addEventListener("abort", onAbort, { once: true });
      });
  }

  #streamMethod(method: MethodSpec, wire: MethodDefinition): UntypedMethod {
    const channel = this.#channel;
    const logger = this.#logger;
    const maxLogLength = this.#maxLogLength;
    const callOptions = (options: CallOptions): grpc.CallOptions => this.#callOptions(options);
    return (request: unknown, options: CallOptions = {}) => ({
      async *[Symbol.asyncIterator]() {
        options.signal?.throwIfAborted();
        const trace = traceCall(logger, method, request, maxLogLength);
        const call = channel.makeServerStreamRequest<unknown, unknown>(
          wire.path,
          (value) => wire.requestSerialize(toObject(value)),
          (bytes) => wire.responseDeserialize(bytes),
          request,
          new grpc.Metadata(),
          callOptions(options),
        );
        const onAbort = (): void => call.cancel();
        options.signal?.addEventListener("abort", onAbort, { once: true });
        try {
          for await (const message of call as AsyncIterable<unknown>) {
            trace.message(message);
            yield message;
          }
          trace.response(undefined);
        } catch (error) {
          trace.failure(error);
          throw error;
        } finally {
          options.signal?.removeEventListener("abort", onAbort);
          call.cancel();
        }
      },
    });
  }
}

function rpcTypes(capabilities: readonly { rpc?: { type: string } }[]): Set<string> {
  const names = new Set<string>();
  for (const capability of capabilities) if (capability.rpc) names.add(capability.rpc.type);
  names.delete("UNKNOWN");
  return names;
}

/** proto-loader serializers take objects; a request of another shape is a caller bug. */
function toObject(value: unknown): object {
  if (typeof value !== "object" || value === null) {
    throw new CsiError(GrpcStatus.INVALID_ARGUMENT, "a CSI request must be an object");
  }
  return value;
}
