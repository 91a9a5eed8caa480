// The CSI protocol for csikit: typed messages generated from the CSI v1.12.0 and kubelet
// plugin-registration protos, driver-server scaffolding over Unix sockets, a typed client,
// request validation and per-volume locks, and the csi_secret-driven log sanitizer.
export * from "./types.ts";
export { CsiError, GrpcStatus, grpcCode, grpcDetails, statusName } from "./errors.ts";
export { parseEndpoint } from "./endpoint.ts";
export { serveCsi, removeStaleSocket, type CsiServer, type CsiServerOptions } from "./server.ts";
export { CsiClient, type CallObserver, type CsiClientOptions, type WaitForReadyOptions } from "./client.ts";
export { requireField } from "./validate.ts";
export { OperationLocks } from "./locks.ts";
export { sanitizeRequest, STRIPPED } from "./sanitize.ts";
export { serviceDefinition, LOADER_OPTIONS } from "./loader.ts";
export type { MethodSpec, ServiceSpec, ServiceKey } from "./services.ts";
export { SERVICE_SPECS } from "./services.ts";
export {
  serveSnapshotMetadataApi,
  SnapshotMetadataApiClient,
  type SnapshotMetadataApiService,
  type TlsGrpcServer,
  type TlsParameters,
} from "./tls-grpc.ts";
/** The Kubernetes SnapshotMetadata API's messages (package snapshotmetadata), apart from CSI's. */
export * as SnapshotMetadataApi from "./generated/snapshotmetadata.ts";
export { messageFromJson } from "./json-request.ts";
