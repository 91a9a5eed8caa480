// `csikit livenessprobe`: the livenessprobe sidecar. Flags are upstream's (see
// src/sidecars/livenessprobe/flags.ts); this file only turns them into options and starts it.

import {
  LIVENESSPROBE_FLAGS,
  livenessProbeOptionsFromFlags,
  startLivenessProbe,
} from "../sidecars/livenessprobe/index.ts";
import type { Command } from "./command.ts";

export const livenessprobeCommand: Command = {
  name: "livenessprobe",
  summary: "Run the livenessprobe sidecar: /healthz answers from the CSI driver's Probe",
  usage: "csikit livenessprobe --csi-address=/csi/csi.sock [--http-endpoint=:9808] [flags]",
  description:
    "A drop-in for registry.k8s.io/sig-storage/livenessprobe, matching upstream livenessprobe v2.19.0\n" +
    "(2026; every older flag still accepted; --probe-timeout 3s as since v2.17): same flags, same /healthz answers\n" +
    '(200 "ok"; 500 with the reason when the driver is not ready, unreachable or timed out), same\n' +
    "csi_sidecar_operations_seconds metric. Waits for the driver without a limit at start-up, so a\n" +
    "slow driver does not crash-loop it. Needs no Kubernetes API access.",
  flags: LIVENESSPROBE_FLAGS,
  async run({ flags, logger, signal }) {
    await startLivenessProbe({ ...livenessProbeOptionsFromFlags(flags), logger }, signal);
    return 0;
  },
};
