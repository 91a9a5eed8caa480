// The csi-snapshotter sidecar (`csikit snapshotter`): a drop-in for external-snapshotter v8.6's
// csi-snapshotter — CreateSnapshot/DeleteSnapshot and the status checks for the
// VolumeSnapshotContents of one driver, group snapshots through the GroupController service.
// See controller.ts.
export { runSnapshotter, startSnapshotter, type SnapshotterHandle } from "./controller.ts";
export { SNAPSHOTTER_FLAGS, snapshotterOptionsFromFlags } from "./flags.ts";
export { SNAPSHOTTER_FEATURE_GATE_DEFAULTS, type SnapshotterOptions } from "./options.ts";
export {
  ANNOTATION as SNAPSHOT_ANNOTATIONS,
  FINALIZER as SNAPSHOT_FINALIZERS,
  MANAGED_BY_LABEL,
  PARAMETER as SNAPSHOT_CLASS_PARAMETERS,
  snapshotName,
  groupSnapshotName,
} from "./names.ts";
// The class secret templates, for the snapshot-controller's side (deletion-secret annotations).
export { snapshotSecretReference, type SecretParams, type SecretTemplateObjects } from "./secrets.ts";
