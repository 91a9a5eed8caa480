// `csikit provisioner`: the external-provisioner sidecar. Flags are upstream's (see
// src/sidecars/provisioner/flags.ts); this file only turns them into options and starts it.

import {
  PROVISIONER_FLAGS,
  provisionerOptionsFromFlags,
  startProvisioner,
} from "../sidecars/provisioner/index.ts";
import type { Command } from "./command.ts";

export const provisionerCommand: Command = {
  name: "provisioner",
  summary: "Run the external-provisioner sidecar: CreateVolume/DeleteVolume for claims of one CSI driver",
  usage: "csikit provisioner --csi-address=/run/csi/socket [--kubeconfig=FILE] [flags]",
  description:
    "A drop-in for registry.k8s.io/sig-storage/csi-provisioner, matching upstream external-provisioner\n" +
    "v6.3.0 (2026; every older flag still accepted): same flags, annotations, finalizers,\n" +
    "events and metrics. Claims in flight carry the finalizer provisioner.csikit.io/volume-in-flight so a\n" +
    "restart never leaks a volume (docs/provisioner.md). Environment: NODE_NAME (--node-deployment),\n" +
    "NAMESPACE and POD_NAME (--enable-capacity), POD_NAMESPACE (leader-election namespace).",
  flags: PROVISIONER_FLAGS,
  async run({ flags, logger, signal }) {
    const options = provisionerOptionsFromFlags(flags);
    await startProvisioner({ ...options, logger }, signal);
    return 0;
  },
};
