// Group/version/resource/kind constants for every kind csikit reads or writes, so no component
// spells "persistentvolumeclaims" or "storage.k8s.io/v1" by hand.

export interface GroupVersionResource {
  group: string;
  version: string;
  resource: string;
}

export interface GroupVersionKindResource extends GroupVersionResource {
  kind: string;
  namespaced: boolean;
}

function gvr(group: string, version: string, resource: string, kind: string, namespaced: boolean) {
  return Object.freeze({ group, version, resource, kind, namespaced }) satisfies GroupVersionKindResource;
}

export const GVR = Object.freeze({
  namespaces: gvr("", "v1", "namespaces", "Namespace", false),
  nodes: gvr("", "v1", "nodes", "Node", false),
  pods: gvr("", "v1", "pods", "Pod", true),
  persistentVolumes: gvr("", "v1", "persistentvolumes", "PersistentVolume", false),
  persistentVolumeClaims: gvr("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true),
  secrets: gvr("", "v1", "secrets", "Secret", true),
  configMaps: gvr("", "v1", "configmaps", "ConfigMap", true),
  serviceAccounts: gvr("", "v1", "serviceaccounts", "ServiceAccount", true),
  events: gvr("", "v1", "events", "Event", true),
  eventsV1: gvr("events.k8s.io", "v1", "events", "Event", true),
  storageClasses: gvr("storage.k8s.io", "v1", "storageclasses", "StorageClass", false),
  csiDrivers: gvr("storage.k8s.io", "v1", "csidrivers", "CSIDriver", false),
  csiNodes: gvr("storage.k8s.io", "v1", "csinodes", "CSINode", false),
  volumeAttachments: gvr("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", false),
  csiStorageCapacities: gvr("storage.k8s.io", "v1", "csistoragecapacities", "CSIStorageCapacity", true),
  // v1beta1: the version external-resizer v1.13 and external-provisioner v5.2 (Kubernetes 1.32)
  // read, so csikit's sidecars run against the same API servers as theirs.
  volumeAttributesClasses: gvr(
    "storage.k8s.io",
    "v1beta1",
    "volumeattributesclasses",
    "VolumeAttributesClass",
    false,
  ),
  leases: gvr("coordination.k8s.io", "v1", "leases", "Lease", true),
  statefulSets: gvr("apps", "v1", "statefulsets", "StatefulSet", true),
  controllerRevisions: gvr("apps", "v1", "controllerrevisions", "ControllerRevision", true),
  replicaSets: gvr("apps", "v1", "replicasets", "ReplicaSet", true),
  deployments: gvr("apps", "v1", "deployments", "Deployment", true),
  daemonSets: gvr("apps", "v1", "daemonsets", "DaemonSet", true),
  jobs: gvr("batch", "v1", "jobs", "Job", true),
  cronJobs: gvr("batch", "v1", "cronjobs", "CronJob", true),
  clusterRoles: gvr("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", false),
  clusterRoleBindings: gvr(
    "rbac.authorization.k8s.io",
    "v1",
    "clusterrolebindings",
    "ClusterRoleBinding",
    false,
  ),
  roles: gvr("rbac.authorization.k8s.io", "v1", "roles", "Role", true),
  roleBindings: gvr("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", true),
  customResourceDefinitions: gvr(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    "CustomResourceDefinition",
    false,
  ),
  volumeSnapshots: gvr("snapshot.storage.k8s.io", "v1", "volumesnapshots", "VolumeSnapshot", true),
  volumeSnapshotContents: gvr(
    "snapshot.storage.k8s.io",
    "v1",
    "volumesnapshotcontents",
    "VolumeSnapshotContent",
    false,
  ),
  volumeSnapshotClasses: gvr(
    "snapshot.storage.k8s.io",
    "v1",
    "volumesnapshotclasses",
    "VolumeSnapshotClass",
    false,
  ),
  volumeGroupSnapshots: gvr(
    "groupsnapshot.storage.k8s.io",
    "v1",
    "volumegroupsnapshots",
    "VolumeGroupSnapshot",
    true,
  ),
  volumeGroupSnapshotContents: gvr(
    "groupsnapshot.storage.k8s.io",
    "v1",
    "volumegroupsnapshotcontents",
    "VolumeGroupSnapshotContent",
    false,
  ),
  volumeGroupSnapshotClasses: gvr(
    "groupsnapshot.storage.k8s.io",
    "v1",
    "volumegroupsnapshotclasses",
    "VolumeGroupSnapshotClass",
    false,
  ),
  snapshotMetadataServices: gvr(
    "cbt.storage.k8s.io",
    "v1beta1",
    "snapshotmetadataservices",
    "SnapshotMetadataService",
    false,
  ),
});

/** "v1" for the core group, "<group>/<version>" otherwise. */
export function apiVersionOf(group: string, version: string): string {
  return group === "" ? version : `${group}/${version}`;
}

/** Splits an apiVersion into group and version ("v1" → core). */
export function parseAPIVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.indexOf("/");
  if (slash < 0) return { group: "", version: apiVersion };
  return { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

/** URL path of a collection: /api/v1/namespaces/ns/pods or /apis/g/v/resource. */
export function collectionPath(target: GroupVersionResource, namespace?: string): string {
  const base = target.group === "" ? `/api/${target.version}` : `/apis/${target.group}/${target.version}`;
  const ns = namespace !== undefined && namespace !== "" ? `/namespaces/${namespace}` : "";
  return `${base}${ns}/${target.resource}`;
}
