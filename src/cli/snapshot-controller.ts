// `csikit snapshot-controller`: external-snapshotter v8.6's snapshot-controller. Flags are its
// own list (src/controllers/snapshot/flags.ts); this file only turns them into options.

import {
  SNAPSHOT_CONTROLLER_FLAGS,
  snapshotControllerOptionsFromFlags,
  startSnapshotController,
} from "../controllers/snapshot/index.ts";
import type { Command } from "./command.ts";

export const snapshotControllerCommand: Command = {
  name: "snapshot-controller",
  summary:
    "Run the snapshot controller: bind VolumeSnapshots to contents, default classes, finalizers, group snapshots",
  usage: "csikit snapshot-controller [--kubeconfig=FILE] [flags]",
  description:
    "A drop-in for registry.k8s.io/sig-storage/snapshot-controller (v8.6): same flags, finalizers,\n" +
    "annotations, events, Lease (snapshot-controller-leader) and metrics. Creates snapcontent-<uid>\n" +
    "for dynamic snapshots, binds pre-provisioned ones, picks the default VolumeSnapshotClass of the\n" +
    "source's driver, protects source claims and bound objects with finalizers, and takes group\n" +
    "snapshots (groupsnapshot.storage.k8s.io/v1). The CSI calls are the csi-snapshotter sidecar's.\n" +
    "Environment: POD_NAMESPACE (leader-election namespace).",
  flags: SNAPSHOT_CONTROLLER_FLAGS,
  async run({ flags, logger, signal }) {
    const options = snapshotControllerOptionsFromFlags(flags);
    await startSnapshotController({ ...options, logger }, signal);
    return 0;
  },
};
