// The CSI and plugin-registration message types (generated from src/csi/proto) and the
// handler/client shapes built from them. `Foo` is a decoded message (what a handler receives
// and a client call resolves to); `FooInput` is what may be sent (all fields optional).

import type { Metadata } from "@grpc/grpc-js";
import type {
  ControllerMethods,
  GroupControllerMethods,
  IdentityMethods,
  NodeMethods,
  SnapshotMetadataMethods,
} from "./generated/csi.ts";
import type { RegistrationMethods } from "./generated/pluginregistration.ts";

export * from "./generated/google.ts";
export * from "./generated/csi.ts";
export * from "./generated/pluginregistration.ts";

/** What a handler learns about the call besides the request. */
export interface CallContext {
  /** Aborted when the client cancels, the deadline passes or the server is forced down. */
  signal: AbortSignal;
  metadata: Metadata;
  /** The client's deadline in ms since the epoch, if it set one. */
  deadline?: number;
}

/** A unary handler: resolve with the response, or throw CsiError for a gRPC failure. */
export type Unary<Req, Res> = (request: Req, context: CallContext) => Promise<Res>;

/** A server-streaming handler: yield each response; throw CsiError for a gRPC failure. */
export type ServerStreaming<Req, Res> = (request: Req, context: CallContext) => AsyncIterable<Res>;

interface MethodTypes {
  request: unknown;
  requestInput: unknown;
  response: unknown;
  responseInput: unknown;
  responseStream: boolean;
}

/** Handlers for every method of a service, typed from its generated method table. */
export type Handlers<M> = {
  [K in keyof M]: M[K] extends MethodTypes
    ? M[K]["responseStream"] extends true
      ? ServerStreaming<M[K]["request"], M[K]["responseInput"]>
      : Unary<M[K]["request"], M[K]["responseInput"]>
    : never;
};

export type IdentityService = Handlers<IdentityMethods>;
export type ControllerService = Handlers<ControllerMethods>;
export type NodeService = Handlers<NodeMethods>;
export type GroupControllerService = Handlers<GroupControllerMethods>;
export type SnapshotMetadataService = Handlers<SnapshotMetadataMethods>;
export type RegistrationService = Handlers<RegistrationMethods>;

/** Per-call options of a client method. */
export interface CallOptions {
  /** Deadline for this call in ms. Default: the client's `timeoutMs` (none if unset). */
  timeoutMs?: number;
  /** Cancels the call (it then rejects with CANCELLED). */
  signal?: AbortSignal;
}

/** Promise-returning client methods of a service; streaming methods return an async iterable. */
export type ClientMethods<M> = {
  [K in keyof M]: M[K] extends MethodTypes
    ? M[K]["responseStream"] extends true
      ? (request: M[K]["requestInput"], options?: CallOptions) => AsyncIterable<M[K]["response"]>
      : (request: M[K]["requestInput"], options?: CallOptions) => Promise<M[K]["response"]>
    : never;
};
