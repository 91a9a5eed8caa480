// Names and pure predicates of the snapshot controller, as external-snapshotter v8 computes
// them (pkg/utils): content names, the names of group members, the secret reference resolved
// from a class's parameters, the default-class annotation and the binding checks. No I/O: the
// sync modules decide with these and write elsewhere.

import { createHash } from "node:crypto";
import {
  ANNOTATIONS,
  FINALIZERS,
  isDNS1123Label,
  isDNS1123Subdomain,
  type VolumeGroupSnapshot,
  type VolumeGroupSnapshotContent,
  type VolumeSnapshot,
  type VolumeSnapshotContent,
} from "../../api/index.ts";

/** Content of a dynamic snapshot: `snapcontent-<VolumeSnapshot UID>`. */
export function contentNameForSnapshot(snapshot: VolumeSnapshot): string {
  return `snapcontent-${snapshot.metadata?.uid ?? ""}`;
}

/** Content of a dynamic group snapshot: `groupsnapcontent-<VolumeGroupSnapshot UID>`. */
export function contentNameForGroupSnapshot(group: VolumeGroupSnapshot): string {
  return `groupsnapcontent-${group.metadata?.uid ?? ""}`;
}

const sha256Hex = (text: string): string => createHash("sha256").update(text).digest("hex");

/** A group member's VolumeSnapshot: `snapshot-<hex sha256(group UID + volume handle)>`. */
export function memberSnapshotName(groupUid: string, volumeHandle: string): string {
  return `snapshot-${sha256Hex(groupUid + volumeHandle)}`;
}

/** A group member's content: `snapcontent-<hex sha256(group UID + volume handle)>`. */
export function memberContentName(groupUid: string, volumeHandle: string): string {
  return `snapcontent-${sha256Hex(groupUid + volumeHandle)}`;
}

export const snapshotKey = (snapshot: VolumeSnapshot | VolumeGroupSnapshot): string =>
  `${snapshot.metadata?.namespace ?? ""}/${snapshot.metadata?.name ?? ""}`;

export const has = (object: { metadata?: { finalizers?: string[] } }, finalizer: string): boolean =>
  (object.metadata?.finalizers ?? []).includes(finalizer);

export const isDeleting = (object: { metadata?: { deletionTimestamp?: string } }): boolean =>
  object.metadata?.deletionTimestamp !== undefined && object.metadata.deletionTimestamp !== null;

export const isReady = (snapshot: VolumeSnapshot | VolumeGroupSnapshot): boolean =>
  snapshot.status?.readyToUse === true;

/** The snapshot has been cut on the storage system (status.creationTime set). */
export const isCreated = (snapshot: VolumeSnapshot | VolumeGroupSnapshot): boolean =>
  snapshot.status?.creationTime !== undefined && snapshot.status.creationTime !== null;

export const boundContentName = (snapshot: VolumeSnapshot): string | undefined =>
  snapshot.status?.boundVolumeSnapshotContentName || undefined;

export const boundGroupContentName = (group: VolumeGroupSnapshot): string | undefined =>
  group.status?.boundVolumeGroupSnapshotContentName || undefined;

/** The content's volumeSnapshotRef names this very snapshot (name, namespace and UID). */
export function contentPointsTo(content: VolumeSnapshotContent, snapshot: VolumeSnapshot): boolean {
  const ref = content.spec.volumeSnapshotRef;
  return (
    ref.name === snapshot.metadata?.name &&
    ref.namespace === snapshot.metadata?.namespace &&
    ref.uid === snapshot.metadata?.uid
  );
}

export function groupContentPointsTo(
  content: VolumeGroupSnapshotContent,
  group: VolumeGroupSnapshot,
): boolean {
  const ref = content.spec.volumeGroupSnapshotRef;
  return (
    ref.name === group.metadata?.name &&
    ref.namespace === group.metadata?.namespace &&
    ref.uid === group.metadata?.uid
  );
}

/**
 * Deletion to process: deletionTimestamp set and one of our finalizers still on it. csikit also
 * counts volumesnapshot-in-group-protection (upstream only as-source and bound): a member
 * deleted before its first sync would otherwise keep that finalizer forever.
 */
export const isSnapshotDeletionCandidate = (snapshot: VolumeSnapshot): boolean =>
  isDeleting(snapshot) &&
  (has(snapshot, FINALIZERS.volumeSnapshotAsSource.key) ||
    has(snapshot, FINALIZERS.volumeSnapshotBound.key) ||
    has(snapshot, FINALIZERS.volumeSnapshotInGroup.key));

export const isGroupSnapshotDeletionCandidate = (group: VolumeGroupSnapshot): boolean =>
  isDeleting(group) && has(group, FINALIZERS.volumeGroupSnapshotBound.key);

const GROUP_API_VERSION = "groupsnapshot.storage.k8s.io/v1";

/** The VolumeGroupSnapshot owning a member snapshot (ownerReference of groupsnapshot.storage.k8s.io/v1). */
export function parentGroupName(snapshot: VolumeSnapshot): string | undefined {
  const owner = (snapshot.metadata?.ownerReferences ?? []).find(
    (ref) => ref.kind === "VolumeGroupSnapshot" && ref.apiVersion === GROUP_API_VERSION,
  );
  return owner?.name || undefined;
}

export function groupOwnerReference(group: VolumeGroupSnapshot): {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
} {
  return {
    apiVersion: GROUP_API_VERSION,
    kind: "VolumeGroupSnapshot",
    name: group.metadata?.name ?? "",
    uid: group.metadata?.uid ?? "",
  };
}

export const isDefaultClass = (
  object: { metadata?: { annotations?: Record<string, string> } },
  annotation: string,
): boolean => object.metadata?.annotations?.[annotation] === "true";

export const DEFAULT_SNAPSHOT_CLASS = ANNOTATIONS.isDefaultSnapshotClass.key;
export const DEFAULT_GROUP_SNAPSHOT_CLASS = ANNOTATIONS.isDefaultGroupSnapshotClass.key;

/** Class parameter keys naming the snapshotter secret (used for DeleteSnapshot later). */
export const SNAPSHOTTER_SECRET = {
  what: "Snapshotter",
  name: "csi.storage.k8s.io/snapshotter-secret-name",
  namespace: "csi.storage.k8s.io/snapshotter-secret-namespace",
} as const;
export const GROUP_SNAPSHOTTER_SECRET = {
  what: "GroupSnapshotter",
  name: "csi.storage.k8s.io/group-snapshotter-secret-name",
  namespace: "csi.storage.k8s.io/group-snapshotter-secret-namespace",
} as const;

/** Replaces ${token} references (Go's os.Expand); an unknown token is an error naming it. */
function resolveTemplate(template: string, params: Record<string, string>): string {
  const missing = new Set<string>();
  const resolved = template.replace(
    /\$\{([^}]*)\}|\$([A-Za-z0-9_]+)/g,
    (_all, braced?: string, bare?: string) => {
      const key = braced ?? bare ?? "";
      const value = params[key];
      if (value === undefined) missing.add(key);
      return value ?? "";
    },
  );
  if (missing.size > 0)
    throw new Error(
      `invalid tokens: [${[...missing]
        .sort()
        .map((k) => JSON.stringify(k))
        .join(" ")}]`,
    );
  return resolved;
}

/**
 * The secret a class names for `what` (upstream's GetSecretReference): both keys or neither;
 * the namespace may use the content name and the snapshot's namespace, the name also the
 * snapshot's name. `prefix` is "volumesnapshot" or "volumegroupsnapshot". Undefined: none.
 */
export function secretReference(
  keys: { what: string; name: string; namespace: string },
  parameters: Record<string, string> | undefined,
  context: {
    prefix: "volumesnapshot" | "volumegroupsnapshot";
    contentName: string;
    name?: string;
    namespace?: string;
  },
): { name: string; namespace: string } | undefined {
  const params = parameters ?? {};
  const nameTemplate = params[keys.name];
  const namespaceTemplate = params[keys.namespace];
  if ((nameTemplate === undefined) !== (namespaceTemplate === undefined))
    throw new Error(
      `failed to get name and namespace template from params: either name and namespace for ${keys.what} secrets specified, Both must be specified`,
    );
  if (nameTemplate === undefined || namespaceTemplate === undefined) return undefined;
  if (nameTemplate === "" || namespaceTemplate === "")
    throw new Error(
      `failed to get name and namespace template from params: ${keys.what} secrets specified in parameters but value of either namespace or name is empty`,
    );
  const content = `${context.prefix}content.name`;
  const namespaceParams: Record<string, string> = { [content]: context.contentName };
  if (context.namespace !== undefined) namespaceParams[`${context.prefix}.namespace`] = context.namespace;
  let namespace: string;
  try {
    namespace = resolveTemplate(namespaceTemplate, namespaceParams);
  } catch (error) {
    throw new Error(
      `error resolving value ${JSON.stringify(namespaceTemplate)}: ${(error as Error).message}`,
    );
  }
  if (isDNS1123Label(namespace).length > 0)
    throw new Error(
      namespace !== namespaceTemplate
        ? `${JSON.stringify(namespaceTemplate)} resolved to ${JSON.stringify(namespace)} which is not a valid namespace name`
        : `${JSON.stringify(namespaceTemplate)} is not a valid namespace name`,
    );
  const nameParams: Record<string, string> = { [content]: context.contentName };
  if (context.name !== undefined) nameParams[`${context.prefix}.name`] = context.name;
  if (context.namespace !== undefined) nameParams[`${context.prefix}.namespace`] = context.namespace;
  let name: string;
  try {
    name = resolveTemplate(nameTemplate, nameParams);
  } catch (error) {
    throw new Error(`error resolving value ${JSON.stringify(nameTemplate)}: ${(error as Error).message}`);
  }
  if (isDNS1123Subdomain(name).length > 0)
    throw new Error(
      name !== nameTemplate
        ? `${JSON.stringify(nameTemplate)} resolved to ${JSON.stringify(name)} which is not a valid secret name`
        : `${JSON.stringify(nameTemplate)} is not a valid secret name`,
    );
  return { name, namespace };
}
