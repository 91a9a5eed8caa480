// syncGroupContent: one VolumeGroupSnapshotContent of this driver (csi-snapshotter's
// groupsnapshot_helper), the group twin of content-sync.ts through the CSI GroupController:
// - being deleted (being-deleted annotation, or an unbound pre-provisioned content) with no
//   create outstanding: policy Delete and a group handle → DeleteVolumeGroupSnapshot with the
//   member snapshot IDs, then the status cleared; then the bound-protection finalizer removed;
// - dynamic and never cut: the group being-created guard, CreateVolumeGroupSnapshot (name
//   <--groupsnapshot-name-prefix>-<VolumeGroupSnapshot UID>), the status with
//   volumeSnapshotInfoList (one entry per member: volume and snapshot handles, readiness,
//   restore size, creation time), then the guard removed — a kill -9 in between leaves the
//   guard, and the retry gets the same group back from the driver;
// - pre-provisioned: GetVolumeGroupSnapshot with the class's group-snapshotter-get secret;
// - not ready: polled with a doubling delay. The member VolumeSnapshots and their contents are
//   the snapshot-controller's to create from volumeSnapshotInfoList.

import {
  GVR,
  type VolumeGroupSnapshotClass,
  type VolumeGroupSnapshotContent,
  type VolumeSnapshotInfo,
} from "../../api/index.ts";
import { CsikitError, errorMessage } from "../../base/index.ts";
import type { ProcessResult, ReconcileContext } from "../../kube/index.ts";
import { nextPollDelay, type SnapshotterContext } from "./context.ts";
import {
  createGroupSnapshot,
  deleteGroupSnapshot,
  groupContentHandle,
  groupSnapshotStatus,
  type GroupSnapshotResult,
} from "./csi-calls.ts";
import { isFinalError } from "./errors.ts";
import { ANNOTATION, CREATE_METADATA, FINALIZER, REASON, driverParameters } from "./names.ts";
import { annotatedSecretReference, fetchCredentials, snapshotSecretReference } from "./secrets.ts";
import {
  getFresh,
  patchStatus,
  patchStatusFromServer,
  removeAnnotation,
  removeFinalizer,
  setAnnotation,
} from "./writes.ts";

const GVR_GROUP = GVR.volumeGroupSnapshotContents;

export async function syncGroupContentKey(
  ctx: SnapshotterContext,
  name: string,
  rc: ReconcileContext,
): Promise<ProcessResult | void> {
  const pollKey = `group/${name}`;
  const content = ctx.groupContents?.store.get(name);
  if (!content) {
    ctx.polls.delete(pollKey);
    return;
  }
  if (!isGroupDriverMatch(ctx, content)) return;
  const requeue = await syncGroupContent(ctx, content, rc);
  if (!requeue) {
    ctx.polls.delete(pollKey);
    return;
  }
  return { requeueAfterMs: nextPollDelay(ctx, pollKey) };
}

export function isGroupDriverMatch(ctx: SnapshotterContext, content: VolumeGroupSnapshotContent): boolean {
  const source = content.spec?.source;
  if (!source?.groupSnapshotHandles && (source?.volumeHandles ?? []).length === 0) return false;
  if (content.spec.driver !== ctx.driver.name) return false;
  const className = content.spec.volumeGroupSnapshotClassName;
  if (className) {
    const groupClass = ctx.groupClasses?.store.get(className);
    if (groupClass && groupClass.driver !== ctx.driver.name) return false;
  }
  return true;
}

function shouldDeleteGroup(content: VolumeGroupSnapshotContent): boolean {
  if (!content.metadata.deletionTimestamp) return false;
  if (content.spec.source.groupSnapshotHandles && !content.spec.volumeGroupSnapshotRef?.uid) return true;
  if (content.metadata.annotations?.[ANNOTATION.groupBeingCreated] !== undefined) return false;
  return content.metadata.annotations?.[ANNOTATION.groupBeingDeleted] !== undefined;
}

const isReady = (content: VolumeGroupSnapshotContent): boolean => content.status?.readyToUse === true;

async function syncGroupContent(
  ctx: SnapshotterContext,
  content: VolumeGroupSnapshotContent,
  rc: ReconcileContext,
): Promise<boolean> {
  const { signal } = rc;
  if (shouldDeleteGroup(content)) {
    let current = content;
    if (content.spec.deletionPolicy === "Delete" && content.status?.volumeGroupSnapshotHandle)
      current = await deleteBackendGroup(ctx, content, signal);
    await removeFinalizer(ctx.client, GVR_GROUP, current, FINALIZER.groupContent, signal);
    return false;
  }
  if ((content.spec.source.volumeHandles ?? []).length > 0 && !content.status) {
    const created = await recordingErrors(
      ctx,
      content,
      rc,
      REASON.groupCreationFailed,
      "Failed to create group snapshot",
      createGroup,
    );
    return !isReady(created) || shouldDeleteGroup(created);
  }
  if (isReady(content)) {
    const current = await removeAnnotation(
      ctx.client,
      GVR_GROUP,
      content,
      ANNOTATION.groupBeingCreated,
      signal,
    );
    return shouldDeleteGroup(current);
  }
  const checked = await recordingErrors(
    ctx,
    content,
    rc,
    REASON.groupCheckFailed,
    "Failed to check and update group snapshot content",
    checkGroup,
  );
  return !isReady(checked) || shouldDeleteGroup(checked);
}

type GroupOperation = (
  ctx: SnapshotterContext,
  content: VolumeGroupSnapshotContent,
  rc: ReconcileContext,
) => Promise<VolumeGroupSnapshotContent>;

async function recordingErrors(
  ctx: SnapshotterContext,
  content: VolumeGroupSnapshotContent,
  rc: ReconcileContext,
  reason: string,
  prefix: string,
  operation: GroupOperation,
): Promise<VolumeGroupSnapshotContent> {
  try {
    return await operation(ctx, content, rc);
  } catch (error) {
    const message = `${prefix}: ${errorMessage(error)}`;
    await recordGroupError(ctx, content, reason, message, rc.signal).catch((writeError: unknown) =>
      rc.logger.info(4, "could not record the error in the group content status", {
        err: errorMessage(writeError),
      }),
    );
    throw error;
  }
}

async function groupCredentials(
  ctx: SnapshotterContext,
  content: VolumeGroupSnapshotContent,
  signal: AbortSignal,
): Promise<Record<string, string>> {
  const ref = annotatedSecretReference(
    content.metadata.annotations,
    { name: ANNOTATION.groupDeletionSecretName, namespace: ANNOTATION.groupDeletionSecretNamespace },
    `group snapshot content "${content.metadata.name}"`,
  );
  try {
    return await fetchCredentials(ctx.client, ref, signal);
  } catch (error) {
    ctx.logger.error("Failed to get credentials for group snapshot content", {
      content: content.metadata.name,
      err: errorMessage(error),
    });
    throw new CsikitError(
      "CSIKIT_ERR_SECRET",
      `cannot get credentials for group snapshot content "${content.metadata.name}"`,
      { cause: error },
    );
  }
}

function groupClassOf(
  ctx: SnapshotterContext,
  content: VolumeGroupSnapshotContent,
): VolumeGroupSnapshotClass | undefined {
  const className = content.spec.volumeGroupSnapshotClassName;
  if (!className) return undefined;
  const found = ctx.groupClasses?.store.get(className);
  if (!found)
    throw new CsikitError(
      "CSIKIT_ERR_NOT_FOUND",
      `volumegroupsnapshotclass.groupsnapshot.storage.k8s.io "${className}" not found`,
    );
  return found;
}

async function createGroup(
  ctx: SnapshotterContext,
  content: VolumeGroupSnapshotContent,
  rc: ReconcileContext,
): Promise<VolumeGroupSnapshotContent> {
  const { signal } = rc;
  let parameters: Record<string, string>;
  let secrets: Record<string, string>;
  try {
    const groupClass = groupClassOf(ctx, content);
    if (!groupClass && (content.spec.source.volumeHandles ?? []).length > 0)
      throw new CsikitError(
        "CSIKIT_ERR_VALIDATION",
        `failed to take group snapshot ${content.metadata.name} without a group snapshot class`,
      );
    secrets = await groupCredentials(ctx, content, signal);
    parameters = driverParameters(groupClass?.parameters);
  } catch (error) {
    throw new CsikitError(
      "CSIKIT_ERR_VALIDATION",
      `failed to get input parameters to create group snapshot for group snapshot content ${content.metadata.name}: ${JSON.stringify(errorMessage(error))}`,
      { cause: error },
    );
  }
  if (ctx.options.extraCreateMetadata) {
    parameters[CREATE_METADATA.groupSnapshotName] = content.spec.volumeGroupSnapshotRef?.name ?? "";
    parameters[CREATE_METADATA.groupSnapshotNamespace] = content.spec.volumeGroupSnapshotRef?.namespace ?? "";
    parameters[CREATE_METADATA.groupContentName] = content.metadata.name!;
  }
  const guarded = !content.status?.volumeGroupSnapshotHandle;
  let current = content;
  // The guard's patch answers with the server's copy: the status is decided on it, unread.
  let fromServer: VolumeGroupSnapshotContent | undefined;
  if (guarded) {
    current = await setAnnotation(ctx.client, GVR_GROUP, content, ANNOTATION.groupBeingCreated, signal);
    if (current !== content) fromServer = current;
  }
  let result: GroupSnapshotResult;
  try {
    result = await createGroupSnapshot(ctx, current, { parameters, secrets }, signal);
  } catch (error) {
    rc.logger.info(1, "CreateVolumeGroupSnapshot returned an error", { err: errorMessage(error) });
    if (isFinalError(error))
      current = await removeAnnotation(ctx.client, GVR_GROUP, current, ANNOTATION.groupBeingCreated, signal);
    throw new CsikitError(
      "CSIKIT_ERR_DRIVER",
      `failed to take group snapshot of the volumes ${JSON.stringify(content.spec.source.volumeHandles ?? [])}: ${JSON.stringify(errorMessage(error))}`,
      { cause: error },
    );
  }
  current = await recordGroupResult(ctx, current, result, signal, fromServer);
  return removeAnnotation(ctx.client, GVR_GROUP, current, ANNOTATION.groupBeingCreated, signal);
}

async function checkGroup(
  ctx: SnapshotterContext,
  content: VolumeGroupSnapshotContent,
  rc: ReconcileContext,
): Promise<VolumeGroupSnapshotContent> {
  const handles = content.spec.source.groupSnapshotHandles;
  if (!handles) return createGroup(ctx, content, rc);
  const groupClass = groupClassOf(ctx, content);
  const ref = groupClass
    ? snapshotSecretReference("GroupSnapshotterGet", groupClass.parameters, {
        contentName: content.metadata.name!,
      })
    : undefined;
  const secrets = await fetchCredentials(ctx.client, ref, rc.signal);
  let result: GroupSnapshotResult;
  try {
    result = await groupSnapshotStatus(
      ctx,
      content,
      { snapshotIds: handles.volumeSnapshotHandles, secrets },
      rc.signal,
    );
  } catch (error) {
    throw new CsikitError(
      "CSIKIT_ERR_DRIVER",
      `failed to list group snapshot for group snapshot content ${content.metadata.name}: ${JSON.stringify(errorMessage(error))}`,
      { cause: error },
    );
  }
  return recordGroupResult(ctx, content, { ...result, handle: handles.volumeGroupSnapshotHandle }, rc.signal);
}

function memberInfo(result: GroupSnapshotResult): VolumeSnapshotInfo[] {
  return result.members.map((member) => ({
    volumeHandle: member.sourceVolumeId,
    snapshotHandle: member.handle,
    creationTime: member.creationTime,
    readyToUse: member.readyToUse,
    ...(member.sizeBytes > 0 ? { restoreSize: member.sizeBytes } : {}),
  }));
}

async function recordGroupResult(
  ctx: SnapshotterContext,
  content: VolumeGroupSnapshotContent,
  result: GroupSnapshotResult,
  signal: AbortSignal,
  fromServer?: VolumeGroupSnapshotContent,
): Promise<VolumeGroupSnapshotContent> {
  return patchStatusFromServer(
    ctx.client,
    GVR_GROUP,
    content.metadata.name!,
    fromServer,
    (fresh) => groupStatusPatch(fresh.status, result),
    signal,
  );
}

/** The status fields `result` adds to `status`; undefined when it already says all of it. */
function groupStatusPatch(
  status: VolumeGroupSnapshotContent["status"],
  result: GroupSnapshotResult,
): Record<string, unknown> | undefined {
  const createdAt = new Date(result.creationTimeMs).toISOString().replace(/\.\d+Z$/, "Z");
  const patch: Record<string, unknown> = {};
  if (!status) {
    patch.volumeGroupSnapshotHandle = result.handle;
    patch.readyToUse = result.readyToUse;
    patch.creationTime = createdAt;
    patch.volumeSnapshotInfoList = memberInfo(result);
  } else {
    if (status.volumeGroupSnapshotHandle === undefined) patch.volumeGroupSnapshotHandle = result.handle;
    if (status.readyToUse !== result.readyToUse) {
      patch.readyToUse = result.readyToUse;
      if (result.readyToUse && status.error) patch.error = null;
    }
    if (status.creationTime === undefined) patch.creationTime = createdAt;
    const members = memberInfo(result);
    if (
      (status.volumeSnapshotInfoList ?? []).length === 0 ||
      differs(status.volumeSnapshotInfoList!, members)
    )
      patch.volumeSnapshotInfoList = members;
  }
  return Object.keys(patch).length === 0 ? undefined : patch;
}

/** Whether the members' readiness or sizes changed (a merge patch replaces the list whole). */
function differs(recorded: readonly VolumeSnapshotInfo[], now: readonly VolumeSnapshotInfo[]): boolean {
  if (recorded.length !== now.length) return true;
  const byHandle = new Map(recorded.map((info) => [info.snapshotHandle, info]));
  return now.some((info) => {
    const old = byHandle.get(info.snapshotHandle);
    return !old || old.readyToUse !== info.readyToUse || old.restoreSize !== info.restoreSize;
  });
}

async function recordGroupError(
  ctx: SnapshotterContext,
  content: VolumeGroupSnapshotContent,
  reason: string,
  message: string,
  signal: AbortSignal,
): Promise<void> {
  const latest = ctx.groupContents?.store.get(content.metadata.name!) ?? content;
  if (latest.status?.error?.message === message) return;
  const error = { time: new Date(ctx.clock.now()).toISOString().replace(/\.\d+Z$/, "Z"), message };
  ctx.events.event(latest, "Warning", reason, message);
  await patchStatus(ctx.client, GVR_GROUP, latest, { error, readyToUse: false }, signal, true);
}

async function deleteBackendGroup(
  ctx: SnapshotterContext,
  content: VolumeGroupSnapshotContent,
  signal: AbortSignal,
): Promise<VolumeGroupSnapshotContent> {
  let secrets: Record<string, string>;
  try {
    secrets = await groupCredentials(ctx, content, signal);
  } catch (error) {
    ctx.events.event(content, "Warning", REASON.groupDeleteError, "Failed to get snapshot credentials");
    throw new CsikitError(
      "CSIKIT_ERR_SECRET",
      `failed to get input parameters to delete group snapshot for group snapshot content ${content.metadata.name}: ${JSON.stringify(errorMessage(error))}`,
      { cause: error },
    );
  }
  // Dynamic: the members the status lists; pre-provisioned: the ones the spec names.
  const listed = (content.status?.volumeSnapshotInfoList ?? []).flatMap((info) =>
    info.snapshotHandle ? [info.snapshotHandle] : [],
  );
  const snapshotIds =
    listed.length > 0 ? listed : [...(content.spec.source.groupSnapshotHandles?.volumeSnapshotHandles ?? [])];
  try {
    if (!groupContentHandle(content)) throw new Error("groupsnapshotHandle is missing");
    await deleteGroupSnapshot(ctx, content, { snapshotIds, secrets }, signal);
  } catch (error) {
    ctx.events.event(content, "Warning", REASON.groupDeleteError, "Failed to delete group snapshot");
    throw new CsikitError(
      "CSIKIT_ERR_DRIVER",
      `failed to delete group snapshot "${content.metadata.name}", err: ${errorMessage(error)}`,
      { cause: error },
    );
  }
  try {
    const fresh = await getFresh<VolumeGroupSnapshotContent>(
      ctx.client,
      GVR_GROUP,
      content.metadata.name!,
      signal,
    );
    if (!fresh.status) return fresh;
    return await patchStatus(
      ctx.client,
      GVR_GROUP,
      fresh,
      { volumeGroupSnapshotHandle: null, readyToUse: null, creationTime: null, error: null },
      signal,
    );
  } catch (error) {
    ctx.events.event(content, "Warning", REASON.groupDeleteError, "Failed to clear content status");
    throw error;
  }
}
