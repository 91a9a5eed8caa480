// `csikit registrar`: the node-driver-registrar sidecar. Flags are upstream's (see
// src/sidecars/registrar/flags.ts); this file only turns them into options and starts it.

import {
  MODE_KUBELET_REGISTRATION_PROBE,
  REGISTRAR_FLAGS,
  registrarOptionsFromFlags,
  startRegistrar,
} from "../sidecars/registrar/index.ts";
import type { Command } from "./command.ts";

export const registrarCommand: Command = {
  name: "registrar",
  summary: "Run the node-driver-registrar sidecar: register a CSI driver with the kubelet's plugin watcher",
  usage:
    "csikit registrar --csi-address=/csi/csi.sock --kubelet-registration-path=/var/lib/kubelet/plugins/<driver>/csi.sock [flags]",
  description:
    "A drop-in for registry.k8s.io/sig-storage/csi-node-driver-registrar, matching upstream\n" +
    "node-driver-registrar v2.17.0 (2026; every older flag still accepted): same flags, same\n" +
    "registration socket (<plugin-registration-path>/<driver>-reg.sock, private to its user), same\n" +
    "/healthz. Needs no Kubernetes API access. SIGTERM removes the socket, which deregisters the\n" +
    "driver; a registration the kubelet refuses exits 1 so the container restarts.",
  flags: REGISTRAR_FLAGS,
  async run({ flags, logger, signal }) {
    const { mode, options, warnings } = registrarOptionsFromFlags(flags);
    for (const warning of warnings) logger.warn(warning);
    if (mode === MODE_KUBELET_REGISTRATION_PROBE) return 0;
    await startRegistrar({ ...options, logger }, signal);
    return 0;
  },
};
