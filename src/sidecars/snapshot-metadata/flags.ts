// The snapshot-metadata sidecar's flags: external-snapshot-metadata v1.1's own list
// (pkg/sidecar/sidecar.go and its TLS hardening flags; names, types, defaults and help as its
// --help gives them). It registers klog's flags on its own flag set and not component-base's
// logging flags, so beyond these it takes exactly what every csikit command takes
// (LOGGING_FLAGS). `--bind-address` is csikit's own: upstream listens on all interfaces.
// `snapshotMetadataOptionsFromFlags` validates and names the bad flag.

import { FlagError, type FlagSpecs, type Flags } from "../../base/index.ts";
import { flagAtLeast } from "../../kube/index.ts";
import type { SnapshotMetadataOptions } from "./options.ts";
import { tlsParameters } from "./tls-config.ts";

/** Upstream reads these when --tls-cert / --tls-key are not given. */
export const TLS_CERT_ENV = "TLS_CERT_PATH";
export const TLS_KEY_ENV = "TLS_KEY_PATH";

export const SNAPSHOT_METADATA_FLAGS: FlagSpecs = {
  kubeconfig: {
    type: "string",
    help: "Absolute path to the kubeconfig file. Required only when running out of cluster.",
  },
  "csi-address": { type: "string", default: "/run/csi/socket", help: "Address of the CSI driver socket." },
  timeout: {
    type: "duration",
    default: "1m",
    help: "The timeout for any RPCs to the CSI driver. Default is 1 minute.",
  },
  port: { type: "int", default: "50051", help: "GRPC SnapshotMetadata service port number" },
  "bind-address": {
    type: "string",
    help: "csikit: the address the gRPC port listens on. Empty (the default, as upstream) means all interfaces.",
  },
  "tls-cert": {
    type: "string",
    help: `Path to the TLS certificate file. Can also be set with the environment variable ${TLS_CERT_ENV}.`,
  },
  "tls-key": {
    type: "string",
    help: `Path to the TLS private key file. Can also be set with the environment variable ${TLS_KEY_ENV}.`,
  },
  "tls-min-version": {
    type: "string",
    help: "Minimum TLS version of the gRPC server: VersionTLS12 or VersionTLS13. Empty means Go's default (TLS 1.2).",
  },
  "tls-cipher-suites": {
    type: "string",
    help: "Comma-separated list of cipher suites for TLS 1.2 (Go names, e.g. TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256). Empty means the defaults. TLS 1.3 suites are not configurable.",
  },
  "tls-curve-preferences": {
    type: "string",
    help: "Comma-separated list of elliptic curves for the key exchange: X25519, CurveP256, CurveP384, CurveP521, X25519MLKEM768. Empty means the defaults.",
  },
  audience: { type: "string", help: "Audience string used for authentication." },
  "max-streaming-duration-min": {
    type: "int",
    default: "10",
    help: "The maximum duration in minutes for any individual streaming session",
  },
  "kube-api-qps": {
    type: "float",
    default: "5",
    help: "QPS to use while communicating with the kubernetes apiserver. Defaults to 5.0.",
  },
  "kube-api-burst": {
    type: "int",
    default: "10",
    help: "Burst to use while communicating with the kubernetes apiserver. Defaults to 10.",
  },
  "http-endpoint": {
    type: "string",
    default: ":8080",
    help: "The TCP network address where the HTTP server for diagnostics, including health check and metrics, will listen. Defaults to :8080.",
  },
  "metrics-path": {
    type: "string",
    default: "/metrics",
    help: "The HTTP path where prometheus metrics will be exposed. Defaults to /metrics.",
  },
  "disable-metrics": {
    type: "bool",
    default: "false",
    help: "Disable the metrics endpoint. The health endpoint will still be available.",
  },
};

/** Typed options from flags parsed with SNAPSHOT_METADATA_FLAGS (and the environment). */
export function snapshotMetadataOptionsFromFlags(
  flags: Flags,
  env: NodeJS.ProcessEnv = process.env,
): Omit<SnapshotMetadataOptions, "logger" | "clock"> {
  const tlsCertFile = flags.isSet("tls-cert") ? flags.string("tls-cert") : (env[TLS_CERT_ENV] ?? "");
  const tlsKeyFile = flags.isSet("tls-key") ? flags.string("tls-key") : (env[TLS_KEY_ENV] ?? "");
  // As upstream's runtime: the server never runs without its key pair.
  if (tlsCertFile === "") throw new FlagError(`missing TLSCertFile: give --tls-cert or ${TLS_CERT_ENV}`);
  if (tlsKeyFile === "") throw new FlagError(`missing TLSKeyFile: give --tls-key or ${TLS_KEY_ENV}`);
  const port = flags.number("port");
  if (!Number.isInteger(port) || port <= 0 || port > 65535)
    throw new FlagError(`invalid GRPCPort: -port=${port} must be 1-65535`);
  const csiAddress = flags.string("csi-address");
  if (csiAddress === "") throw new FlagError("CSIAddress is required: -csi-address is empty");
  return {
    kubeconfig: flags.string("kubeconfig"),
    csiAddress,
    timeoutMs: flagAtLeast(flags, "timeout", 1),
    port,
    bindAddress: flags.string("bind-address"),
    tlsCertFile,
    tlsKeyFile,
    tls: tlsParameters({
      minVersion: flags.string("tls-min-version"),
      cipherSuites: flags.string("tls-cipher-suites"),
      curvePreferences: flags.string("tls-curve-preferences"),
    }),
    audience: flags.string("audience"),
    maxStreamingDurationMs: flagAtLeast(flags, "max-streaming-duration-min", 1) * 60_000,
    kubeApiQps: flags.number("kube-api-qps"),
    kubeApiBurst: flagAtLeast(flags, "kube-api-burst", 0),
    httpEndpoint: flags.string("http-endpoint"),
    metricsPath: flags.string("metrics-path"),
    disableMetrics: flags.bool("disable-metrics"),
  };
}
