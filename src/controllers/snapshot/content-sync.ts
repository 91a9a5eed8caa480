// One VolumeSnapshotContent (upstream's syncContent): validate its source, give a bound content
// its protection finalizer, resync its snapshot when the content's status moved ahead of the
// snapshot's, and mark it volumesnapshot-being-deleted once its snapshot is being deleted. A
// content whose snapshot is gone is left alone, as upstream (deleting it could destroy a backend
// snapshot a user copied between clusters); the protection finalizer is the sidecar's to remove.

import { ANNOTATIONS, FINALIZERS } from "../../api/index.ts";
import type { SnapshotSyncContext } from "./context.ts";
import { has, isDeleting, isSnapshotDeletionCandidate } from "./names.ts";
import { snapshotLagsContent } from "./status.ts";
import { annotateContent, contentEvent, controllerUpdateError, errorText } from "./writes.ts";
import { GVR, type VolumeSnapshotContent } from "../../api/index.ts";

export async function syncContentKey(ctx: SnapshotSyncContext, name: string): Promise<void> {
  const content = ctx.contents.get(name);
  if (content === undefined) return;
  const source = content.spec.source;
  if (!source.volumeHandle === !source.snapshotHandle) {
    const message = "Exactly one of VolumeHandle and SnapshotHandle should be specified";
    contentEvent(ctx, content, "Warning", "ContentValidationError", message);
    throw new Error(message);
  }
  const ref = content.spec.volumeSnapshotRef;
  if (!ref.uid) return; // pre-bound to a snapshot not bound yet: the snapshot's sync binds it
  if (!isDeleting(content) && !has(content, FINALIZERS.volumeSnapshotContentBound.key)) {
    try {
      ctx.contents.remember(
        await ctx.client.update<VolumeSnapshotContent>(
          GVR.volumeSnapshotContents,
          {
            ...content,
            metadata: {
              ...content.metadata,
              finalizers: [
                ...(content.metadata?.finalizers ?? []),
                FINALIZERS.volumeSnapshotContentBound.key,
              ],
            },
          },
          {},
          ctx.signal,
        ),
      );
    } catch (error) {
      throw controllerUpdateError(name, errorText(error));
    }
    return;
  }
  const snapshotKey = `${ref.namespace ?? ""}/${ref.name ?? ""}`;
  let snapshot = ctx.snapshots.get(snapshotKey);
  if (snapshot !== undefined && snapshot.metadata?.uid !== ref.uid) snapshot = undefined;
  else if (snapshot !== undefined && snapshotLagsContent(snapshot, content)) ctx.enqueueSnapshot(snapshotKey);
  if (snapshot !== undefined && isSnapshotDeletionCandidate(snapshot))
    await annotateContent(ctx, content, { [ANNOTATIONS.volumeSnapshotBeingDeleted.key]: "yes" });
}
