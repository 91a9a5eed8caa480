// The resizer's flags: external-resizer v2.2.1's list (cmd/csi-resizer/main.go on csi-lib-utils'
// standard flags, with --automaxprocs and --leader-election-labels, plus component-base's
// logging flags), with its defaults and meaning; v1.13's flags are all still there. `resizerOptionsFromFlags`
// validates ranges and feature gates and names the bad flag.

import { type FlagSpecs, type Flags } from "../../base/index.ts";
import {
  COMMON_SIDECAR_FLAGS,
  SIDECAR_LOGGING_FLAGS,
  commonSidecarOptions,
  flagAtLeast,
  sidecarFeatureGates,
} from "../../kube/index.ts";
import { RESIZER_FEATURE_GATE_DEFAULTS, type ResizerOptions } from "./options.ts";

export const RESIZER_FLAGS: FlagSpecs = {
  ...COMMON_SIDECAR_FLAGS,
  ...SIDECAR_LOGGING_FLAGS,
  master: {
    type: "string",
    help: "Master URL to build a client config from. Either this or kubeconfig needs to be set if the provisioner is being run out of cluster.",
  },
  kubeconfig: { type: "string", help: "Absolute path to the kubeconfig" },
  "resync-period": { type: "duration", default: "10m", help: "Resync period for cache" },
  workers: { type: "int", default: "10", help: "Concurrency to process multiple resize requests" },
  "extra-modify-metadata": {
    type: "bool",
    default: "false",
    help: "If set, add pv/pvc metadata to plugin modify requests as parameters.",
  },
  timeout: { type: "duration", default: "10s", help: "Timeout for waiting for CSI driver socket." },
  "retry-interval-start": {
    type: "duration",
    default: "1s",
    help: "Initial retry interval of failed volume resize. It exponentially increases with each failure, up to retry-interval-max.",
  },
  "retry-interval-max": {
    type: "duration",
    default: "5m",
    help: "Maximum retry interval of failed volume resize.",
  },
  "handle-volume-inuse-error": {
    type: "bool",
    default: "true",
    help: "Flag to turn on/off capability to handle volume in use error in resizer controller. Defaults to true if not set.",
  },
  "feature-gates": {
    type: "map",
    help: "A set of key=value pairs that describe feature gates for alpha/experimental features for csi external resizer. Options are: AnnotateFsResize=true|false (BETA - default=true), RecoverVolumeExpansionFailure=true|false (GA - default=true), VolumeAttributesClass=true|false (GA - default=true; turned off when the API server serves no VolumeAttributesClass API).",
  },
};

/** Typed options from flags parsed with RESIZER_FLAGS. */
export function resizerOptionsFromFlags(flags: Flags): Omit<ResizerOptions, "logger" | "clock"> {
  const common = commonSidecarOptions(flags);
  const gates = sidecarFeatureGates(common.featureGates, RESIZER_FEATURE_GATE_DEFAULTS);
  return {
    ...common,
    featureGates: gates,
    timeoutMs: flagAtLeast(flags, "timeout", 1),
    workers: flagAtLeast(flags, "workers", 1),
    resyncPeriodMs: flagAtLeast(flags, "resync-period", 0),
    extraModifyMetadata: flags.bool("extra-modify-metadata"),
    handleVolumeInUseError: flags.bool("handle-volume-inuse-error"),
    features: {
      recoverVolumeExpansionFailure: gates.RecoverVolumeExpansionFailure!,
      volumeAttributesClass: gates.VolumeAttributesClass!,
      annotateFsResize: gates.AnnotateFsResize!,
    },
  };
}
