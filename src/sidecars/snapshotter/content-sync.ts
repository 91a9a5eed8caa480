// syncContent: one VolumeSnapshotContent of this driver, driven to its desired state from the
// cache (csi-snapshotter's sidecar-controller, decide then write):
// - being deleted (the snapshot-controller's being-deleted annotation, or an unbound
//   pre-provisioned content) and no CreateSnapshot outstanding: with policy Delete and a backend
//   snapshot that is not a group member, DeleteSnapshot then clear the status; then remove the
//   bound-protection finalizer (Retain: only that);
// - dynamic and never cut (no status): set the being-created annotation (durable intent), call
//   CreateSnapshot, write the status, remove the annotation. A crash anywhere in between leaves
//   the annotation, which keeps the content from being deleted until a retry of CreateSnapshot
//   (same name, so the driver answers with the same snapshot) has recorded the handle: a
//   kill -9 cannot leak a backend snapshot;
// - cut but not ready: polled (CreateSnapshot again for a dynamic one, as upstream; the status
//   check for a pre-provisioned handle or a group member) with a doubling delay;
// - ready: nothing but dropping a left-over annotation.
// Failures go to status.error with a Warning Event and are retried with the queue's backoff.

import {
  GVR,
  type VolumeSnapshotClass,
  type VolumeSnapshotContent,
  type VolumeSnapshotContentStatus,
} from "../../api/index.ts";
import { CsikitError, errorMessage } from "../../base/index.ts";
import type { ProcessResult, ReconcileContext } from "../../kube/index.ts";
import type { SnapshotterContext } from "./context.ts";
import { nextPollDelay } from "./context.ts";
import {
  contentSnapshotHandle,
  createSnapshot,
  deleteSnapshot,
  snapshotStatus,
  type SnapshotResult,
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

const GVR_CONTENT = GVR.volumeSnapshotContents;

/** The reconcile of one content key (its name). */
export async function syncContentKey(
  ctx: SnapshotterContext,
  name: string,
  rc: ReconcileContext,
): Promise<ProcessResult | void> {
  const content = ctx.contents.store.get(name);
  if (!content) {
    ctx.polls.delete(name);
    return;
  }
  if (!isDriverMatch(ctx, content)) return;
  const requeue = await syncContent(ctx, content, rc);
  if (!requeue) {
    ctx.polls.delete(name);
    return;
  }
  return { requeueAfterMs: nextPollDelay(ctx, name) };
}

/** Whether this sidecar handles the content: a source, our driver, and not another driver's class. */
export function isDriverMatch(ctx: SnapshotterContext, content: VolumeSnapshotContent): boolean {
  const source = content.spec?.source;
  if (!source?.volumeHandle && !source?.snapshotHandle) return false;
  if (content.spec.driver !== ctx.driver.name) return false;
  const className = content.spec.volumeSnapshotClassName;
  if (className) {
    const snapshotClass = ctx.classes.store.get(className);
    if (snapshotClass && snapshotClass.driver !== ctx.driver.name) return false;
  }
  return true;
}

function isReady(content: VolumeSnapshotContent): boolean {
  return content.status?.readyToUse === true;
}

function isGroupMember(content: VolumeSnapshotContent): boolean {
  return content.metadata.annotations?.[ANNOTATION.volumeGroupSnapshotHandle] !== undefined;
}

/** Whether the content is to be deleted now (upstream's shouldDelete). */
export function shouldDelete(content: VolumeSnapshotContent): boolean {
  if (!content.metadata.deletionTimestamp) return false;
  // An unbound pre-provisioned content.
  if (content.spec.source.snapshotHandle && !content.spec.volumeSnapshotRef?.uid) return true;
  // CreateSnapshot has not answered: its result must be known (and deleted) first.
  if (content.metadata.annotations?.[ANNOTATION.beingCreated] !== undefined) return false;
  return content.metadata.annotations?.[ANNOTATION.beingDeleted] !== undefined;
}

/** Returns whether to look again (a snapshot cut but not ready). */
async function syncContent(
  ctx: SnapshotterContext,
  content: VolumeSnapshotContent,
  rc: ReconcileContext,
): Promise<boolean> {
  const { signal } = rc;
  if (shouldDelete(content)) {
    let current = content;
    if (
      content.spec.deletionPolicy === "Delete" &&
      content.status?.snapshotHandle &&
      !content.status.volumeGroupSnapshotHandle
    )
      current = await deleteBackendSnapshot(ctx, content, signal);
    await removeFinalizer(ctx.client, GVR_CONTENT, current, FINALIZER.content, signal);
    return false;
  }
  if (content.spec.source.volumeHandle && !content.status && !isGroupMember(content)) {
    const created = await runCreate(ctx, content, rc, REASON.creationFailed, "Failed to create snapshot");
    return !isReady(created) || deletionWaits(created);
  }
  if (isReady(content)) {
    const current = await removeAnnotation(ctx.client, GVR_CONTENT, content, ANNOTATION.beingCreated, signal);
    return deletionWaits(current);
  }
  const checked = await runCreate(
    ctx,
    content,
    rc,
    REASON.checkFailed,
    "Failed to check and update snapshot content",
    checkStatus,
  );
  return !isReady(checked) || deletionWaits(checked);
}

/**
 * A deletion that waited for the guard: the guard's removal is the sidecar's own write, which
 * wakes nobody (changes.ts), so the content is looked at again to be deleted.
 */
function deletionWaits(content: VolumeSnapshotContent): boolean {
  return content.metadata.deletionTimestamp !== undefined && shouldDelete(content);
}

type Operation = (
  ctx: SnapshotterContext,
  content: VolumeSnapshotContent,
  rc: ReconcileContext,
) => Promise<VolumeSnapshotContent>;

/** Runs an operation; a failure is recorded in status.error with an Event, then rethrown. */
async function runCreate(
  ctx: SnapshotterContext,
  content: VolumeSnapshotContent,
  rc: ReconcileContext,
  reason: string,
  prefix: string,
  operation: Operation = createAndRecord,
): Promise<VolumeSnapshotContent> {
  try {
    return await operation(ctx, content, rc);
  } catch (error) {
    const message = `${prefix}: ${errorMessage(error)}`;
    await recordError(ctx, content, reason, message, rc.signal).catch((writeError: unknown) =>
      rc.logger.info(4, "could not record the error in the content status", {
        err: errorMessage(writeError),
      }),
    );
    throw error;
  }
}

/** The class (from the cache) and the create/delete secret of a content. */
async function createInput(
  ctx: SnapshotterContext,
  content: VolumeSnapshotContent,
  signal: AbortSignal,
): Promise<{ snapshotClass: VolumeSnapshotClass | undefined; secrets: Record<string, string> }> {
  const className = content.spec.volumeSnapshotClassName;
  let snapshotClass: VolumeSnapshotClass | undefined;
  if (className) {
    snapshotClass = ctx.classes.store.get(className);
    if (!snapshotClass)
      throw new CsikitError(
        "CSIKIT_ERR_NOT_FOUND",
        `volumesnapshotclass.snapshot.storage.k8s.io "${className}" not found`,
      );
  } else if (content.spec.source.volumeHandle && !isGroupMember(content)) {
    throw new CsikitError(
      "CSIKIT_ERR_VALIDATION",
      `failed to take snapshot ${content.metadata.name} without a snapshot class`,
    );
  }
  const secrets = await annotatedCredentials(ctx, content, signal);
  return { snapshotClass, secrets };
}

async function annotatedCredentials(
  ctx: SnapshotterContext,
  content: VolumeSnapshotContent,
  signal: AbortSignal,
): Promise<Record<string, string>> {
  const ref = annotatedSecretReference(
    content.metadata.annotations,
    { name: ANNOTATION.deletionSecretName, namespace: ANNOTATION.deletionSecretNamespace },
    `snapshot content "${content.metadata.name}"`,
  );
  try {
    return await fetchCredentials(ctx.client, ref, signal);
  } catch (error) {
    ctx.logger.error("Failed to get credentials for snapshot", {
      content: content.metadata.name,
      err: errorMessage(error),
    });
    throw new CsikitError(
      "CSIKIT_ERR_SECRET",
      `cannot get credentials for snapshot content "${content.metadata.name}"`,
      { cause: error },
    );
  }
}

/** CreateSnapshot under the being-created guard, then the status. */
async function createAndRecord(
  ctx: SnapshotterContext,
  content: VolumeSnapshotContent,
  rc: ReconcileContext,
): Promise<VolumeSnapshotContent> {
  const { signal } = rc;
  let input;
  let parameters: Record<string, string>;
  try {
    input = await createInput(ctx, content, signal);
    // Checked before the guard is set: a class the driver can never be called with must not
    // leave a guard that keeps the content from ever being deleted.
    parameters = driverParameters(input.snapshotClass?.parameters);
  } catch (error) {
    throw new CsikitError(
      "CSIKIT_ERR_VALIDATION",
      `failed to get input parameters to create snapshot for content ${content.metadata.name}: ${JSON.stringify(errorMessage(error))}`,
      { cause: error },
    );
  }
  if (ctx.options.extraCreateMetadata) {
    parameters[CREATE_METADATA.snapshotName] = content.spec.volumeSnapshotRef?.name ?? "";
    parameters[CREATE_METADATA.snapshotNamespace] = content.spec.volumeSnapshotRef?.namespace ?? "";
    parameters[CREATE_METADATA.contentName] = content.metadata.name!;
  }
  // A handle already recorded is the durable record of the snapshot: a poll needs no guard.
  const guarded = !content.status?.snapshotHandle;
  let current = content;
  // The guard's patch answers with the server's copy: the status is decided on it, unread.
  let fromServer: VolumeSnapshotContent | undefined;
  if (guarded) {
    current = await setAnnotation(ctx.client, GVR_CONTENT, content, ANNOTATION.beingCreated, signal);
    if (current !== content) fromServer = current;
  }
  let result: SnapshotResult;
  try {
    result = await createSnapshot(ctx, current, { parameters, secrets: input.secrets }, signal);
  } catch (error) {
    rc.logger.info(1, "CreateSnapshot returned an error", { err: errorMessage(error) });
    if (isFinalError(error))
      current = await removeAnnotation(ctx.client, GVR_CONTENT, current, ANNOTATION.beingCreated, signal);
    throw new CsikitError(
      "CSIKIT_ERR_DRIVER",
      `failed to take snapshot of the volume ${content.spec.source.volumeHandle}: ${JSON.stringify(errorMessage(error))}`,
      { cause: error },
    );
  }
  rc.logger.info(4, "snapshot created", {
    snapshotHandle: result.handle,
    readyToUse: result.readyToUse,
    sizeBytes: result.sizeBytes,
  });
  current = await recordResult(ctx, current, result, signal, fromServer);
  return removeAnnotation(ctx.client, GVR_CONTENT, current, ANNOTATION.beingCreated, signal);
}

/** A pre-provisioned content or a group member: the driver's status of the snapshot; else create. */
async function checkStatus(
  ctx: SnapshotterContext,
  content: VolumeSnapshotContent,
  rc: ReconcileContext,
): Promise<VolumeSnapshotContent> {
  const { signal } = rc;
  const memberWithGroup = content.status?.volumeGroupSnapshotHandle !== undefined;
  if (content.spec.source.snapshotHandle || (memberWithGroup && content.status?.snapshotHandle)) {
    let secrets: Record<string, string> = {};
    const className = content.spec.volumeSnapshotClassName;
    if (className) {
      const snapshotClass = ctx.classes.store.get(className);
      if (!snapshotClass)
        throw new CsikitError(
          "CSIKIT_ERR_NOT_FOUND",
          `failed to get snapshot class ${className} for snapshot content ${content.metadata.name}: volumesnapshotclass.snapshot.storage.k8s.io "${className}" not found`,
        );
      const ref = snapshotSecretReference("SnapshotterList", snapshotClass.parameters, {
        contentName: content.metadata.name!,
      });
      secrets = await fetchCredentials(ctx.client, ref, signal);
    }
    // Members of a group carry no class: their secret is the annotation's.
    if (memberWithGroup) secrets = await annotatedCredentials(ctx, content, signal);
    let result: SnapshotResult;
    try {
      result = await snapshotStatus(ctx, content, secrets, signal);
    } catch (error) {
      throw new CsikitError(
        "CSIKIT_ERR_DRIVER",
        `failed to list snapshot for content ${content.metadata.name}: ${JSON.stringify(errorMessage(error))}`,
        { cause: error },
      );
    }
    return recordResult(ctx, content, { ...result, handle: contentSnapshotHandle(content)! }, signal);
  }
  if (!isGroupMember(content)) return createAndRecord(ctx, content, rc);
  return content;
}

/**
 * updateSnapshotContentStatus: fills what the status lacks, decided on the server's copy —
 * `fromServer` when the caller holds one (its guard patch's answer), else read first.
 */
async function recordResult(
  ctx: SnapshotterContext,
  content: VolumeSnapshotContent,
  result: SnapshotResult,
  signal: AbortSignal,
  fromServer?: VolumeSnapshotContent,
): Promise<VolumeSnapshotContent> {
  return patchStatusFromServer(
    ctx.client,
    GVR_CONTENT,
    content.metadata.name!,
    fromServer,
    (fresh) => contentStatusPatch(fresh.status, result),
    signal,
  );
}

/** The status fields `result` adds to `status`; undefined when it already says all of it. */
function contentStatusPatch(
  status: VolumeSnapshotContentStatus | undefined,
  result: SnapshotResult,
): Record<string, unknown> | undefined {
  const patch: Partial<Record<keyof VolumeSnapshotContentStatus, unknown>> = {};
  if (!status) {
    patch.snapshotHandle = result.handle;
    patch.readyToUse = result.readyToUse;
    patch.creationTime = result.creationTime;
    if (result.groupSnapshotId !== "") patch.volumeGroupSnapshotHandle = result.groupSnapshotId;
    if (result.sizeBytes > 0) patch.restoreSize = result.sizeBytes;
  } else {
    if (status.snapshotHandle === undefined) patch.snapshotHandle = result.handle;
    if (status.readyToUse !== result.readyToUse) {
      patch.readyToUse = result.readyToUse;
      if (result.readyToUse && status.error) patch.error = null;
    }
    if (status.creationTime === undefined) patch.creationTime = result.creationTime;
    if (status.restoreSize === undefined && result.sizeBytes > 0) patch.restoreSize = result.sizeBytes;
    if (status.volumeGroupSnapshotHandle === undefined && result.groupSnapshotId !== "")
      patch.volumeGroupSnapshotHandle = result.groupSnapshotId;
  }
  return Object.keys(patch).length === 0 ? undefined : patch;
}

/** status.error (and readyToUse false) with a Warning Event, unless the same message is there. */
async function recordError(
  ctx: SnapshotterContext,
  content: VolumeSnapshotContent,
  reason: string,
  message: string,
  signal: AbortSignal,
): Promise<void> {
  const latest = ctx.contents.store.get(content.metadata.name!) ?? content;
  if (latest.status?.error?.message === message) return;
  const error = { time: new Date(ctx.clock.now()).toISOString().replace(/\.\d+Z$/, "Z"), message };
  // The Event goes out even when the status write fails, so the user sees the error.
  ctx.events.event(latest, "Warning", reason, message);
  await patchStatus(ctx.client, GVR_CONTENT, latest, { error, readyToUse: false }, signal, true);
}

/** DeleteSnapshot, then the status cleared of the snapshot (the finalizer goes next). */
async function deleteBackendSnapshot(
  ctx: SnapshotterContext,
  content: VolumeSnapshotContent,
  signal: AbortSignal,
): Promise<VolumeSnapshotContent> {
  let secrets: Record<string, string>;
  try {
    secrets = await annotatedCredentials(ctx, content, signal);
  } catch (error) {
    ctx.events.event(content, "Warning", REASON.deleteError, "Failed to get snapshot credentials");
    throw new CsikitError(
      "CSIKIT_ERR_SECRET",
      `failed to get input parameters to delete snapshot for content ${content.metadata.name}: ${JSON.stringify(errorMessage(error))}`,
      { cause: error },
    );
  }
  try {
    await deleteSnapshot(ctx, content, secrets, signal);
  } catch (error) {
    ctx.events.event(content, "Warning", REASON.deleteError, "Failed to delete snapshot");
    throw new CsikitError(
      "CSIKIT_ERR_DRIVER",
      `failed to delete snapshot "${content.metadata.name}", err: failed to delete snapshot content ${content.metadata.name}: ${JSON.stringify(errorMessage(error))}`,
      { cause: error },
    );
  }
  try {
    const fresh = await getFresh<VolumeSnapshotContent>(
      ctx.client,
      GVR_CONTENT,
      content.metadata.name!,
      signal,
    );
    if (!fresh.status) return fresh;
    return await patchStatus(
      ctx.client,
      GVR_CONTENT,
      fresh,
      { snapshotHandle: null, readyToUse: null, creationTime: null, restoreSize: null },
      signal,
    );
  } catch (error) {
    ctx.events.event(content, "Warning", REASON.deleteError, "Failed to clear content status");
    throw error;
  }
}
