// The strings the csi-snapshotter sidecar shares with the snapshot-controller and with users
// (external-snapshotter v8.6 pkg/utils/util.go): annotations, finalizers, the managed-by label
// and Event reasons (from the contract table, src/api/contract.ts), the class parameter keys it
// reads and strips and the --extra-create-metadata keys. They are the contract with an upstream
// snapshot-controller (either may run beside the other), so they are spelled as upstream does.

import { ANNOTATIONS, EVENT_REASONS, FINALIZERS, LABELS } from "../../api/index.ts";

/** Every class parameter key with this prefix is the sidecar's, never the driver's. */
export const CSI_PARAMETER_PREFIX = "csi.storage.k8s.io/";

export const ANNOTATION = {
  /** On a content: CreateSnapshot was sent and has not answered with success or a final error. */
  beingCreated: ANNOTATIONS.volumeSnapshotBeingCreated.key,
  /** On a content: the snapshot-controller saw its VolumeSnapshot deleted (policy decides). */
  beingDeleted: ANNOTATIONS.volumeSnapshotBeingDeleted.key,
  /** On a content: the secret for Create/Delete(Snapshot), resolved by the snapshot-controller. */
  deletionSecretName: ANNOTATIONS.snapshotDeletionSecretName.key,
  deletionSecretNamespace: ANNOTATIONS.snapshotDeletionSecretNamespace.key,
  /** On a member content of a group snapshot: the group's handle (the controller sets it). */
  volumeGroupSnapshotHandle: ANNOTATIONS.volumeGroupSnapshotHandle.key,
  groupBeingCreated: ANNOTATIONS.volumeGroupSnapshotBeingCreated.key,
  groupBeingDeleted: ANNOTATIONS.volumeGroupSnapshotBeingDeleted.key,
  groupDeletionSecretName: ANNOTATIONS.groupSnapshotDeletionSecretName.key,
  groupDeletionSecretNamespace: ANNOTATIONS.groupSnapshotDeletionSecretNamespace.key,
} as const;

export const FINALIZER = {
  /** On a content bound to a snapshot: the sidecar removes it once the backend snapshot is gone. */
  content: FINALIZERS.volumeSnapshotContentBound.key,
  groupContent: FINALIZERS.volumeGroupSnapshotContentBound.key,
} as const;

/** On a content with distributed snapshotting: the node whose sidecar handles it. */
export const MANAGED_BY_LABEL = LABELS.snapshotManagedBy.key;

/** Class parameter keys (stripped before the CSI call; any other prefixed key is an error). */
export const PARAMETER = {
  snapshotterSecretName: `${CSI_PARAMETER_PREFIX}snapshotter-secret-name`,
  snapshotterSecretNamespace: `${CSI_PARAMETER_PREFIX}snapshotter-secret-namespace`,
  snapshotterListSecretName: `${CSI_PARAMETER_PREFIX}snapshotter-list-secret-name`,
  snapshotterListSecretNamespace: `${CSI_PARAMETER_PREFIX}snapshotter-list-secret-namespace`,
  groupSnapshotterSecretName: `${CSI_PARAMETER_PREFIX}group-snapshotter-secret-name`,
  groupSnapshotterSecretNamespace: `${CSI_PARAMETER_PREFIX}group-snapshotter-secret-namespace`,
  groupSnapshotterGetSecretName: `${CSI_PARAMETER_PREFIX}group-snapshotter-get-secret-name`,
  groupSnapshotterGetSecretNamespace: `${CSI_PARAMETER_PREFIX}group-snapshotter-get-secret-namespace`,
} as const;

/** --extra-create-metadata keys added to CreateSnapshot / CreateVolumeGroupSnapshot parameters. */
export const CREATE_METADATA = {
  snapshotName: `${CSI_PARAMETER_PREFIX}volumesnapshot/name`,
  snapshotNamespace: `${CSI_PARAMETER_PREFIX}volumesnapshot/namespace`,
  contentName: `${CSI_PARAMETER_PREFIX}volumesnapshotcontent/name`,
  groupSnapshotName: `${CSI_PARAMETER_PREFIX}volumegroupsnapshot/name`,
  groupSnapshotNamespace: `${CSI_PARAMETER_PREFIX}volumegroupsnapshot/namespace`,
  groupContentName: `${CSI_PARAMETER_PREFIX}volumegroupsnapshotcontent/name`,
} as const;

/** Event reasons (Warning) the sidecar records on contents. */
export const REASON = {
  creationFailed: EVENT_REASONS.snapshotCreationFailed.key,
  checkFailed: EVENT_REASONS.snapshotContentCheckandUpdateFailed.key,
  deleteError: EVENT_REASONS.snapshotDeleteError.key,
  groupCreationFailed: EVENT_REASONS.groupSnapshotCreationFailed.key,
  groupCheckFailed: EVENT_REASONS.groupSnapshotContentCheckandUpdateFailed.key,
  groupDeleteError: EVENT_REASONS.groupSnapshotDeleteError.key,
} as const;

/**
 * Upstream marks its own failed API writes with this text in status.error; such an error does
 * not stop a later create (pkg/sidecar-controller: controllerUpdateFailMsg).
 */
export const CONTROLLER_UPDATE_FAIL_MSG = "snapshot controller failed to update";

/**
 * The CSI snapshot name: `<prefix>-<UID>`, or with a UUID length the UID without dashes cut to
 * that many characters (makeSnapshotName). A length beyond the 32 hex digits is refused at start.
 */
export function snapshotName(prefix: string, uid: string, uuidLength: number): string {
  if (uid === "") throw new Error("Corrupted snapshot object, it is missing UID");
  if (uuidLength === -1) return `${prefix}-${uid}`;
  return `${prefix}-${uid.replaceAll("-", "").slice(0, uuidLength)}`;
}

/** The CSI group snapshot name, the same rule with the group flags. */
export function groupSnapshotName(prefix: string, uid: string, uuidLength: number): string {
  if (uid === "") throw new Error("group snapshot object is missing UID");
  if (uuidLength === -1) return `${prefix}-${uid}`;
  return `${prefix}-${uid.replaceAll("-", "").slice(0, uuidLength)}`;
}

const KNOWN_PREFIXED: ReadonlySet<string> = new Set(Object.values(PARAMETER));

/**
 * The class parameters the driver gets (RemovePrefixedParameters): the sidecar's own
 * `csi.storage.k8s.io/` keys are stripped; any other key with that prefix is refused.
 */
export function driverParameters(parameters: Readonly<Record<string, string>> = {}): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(parameters)) {
    if (!key.startsWith(CSI_PARAMETER_PREFIX)) out[key] = value;
    else if (!KNOWN_PREFIXED.has(key))
      throw new Error(`found unknown parameter key "${key}" with reserved namespace ${CSI_PARAMETER_PREFIX}`);
  }
  return out;
}
