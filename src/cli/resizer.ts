// `csikit resizer`: the external-resizer sidecar. Flags are upstream v1.13's (see
// src/sidecars/resizer/flags.ts); this file only turns them into options and starts it.

import { RESIZER_FLAGS, resizerOptionsFromFlags, startResizer } from "../sidecars/resizer/index.ts";
import type { Command } from "./command.ts";

export const resizerCommand: Command = {
  name: "resizer",
  summary:
    "Run the external-resizer sidecar: ControllerExpandVolume/ControllerModifyVolume for claims of one CSI driver",
  usage: "csikit resizer --csi-address=/run/csi/socket [--kubeconfig=FILE] [flags]",
  description:
    "A drop-in for registry.k8s.io/sig-storage/csi-resizer, whose flags match upstream external-resizer\n" +
    "v2.2.1 (2026; every older flag still accepted; resize behaviour as v1.13): same flags, conditions,\n" +
    "allocatedResourceStatuses, events, Lease and metrics. Grows the volume of a Bound claim whose\n" +
    "request exceeds its capacity and leaves FileSystemResizePending for the kubelet when the node\n" +
    "must expand; with --feature-gates=VolumeAttributesClass=true also applies VolumeAttributesClasses.\n" +
    "Environment: POD_NAMESPACE (leader-election namespace).",
  flags: RESIZER_FLAGS,
  async run({ flags, logger, signal }) {
    const options = resizerOptionsFromFlags(flags);
    await startResizer({ ...options, logger }, signal);
    return 0;
  },
};
