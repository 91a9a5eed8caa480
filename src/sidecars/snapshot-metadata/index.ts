// The snapshot-metadata sidecar (`csikit snapshot-metadata`): a drop-in external-snapshot-metadata
// v1.1 — the Kubernetes SnapshotMetadata API over TLS for backup applications, proxied to the
// driver's CSI SnapshotMetadata service. See sidecar.ts and service.ts.
export { runSnapshotMetadata, HEALTH_PATH } from "./sidecar.ts";
export type { SnapshotMetadataOptions } from "./options.ts";
export {
  SNAPSHOT_METADATA_FLAGS,
  snapshotMetadataOptionsFromFlags,
  TLS_CERT_ENV,
  TLS_KEY_ENV,
} from "./flags.ts";
export { SNAPSHOT_METADATA_METRIC } from "./metrics.ts";
export { AUTH_MESSAGES } from "./auth.ts";
export { VALIDATION_MESSAGES } from "./service.ts";
export { tlsParameters } from "./tls-config.ts";
export { listSnapshotMetadata, tableLines, jsonRecord, type ListOptions } from "./lister.ts";
export { LISTER_FLAGS, listOptionsFromFlags, podIdentity, type PodIdentity } from "./lister-flags.ts";
