// A VolumeSnapshot with a deletionTimestamp (upstream's processSnapshotWithDeletionTimestamp and
// checkandRemoveSnapshotFinalizersAndCheckandDeleteContent), in upstream's order, each step
// idempotent so a crash between any two writes resumes where it stopped:
//   1. wait while a claim is being restored from it (SnapshotDeletePending), or while its group
//      snapshot still exists (a member is deleted through its group);
//   2. annotate the bound content volumesnapshot-being-deleted (whatever the deletion policy);
//   3. deletionPolicy Delete: delete the content (the sidecar deletes the backend snapshot and
//      then the content's finalizer);
//   4. remove as-source (and in-group once the group is gone) at once, bound-protection only
//      when no Delete content remains — first releasing the source claim if nothing else uses it.
// Unlike upstream, a pending restore requeues nothing by itself: the claim handler enqueues the
// snapshot when the restoring claim changes (upstream waits for the 15-minute resync).

import { FINALIZERS, GVR, type VolumeSnapshot, type VolumeSnapshotContent } from "../../api/index.ts";
import { isNotFound } from "../../kube/index.ts";
import { releaseClaimIfUnused } from "./claim-protection.ts";
import { CLAIMS_BY_SNAPSHOT_SOURCE, type SnapshotSyncContext } from "./context.ts";
import { OPERATIONS } from "./metrics.ts";
import {
  boundContentName,
  contentNameForSnapshot,
  contentPointsTo,
  isSnapshotDeletionCandidate,
  snapshotKey,
} from "./names.ts";
import {
  annotateContent,
  controllerUpdateError,
  errorText,
  setSnapshotFinalizers,
  snapshotEvent,
} from "./writes.ts";
import { ANNOTATIONS } from "../../api/index.ts";

const BEING_DELETED = ANNOTATIONS.volumeSnapshotBeingDeleted.key;

/** Whether a Pending claim is being restored from this snapshot (upstream's isVolumeBeingCreatedFromSnapshot). */
export function restoreInProgress(ctx: SnapshotSyncContext, snapshot: VolumeSnapshot): boolean {
  for (const claim of ctx.claimStore.byIndex(CLAIMS_BY_SNAPSHOT_SOURCE, snapshotKey(snapshot)))
    if (claim.status?.phase === "Pending" || claim.status?.phase === undefined) return true;
  return false;
}

export async function processSnapshotDeletion(
  ctx: SnapshotSyncContext,
  snapshot: VolumeSnapshot,
): Promise<void> {
  const uid = snapshot.metadata?.uid ?? "";
  const dynamic = !snapshot.spec.source.volumeSnapshotContentName;
  let contentName = boundContentName(snapshot) ?? "";
  // The content may exist before the status names it (a crash right after the create).
  if (contentName === "" && snapshot.spec.source.persistentVolumeClaimName)
    contentName = contentNameForSnapshot(snapshot);
  let content: VolumeSnapshotContent | undefined = contentName ? ctx.contents.get(contentName) : undefined;
  ctx.metrics.start(
    OPERATIONS.deleteSnapshot,
    uid,
    content?.spec.driver ?? "",
    dynamic ? "dynamic" : "pre-provisioned",
  );
  let deleteContent = false;
  if (content !== undefined && contentPointsTo(content, snapshot))
    deleteContent = content.spec.deletionPolicy === "Delete";
  else content = undefined;

  if (!isSnapshotDeletionCandidate(snapshot)) return;
  if (content !== undefined && restoreInProgress(ctx, snapshot)) {
    snapshotEvent(
      ctx,
      snapshot,
      "Warning",
      "SnapshotDeletePending",
      "Snapshot is being used to restore a PVC",
    );
    return;
  }
  let removeGroupFinalizer = false;
  const groupName = snapshot.status?.volumeGroupSnapshotName;
  if (groupName) {
    const group = ctx.group?.groups.get(`${snapshot.metadata?.namespace ?? ""}/${groupName}`);
    if (group !== undefined) {
      const message = `deletion of the individual volume snapshot ${snapshotKey(snapshot)} is not allowed as it belongs to group snapshot ${snapshot.metadata?.namespace ?? ""}/${groupName}. Deleting the group snapshot will trigger the deletion of all the individual volume snapshots that are part of the group.`;
      snapshotEvent(ctx, snapshot, "Warning", "SnapshotDeletePending", message);
      throw new Error(message);
    }
    removeGroupFinalizer = true;
  }
  if (content !== undefined) content = await annotateContent(ctx, content, { [BEING_DELETED]: "yes" });
  if (content !== undefined && deleteContent && content.metadata?.deletionTimestamp === undefined) {
    try {
      await ctx.client.delete(GVR.volumeSnapshotContents, content.metadata?.name ?? "", {}, ctx.signal);
    } catch (error) {
      if (!isNotFound(error)) {
        snapshotEvent(
          ctx,
          snapshot,
          "Warning",
          "SnapshotContentObjectDeleteError",
          "Failed to delete snapshot content API object",
        );
        throw new Error(
          `failed to delete VolumeSnapshotContent ${content.metadata?.name ?? ""} from API server: "${errorText(error)}"`,
        );
      }
    }
  }
  const remove = [FINALIZERS.volumeSnapshotAsSource.key];
  if (!(content !== undefined && deleteContent)) remove.push(FINALIZERS.volumeSnapshotBound.key);
  if (removeGroupFinalizer) remove.push(FINALIZERS.volumeSnapshotInGroup.key);
  try {
    await releaseClaimIfUnused(ctx, snapshot, true);
  } catch (error) {
    snapshotEvent(
      ctx,
      snapshot,
      "Warning",
      "ErrorPVCFinalizer",
      "Error check and remove PVC Finalizer for VolumeSnapshot",
    );
    throw controllerUpdateError(snapshot.metadata?.name ?? "", errorText(error));
  }
  await setSnapshotFinalizers(ctx, snapshot, [], remove);
}
