// The CSI protocol for csikit: typed messages generated from the CSI v1.12.0 and kubelet
// plugin-registration protos, driver-server scaffolding over Unix sockets, a typed client,
// request validation and per-volume locks, and the csi_secret-driven log sanitizer.
export * from "./types.ts";
export { CsiError, GrpcStatus, grpcCode, statusName } from "./errors.ts";
