// Group snapshots (groupsnapshot.storage.k8s.io/v1), as external-snapshotter v8.6's
// groupsnapshot_controller_helper: the claims a label selector picks in the group's namespace →
// one VolumeGroupSnapshotContent `groupsnapcontent-<group UID>` (the sidecar cuts it and fills
// status.volumeSnapshotInfoList) → per member one VolumeSnapshotContent and one VolumeSnapshot
// named `snapcontent-`/`snapshot-<hex sha256(group UID + volume handle)>`, the snapshot owned by
// the group and carrying volumesnapshot-in-group-protection, bound both ways, the content's status
// seeded from the member's info. Deleting the group deletes its members (their in-group
// finalizer goes once the group is gone, snapshot-delete.ts) and, for Delete, its content.
// csikit picks claims with the whole selector (matchLabels and matchExpressions) from the cache;
// upstream lists with matchLabels only.

import {
  ANNOTATIONS,
  FINALIZERS,
  GVR,
  labelSelectorMatches,
  type PersistentVolume,
  type VolumeGroupSnapshot,
  type VolumeGroupSnapshotContent,
  type VolumeSnapshot,
  type VolumeSnapshotContent,
} from "../../api/index.ts";
import { isAlreadyExists, isNotFound } from "../../kube/index.ts";
import { SNAPSHOTS_BY_GROUP, VOLUMES_BY_HANDLE, type SnapshotSyncContext } from "./context.ts";
import { OPERATIONS } from "./metrics.ts";
import {
  DEFAULT_GROUP_SNAPSHOT_CLASS,
  GROUP_SNAPSHOTTER_SECRET,
  boundGroupContentName,
  contentNameForGroupSnapshot,
  groupContentPointsTo,
  groupOwnerReference,
  has,
  isCreated,
  isDefaultClass,
  isDeleting,
  isGroupSnapshotDeletionCandidate,
  isReady,
  memberContentName,
  memberSnapshotName,
  secretReference,
  snapshotKey,
} from "./names.ts";
import { restoreInProgress } from "./snapshot-delete.ts";
import { nanosToTime } from "./status.ts";
import { controllerUpdateError, errorText, groupErrorStatus, groupEvent } from "./writes.ts";

const GROUP_BOUND = FINALIZERS.volumeGroupSnapshotBound.key;
const GROUP_CONTENT_BOUND = FINALIZERS.volumeGroupSnapshotContentBound.key;

/** The bound PVs of the claims the selector picks (upstream's getVolumesFromVolumeGroupSnapshot). */
function groupVolumes(ctx: SnapshotSyncContext, group: VolumeGroupSnapshot): PersistentVolume[] {
  const selector = group.spec.source.selector;
  const namespace = group.metadata?.namespace ?? "";
  const claims = ctx.claimStore
    .listByNamespace(namespace)
    .filter((claim) => labelSelectorMatches(selector, claim.metadata?.labels ?? {}));
  if (claims.length === 0)
    throw new Error(
      `label selector ${JSON.stringify(selector ?? {})} for group snapshot not applied to any PVC`,
    );
  return claims
    .sort((a, b) => (a.metadata?.name ?? "").localeCompare(b.metadata?.name ?? ""))
    .map((claim) => {
      const name = claim.metadata?.name ?? "";
      if (claim.status?.phase !== "Bound")
        throw new Error(
          `the PVC ${name} is not yet bound to a PV, will not attempt to take a group snapshot`,
        );
      const volume = ctx.volumes.get(claim.spec?.volumeName ?? "");
      const ref = volume?.spec?.claimRef;
      if (
        !volume ||
        !ref ||
        ref.name !== name ||
        ref.namespace !== namespace ||
        (ref.uid && ref.uid !== claim.metadata?.uid)
      )
        throw new Error("claim in dataSource not bound or invalid");
      return volume;
    });
}

export async function syncGroupSnapshotKey(ctx: SnapshotSyncContext, key: string): Promise<void> {
  const caches = ctx.group;
  if (caches === undefined) return;
  let group = caches.groups.get(key);
  if (group === undefined) return;
  if (!isDeleting(group)) group = await ensureGroupClass(ctx, group);
  if (isDeleting(group)) return processGroupDeletion(ctx, group);
  const source = group.spec.source;
  if (!source.selector === !source.volumeGroupSnapshotContentName) {
    const message = "Exactly one of Selector and VolumeGroupSnapshotContentName should be specified";
    await groupErrorStatus(ctx, group, {
      setReadyToFalse: true,
      type: "Warning",
      reason: "GroupSnapshotValidationError",
      message,
    });
    throw new Error(message);
  }
  const content = source.volumeGroupSnapshotContentName
    ? await preProvisionedGroupContent(ctx, group)
    : await dynamicGroupContent(ctx, group);
  if (content !== undefined && !has(group, GROUP_BOUND) && boundGroupContentName(group)) {
    try {
      group = await setGroupFinalizers(ctx, group, [GROUP_BOUND], []);
    } catch (error) {
      groupEvent(
        ctx,
        group,
        "Warning",
        "GroupSnapshotFinalizerError",
        `Failed to check and update group snapshot: ${errorText(error)}`,
      );
      throw error;
    }
  }
  if (isReady(group) && boundGroupContentName(group)) {
    const bound = caches.groupContents.get(boundGroupContentName(group)!);
    if (bound === undefined)
      await groupErrorStatus(ctx, group, {
        setReadyToFalse: true,
        type: "Warning",
        reason: "GroupSnapshotContentMissing",
        message: "VolumeGroupSnapshotContent is missing",
      });
    else if (!groupContentPointsTo(bound, group))
      await groupErrorStatus(ctx, group, {
        setReadyToFalse: true,
        type: "Warning",
        reason: "GroupSnapshotMisbound",
        message: "VolumeGroupSnapshotContent is not bound to the VolumeGroupSnapshot correctly",
      });
    return;
  }
  const uid = group.metadata?.uid ?? "";
  const type = source.volumeGroupSnapshotContentName ? "pre-provisioned" : "dynamic";
  const driver = content?.spec.driver ?? "";
  if (!isCreated(group)) ctx.metrics.start(OPERATIONS.createGroupSnapshot, uid, driver, type);
  ctx.metrics.start(OPERATIONS.createGroupSnapshotAndReady, uid, driver, type);
  if (source.volumeGroupSnapshotContentName) {
    if (content === undefined) {
      await groupErrorStatus(ctx, group, {
        setReadyToFalse: true,
        type: "Warning",
        reason: "GroupSnapshotContentMissing",
        message: "VolumeGroupSnapshotContent is missing",
      });
      throw new Error(
        `group snapshot ${snapshotKey(group)} requests an non-existing group snapshot content ${source.volumeGroupSnapshotContentName}`,
      );
    }
    const ref = content.spec.volumeGroupSnapshotRef;
    let bound = content;
    if (!ref.uid || !content.spec.volumeGroupSnapshotClassName) {
      const spec: Record<string, unknown> = { volumeGroupSnapshotRef: { uid } };
      if (group.spec.volumeGroupSnapshotClassName)
        spec.volumeGroupSnapshotClassName = group.spec.volumeGroupSnapshotClassName;
      bound = caches.groupContents.remember(
        await ctx.client.patch<VolumeGroupSnapshotContent>(
          GVR.volumeGroupSnapshotContents,
          content.metadata?.name ?? "",
          { spec },
          { type: "merge" },
          ctx.signal,
        ),
      );
    }
    await writeGroupStatus(ctx, group, bound);
    return;
  }
  if (content !== undefined) {
    if (content.spec.source.groupSnapshotHandles) {
      await groupErrorStatus(ctx, group, {
        setReadyToFalse: true,
        type: "Warning",
        reason: "GroupSnapshotHandleSet",
        message: `GroupSnapshot handle should not be set in group snapshot content ${snapshotKey(group)} for dynamic provisioning`,
      });
      throw new Error(
        `VolumeGroupSnapshotHandle should not be set in the group snapshot content for dynamic provisioning for group snapshot ${snapshotKey(group)}`,
      );
    }
    await createMembers(ctx, content, group);
    await writeGroupStatus(ctx, group, content);
    return;
  }
  let created: VolumeGroupSnapshotContent;
  try {
    created = await createGroupContent(ctx, group);
  } catch (error) {
    await groupErrorStatus(ctx, group, {
      setReadyToFalse: true,
      type: "Warning",
      reason: "GroupSnapshotContentCreationFailed",
      message: `failed to create group snapshot content with error ${errorText(error)}`,
    });
    throw error;
  }
  await writeGroupStatus(ctx, group, created);
}

async function setGroupFinalizers(
  ctx: SnapshotSyncContext,
  group: VolumeGroupSnapshot,
  add: string[],
  remove: string[],
): Promise<VolumeGroupSnapshot> {
  const caches = ctx.group!;
  const latest = caches.groups.get(snapshotKey(group)) ?? group;
  const before = latest.metadata?.finalizers ?? [];
  const after = before.filter((f) => !remove.includes(f));
  for (const f of add) if (!after.includes(f)) after.push(f);
  if (after.length === before.length && after.every((f, i) => f === before[i])) return latest;
  try {
    return caches.groups.remember(
      await ctx.client.update(
        GVR.volumeGroupSnapshots,
        { ...latest, metadata: { ...latest.metadata, finalizers: after } },
        {},
        ctx.signal,
      ),
    );
  } catch (error) {
    throw controllerUpdateError(snapshotKey(group), errorText(error));
  }
}

async function ensureGroupClass(
  ctx: SnapshotSyncContext,
  group: VolumeGroupSnapshot,
): Promise<VolumeGroupSnapshot> {
  const caches = ctx.group!;
  const className = group.spec.volumeGroupSnapshotClassName;
  if (className) {
    if (caches.groupClasses.get(className) === undefined) {
      const message = `failed to get group snapshot class with error volumegroupsnapshotclass.groupsnapshot.storage.k8s.io "${className}" not found`;
      await groupErrorStatus(ctx, group, {
        setReadyToFalse: false,
        type: "Warning",
        reason: "GetGroupSnapshotClassFailed",
        message,
      });
      throw new Error(message);
    }
    return group;
  }
  if (group.spec.source.volumeGroupSnapshotContentName) return group;
  let name: string;
  try {
    const driver = groupVolumes(ctx, group)[0]?.spec?.csi?.driver;
    if (!driver)
      throw new Error(`snapshotting non-CSI volumes is not supported, group snapshot:${snapshotKey(group)}`);
    const defaults = caches.groupClasses
      .list()
      .filter((c) => isDefaultClass(c, DEFAULT_GROUP_SNAPSHOT_CLASS) && c.driver === driver);
    if (defaults.length === 0) throw new Error("cannot find default group snapshot class");
    if (defaults.length > 1) throw new Error(`${defaults.length} default snapshot classes were found`);
    name = defaults[0]!.metadata?.name ?? "";
  } catch (error) {
    await groupErrorStatus(ctx, group, {
      setReadyToFalse: false,
      type: "Warning",
      reason: "SetDefaultGroupSnapshotClassFailed",
      message: `Failed to set default group snapshot class with error ${errorText(error)}`,
    });
    throw error;
  }
  const latest = caches.groups.get(snapshotKey(group)) ?? group;
  return caches.groups.remember(
    await ctx.client.update(
      GVR.volumeGroupSnapshots,
      { ...latest, spec: { ...latest.spec, volumeGroupSnapshotClassName: name } },
      {},
      ctx.signal,
    ),
  );
}

async function preProvisionedGroupContent(
  ctx: SnapshotSyncContext,
  group: VolumeGroupSnapshot,
): Promise<VolumeGroupSnapshotContent | undefined> {
  const name = group.spec.source.volumeGroupSnapshotContentName ?? "";
  const content = ctx.group!.groupContents.get(name);
  if (content === undefined) return undefined;
  if (!content.spec.source.groupSnapshotHandles) {
    await groupErrorStatus(ctx, group, {
      setReadyToFalse: true,
      type: "Warning",
      reason: "GroupSnapshotContentMismatch",
      message: "VolumeGroupSnapshotContent is dynamically provisioned while expecting a pre-provisioned one",
    });
    throw new Error(
      `group snapshot ${snapshotKey(group)} expects a pre-provisioned VolumeGroupSnapshotContent ${name} but gets a dynamically provisioned one`,
    );
  }
  const ref = content.spec.volumeGroupSnapshotRef;
  if (
    ref.name !== group.metadata?.name ||
    ref.namespace !== group.metadata?.namespace ||
    (ref.uid && ref.uid !== group.metadata?.uid)
  ) {
    const message = `VolumeGroupSnapshotContent [${name}] is bound to a different group snapshot`;
    await groupErrorStatus(ctx, group, {
      setReadyToFalse: true,
      type: "Warning",
      reason: "GroupSnapshotContentMisbound",
      message,
    });
    throw new Error(message);
  }
  return content;
}

async function dynamicGroupContent(
  ctx: SnapshotSyncContext,
  group: VolumeGroupSnapshot,
): Promise<VolumeGroupSnapshotContent | undefined> {
  const name = contentNameForGroupSnapshot(group);
  const content = ctx.group!.groupContents.get(name);
  if (content === undefined) return undefined;
  if (content.spec.source.groupSnapshotHandles) {
    await groupErrorStatus(ctx, group, {
      setReadyToFalse: true,
      type: "Warning",
      reason: "GroupSnapshotContentMismatch",
      message: `VolumeGroupSnapshotContent ${name} is pre-provisioned while expecting a dynamically provisioned one`,
    });
    throw new Error(
      `group snapshot ${snapshotKey(group)} expects a dynamically provisioned VolumeGroupSnapshotContent ${name} but gets a pre-provisioned one`,
    );
  }
  if (!groupContentPointsTo(content, group)) {
    const message = `VolumeGroupSnapshotContent [${name}] is bound to a different group snapshot`;
    await groupErrorStatus(ctx, group, {
      setReadyToFalse: true,
      type: "Warning",
      reason: "GroupSnapshotContentMisbound",
      message,
    });
    throw new Error(message);
  }
  return content;
}

async function createGroupContent(
  ctx: SnapshotSyncContext,
  group: VolumeGroupSnapshot,
): Promise<VolumeGroupSnapshotContent> {
  const caches = ctx.group!;
  const className = group.spec.volumeGroupSnapshotClassName;
  const name = contentNameForGroupSnapshot(group);
  let volumes: PersistentVolume[];
  let secret: { name: string; namespace: string } | undefined;
  const klass = className ? caches.groupClasses.get(className) : undefined;
  try {
    if (!className)
      throw new Error(
        `failed to take group snapshot ${group.metadata?.name ?? ""} without a group snapshot class`,
      );
    if (klass === undefined)
      throw new Error(`volumegroupsnapshotclass.groupsnapshot.storage.k8s.io "${className}" not found`);
    volumes = groupVolumes(ctx, group);
    secret = secretReference(GROUP_SNAPSHOTTER_SECRET, klass.parameters, {
      prefix: "volumegroupsnapshot",
      contentName: name,
      name: group.metadata?.name ?? "",
      namespace: group.metadata?.namespace ?? "",
    });
  } catch (error) {
    throw new Error(
      `failed to get input parameters to create group snapshot ${group.metadata?.name ?? ""}: "${errorText(error)}"`,
    );
  }
  const handles: string[] = [];
  for (const volume of volumes) {
    const csi = volume.spec?.csi;
    if (!csi) {
      groupEvent(
        ctx,
        group,
        "Warning",
        "CreateGroupSnapshotContentFailed",
        `Cannot snapshot a non-CSI volume: ${volume.metadata?.name ?? ""}`,
      );
      throw new Error(
        `cannot snapshot a non-CSI volume for group snapshot ${snapshotKey(group)}: ${volume.metadata?.name ?? ""}`,
      );
    }
    if (csi.driver !== klass.driver) {
      const message = `Volume CSI driver (${csi.driver}) mismatch with VolumeGroupSnapshotClass (${klass.driver}) ${snapshotKey(group)}: ${volume.metadata?.name ?? ""}`;
      groupEvent(ctx, group, "Warning", "CreateGroupSnapshotContentFailed", message);
      throw controllerUpdateError(snapshotKey(group), message);
    }
    handles.push(csi.volumeHandle);
  }
  const content: VolumeGroupSnapshotContent = {
    apiVersion: "groupsnapshot.storage.k8s.io/v1",
    kind: "VolumeGroupSnapshotContent",
    metadata: {
      name,
      finalizers: [GROUP_CONTENT_BOUND],
      ...(secret
        ? {
            annotations: {
              [ANNOTATIONS.groupSnapshotDeletionSecretName.key]: secret.name,
              [ANNOTATIONS.groupSnapshotDeletionSecretNamespace.key]: secret.namespace,
            },
          }
        : {}),
    },
    spec: {
      volumeGroupSnapshotRef: {
        kind: "VolumeGroupSnapshot",
        namespace: group.metadata?.namespace ?? "",
        name: group.metadata?.name ?? "",
        uid: group.metadata?.uid ?? "",
        apiVersion: "groupsnapshot.storage.k8s.io/v1",
        resourceVersion: group.metadata?.resourceVersion ?? "",
      },
      source: { volumeHandles: handles },
      volumeGroupSnapshotClassName: klass.metadata?.name ?? "",
      deletionPolicy: klass.deletionPolicy,
      driver: klass.driver,
    },
  };
  let saved: VolumeGroupSnapshotContent;
  try {
    saved = caches.groupContents.remember(
      await ctx.client.create(GVR.volumeGroupSnapshotContents, content, ctx.signal),
    );
  } catch (error) {
    if (!isAlreadyExists(error)) {
      groupEvent(
        ctx,
        group,
        "Warning",
        "CreateGroupSnapshotContentFailed",
        `Error creating volume group snapshot content object for group snapshot ${snapshotKey(group)}: ${errorText(error)}.`,
      );
      throw controllerUpdateError(snapshotKey(group), errorText(error));
    }
    saved = caches.groupContents.get(name) ?? content;
  }
  groupEvent(
    ctx,
    group,
    "Normal",
    "CreatingGroupSnapshot",
    `Waiting for a group snapshot ${snapshotKey(group)} to be created by the CSI driver.`,
  );
  return saved;
}

/** Upstream's createSnapshotsForGroupSnapshotContent, each step skipped when already done. */
async function createMembers(
  ctx: SnapshotSyncContext,
  content: VolumeGroupSnapshotContent,
  group: VolumeGroupSnapshot,
): Promise<void> {
  const infos = content.status?.volumeSnapshotInfoList ?? [];
  const groupHandle = content.status?.volumeGroupSnapshotHandle;
  if (infos.length === 0 || !groupHandle) return; // the sidecar has not cut it yet
  const className = group.spec.volumeGroupSnapshotClassName;
  if (!className)
    throw new Error(
      "createSnapshotsForGroupSnapshotContent: internal error: cannot find reference to volume group snapshot class",
    );
  const klass = ctx.group!.groupClasses.get(className);
  if (klass === undefined)
    throw new Error(
      `createSnapshotsForGroupSnapshotContent: failed to get volume snapshot class ${className}`,
    );
  const secret = secretReference(GROUP_SNAPSHOTTER_SECRET, klass.parameters, {
    prefix: "volumegroupsnapshot",
    contentName: content.metadata?.name ?? "",
  });
  const groupUid = group.metadata?.uid ?? "";
  const namespace = content.spec.volumeGroupSnapshotRef.namespace ?? "";
  for (const info of infos) {
    const volumeHandle = info.volumeHandle ?? "";
    const pv = ctx.volumes.byIndex(VOLUMES_BY_HANDLE, `${content.spec.driver}^${volumeHandle}`)[0];
    const contentName = memberContentName(groupUid, volumeHandle);
    const snapshotName = memberSnapshotName(groupUid, volumeHandle);
    let snapshot = ctx.snapshots.get(`${namespace}/${snapshotName}`);
    if (snapshot === undefined) {
      const fresh: VolumeSnapshot = {
        apiVersion: "snapshot.storage.k8s.io/v1",
        kind: "VolumeSnapshot",
        metadata: {
          name: snapshotName,
          namespace,
          ownerReferences: [groupOwnerReference(group)],
          finalizers: [FINALIZERS.volumeSnapshotInGroup.key],
        },
        spec: { source: { persistentVolumeClaimName: pv?.spec?.claimRef?.name ?? "" } },
      };
      try {
        snapshot = ctx.snapshots.remember(await ctx.client.create(GVR.volumeSnapshots, fresh, ctx.signal));
      } catch (error) {
        if (!isAlreadyExists(error))
          throw new Error(
            `createSnapshotsForGroupSnapshotContent: creating volumesnapshot ${errorText(error)}`,
          );
        snapshot = ctx.snapshots.remember(
          await ctx.client.get<VolumeSnapshot>(GVR.volumeSnapshots, snapshotName, { namespace }, ctx.signal),
        );
      }
    }
    let member = ctx.contents.get(contentName);
    if (member === undefined) {
      const fresh: VolumeSnapshotContent = {
        apiVersion: "snapshot.storage.k8s.io/v1",
        kind: "VolumeSnapshotContent",
        metadata: {
          name: contentName,
          annotations: {
            [ANNOTATIONS.volumeGroupSnapshotHandle.key]: groupHandle,
            ...(secret
              ? {
                  [ANNOTATIONS.snapshotDeletionSecretName.key]: secret.name,
                  [ANNOTATIONS.snapshotDeletionSecretNamespace.key]: secret.namespace,
                }
              : {}),
          },
        },
        spec: {
          // csikit: bound to the member's UID at creation (upstream creates it unbound and patches the UID in).
          volumeSnapshotRef: {
            kind: "VolumeSnapshot",
            name: snapshotName,
            namespace,
            uid: snapshot.metadata?.uid ?? "",
          },
          deletionPolicy: content.spec.deletionPolicy,
          driver: content.spec.driver,
          source: { volumeHandle },
          ...(pv?.spec?.volumeMode ? { sourceVolumeMode: pv.spec.volumeMode } : {}),
        },
      };
      try {
        member = ctx.contents.remember(
          await ctx.client.create(GVR.volumeSnapshotContents, fresh, ctx.signal),
        );
      } catch (error) {
        if (!isAlreadyExists(error))
          throw new Error(
            `createSnapshotsForGroupSnapshotContent: creating volumesnapshotcontent ${errorText(error)}`,
          );
        member = ctx.contents.remember(
          await ctx.client.get<VolumeSnapshotContent>(
            GVR.volumeSnapshotContents,
            contentName,
            {},
            ctx.signal,
          ),
        );
      }
    }
    if (!member.spec.volumeSnapshotRef.uid) {
      member = ctx.contents.remember(
        await ctx.client.patch<VolumeSnapshotContent>(
          GVR.volumeSnapshotContents,
          contentName,
          { spec: { volumeSnapshotRef: { uid: snapshot.metadata?.uid ?? "" } } },
          { type: "merge" },
          ctx.signal,
        ),
      );
    }
    if (!snapshot.status?.boundVolumeSnapshotContentName) {
      snapshot = ctx.snapshots.remember(
        await ctx.client.updateStatus(
          GVR.volumeSnapshots,
          { ...snapshot, status: { boundVolumeSnapshotContentName: contentName } },
          ctx.signal,
        ),
      );
    }
    if (!member.status?.snapshotHandle) {
      ctx.contents.remember(
        await ctx.client.updateStatus(
          GVR.volumeSnapshotContents,
          {
            ...member,
            status: {
              snapshotHandle: info.snapshotHandle ?? "",
              volumeGroupSnapshotHandle: groupHandle,
              ...(info.creationTime !== undefined ? { creationTime: info.creationTime } : {}),
              ...(info.restoreSize !== undefined ? { restoreSize: info.restoreSize } : {}),
              ...(info.readyToUse !== undefined ? { readyToUse: info.readyToUse } : {}),
            },
          },
          ctx.signal,
        ),
      );
    }
  }
}

async function writeGroupStatus(
  ctx: SnapshotSyncContext,
  group: VolumeGroupSnapshot,
  content: VolumeGroupSnapshotContent,
): Promise<void> {
  const caches = ctx.group!;
  const latest = caches.groups.get(snapshotKey(group)) ?? group;
  const from = content.status;
  const ready = from?.readyToUse ?? false;
  const status = { ...latest.status };
  let updated = latest.status === undefined;
  if (!status.boundVolumeGroupSnapshotContentName) {
    status.boundVolumeGroupSnapshotContentName = content.metadata?.name ?? "";
    updated = true;
  }
  if (status.creationTime === undefined && from?.creationTime !== undefined) {
    status.creationTime =
      typeof from.creationTime === "number" ? nanosToTime(from.creationTime) : from.creationTime;
    updated = true;
  }
  if (status.readyToUse !== ready) {
    status.readyToUse = ready;
    updated = true;
    if (ready) delete status.error;
  }
  if (
    (status.error?.message ?? "") !== (from?.error?.message ?? "") ||
    status.error?.time !== from?.error?.time
  ) {
    if (from?.error) status.error = from.error;
    else delete status.error;
    updated = true;
  }
  if (!updated) return;
  const uid = latest.metadata?.uid ?? "";
  const next = { ...latest, status };
  if (!isCreated(latest) && isCreated(next)) {
    groupEvent(
      ctx,
      latest,
      "Normal",
      "GroupSnapshotCreated",
      `GroupSnapshot ${snapshotKey(latest)} was successfully created by the CSI driver.`,
    );
    ctx.metrics.succeeded(OPERATIONS.createGroupSnapshot, uid, content.spec.driver);
  }
  if (!isReady(latest) && isReady(next)) {
    groupEvent(
      ctx,
      latest,
      "Normal",
      "GroupSnapshotReady",
      `GroupSnapshot ${snapshotKey(latest)} is ready to use.`,
    );
    ctx.metrics.succeeded(OPERATIONS.createGroupSnapshotAndReady, uid, content.spec.driver);
  }
  try {
    caches.groups.remember(await ctx.client.updateStatus(GVR.volumeGroupSnapshots, next, ctx.signal));
  } catch (error) {
    if (isNotFound(error)) return;
    throw controllerUpdateError(snapshotKey(latest), errorText(error));
  }
}

async function processGroupDeletion(ctx: SnapshotSyncContext, group: VolumeGroupSnapshot): Promise<void> {
  const caches = ctx.group!;
  const uid = group.metadata?.uid ?? "";
  let contentName = boundGroupContentName(group) ?? "";
  if (contentName === "" && !group.spec.source.volumeGroupSnapshotContentName)
    contentName = contentNameForGroupSnapshot(group);
  let content = contentName ? caches.groupContents.get(contentName) : undefined;
  ctx.metrics.start(
    OPERATIONS.deleteGroupSnapshot,
    uid,
    content?.spec.driver ?? "",
    group.spec.source.volumeGroupSnapshotContentName ? "pre-provisioned" : "dynamic",
  );
  let deleteContent = false;
  if (content !== undefined && groupContentPointsTo(content, group))
    deleteContent = content.spec.deletionPolicy === "Delete";
  else content = undefined;
  if (!isGroupSnapshotDeletionCandidate(group)) return;
  const members = ctx.snapshotStore.byIndex(
    SNAPSHOTS_BY_GROUP,
    `${group.metadata?.namespace ?? ""}^${group.metadata?.name ?? ""}`,
  );
  for (const member of members) {
    if (restoreInProgress(ctx, member)) {
      groupEvent(
        ctx,
        group,
        "Warning",
        "SnapshotDeletePending",
        `Snapshot ${snapshotKey(member)} belonging to VolumeGroupSnapshot ${snapshotKey(group)} is being used to restore a PVC`,
      );
      return;
    }
  }
  if (
    content !== undefined &&
    content.metadata?.annotations?.[ANNOTATIONS.volumeGroupSnapshotBeingDeleted.key] === undefined
  ) {
    content = caches.groupContents.remember(
      await ctx.client.patch<VolumeGroupSnapshotContent>(
        GVR.volumeGroupSnapshotContents,
        content.metadata?.name ?? "",
        { metadata: { annotations: { [ANNOTATIONS.volumeGroupSnapshotBeingDeleted.key]: "yes" } } },
        { type: "merge" },
        ctx.signal,
      ),
    );
  }
  if (content !== undefined && deleteContent && !isDeleting(content)) {
    try {
      await ctx.client.delete(GVR.volumeGroupSnapshotContents, content.metadata?.name ?? "", {}, ctx.signal);
    } catch (error) {
      if (!isNotFound(error)) {
        groupEvent(
          ctx,
          group,
          "Warning",
          "GroupSnapshotContentObjectDeleteError",
          "Failed to delete group snapshot content API object",
        );
        throw new Error(
          `failed to delete VolumeGroupSnapshotContent ${content.metadata?.name ?? ""} from API server: "${errorText(error)}"`,
        );
      }
    }
  }
  for (const member of members) {
    if (isDeleting(member)) continue;
    try {
      await ctx.client.delete(
        GVR.volumeSnapshots,
        member.metadata?.name ?? "",
        { namespace: group.metadata?.namespace ?? "" },
        ctx.signal,
      );
    } catch (error) {
      if (!isNotFound(error)) {
        const message = `failed to delete snapshot API object ${snapshotKey(member)} part of group snapshot ${snapshotKey(group)}: ${errorText(error)}`;
        groupEvent(ctx, group, "Warning", "SnapshotDeleteError", message);
        throw new Error(message);
      }
    }
  }
  if (!(content !== undefined && deleteContent)) await setGroupFinalizers(ctx, group, [], [GROUP_BOUND]);
}

/** Upstream's syncGroupSnapshotContent: validation, the bound-protection finalizer, resync of its group. */
export async function syncGroupContentKey(ctx: SnapshotSyncContext, name: string): Promise<void> {
  const caches = ctx.group;
  if (caches === undefined) return;
  const content = caches.groupContents.get(name);
  if (content === undefined) return;
  const source = content.spec.source;
  if (!source.groupSnapshotHandles === !(source.volumeHandles && source.volumeHandles.length > 0)) {
    const message = "Exactly one of GroupSnapshotHandles and VolumeHandles should be specified";
    ctx.recorder.event(
      {
        kind: "VolumeGroupSnapshotContent",
        apiVersion: "groupsnapshot.storage.k8s.io/v1",
        name,
        uid: content.metadata?.uid ?? "",
      },
      "Warning",
      "GroupContentValidationError",
      message,
    );
    throw new Error(message);
  }
  const ref = content.spec.volumeGroupSnapshotRef;
  if (!ref.uid) return;
  if (!isDeleting(content) && !has(content, GROUP_CONTENT_BOUND)) {
    caches.groupContents.remember(
      await ctx.client.update(
        GVR.volumeGroupSnapshotContents,
        {
          ...content,
          metadata: {
            ...content.metadata,
            finalizers: [...(content.metadata?.finalizers ?? []), GROUP_CONTENT_BOUND],
          },
        },
        {},
        ctx.signal,
      ),
    );
    return;
  }
  const key = `${ref.namespace ?? ""}/${ref.name ?? ""}`;
  const group = caches.groups.get(key);
  if (group === undefined || group.metadata?.uid !== ref.uid) return;
  const status = group.status;
  const from = content.status;
  if (
    (status === undefined && from !== undefined) ||
    (from !== undefined &&
      (!status?.boundVolumeGroupSnapshotContentName ||
        (status.creationTime === undefined && from.creationTime !== undefined) ||
        (from.readyToUse !== undefined && status.readyToUse !== from.readyToUse) ||
        (from.volumeSnapshotInfoList?.length ?? 0) > 0))
  )
    ctx.enqueueGroup(key);
}
