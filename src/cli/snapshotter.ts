// `csikit snapshotter`: the csi-snapshotter sidecar of external-snapshotter. Flags are upstream's
// (see src/sidecars/snapshotter/flags.ts); this file only turns them into options and runs it.

import {
  SNAPSHOTTER_FLAGS,
  runSnapshotter,
  snapshotterOptionsFromFlags,
} from "../sidecars/snapshotter/index.ts";
import type { Command } from "./command.ts";

export const snapshotterCommand: Command = {
  name: "snapshotter",
  summary:
    "Run the csi-snapshotter sidecar: CreateSnapshot/DeleteSnapshot for VolumeSnapshotContents of one CSI driver",
  usage: "csikit snapshotter --csi-address=/run/csi/socket [--kubeconfig=FILE] [flags]",
  description:
    "A drop-in for registry.k8s.io/sig-storage/csi-snapshotter (v8.6): same flags, annotations\n" +
    "(volumesnapshot-being-created guard), content status fields, Events, Lease\n" +
    "(external-snapshotter-leader-<driver>) and metrics. Works with csikit's or upstream's\n" +
    "snapshot-controller. Group snapshots go through the CSI GroupController service.\n" +
    "Environment: POD_NAMESPACE (leader-election namespace), NODE_NAME (--node-deployment).",
  flags: SNAPSHOTTER_FLAGS,
  async run({ flags, logger, signal }) {
    const options = snapshotterOptionsFromFlags(flags);
    await runSnapshotter({ ...options, logger }, signal);
    return 0;
  },
};
