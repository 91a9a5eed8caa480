// The upstream contract as data (FACTS.md): annotation keys, finalizers, labels and Event
// reasons, each with who sets it. Components import these instead of spelling strings, and a
// docs test checks the tables against docs/ both ways.

export interface ContractEntry {
  readonly key: string;
  /** Kinds that carry it. */
  readonly on: readonly string[];
  /** The component that writes it (upstream's and csikit's twin). */
  readonly setBy: string;
  readonly meaning: string;
}

function entry(key: string, on: readonly string[], setBy: string, meaning: string): ContractEntry {
  return Object.freeze({ key, on: Object.freeze([...on]), setBy, meaning });
}

export const ANNOTATIONS = Object.freeze({
  storageProvisioner: entry(
    "volume.kubernetes.io/storage-provisioner",
    ["PersistentVolumeClaim"],
    "PV controller",
    "which provisioner acts on the claim",
  ),
  betaStorageProvisioner: entry(
    "volume.beta.kubernetes.io/storage-provisioner",
    ["PersistentVolumeClaim"],
    "PV controller",
    "legacy twin of storage-provisioner, still written and read",
  ),
  selectedNode: entry(
    "volume.kubernetes.io/selected-node",
    ["PersistentVolumeClaim"],
    "scheduler / distributed provisioner",
    "WaitForFirstConsumer node; removed to reschedule",
  ),
  provisionedBy: entry(
    "pv.kubernetes.io/provisioned-by",
    ["PersistentVolume"],
    "provisioner",
    "driver that created the volume",
  ),
  bindCompleted: entry(
    "pv.kubernetes.io/bind-completed",
    ["PersistentVolumeClaim"],
    "PV controller",
    "binding done",
  ),
  boundByController: entry(
    "pv.kubernetes.io/bound-by-controller",
    ["PersistentVolume", "PersistentVolumeClaim"],
    "PV controller",
    'the controller made the bind (value "yes")',
  ),
  migratedTo: entry(
    "pv.kubernetes.io/migrated-to",
    ["PersistentVolume", "PersistentVolumeClaim"],
    "PV controller (migration on)",
    "CSI driver of a migrated in-tree object",
  ),
  storageResizer: entry(
    "volume.kubernetes.io/storage-resizer",
    ["PersistentVolumeClaim"],
    "expand controller",
    "which resizer acts",
  ),
  preResizeCapacity: entry(
    "volume.alpha.kubernetes.io/pre-resize-capacity",
    ["PersistentVolume"],
    "resizer (AnnotateFsResize)",
    "capacity before a resize the node has yet to finish; lets the node expansion resume if the claim is bound anew",
  ),
  nodeExpansionNotRequired: entry(
    "volume.kubernetes.io/node-expansion-not-required",
    ["PersistentVolumeClaim"],
    "resizer",
    "controller expansion finished the resize; the kubelet skips NodeExpandVolume (ReadWriteMany)",
  ),
  provisionerDeletionSecretName: entry(
    "volume.kubernetes.io/provisioner-deletion-secret-name",
    ["PersistentVolume"],
    "provisioner",
    "secret name for DeleteVolume",
  ),
  provisionerDeletionSecretNamespace: entry(
    "volume.kubernetes.io/provisioner-deletion-secret-namespace",
    ["PersistentVolume"],
    "provisioner",
    "secret namespace for DeleteVolume",
  ),
  nodeID: entry("csi.volume.kubernetes.io/nodeid", ["Node"], "kubelet", "JSON map {driver: nodeID}"),
  migratedPlugins: entry(
    "storage.alpha.kubernetes.io/migrated-plugins",
    ["CSINode"],
    "kubelet",
    "in-tree plugins migrated on this node",
  ),
  attachmentNodeID: entry(
    "csi.alpha.kubernetes.io/node-id",
    ["VolumeAttachment"],
    "attacher",
    "node ID used at attach",
  ),
  controllerManagedAttachDetach: entry(
    "volumes.kubernetes.io/controller-managed-attach-detach",
    ["Node"],
    "kubelet",
    'the attach/detach controller manages attach (value "true")',
  ),
  isDefaultSnapshotClass: entry(
    "snapshot.storage.kubernetes.io/is-default-class",
    ["VolumeSnapshotClass"],
    "admin",
    "default snapshot class",
  ),
  isDefaultGroupSnapshotClass: entry(
    "groupsnapshot.storage.kubernetes.io/is-default-class",
    ["VolumeGroupSnapshotClass"],
    "admin",
    "default group snapshot class",
  ),
  volumeSnapshotBeingDeleted: entry(
    "snapshot.storage.kubernetes.io/volumesnapshot-being-deleted",
    ["VolumeSnapshotContent"],
    "snapshot-controller",
    'the bound VolumeSnapshot is being deleted (value "yes"); the sidecar may delete the backend snapshot',
  ),
  volumeGroupSnapshotBeingDeleted: entry(
    "groupsnapshot.storage.kubernetes.io/volumegroupsnapshot-being-deleted",
    ["VolumeGroupSnapshotContent"],
    "snapshot-controller",
    'the bound VolumeGroupSnapshot is being deleted (value "yes")',
  ),
  snapshotDeletionSecretName: entry(
    "snapshot.storage.kubernetes.io/deletion-secret-name",
    ["VolumeSnapshotContent"],
    "snapshot-controller",
    "secret name for DeleteSnapshot (from the class's snapshotter-secret parameters)",
  ),
  snapshotDeletionSecretNamespace: entry(
    "snapshot.storage.kubernetes.io/deletion-secret-namespace",
    ["VolumeSnapshotContent"],
    "snapshot-controller",
    "secret namespace for DeleteSnapshot",
  ),
  groupSnapshotDeletionSecretName: entry(
    "groupsnapshot.storage.kubernetes.io/deletion-secret-name",
    ["VolumeGroupSnapshotContent"],
    "snapshot-controller",
    "secret name for DeleteVolumeGroupSnapshot (from the class's group-snapshotter-secret parameters)",
  ),
  groupSnapshotDeletionSecretNamespace: entry(
    "groupsnapshot.storage.kubernetes.io/deletion-secret-namespace",
    ["VolumeGroupSnapshotContent"],
    "snapshot-controller",
    "secret namespace for DeleteVolumeGroupSnapshot",
  ),
  volumeSnapshotBeingCreated: entry(
    "snapshot.storage.kubernetes.io/volumesnapshot-being-created",
    ["VolumeSnapshotContent"],
    "snapshotter",
    'CreateSnapshot was sent and has not answered success or a final error (value "yes"); the content is not deleted meanwhile',
  ),
  volumeGroupSnapshotBeingCreated: entry(
    "groupsnapshot.storage.kubernetes.io/volumegroupsnapshot-being-created",
    ["VolumeGroupSnapshotContent"],
    "snapshotter",
    'CreateVolumeGroupSnapshot was sent and has not answered success or a final error (value "yes")',
  ),
  volumeGroupSnapshotHandle: entry(
    "groupsnapshot.storage.k8s.io/volumeGroupSnapshotHandle",
    ["VolumeSnapshotContent"],
    "snapshot-controller",
    "backend handle of the group snapshot a member content belongs to",
  ),
  isDefaultStorageClass: entry(
    "storageclass.kubernetes.io/is-default-class",
    ["StorageClass"],
    "admin",
    "default storage class",
  ),
  betaIsDefaultStorageClass: entry(
    "storageclass.beta.kubernetes.io/is-default-class",
    ["StorageClass"],
    "admin",
    "legacy twin of is-default-class, still honoured",
  ),
});

/** PV volumeAttributes key the provisioner stamps: `<unix-ms>-<rand 0..9999>-<driver>[-<node>]`. */
export const PROVISIONER_IDENTITY_ATTRIBUTE = "storage.kubernetes.io/csiProvisionerIdentity";

export const FINALIZERS = Object.freeze({
  pvcProtection: entry(
    "kubernetes.io/pvc-protection",
    ["PersistentVolumeClaim"],
    "PVC protection admission / controller",
    "claim in use by a pod is not removed",
  ),
  pvProtection: entry(
    "kubernetes.io/pv-protection",
    ["PersistentVolume"],
    "PV protection admission / controller",
    "bound volume is not removed",
  ),
  vacProtection: entry(
    "kubernetes.io/vac-protection",
    ["VolumeAttributesClass"],
    "volumeattributesclass-protection-controller",
    "class a claim or volume names is not removed",
  ),
  provisionerDeletion: entry(
    "external-provisioner.volume.kubernetes.io/finalizer",
    ["PersistentVolume"],
    "provisioner (HonorPVReclaimPolicy)",
    "DeleteVolume runs before the PV goes",
  ),
  cloningProtection: entry(
    "provisioner.storage.kubernetes.io/cloning-protection",
    ["PersistentVolumeClaim"],
    "provisioner",
    "clone source claim kept while a clone is provisioned",
  ),
  provisionerVolumeInFlight: entry(
    "provisioner.csikit.io/volume-in-flight",
    ["PersistentVolumeClaim"],
    "csikit provisioner (csikit only; upstream keeps this in memory)",
    "CreateVolume may be running or may have created a volume not yet saved as a PV; removed once settled",
  ),
  snapshotAsSourceProtectionProvisioner: entry(
    "provisioner.storage.kubernetes.io/volumesnapshot-as-source-protection",
    ["VolumeSnapshot"],
    "provisioner",
    "restore source snapshot kept while provisioning",
  ),
  volumeSnapshotContentBound: entry(
    "snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection",
    ["VolumeSnapshotContent"],
    "snapshot-controller",
    "content bound to a snapshot",
  ),
  volumeSnapshotBound: entry(
    "snapshot.storage.kubernetes.io/volumesnapshot-bound-protection",
    ["VolumeSnapshot"],
    "snapshot-controller",
    "snapshot bound to a content",
  ),
  volumeSnapshotAsSource: entry(
    "snapshot.storage.kubernetes.io/volumesnapshot-as-source-protection",
    ["VolumeSnapshot"],
    "snapshot-controller",
    "snapshot used as a restore source",
  ),
  volumeSnapshotInGroup: entry(
    "snapshot.storage.kubernetes.io/volumesnapshot-in-group-protection",
    ["VolumeSnapshot"],
    "snapshot-controller",
    "member of a group snapshot, kept until the group snapshot is gone",
  ),
  volumeGroupSnapshotContentBound: entry(
    "groupsnapshot.storage.kubernetes.io/volumegroupsnapshotcontent-bound-protection",
    ["VolumeGroupSnapshotContent"],
    "snapshot-controller",
    "group content bound to a group snapshot",
  ),
  volumeGroupSnapshotBound: entry(
    "groupsnapshot.storage.kubernetes.io/volumegroupsnapshot-bound-protection",
    ["VolumeGroupSnapshot"],
    "snapshot-controller",
    "group snapshot bound to a group content",
  ),
  pvcAsSource: entry(
    "snapshot.storage.kubernetes.io/pvc-as-source-protection",
    ["PersistentVolumeClaim"],
    "snapshot-controller",
    "claim being snapshotted",
  ),
});

/**
 * The attacher's finalizer for one driver: `external-attacher/` + the driver name with every
 * character outside [a-zA-Z0-9-] replaced by "-" and an "X" appended when that would end in "-"
 * (external-attacher's SanitizeDriverName), on the VolumeAttachment and the PV.
 */
export function attacherFinalizer(driverName: string): string {
  const sanitized = driverName.replace(/[^a-zA-Z0-9-]/g, "-");
  return `external-attacher/${sanitized.endsWith("-") ? sanitized + "X" : sanitized}`;
}

export const LABELS = Object.freeze({
  capacityDriverName: entry(
    "csi.storage.k8s.io/drivername",
    ["CSIStorageCapacity"],
    "provisioner (capacity tracking)",
    "driver the capacity belongs to",
  ),
  capacityManagedBy: entry(
    "csi.storage.k8s.io/managed-by",
    ["CSIStorageCapacity"],
    "provisioner (capacity tracking)",
    '"external-provisioner" or "external-provisioner-<node>"',
  ),
  snapshotManagedBy: entry(
    "snapshot.storage.kubernetes.io/managed-by",
    ["VolumeSnapshotContent"],
    "snapshot-controller (--enable-distributed-snapshotting)",
    "node whose csi-snapshotter (--node-deployment) handles the content",
  ),
  hostname: entry("kubernetes.io/hostname", ["Node"], "kubelet", "node host name"),
  metadataName: entry(
    "kubernetes.io/metadata.name",
    ["Namespace"],
    "API server",
    "the namespace's own name, set on every namespace",
  ),
  statefulSetPodName: entry(
    "statefulset.kubernetes.io/pod-name",
    ["Pod"],
    "statefulset-controller",
    "the pod's own name, so a Service can select one member",
  ),
  podIndex: entry("apps.kubernetes.io/pod-index", ["Pod"], "statefulset-controller", "the pod's ordinal"),
  controllerRevisionHash: entry(
    "controller-revision-hash",
    ["Pod", "ControllerRevision"],
    "statefulset-controller, daemonset-controller",
    "the ControllerRevision the pod was made from (a DaemonSet's revisions carry their own)",
  ),
  revisionHash: entry(
    "controller.kubernetes.io/hash",
    ["ControllerRevision"],
    "statefulset-controller",
    "the hash in the revision's name",
  ),
});

/** generateName of CSIStorageCapacity objects. */
export const CAPACITY_GENERATE_NAME = "csisc-";

/** Event reasons, by the component that records them (upstream values). */
export const EVENT_REASONS = Object.freeze({
  // kube-controller-manager's statefulset-controller ("create Claim <c> Pod <p> in StatefulSet <s> success", …)
  successfulCreate: entry(
    "SuccessfulCreate",
    ["StatefulSet"],
    "statefulset-controller",
    "a pod or claim created",
  ),
  failedCreate: entry(
    "FailedCreate",
    ["StatefulSet"],
    "statefulset-controller",
    "a pod or claim create failed",
  ),
  successfulDelete: entry("SuccessfulDelete", ["StatefulSet"], "statefulset-controller", "a pod deleted"),
  failedDelete: entry("FailedDelete", ["StatefulSet"], "statefulset-controller", "a pod delete failed"),
  successfulUpdate: entry(
    "SuccessfulUpdate",
    ["StatefulSet"],
    "statefulset-controller",
    "a pod's identity or storage put right",
  ),
  failedUpdate: entry("FailedUpdate", ["StatefulSet"], "statefulset-controller", "a pod update failed"),
  // sig-storage-lib-external-provisioner / external-provisioner
  provisioning: entry("Provisioning", ["PersistentVolumeClaim"], "provisioner", "CreateVolume started"),
  provisioningSucceeded: entry(
    "ProvisioningSucceeded",
    ["PersistentVolumeClaim"],
    "provisioner",
    "volume created",
  ),
  provisioningFailed: entry(
    "ProvisioningFailed",
    ["PersistentVolumeClaim"],
    "provisioner / PV controller",
    "provisioning failed",
  ),
  volumeFailedDelete: entry(
    "VolumeFailedDelete",
    ["PersistentVolume"],
    "provisioner / PV controller",
    "DeleteVolume failed",
  ),
  // pv-controller
  externalProvisioning: entry(
    "ExternalProvisioning",
    ["PersistentVolumeClaim"],
    "PV controller",
    "waiting for an external provisioner",
  ),
  waitForFirstConsumer: entry(
    "WaitForFirstConsumer",
    ["PersistentVolumeClaim"],
    "PV controller",
    "binding waits for a pod",
  ),
  waitForPodScheduled: entry(
    "WaitForPodScheduled",
    ["PersistentVolumeClaim"],
    "PV controller",
    "waiting for the pod to be scheduled",
  ),
  failedBinding: entry(
    "FailedBinding",
    ["PersistentVolumeClaim", "Pod"],
    "PV controller / ephemeral-volume-controller (source ephemeral_volume)",
    "no volume matches and no class to provision; a generic ephemeral volume's claim cannot be created or is not the pod's",
  ),
  volumeMismatch: entry(
    "VolumeMismatch",
    ["PersistentVolumeClaim"],
    "PV controller",
    "requested volume does not fit the claim",
  ),
  volumeFailedRecycle: entry(
    "VolumeFailedRecycle",
    ["PersistentVolume"],
    "PV controller",
    "Recycle requested, no recycler for the volume (volume Failed)",
  ),
  volumeUnknownReclaimPolicy: entry(
    "VolumeUnknownReclaimPolicy",
    ["PersistentVolume"],
    "PV controller",
    "reclaim policy not recognised (volume Failed)",
  ),
  claimLost: entry("ClaimLost", ["PersistentVolumeClaim"], "PV controller", "bound volume disappeared"),
  claimMisbound: entry(
    "ClaimMisbound",
    ["PersistentVolumeClaim"],
    "PV controller",
    "two claims bound one volume",
  ),
  // expand controller / external-resizer / kubelet
  externalExpanding: entry(
    "ExternalExpanding",
    ["PersistentVolumeClaim"],
    "expand controller",
    "waiting for an external resizer",
  ),
  resizing: entry("Resizing", ["PersistentVolumeClaim"], "resizer", "ControllerExpandVolume started"),
  volumeResizeFailed: entry(
    "VolumeResizeFailed",
    ["PersistentVolumeClaim"],
    "resizer",
    "ControllerExpandVolume failed",
  ),
  volumeResizeSuccessful: entry(
    "VolumeResizeSuccessful",
    ["PersistentVolumeClaim"],
    "resizer",
    "controller expansion done",
  ),
  fileSystemResizeRequired: entry(
    "FileSystemResizeRequired",
    ["PersistentVolumeClaim"],
    "resizer",
    "node expansion pending",
  ),
  volumeModify: entry(
    "VolumeModify",
    ["PersistentVolumeClaim"],
    "resizer",
    "ControllerModifyVolume started (VolumeAttributesClass changed)",
  ),
  volumeModifyFailed: entry(
    "VolumeModifyFailed",
    ["PersistentVolumeClaim"],
    "resizer",
    "ControllerModifyVolume failed, or the VolumeAttributesClass does not exist",
  ),
  volumeModifyCancelled: entry(
    "VolumeModifyCancelled",
    ["PersistentVolumeClaim"],
    "resizer",
    "a failed modification given up: the claim's VolumeAttributesClass was unset",
  ),
  volumeModifySuccessful: entry(
    "VolumeModifySuccessful",
    ["PersistentVolumeClaim"],
    "resizer",
    "ControllerModifyVolume done, status.currentVolumeAttributesClassName set",
  ),
  fileSystemResizeSuccessful: entry(
    "FileSystemResizeSuccessful",
    ["PersistentVolumeClaim", "Pod"],
    "kubelet",
    "NodeExpandVolume done",
  ),
  // scheduler
  scheduled: entry("Scheduled", ["Pod"], "scheduler", "pod bound to a node"),
  failedScheduling: entry("FailedScheduling", ["Pod"], "scheduler", "no node fits"),
  // attach/detach controller and kubelet
  successfulAttachVolume: entry(
    "SuccessfulAttachVolume",
    ["Pod"],
    "attach/detach controller",
    "VolumeAttachment reports attached",
  ),
  failedAttachVolume: entry(
    "FailedAttachVolume",
    ["Pod", "VolumeAttachment"],
    "attach/detach controller; csikit attacher (upstream's records none)",
    "attach failed or timed out (on the VolumeAttachment: ControllerPublishVolume or its preparation failed, see status.attachError)",
  ),
  failedDetachVolume: entry(
    "FailedDetachVolume",
    ["VolumeAttachment"],
    "csikit attacher (upstream's records none)",
    "ControllerUnpublishVolume or its preparation failed, see status.detachError",
  ),
  failedMount: entry("FailedMount", ["Pod"], "kubelet", "stage/publish failed or timed out"),
  failedMapVolume: entry("FailedMapVolume", ["Pod"], "kubelet", "block volume map failed"),
  // external-snapshotter
  snapshotCreated: entry("SnapshotCreated", ["VolumeSnapshot"], "snapshot-controller", "snapshot taken"),
  snapshotReady: entry("SnapshotReady", ["VolumeSnapshot"], "snapshot-controller", "snapshot ready to use"),
  snapshotContentCreationFailed: entry(
    "SnapshotContentCreationFailed",
    ["VolumeSnapshot"],
    "snapshot-controller",
    "content could not be created",
  ),
  snapshotValidationError: entry(
    "SnapshotValidationError",
    ["VolumeSnapshot"],
    "snapshot-controller",
    "exactly one source must be set",
  ),
  snapshotFinalizerError: entry(
    "SnapshotFinalizerError",
    ["VolumeSnapshot"],
    "snapshot-controller",
    "finalizers could not be added",
  ),
  errorPVCFinalizer: entry(
    "ErrorPVCFinalizer",
    ["VolumeSnapshot"],
    "snapshot-controller",
    "the source claim's finalizer could not be removed",
  ),
  snapshotContentMissing: entry(
    "SnapshotContentMissing",
    ["VolumeSnapshot"],
    "snapshot-controller",
    "the bound content does not exist",
  ),
  snapshotMisbound: entry(
    "SnapshotMisbound",
    ["VolumeSnapshot"],
    "snapshot-controller",
    "the content does not point back to the snapshot",
  ),
  snapshotContentMismatch: entry(
    "SnapshotContentMismatch",
    ["VolumeSnapshot"],
    "snapshot-controller",
    "the content is dynamic where pre-provisioned is expected, or the reverse",
  ),
  snapshotContentMisbound: entry(
    "SnapshotContentMisbound",
    ["VolumeSnapshot"],
    "snapshot-controller",
    "the content is bound to another snapshot",
  ),
  snapshotBindFailed: entry(
    "SnapshotBindFailed",
    ["VolumeSnapshot"],
    "snapshot-controller",
    "the pre-provisioned content could not be bound",
  ),
  snapshotStatusUpdateFailed: entry(
    "SnapshotStatusUpdateFailed",
    ["VolumeSnapshot"],
    "snapshot-controller",
    "the status write failed",
  ),
  snapshotHandleSet: entry(
    "SnapshotHandleSet",
    ["VolumeSnapshot"],
    "snapshot-controller",
    "a dynamic content carries a snapshot handle",
  ),
  snapshotCreationFailed: entry(
    "SnapshotCreationFailed",
    ["VolumeSnapshotContent"],
    "snapshotter",
    "CreateSnapshot (or what it needs: class, secret) failed",
  ),
  snapshotContentCheckandUpdateFailed: entry(
    "SnapshotContentCheckandUpdateFailed",
    ["VolumeSnapshotContent"],
    "snapshotter",
    "the status of a cut snapshot could not be read or written",
  ),
  groupSnapshotCreationFailed: entry(
    "GroupSnapshotCreationFailed",
    ["VolumeGroupSnapshotContent"],
    "snapshotter",
    "CreateVolumeGroupSnapshot failed",
  ),
  groupSnapshotContentCheckandUpdateFailed: entry(
    "GroupSnapshotContentCheckandUpdateFailed",
    ["VolumeGroupSnapshotContent"],
    "snapshotter",
    "the status of a group snapshot could not be read or written",
  ),
  groupSnapshotDeleteError: entry(
    "GroupSnapshotDeleteError",
    ["VolumeGroupSnapshotContent"],
    "snapshotter",
    "DeleteVolumeGroupSnapshot failed",
  ),
  snapshotPVCSourceMissing: entry(
    "SnapshotPVCSourceMissing",
    ["VolumeSnapshot"],
    "snapshot-controller",
    "a dynamic snapshot names no claim",
  ),
  createSnapshotContentFailed: entry(
    "CreateSnapshotContentFailed",
    ["VolumeSnapshot"],
    "snapshot-controller",
    "the content object could not be created",
  ),
  creatingSnapshot: entry(
    "CreatingSnapshot",
    ["VolumeSnapshot"],
    "snapshot-controller",
    "content created, waiting for the CSI driver",
  ),
  snapshotDeletePending: entry(
    "SnapshotDeletePending",
    ["VolumeSnapshot", "VolumeGroupSnapshot"],
    "snapshot-controller",
    "deletion waits (a claim is being restored from it, or it belongs to a group)",
  ),
  snapshotContentObjectDeleteError: entry(
    "SnapshotContentObjectDeleteError",
    ["VolumeSnapshot"],
    "snapshot-controller",
    "the content could not be deleted",
  ),
  getSnapshotClassFailed: entry(
    "GetSnapshotClassFailed",
    ["VolumeSnapshot"],
    "snapshot-controller",
    "the named VolumeSnapshotClass cannot be read",
  ),
  setDefaultSnapshotClassFailed: entry(
    "SetDefaultSnapshotClassFailed",
    ["VolumeSnapshot"],
    "snapshot-controller",
    "no single default class for the source's driver",
  ),
  contentValidationError: entry(
    "ContentValidationError",
    ["VolumeSnapshotContent"],
    "snapshot-controller",
    "exactly one of volumeHandle and snapshotHandle must be set",
  ),
  groupSnapshotValidationError: entry(
    "GroupSnapshotValidationError",
    ["VolumeGroupSnapshot"],
    "snapshot-controller",
    "exactly one source must be set",
  ),
  groupSnapshotFinalizerError: entry(
    "GroupSnapshotFinalizerError",
    ["VolumeGroupSnapshot"],
    "snapshot-controller",
    "finalizers could not be added",
  ),
  groupSnapshotContentMissing: entry(
    "GroupSnapshotContentMissing",
    ["VolumeGroupSnapshot"],
    "snapshot-controller",
    "the bound group content does not exist",
  ),
  groupSnapshotMisbound: entry(
    "GroupSnapshotMisbound",
    ["VolumeGroupSnapshot"],
    "snapshot-controller",
    "the group content does not point back",
  ),
  groupSnapshotContentMismatch: entry(
    "GroupSnapshotContentMismatch",
    ["VolumeGroupSnapshot"],
    "snapshot-controller",
    "the group content is of the wrong kind (dynamic/pre-provisioned)",
  ),
  groupSnapshotContentMisbound: entry(
    "GroupSnapshotContentMisbound",
    ["VolumeGroupSnapshot"],
    "snapshot-controller",
    "the group content is bound to another group snapshot",
  ),
  groupSnapshotBindFailed: entry(
    "GroupSnapshotBindFailed",
    ["VolumeGroupSnapshot"],
    "snapshot-controller",
    "the pre-provisioned group content could not be bound",
  ),
  groupSnapshotStatusUpdateFailed: entry(
    "GroupSnapshotStatusUpdateFailed",
    ["VolumeGroupSnapshot"],
    "snapshot-controller",
    "the status write failed",
  ),
  groupSnapshotHandleSet: entry(
    "GroupSnapshotHandleSet",
    ["VolumeGroupSnapshot"],
    "snapshot-controller",
    "a dynamic group content carries handles",
  ),
  groupSnapshotContentCreationFailed: entry(
    "GroupSnapshotContentCreationFailed",
    ["VolumeGroupSnapshot"],
    "snapshot-controller",
    "the group content could not be created",
  ),
  createGroupSnapshotContentFailed: entry(
    "CreateGroupSnapshotContentFailed",
    ["VolumeGroupSnapshot"],
    "snapshot-controller",
    "a member is not a CSI volume of the class's driver, or the create failed",
  ),
  creatingGroupSnapshot: entry(
    "CreatingGroupSnapshot",
    ["VolumeGroupSnapshot"],
    "snapshot-controller",
    "group content created, waiting for the CSI driver",
  ),
  groupSnapshotCreated: entry(
    "GroupSnapshotCreated",
    ["VolumeGroupSnapshot"],
    "snapshot-controller",
    "group snapshot taken",
  ),
  groupSnapshotReady: entry(
    "GroupSnapshotReady",
    ["VolumeGroupSnapshot"],
    "snapshot-controller",
    "group snapshot ready to use",
  ),
  groupSnapshotContentObjectDeleteError: entry(
    "GroupSnapshotContentObjectDeleteError",
    ["VolumeGroupSnapshot"],
    "snapshot-controller",
    "the group content could not be deleted",
  ),
  snapshotDeleteError: entry(
    "SnapshotDeleteError",
    ["VolumeSnapshotContent", "VolumeGroupSnapshot"],
    "snapshotter, snapshot-controller",
    "DeleteSnapshot, its secret or clearing the status failed (snapshotter, on the content); a member snapshot could not be deleted (snapshot-controller, on the group)",
  ),
  getGroupSnapshotClassFailed: entry(
    "GetGroupSnapshotClassFailed",
    ["VolumeGroupSnapshot"],
    "snapshot-controller",
    "the named VolumeGroupSnapshotClass cannot be read",
  ),
  setDefaultGroupSnapshotClassFailed: entry(
    "SetDefaultGroupSnapshotClassFailed",
    ["VolumeGroupSnapshot"],
    "snapshot-controller",
    "no single default group class for the claims' driver",
  ),
  groupContentValidationError: entry(
    "GroupContentValidationError",
    ["VolumeGroupSnapshotContent"],
    "snapshot-controller",
    "exactly one of groupSnapshotHandles and volumeHandles must be set",
  ),
  // leader election
  leaderElection: entry("LeaderElection", ["Lease"], "leader election", "became leader"),
  // external-health-monitor-controller (source csi-pv-monitor-controller-<driver>) and the kubelet (CSIVolumeHealth)
  volumeConditionAbnormal: entry(
    "VolumeConditionAbnormal",
    ["PersistentVolumeClaim", "Pod"],
    "health monitor / kubelet",
    "the driver reports the volume abnormal (claim: the driver's message; pod: Volume <name>: <message>)",
  ),
  nodeFailed: entry(
    "NodeFailed",
    ["PersistentVolumeClaim"],
    "health monitor (node watcher)",
    "pods using the claim are on a deleted, terminated or long-NotReady node",
  ),
  nodeRecovered: entry(
    "NodeRecovered",
    ["PersistentVolumeClaim"],
    "health monitor (node watcher)",
    "the node of the claim's pods is Ready again",
  ),
});
