// The table `csikit sidecars` and `csikit node-sidecars` are built from: per component its
// flag table (as its own command has it) and how to run it from flags. Adding a sidecar to
// the combined forms is one row here.

import type { Flags, FlagSpecs, Logger } from "../../base/index.ts";
import type { SharedSidecarRuntime } from "../../kube/index.ts";
import { ATTACHER_FLAGS, attacherOptionsFromFlags, runAttacher } from "../attacher/index.ts";
import {
  HEALTH_MONITOR_FLAGS,
  healthMonitorOptionsFromFlags,
  startHealthMonitor,
} from "../health-monitor/index.ts";
import {
  LIVENESSPROBE_FLAGS,
  livenessProbeOptionsFromFlags,
  startLivenessProbe,
} from "../livenessprobe/index.ts";
import { PROVISIONER_FLAGS, provisionerOptionsFromFlags, startProvisioner } from "../provisioner/index.ts";
import {
  MODE_KUBELET_REGISTRATION_PROBE,
  REGISTRAR_FLAGS,
  registrarOptionsFromFlags,
  startRegistrar,
} from "../registrar/index.ts";
import { RESIZER_FLAGS, resizerOptionsFromFlags, startResizer } from "../resizer/index.ts";
import { SNAPSHOTTER_FLAGS, runSnapshotter, snapshotterOptionsFromFlags } from "../snapshotter/index.ts";
import type { SidecarComponent } from "./controller.ts";

export interface ControllerSidecarRow {
  flags: FlagSpecs;
  /**
   * Validates the component's flags (a bad one is an error naming it) and returns how to run
   * it; called before anything starts, so a typo fails the process at once.
   */
  prepare(flags: Flags, logger: Logger): (shared: SharedSidecarRuntime, signal: AbortSignal) => Promise<void>;
}

export const CONTROLLER_SIDECARS: Readonly<Record<SidecarComponent, ControllerSidecarRow>> = {
  provisioner: {
    flags: PROVISIONER_FLAGS,
    prepare: (flags, logger) => {
      const options = provisionerOptionsFromFlags(flags);
      return (shared, signal) => startProvisioner({ ...options, logger, shared }, signal);
    },
  },
  attacher: {
    flags: ATTACHER_FLAGS,
    prepare: (flags, logger) => {
      const options = attacherOptionsFromFlags(flags);
      return (shared, signal) => runAttacher({ ...options, logger, shared }, signal);
    },
  },
  resizer: {
    flags: RESIZER_FLAGS,
    prepare: (flags, logger) => {
      const options = resizerOptionsFromFlags(flags);
      return (shared, signal) => startResizer({ ...options, logger, shared }, signal);
    },
  },
  snapshotter: {
    flags: SNAPSHOTTER_FLAGS,
    prepare: (flags, logger) => {
      const options = snapshotterOptionsFromFlags(flags);
      return (shared, signal) => runSnapshotter({ ...options, logger, shared }, signal);
    },
  },
  "health-monitor": {
    flags: HEALTH_MONITOR_FLAGS,
    prepare: (flags, logger) => {
      const options = healthMonitorOptionsFromFlags(flags);
      return (shared, signal) => startHealthMonitor({ ...options, logger, shared }, signal);
    },
  },
};

/** The node-side sidecars of `csikit node-sidecars`: no Kubernetes API, each its own socket use. */
export const NODE_SIDECARS = {
  registrar: {
    flags: REGISTRAR_FLAGS,
    prepare: (flags: Flags, logger: Logger): ((signal: AbortSignal) => Promise<void>) => {
      const { mode, options, warnings } = registrarOptionsFromFlags(flags);
      for (const warning of warnings) logger.warn(warning);
      if (mode === MODE_KUBELET_REGISTRATION_PROBE)
        throw new Error(
          "--registrar.mode=kubelet-registration-probe is a one-shot check: run `csikit registrar` for it",
        );
      return (signal) => startRegistrar({ ...options, logger }, signal);
    },
  },
  livenessprobe: {
    flags: LIVENESSPROBE_FLAGS,
    prepare: (flags: Flags, logger: Logger): ((signal: AbortSignal) => Promise<void>) => {
      const options = livenessProbeOptionsFromFlags(flags);
      return (signal) => startLivenessProbe({ ...options, logger }, signal);
    },
  },
} as const;
export type NodeSidecarComponent = keyof typeof NODE_SIDECARS;
