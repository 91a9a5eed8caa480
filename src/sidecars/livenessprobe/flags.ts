// The livenessprobe's flags: upstream livenessprobe v2.19.0's whole list with its defaults
// (v2.15's plus --automaxprocs; --probe-timeout 3s since v2.17)
// (cmd/livenessprobe/main.go) plus component-base's logging flags, which it registers. It
// takes no Kubernetes flags: it never talks to the API server. Upstream's address rules hold:
// --http-endpoint excludes an explicitly changed --health-port and --metrics-address; without
// it /healthz listens on all interfaces at --health-port (deprecated, default 9808).

import { FlagError, type FlagSpecs, type Flags } from "../../base/index.ts";
import { AUTOMAXPROCS_FLAG, SIDECAR_LOGGING_FLAGS, parseListenAddress } from "../../kube/diagnostics.ts";
import type { LivenessProbeOptions } from "./options.ts";

export const DEFAULT_HEALTH_PORT = "9808";

export const LIVENESSPROBE_FLAGS: FlagSpecs = {
  ...SIDECAR_LOGGING_FLAGS,
  "csi-address": { type: "string", default: "/run/csi/socket", help: "Address of the CSI driver socket." },
  // 3s since livenessprobe v2.17 (kubernetes-csi/livenessprobe#365); v2.15 had 1s.
  "probe-timeout": { type: "duration", default: "3s", help: "Probe timeout in seconds." },
  automaxprocs: AUTOMAXPROCS_FLAG,
  "health-port": {
    type: "string",
    default: DEFAULT_HEALTH_PORT,
    help: "(deprecated) TCP ports for listening healthz requests. The default is `9808`. If set, --http-endpoint cannot be set.",
    deprecated:
      "without --http-endpoint, /healthz is served on all interfaces at this port (9808 unless set); use --http-endpoint, which serves /healthz and the metrics on one address",
  },
  "http-endpoint": {
    type: "string",
    help: "The TCP network address where the HTTP server for diagnostics, including CSI driver health check and metrics. The default is empty string, which means the server is disabled. If set, --health-port and --metrics-address cannot be explicitly set.",
  },
  "metrics-address": {
    type: "string",
    help: "(deprecated) The TCP network address where the prometheus metrics endpoint will listen (example: `:8080`). The default is empty string, which means metrics endpoint is disabled. If set, --http-endpoint cannot be set.",
    deprecated:
      "when set, the metrics (at --metrics-path) are served by a second HTTP server at this address; use --http-endpoint, which serves /healthz and the metrics on one address",
  },
  "metrics-path": {
    type: "string",
    default: "/metrics",
    help: "The HTTP path where prometheus metrics will be exposed. Default is `/metrics`.",
  },
};

/** Typed options from flags parsed with LIVENESSPROBE_FLAGS; FlagError names any bad flag. */
export function livenessProbeOptionsFromFlags(flags: Flags): LivenessProbeOptions {
  const healthPort = flags.string("health-port");
  const httpEndpoint = flags.string("http-endpoint");
  const metricsAddress = flags.string("metrics-address");
  if (healthPort !== DEFAULT_HEALTH_PORT && httpEndpoint !== "")
    throw new FlagError("only one of -health-port and -http-endpoint can be explicitly set");
  if (metricsAddress !== "" && httpEndpoint !== "")
    throw new FlagError("only one of -metrics-address and -http-endpoint can be explicitly set");
  const probeTimeoutMs = flags.number("probe-timeout");
  if (!(probeTimeoutMs > 0))
    throw new FlagError(`flag -probe-timeout must be greater than zero, got ${probeTimeoutMs}ms`);
  const address = httpEndpoint !== "" ? httpEndpoint : `0.0.0.0:${healthPort}`;
  // Fail at start-up naming the flag, not later at listen time.
  if (httpEndpoint !== "") checkAddress("http-endpoint", httpEndpoint, httpEndpoint);
  else checkAddress("health-port", healthPort, address);
  if (metricsAddress !== "") checkAddress("metrics-address", metricsAddress, metricsAddress);
  return {
    csiAddress: flags.string("csi-address"),
    probeTimeoutMs,
    address,
    metricsOnAddress: httpEndpoint !== "",
    ...(metricsAddress === "" ? {} : { metricsAddress }),
    metricsPath: flags.string("metrics-path"),
  };
}

function checkAddress(flag: string, given: string, address: string): void {
  try {
    parseListenAddress(address);
  } catch {
    throw new FlagError(
      `invalid value ${JSON.stringify(given)} for flag -${flag}: want ${flag === "health-port" ? "a TCP port" : "host:port or :port"}`,
    );
  }
}
