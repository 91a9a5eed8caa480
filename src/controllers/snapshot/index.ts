// The cluster-wide snapshot controller (external-snapshotter's snapshot-controller): VolumeSnapshot ↔
// VolumeSnapshotContent binding, the default class, finalizers, deletion, group snapshots.
export {
  startSnapshotController,
  SNAPSHOT_CONTROLLER_COMPONENT,
  SNAPSHOT_CONTROLLER_LEASE,
} from "./controller.ts";
export { SNAPSHOT_CONTROLLER_FLAGS, snapshotControllerOptionsFromFlags } from "./flags.ts";
export { SNAPSHOT_CONTROLLER_FEATURE_GATE_DEFAULTS, type SnapshotControllerOptions } from "./options.ts";
export {
  contentNameForSnapshot,
  contentNameForGroupSnapshot,
  memberSnapshotName,
  memberContentName,
} from "./names.ts";
