// The snapshot-metadata sidecar's options: what `csikit snapshot-metadata` parses from upstream's
// flags (flags.ts) and what tests pass in-process. Every field names its flag; defaults are
// external-snapshot-metadata v1.1's (pkg/sidecar/sidecar.go).

import type { Clock, Logger } from "../../base/index.ts";
import type { TlsParameters } from "../../csi/index.ts";

export interface SnapshotMetadataOptions {
  /** --kubeconfig ("": in-cluster). */
  kubeconfig: string;
  /** --csi-address (/run/csi/socket). */
  csiAddress: string;
  /** --timeout (1m): deadline of the driver's unary calls (Probe, GetPluginInfo, capabilities). */
  timeoutMs: number;
  /** --port (50051): the TLS gRPC port backup applications call. */
  port: number;
  /** --bind-address (csikit's; "": all interfaces, as upstream). */
  bindAddress: string;
  /** --tls-cert / TLS_CERT_PATH. */
  tlsCertFile: string;
  /** --tls-key / TLS_KEY_PATH. */
  tlsKeyFile: string;
  /** --tls-min-version, --tls-cipher-suites, --tls-curve-preferences, in Node's terms. */
  tls: TlsParameters;
  /** --audience (""): the token audience; empty means the SnapshotMetadataService object's. */
  audience: string;
  /** --max-streaming-duration-min (10) in ms: a longer stream is cut with DEADLINE_EXCEEDED. */
  maxStreamingDurationMs: number;
  /** --kube-api-qps (5). */
  kubeApiQps: number;
  /** --kube-api-burst (10). */
  kubeApiBurst: number;
  /** --http-endpoint (":8080"; "" disables): /health and the metrics. */
  httpEndpoint: string;
  /** --metrics-path (/metrics). */
  metricsPath: string;
  /** --disable-metrics (false): /health only. */
  disableMetrics: boolean;
  logger?: Logger;
  clock?: Clock;
  /** Called once the gRPC port listens, with the port (tests use --port with a free port). */
  onListening?: (port: number) => void;
  /** Called once the diagnostics endpoint listens, with its URL. */
  onHttpEndpoint?: (url: string) => void;
}
