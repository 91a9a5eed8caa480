// `csikit attacher`: the external-attacher sidecar. Flags are upstream's (see
// src/sidecars/attacher/flags.ts); this file only turns them into options and runs it.

import { ATTACHER_FLAGS, attacherOptionsFromFlags, runAttacher } from "../sidecars/attacher/index.ts";
import type { Command } from "./command.ts";

export const attacherCommand: Command = {
  name: "attacher",
  summary:
    "Run the external-attacher sidecar: ControllerPublish/Unpublish for VolumeAttachments of one CSI driver",
  usage: "csikit attacher --csi-address=/run/csi/socket [--kubeconfig=FILE] [flags]",
  description:
    "A drop-in for registry.k8s.io/sig-storage/csi-attacher, matching upstream external-attacher\n" +
    "v4.12.0 (2026; every older flag still accepted): same flags, finalizer\n" +
    "(external-attacher/<driver>), node-id annotation, status fields, Lease and metrics\n" +
    "(docs/attacher.md). A driver without PUBLISH_UNPUBLISH_VOLUME gets attachments marked attached\n" +
    "without a CSI call. Environment: POD_NAMESPACE (leader-election namespace).",
  flags: ATTACHER_FLAGS,
  async run({ flags, logger, signal }) {
    const options = attacherOptionsFromFlags(flags);
    await runAttacher({ ...options, logger }, signal);
    return 0;
  },
};
