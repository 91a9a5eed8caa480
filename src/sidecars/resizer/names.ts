// The strings external-resizer v2.2 and the kubelet share through the claim and the PV
// (k8s.io/api/core/v1 constants and external-resizer's pkg/util): condition types, the
// allocatedResourceStatuses values, modifyVolumeStatus values, annotations and Event reasons.
// They are the contract with the kubelet (csikit node or a real one) and with users' tooling.

import { EVENT_REASONS } from "../../api/index.ts";

/** PVC condition types (PersistentVolumeClaimConditionType). */
export const CONDITION = {
  resizing: "Resizing",
  fileSystemResizePending: "FileSystemResizePending",
  controllerResizeError: "ControllerResizeError",
  nodeResizeError: "NodeResizeError",
  modifyingVolume: "ModifyingVolume",
  modifyVolumeError: "ModifyVolumeError",
} as const;

/** The condition types MergeResizeConditionsOfPVC owns (every other condition is kept as is). */
export const RESIZE_CONDITIONS: ReadonlySet<string> = new Set([
  CONDITION.resizing,
  CONDITION.fileSystemResizePending,
  CONDITION.controllerResizeError,
  CONDITION.nodeResizeError,
]);

/** status.allocatedResourceStatuses["storage"] values (ClaimResourceStatus). */
export const RESIZE_STATUS = {
  controllerInProgress: "ControllerResizeInProgress",
  controllerInfeasible: "ControllerResizeInfeasible",
  nodePending: "NodeResizePending",
  nodeInProgress: "NodeResizeInProgress",
  nodeInfeasible: "NodeResizeInfeasible",
} as const;

/** status.modifyVolumeStatus.status values (PersistentVolumeClaimModifyVolumeStatus). */
export const MODIFY_STATUS = {
  pending: "Pending",
  inProgress: "InProgress",
  infeasible: "Infeasible",
} as const;

export const ANNOTATION = {
  /** PVC: set by the expand controller for in-tree volumes, naming the resizer that acts. */
  storageResizer: "volume.kubernetes.io/storage-resizer",
  /** PV: the capacity before a resize that needs the node (gate AnnotateFsResize). */
  preResizeCapacity: "volume.alpha.kubernetes.io/pre-resize-capacity",
  /**
   * PVC (external-resizer v2.0, #496): set when controller expansion finished the whole resize,
   * so a kubelet that still sees the volume smaller than the PV (a ReadWriteMany volume on
   * another node) skips NodeExpandVolume; removed when a new expansion starts.
   */
  nodeExpansionNotRequired: "volume.kubernetes.io/node-expansion-not-required",
  /** PV: secret for ControllerModifyVolume (the provisioner copies it from the class). */
  controllerModifySecretName: "volume.kubernetes.io/controller-modify-secret-name",
  controllerModifySecretNamespace: "volume.kubernetes.io/controller-modify-secret-namespace",
} as const;

/** Event reasons (external-resizer pkg/util/events.go), from the contract table (docs/contract.md). */
export const REASON = {
  resizing: EVENT_REASONS.resizing.key,
  resizeFailed: EVENT_REASONS.volumeResizeFailed.key,
  resizeSuccessful: EVENT_REASONS.volumeResizeSuccessful.key,
  fileSystemResizeRequired: EVENT_REASONS.fileSystemResizeRequired.key,
  modify: EVENT_REASONS.volumeModify.key,
  modifyFailed: EVENT_REASONS.volumeModifyFailed.key,
  modifySuccessful: EVENT_REASONS.volumeModifySuccessful.key,
  modifyCancelled: EVENT_REASONS.volumeModifyCancelled.key,
} as const;

/** --extra-modify-metadata keys added to mutable_parameters. */
export const MODIFY_METADATA = {
  pvcName: "csi.storage.k8s.io/pvc/name",
  pvcNamespace: "csi.storage.k8s.io/pvc/namespace",
  pvName: "csi.storage.k8s.io/pv/name",
} as const;
