// The flags every csikit sidecar shares, as csi-lib-utils' standard flags define them
// (FACTS.md "Common sidecar flags"): names, types and defaults are the upstream contract, so a
// Deployment written for an upstream sidecar passes the same arguments here. Per-sidecar flags
// (e.g. --retry-interval-start) live with the sidecar; the work-queue pair is here because
// every controller built on src/kube/workqueue.ts takes it. `commonSidecarOptions` turns
// parsed flags into typed options, validating ranges and naming the bad flag.

import { FlagError, type FlagSpec, type FlagSpecs, type Flags } from "../base/index.ts";

/**
 * csi-lib-utils' `--automaxprocs` (standardflags.AddAutomaxprocs), which every 2026 sidecar
 * registers: a Go bool flag, so the bare `--automaxprocs` means true. Go sizes its scheduler
 * (GOMAXPROCS) to the container's CPU quota with it; a Node.js process has no GOMAXPROCS (one
 * JavaScript thread, libuv's small fixed pool), so csikit accepts it and changes nothing.
 */
export const AUTOMAXPROCS_FLAG: FlagSpec = {
  type: "bool",
  default: "false",
  help: "Automatically set GOMAXPROCS to match the Linux container CPU quota (upstream). Accepted for compatibility; csikit runs on Node.js, which has no GOMAXPROCS, so it has no effect.",
};

export const COMMON_SIDECAR_FLAGS: FlagSpecs = {
  kubeconfig: {
    type: "string",
    help: "Absolute path to the kubeconfig file. Required only when running out of cluster.",
  },
  master: {
    type: "string",
    help: "The address of the Kubernetes API server (overrides any value in kubeconfig).",
  },
  "csi-address": { type: "string", default: "/run/csi/socket", help: "Address of the CSI driver socket." },
  "leader-election": { type: "bool", default: "false", help: "Enable leader election." },
  "leader-election-namespace": {
    type: "string",
    help: "Namespace where the leader election Lease lives. Defaults to the pod namespace if not set.",
  },
  "leader-election-lease-duration": {
    type: "duration",
    default: "15s",
    help: "Duration, in seconds, that non-leader candidates will wait to force acquire leadership.",
  },
  "leader-election-renew-deadline": {
    type: "duration",
    default: "10s",
    help: "Duration, in seconds, that the acting leader will retry refreshing leadership before giving up.",
  },
  "leader-election-retry-period": {
    type: "duration",
    default: "5s",
    help: "Duration, in seconds, the LeaderElector clients should wait between tries of actions.",
  },
  "leader-election-labels": {
    type: "strings",
    help: "List of labels to add to the Lease when this replica becomes leader: a comma-separated list of key:value pairs (csi-lib-utils' format, e.g. 'my-label:my-value,other:value'); key=value is accepted too.",
  },
  "kube-api-qps": {
    type: "float",
    default: "5",
    help: "QPS to use while communicating with the Kubernetes API server.",
  },
  "kube-api-burst": {
    type: "int",
    default: "10",
    help: "Burst to use while communicating with the Kubernetes API server.",
  },
  "http-endpoint": {
    type: "string",
    help: 'The TCP network address where the HTTP server for diagnostics, including metrics and leader election health check, will listen (example: ":8080", all interfaces as in Go; "127.0.0.1:8080" for loopback only). Empty (the default) disables the server.',
  },
  "metrics-address": {
    type: "string",
    help: "(deprecated) The TCP network address where the prometheus metrics endpoint will listen.",
    deprecated:
      "when set, the diagnostics server (metrics at --metrics-path, leader election health check) listens at this address, as --http-endpoint would; use --http-endpoint instead",
  },
  "metrics-path": {
    type: "string",
    default: "/metrics",
    help: "The HTTP path where prometheus metrics will be exposed.",
  },
  "feature-gates": {
    type: "map",
    help: "A set of key=value pairs that describe feature gates for alpha/experimental features.",
  },
  automaxprocs: AUTOMAXPROCS_FLAG,
  "retry-interval-start": {
    type: "duration",
    default: "1s",
    help: "Initial retry interval of failed operations. It exponentially doubles with each failure, up to --retry-interval-max.",
  },
  "retry-interval-max": {
    type: "duration",
    default: "5m",
    help: "Maximum retry interval of failed operations.",
  },
};

export interface LeaderElectionFlagOptions {
  enabled: boolean;
  /** Empty = the pod's namespace (POD_NAMESPACE / service-account namespace file), else "default". */
  namespace: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  labels: Record<string, string>;
}

export interface CommonSidecarOptions {
  kubeconfig: string;
  master: string;
  csiAddress: string;
  leaderElection: LeaderElectionFlagOptions;
  kubeApiQps: number;
  kubeApiBurst: number;
  /** "" = disabled. --metrics-address is folded in here when --http-endpoint is unset. */
  httpEndpoint: string;
  metricsPath: string;
  featureGates: Record<string, boolean>;
  retryIntervalStartMs: number;
  retryIntervalMaxMs: number;
}

function positive(flags: Flags, name: string): number {
  const value = flags.number(name);
  if (!(value > 0)) throw new FlagError(`flag -${name} must be greater than zero, got ${value}`);
  return value;
}

function parseFeatureGates(raw: Record<string, string>): Record<string, boolean> {
  const out: Record<string, boolean> = {};
  for (const [key, value] of Object.entries(raw)) {
    const lower = value.toLowerCase();
    if (lower === "true") out[key] = true;
    else if (lower === "false") out[key] = false;
    else throw new FlagError(`flag -feature-gates: invalid value of ${key}=${value}, want true or false`);
  }
  return out;
}

/**
 * `--leader-election-labels` items: csi-lib-utils splits each at ":" and refuses an item that
 * is not exactly key:value; csikit also takes key=value (what it documented before), so both
 * a 2026 manifest and an older csikit one start.
 */
export function parseLeaseLabels(items: readonly string[]): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const item of items) {
    if (item === "") continue;
    const colon = item.split(":");
    const eq = item.indexOf("=");
    let key: string;
    let value: string;
    if (colon.length === 2 && eq < 0) [key, value] = colon as [string, string];
    else if (eq > 0 && !item.slice(0, eq).includes(":"))
      [key, value] = [item.slice(0, eq), item.slice(eq + 1)];
    else throw new FlagError(`flag -leader-election-labels: malformed item in list of labels: ${item}`);
    if (key.trim() === "") throw new FlagError(`flag -leader-election-labels: empty key in ${item}`);
    labels[key.trim()] = value.trim();
  }
  return labels;
}

/** A numeric flag's value, refused with a FlagError naming the flag when below `min`. */
export function flagAtLeast(flags: Flags, name: string, min: number): number {
  const value = flags.number(name);
  if (value < min) throw new FlagError(`flag -${name} must be at least ${min}, got ${value}`);
  return value;
}

/**
 * A sidecar's feature gates: its own defaults overlaid with `--feature-gates`; a gate the
 * sidecar does not know is refused, as each upstream sidecar's gate set refuses it.
 */
export function sidecarFeatureGates(
  given: Record<string, boolean>,
  defaults: Readonly<Record<string, boolean>>,
): Record<string, boolean> {
  const gates: Record<string, boolean> = { ...defaults };
  for (const [name, value] of Object.entries(given)) {
    if (!(name in defaults)) throw new FlagError(`flag -feature-gates: unrecognized feature gate: ${name}`);
    gates[name] = value;
  }
  return gates;
}

/** Typed options from flags parsed with COMMON_SIDECAR_FLAGS; FlagError names any bad flag. */
export function commonSidecarOptions(flags: Flags): CommonSidecarOptions {
  const leaseDurationMs = positive(flags, "leader-election-lease-duration");
  const renewDeadlineMs = positive(flags, "leader-election-renew-deadline");
  const retryPeriodMs = positive(flags, "leader-election-retry-period");
  // The same ordering client-go's NewLeaderElector enforces.
  if (leaseDurationMs <= renewDeadlineMs)
    throw new FlagError(
      "flag -leader-election-lease-duration must be greater than -leader-election-renew-deadline",
    );
  if (renewDeadlineMs <= retryPeriodMs * 1.2)
    throw new FlagError(
      "flag -leader-election-renew-deadline must be greater than 1.2 × -leader-election-retry-period",
    );
  const retryStart = positive(flags, "retry-interval-start");
  const retryMax = positive(flags, "retry-interval-max");
  if (retryMax < retryStart)
    throw new FlagError("flag -retry-interval-max must not be smaller than -retry-interval-start");
  const httpEndpoint = flags.string("http-endpoint");
  const metricsAddress = flags.string("metrics-address");
  if (httpEndpoint !== "" && metricsAddress !== "")
    throw new FlagError("only one of -metrics-address and -http-endpoint can be set");
  return {
    kubeconfig: flags.string("kubeconfig"),
    master: flags.string("master"),
    csiAddress: flags.string("csi-address"),
    leaderElection: {
      enabled: flags.bool("leader-election"),
      namespace: flags.string("leader-election-namespace"),
      leaseDurationMs,
      renewDeadlineMs,
      retryPeriodMs,
      labels: flags.parsed.values.has("leader-election-labels")
        ? parseLeaseLabels(flags.strings("leader-election-labels"))
        : {},
    },
    kubeApiQps: positive(flags, "kube-api-qps"),
    kubeApiBurst: positive(flags, "kube-api-burst"),
    httpEndpoint: httpEndpoint !== "" ? httpEndpoint : metricsAddress,
    metricsPath: flags.string("metrics-path"),
    featureGates: parseFeatureGates(flags.map("feature-gates")),
    retryIntervalStartMs: retryStart,
    retryIntervalMaxMs: retryMax,
  };
}

/**
 * component-base's logging flags (k8s.io/component-base/logs/api/v1), which the upstream
 * sidecars register and list in --help: accepted so a Deployment's arguments work unchanged.
 * `--logging-format` selects csikit's text or json log format (the CLI honours it like
 * -log-format); the buffering and stream-splitting flags are accepted and have no effect (the
 * csikit logger writes each line at once to stderr); `--vmodule` is accepted and ignored.
 */
export const SIDECAR_LOGGING_FLAGS: FlagSpecs = {
  "logging-format": {
    type: "string",
    default: "text",
    help: 'Sets the log format. Permitted formats: "json", "text".',
  },
  "log-flush-frequency": {
    type: "duration",
    default: "5s",
    help: "Maximum number of seconds between log flushes.",
  },
  "log-json-info-buffer-size": {
    type: "string",
    default: "0",
    help: "[Alpha] In JSON format with split output streams, the info messages can be buffered for a while to increase performance. The default value of zero bytes disables buffering. The size can be specified as number of bytes (512), multiples of 1000 (1K), multiples of 1024 (2Ki), or powers of those (3M, 4G, 5Mi, 6Gi). Accepted; csikit does not buffer.",
  },
  "log-json-split-stream": {
    type: "bool",
    default: "false",
    help: "[Alpha] In JSON format, write error messages to stderr and info messages to stdout. Accepted; csikit writes all to stderr.",
  },
  "log-text-info-buffer-size": {
    type: "string",
    default: "0",
    help: "[Alpha] In text format with split output streams, the info messages can be buffered for a while to increase performance. The default value of zero bytes disables buffering. Accepted; csikit does not buffer.",
  },
  "log-text-split-stream": {
    type: "bool",
    default: "false",
    help: "[Alpha] In text format, write error messages to stderr and info messages to stdout. Accepted; csikit writes all to stderr.",
  },
  vmodule: {
    type: "string",
    help: "comma-separated list of pattern=N settings for file-filtered logging (only works for text log format). Accepted and ignored.",
  },
};
