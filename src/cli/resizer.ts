// `csikit resizer`: the external-resizer sidecar. Flags and behaviour are upstream v2.2.1's (see
// src/sidecars/resizer/flags.ts); this file only turns them into options and starts it.

import { RESIZER_FLAGS, resizerOptionsFromFlags, startResizer } from "../sidecars/resizer/index.ts";
import type { Command } from "./command.ts";

export const resizerCommand: Command = {
  name: "resizer",
  summary:
    "Run the external-resizer sidecar: ControllerExpandVolume/ControllerModifyVolume for claims of one CSI driver",
  usage: "csikit resizer --csi-address=/run/csi/socket [--kubeconfig=FILE] [flags]",
  description:
    "A drop-in for registry.k8s.io/sig-storage/csi-resizer v2.2.1 (external-resizer v2.2.1, 2026; every\n" +
    "older flag still accepted): same flags, gates, conditions, allocatedResourceStatuses, annotations,\n" +
    "events, Lease and metrics. Grows the volume of a Bound claim whose request exceeds its capacity\n" +
    "and leaves NodeResizePending for the kubelet when the node must expand (RecoverVolumeExpansionFailure\n" +
    "GA, AnnotateFsResize on); applies VolumeAttributesClasses with ControllerModifyVolume, with\n" +
    "rollback (VolumeAttributesClass GA, on), also for a driver with MODIFY_VOLUME but no expansion.\n" +
    "--handle-volume-inuse-error keeps no cluster-wide pod cache (pods are listed per namespace on demand).\n" +
    "Environment: POD_NAMESPACE (leader-election namespace).",
  flags: RESIZER_FLAGS,
  async run({ flags, logger, signal }) {
    const options = resizerOptionsFromFlags(flags);
    await startResizer({ ...options, logger }, signal);
    return 0;
  },
};
