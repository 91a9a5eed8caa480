// `syncVolume(ctx, name, rc)`: the PV side of the attacher (csiHandler's
// SyncNewOrUpdatedPersistentVolume). The attacher finalizer keeps a PV while a
// VolumeAttachment may still need it for ControllerUnpublishVolume; once the PV is being
// deleted and no VolumeAttachment names it any more, the finalizer comes off. A deletion of a
// VolumeAttachment re-queues its PV (controller.ts), so the last detach releases the PV.

import type { ProcessResult, ReconcileContext } from "../../kube/index.ts";
import { hasFinalizer, removeVolumeFinalizer } from "./attachment-writes.ts";
import type { AttacherContext } from "./context.ts";

/** Whether a PV event concerns the attacher: it carries the finalizer and is being deleted. */
export function volumeNeedsSync(
  pv: { metadata?: { finalizers?: string[]; deletionTimestamp?: string } },
  finalizer: string,
): boolean {
  return hasFinalizer(pv, finalizer) && pv.metadata?.deletionTimestamp !== undefined;
}

export async function syncVolume(
  ctx: AttacherContext,
  name: string,
  rc: ReconcileContext,
): Promise<ProcessResult | void> {
  const pv = ctx.volumes.get(name);
  // OBSERVATION: the PV is gone, or not being deleted, or not ours to release.
  if (!pv || !volumeNeedsSync(pv, ctx.finalizer)) return;
  const user = ctx.attachments.list().find((va) => va.spec.source.persistentVolumeName === name);
  if (user) {
    // OBSERVATION: still named by an attachment; its deletion re-queues this PV.
    rc.logger.info(4, "volume still used by an attachment", { volumeAttachment: user.metadata.name });
    return;
  }
  // OBSERVATION: deleting, finalizer present, no attachment left.
  await removeVolumeFinalizer(ctx, pv, rc.signal);
  rc.logger.info(2, "removed finalizer from PV");
}
