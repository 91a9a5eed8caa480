// The registrar's flags: upstream node-driver-registrar v2.17's whole list (v2.13's plus
// --automaxprocs) with its defaults
// (cmd/csi-node-driver-registrar/main.go) plus component-base's logging flags, which it
// registers. It takes no Kubernetes flags: it never talks to the API server. Deprecated flags
// are accepted as upstream accepts them: --connection-timeout does nothing, --health-port=N
// serves /healthz on ":N", --mode=kubelet-registration-probe exits 0 at once.

import { FlagError, type FlagSpecs, type Flags } from "../../base/index.ts";
import { AUTOMAXPROCS_FLAG, SIDECAR_LOGGING_FLAGS } from "../../kube/diagnostics.ts";
import type { RegistrarOptions } from "./options.ts";

export const MODE_REGISTRATION = "registration";
export const MODE_KUBELET_REGISTRATION_PROBE = "kubelet-registration-probe";

export const REGISTRAR_FLAGS: FlagSpecs = {
  ...SIDECAR_LOGGING_FLAGS,
  automaxprocs: AUTOMAXPROCS_FLAG,
  "csi-address": {
    type: "string",
    default: "/run/csi/socket",
    help: "Path of the CSI driver socket that the node-driver-registrar will connect to.",
  },
  "kubelet-registration-path": {
    type: "string",
    help: "Path of the CSI driver socket on the Kubernetes host machine (required; returned to the kubelet as the plugin's endpoint).",
  },
  "plugin-registration-path": {
    type: "string",
    default: "/registration",
    help: "Path to Kubernetes plugin registration directory (the host's /var/lib/kubelet/plugins_registry).",
  },
  timeout: {
    type: "duration",
    default: "1s",
    help: "Timeout for waiting for communication with driver (GetPluginInfo) and for the /healthz GetInfo call.",
  },
  "connection-timeout": {
    type: "duration",
    default: "0s",
    help: "The --connection-timeout flag is deprecated.",
    deprecated:
      "accepted for compatibility and ignored: any value has no effect (a non-zero one logs a warning)",
  },
  "health-port": {
    type: "int",
    default: "0",
    help: "(deprecated) TCP port for healthz requests. Set to 0 to disable the healthz server. Only one of --health-port and --http-endpoint can be set.",
    deprecated:
      "when not 0, serves the /healthz check (is the registration socket there) on all interfaces at this port; use --http-endpoint, which serves the same check",
  },
  "http-endpoint": {
    type: "string",
    help: 'The TCP network address where the HTTP server for diagnostics, including pprof and the health check indicating whether the registration socket exists, will listen (example: ":8080"). Empty (the default) disables the server. Only one of --health-port and --http-endpoint can be set.',
  },
  mode: {
    type: "string",
    default: MODE_REGISTRATION,
    help: 'The running mode: "registration" runs as a long running process; "kubelet-registration-probe" exits 0 at once.',
    deprecated:
      '"kubelet-registration-probe" makes the process exit 0 at once without registering (the probe is no longer needed); "registration", the default, registers the driver and keeps running',
  },
  "enable-pprof": {
    type: "bool",
    default: "false",
    help: "Enable profiling on the --http-endpoint at /debug/pprof/ (Node: V8 heap snapshot at heap, CPU profile at profile?seconds=N).",
  },
};

/** What the command does: register, or (deprecated probe mode) exit 0 at once. */
export interface RegistrarInvocation {
  mode: typeof MODE_REGISTRATION | typeof MODE_KUBELET_REGISTRATION_PROBE;
  options: RegistrarOptions;
  /** Lines to log at start-up about deprecated flags in use. */
  warnings: string[];
}

/** Typed options from flags parsed with REGISTRAR_FLAGS; FlagError names any bad flag. */
export function registrarOptionsFromFlags(flags: Flags): RegistrarInvocation {
  const kubeletRegistrationPath = flags.string("kubelet-registration-path");
  if (kubeletRegistrationPath === "")
    throw new FlagError(
      "flag -kubelet-registration-path is required: the driver's socket path as the kubelet sees it, e.g. /var/lib/kubelet/plugins/<driver>/csi.sock",
    );
  const mode = flags.string("mode");
  if (mode !== MODE_REGISTRATION && mode !== MODE_KUBELET_REGISTRATION_PROBE)
    throw new FlagError(
      `invalid value ${JSON.stringify(mode)} for flag -mode: want ${MODE_REGISTRATION} or ${MODE_KUBELET_REGISTRATION_PROBE}`,
    );
  const timeoutMs = flags.number("timeout");
  if (!(timeoutMs > 0))
    throw new FlagError(`flag -timeout must be greater than zero, got ${flags.number("timeout")}ms`);
  const healthPort = flags.number("health-port");
  if (healthPort < 0 || healthPort > 65535)
    throw new FlagError(`flag -health-port must be a TCP port (0 disables), got ${healthPort}`);
  const httpEndpoint = flags.string("http-endpoint");
  if (healthPort > 0 && httpEndpoint !== "")
    throw new FlagError("only one of -health-port and -http-endpoint can be set");
  const warnings: string[] = [];
  if (flags.number("connection-timeout") !== 0)
    warnings.push("--connection-timeout is deprecated and will have no effect");
  if (mode === MODE_KUBELET_REGISTRATION_PROBE)
    warnings.push("--mode=kubelet-registration-probe is deprecated: the registration probe always succeeds");
  return {
    mode,
    warnings,
    options: {
      csiAddress: flags.string("csi-address"),
      kubeletRegistrationPath,
      pluginRegistrationPath: flags.string("plugin-registration-path"),
      timeoutMs,
      httpEndpoint: healthPort > 0 ? `:${healthPort}` : httpEndpoint,
      enablePprof: flags.bool("enable-pprof"),
    },
  };
}
