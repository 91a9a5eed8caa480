// The Kubernetes SnapshotMetadata API over TLS on TCP: the server the snapshot-metadata sidecar
// runs for backup applications, and the client a backup application (`csikit snapshot-metadata
// list`) calls it with, trusting only the CA the SnapshotMetadataService object advertises.
// Unlike the CSI sockets this port is reachable from the network, so it never serves plaintext.
// Handlers have the CSI servers' shape (an async iterable per streamed call, CsiError for a
// status) and go through the same streaming scaffolding and traces as server.ts, whose
// sanitizer drops security_token (marked csi_secret in snapshotmetadata.proto).

import * as grpc from "@grpc/grpc-js";
import type { SecureServerOptions } from "node:http2";
import type { Logger } from "../base/index.ts";
import { CsikitError, silentLogger } from "../base/index.ts";
import { CsiError, GrpcStatus } from "./errors.ts";
import type {
  GetMetadataAllocatedRequest,
  GetMetadataAllocatedRequestInput,
  GetMetadataAllocatedResponse,
  GetMetadataAllocatedResponseInput,
  GetMetadataDeltaRequest,
  GetMetadataDeltaRequestInput,
  GetMetadataDeltaResponse,
  GetMetadataDeltaResponseInput,
} from "./generated/snapshotmetadata.ts";
import { serviceDefinition } from "./loader.ts";
import { streamHandler } from "./server.ts";
import { SNAPSHOT_METADATA_API } from "./services.ts";
import { traceCall } from "./trace.ts";
import type { ServerStreaming } from "./types.ts";

/** The handlers of the Kubernetes SnapshotMetadata service. */
export interface SnapshotMetadataApiService {
  getMetadataAllocated: ServerStreaming<GetMetadataAllocatedRequest, GetMetadataAllocatedResponseInput>;
  getMetadataDelta: ServerStreaming<GetMetadataDeltaRequest, GetMetadataDeltaResponseInput>;
}

/** TLS parameters beyond the key pair, in Node's terms (tls.createSecureContext). */
export interface TlsParameters {
  /** "TLSv1.2" or "TLSv1.3"; undefined: Node's default. */
  minVersion?: "TLSv1.2" | "TLSv1.3";
  /** OpenSSL cipher list (TLS 1.2 suites); undefined: grpc-js's default. */
  ciphers?: string;
  /** Colon-separated curve names; undefined: Node's default. */
  ecdhCurve?: string;
}

export interface TlsGrpcServerOptions {
  /** Address to bind ("0.0.0.0", "127.0.0.1", "::"). */
  host: string;
  /** 0 picks a free port (tests). */
  port: number;
  certPem: string | Buffer;
  keyPem: string | Buffer;
  tls?: TlsParameters;
  service: SnapshotMetadataApiService;
  logger?: Logger;
  /** How long close() waits for in-flight streams before cancelling them. Default 30000 ms. */
  shutdownGraceMs?: number;
}

export interface TlsGrpcServer {
  /** The port bound (the one asked for, or the one the OS picked for 0). */
  readonly port: number;
  close(): Promise<void>;
}

/** Starts the TLS server; resolves once it listens. */
export async function serveSnapshotMetadataApi(options: TlsGrpcServerOptions): Promise<TlsGrpcServer> {
  const logger = options.logger ?? silentLogger;
  const inFlight = new Set<AbortController>();
  const server = new grpc.Server();
  const implementation: grpc.UntypedServiceImplementation = {};
  for (const method of Object.values(SNAPSHOT_METADATA_API.methods)) {
    const key = (method.name.charAt(0).toLowerCase() +
      method.name.slice(1)) as keyof SnapshotMetadataApiService;
    implementation[method.name] = streamHandler({
      method,
      handler: options.service[key],
      owner: options.service,
      logger,
      inFlight,
    });
  }
  server.addService(serviceDefinition(SNAPSHOT_METADATA_API.name), implementation);
  const credentials = grpc.ServerCredentials.createSsl(null, [
    { cert_chain: Buffer.from(options.certPem), private_key: Buffer.from(options.keyPem) },
  ]);
  // grpc-js has no parameter for these; its constructor options are what http2's
  // createSecureServer receives, so the TLS flags are applied there.
  const constructorOptions: SecureServerOptions | null = credentials._getConstructorOptions();
  if (constructorOptions && options.tls) {
    if (options.tls.minVersion) constructorOptions.minVersion = options.tls.minVersion;
    if (options.tls.ciphers) constructorOptions.ciphers = options.tls.ciphers;
    if (options.tls.ecdhCurve) constructorOptions.ecdhCurve = options.tls.ecdhCurve;
  }
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${host}:${options.port}`, credentials, (error, bound) => {
      if (error)
        reject(
          new CsikitError("CSIKIT_ERR_SOCKET", `cannot listen on ${host}:${options.port}: ${error.message}`),
        );
      else resolve(bound);
    });
  });
  logger.info(2, "SnapshotMetadata gRPC server listening", { address: `${host}:${port}` });
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        for (const controller of inFlight)
          controller.abort(new CsiError(GrpcStatus.UNAVAILABLE, "the server is shutting down"));
        server.forceShutdown();
        resolve();
      }, options.shutdownGraceMs ?? 30_000);
      server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    }));
  return { port, close };
}

export interface SnapshotMetadataApiClientOptions {
  /** host:port, as the SnapshotMetadataService object's spec.address. */
  address: string;
  /** PEM of the CA the server's certificate must chain to (spec.caCert, decoded). */
  caPem: string | Buffer;
  logger?: Logger;
}

/** A backup application's client of the Kubernetes SnapshotMetadata API. */
export class SnapshotMetadataApiClient {
  readonly #client: grpc.Client;
  readonly #logger: Logger;

  constructor(options: SnapshotMetadataApiClientOptions) {
    this.#client = new grpc.Client(options.address, grpc.credentials.createSsl(Buffer.from(options.caPem)));
    this.#logger = options.logger ?? silentLogger;
  }

  getMetadataAllocated(
    request: GetMetadataAllocatedRequestInput,
    signal?: AbortSignal,
  ): AsyncIterable<GetMetadataAllocatedResponse> {
    return this.#stream(
      "GetMetadataAllocated",
      request,
      signal,
    ) as AsyncIterable<GetMetadataAllocatedResponse>;
  }

  getMetadataDelta(
    request: GetMetadataDeltaRequestInput,
    signal?: AbortSignal,
  ): AsyncIterable<GetMetadataDeltaResponse> {
    return this.#stream("GetMetadataDelta", request, signal) as AsyncIterable<GetMetadataDeltaResponse>;
  }

  close(): void {
    this.#client.close();
  }

  async *#stream(name: string, request: object, signal: AbortSignal | undefined): AsyncIterable<unknown> {
    signal?.throwIfAborted();
    const method = Object.values(SNAPSHOT_METADATA_API.methods).find((m) => m.name === name)!;
    const wire = serviceDefinition(SNAPSHOT_METADATA_API.name)[name]!;
    const trace = traceCall(this.#logger, method, request);
    const call = this.#client.makeServerStreamRequest<object, unknown>(
      wire.path,
      (value) => wire.requestSerialize(value),
      (bytes) => wire.responseDeserialize(bytes),
      request,
    );
    const onAbort = (): void => call.cancel();
    signal?.addEventListener("abort", onAbort, { once: true });
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
      signal?.removeEventListener("abort", onAbort);
      call.cancel();
    }
  }
}
