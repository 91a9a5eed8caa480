// Deletion: the reconcile of one PV name. For PVs this provisioner made (`provisioned-by` = the
// driver name, or an in-tree PV migrated to the driver: see migration.ts) with reclaim policy Delete that are Released — or being deleted while carrying
// the HonorPVReclaimPolicy finalizer and not Bound — it calls DeleteVolume with the provisioner
// secret (from the PV's deletion-secret annotations; when they are absent, re-resolved from the
// StorageClass with only ${pv.name}), then deletes the PV and removes its finalizer. Retain:
// the volume is left alone (and a leftover finalizer removed). Failures record
// VolumeFailedDelete and retry with backoff — as does a PV some VolumeAttachment still names
// (upstream's "is still attached to node"; its deletion re-queues the PV). Every step is idempotent (DeleteVolume of a gone
// volume succeeds), so a crash anywhere just repeats the steps.
// In node deployment only PVs whose nodeAffinity admits the local topology are handled.

import { ANNOTATIONS, FINALIZERS, GVR, type PersistentVolume } from "../../api/index.ts";
import { CsikitError, errorMessage } from "../../base/index.ts";
import { isNotFound, objectReference, withMigratedCalls, type ReconcileContext } from "../../kube/index.ts";
import type { ProvisionerContext } from "./context.ts";
import { formatCsiError } from "./errors.ts";
import { addFinalizer, hasFinalizer, removeFinalizer } from "./finalizers.ts";
import { secretReference, type SecretRef } from "./parameters.ts";
import { readSecret } from "./request.ts";
import { affinityMatches } from "./topology.ts";
import { deletionTarget } from "./migration.ts";

const PV_TYPE = { kind: "PersistentVolume", apiVersion: "v1" };
const FINALIZER = FINALIZERS.provisionerDeletion.key;

/** The provisioner secret DeleteVolume of `pv` needs: its annotations, else its class's parameters. */
export function deletionSecretRef(ctx: ProvisionerContext, pv: PersistentVolume): SecretRef | undefined {
  const annotations = pv.metadata?.annotations ?? {};
  const name = annotations[ANNOTATIONS.provisionerDeletionSecretName.key];
  const namespace = annotations[ANNOTATIONS.provisionerDeletionSecretNamespace.key];
  if (name !== undefined && namespace !== undefined)
    return name === "" && namespace === "" ? undefined : { name, namespace };
  const storageClass = ctx.view.storageClass(pv.spec?.storageClassName ?? "");
  if (!storageClass) return undefined;
  return secretReference("provisioner", storageClass.parameters ?? {}, pv.metadata?.name ?? "");
}

export async function syncVolume(ctx: ProvisionerContext, name: string, rc: ReconcileContext): Promise<void> {
  const pv = ctx.view.volume(name);
  if (!pv) {
    ctx.state.deletedVolumes.delete(name);
    return;
  }
  // Ours: provisioned by this driver, or (CSI migration) an in-tree PV migrated to it, in CSI form.
  const target = deletionTarget(ctx.driver.name, pv);
  const csi = target?.spec?.csi;
  if (!pv.spec || target === undefined || csi === undefined) return;
  const nd = ctx.options.nodeDeployment;
  if (nd.enabled && !affinityMatches(target.spec?.nodeAffinity, ctx.driver.localTopology)) return;
  const finalizer = hasFinalizer(pv, FINALIZER);
  const deleting = pv.metadata?.deletionTimestamp !== undefined;
  if (pv.spec.persistentVolumeReclaimPolicy !== "Delete") {
    // OBSERVATION: Retain (or Recycle): never touch the volume; drop our finalizer if any.
    if (finalizer) await removeFinalizer(ctx.client, GVR.persistentVolumes, pv, FINALIZER, rc.signal);
    return;
  }
  const phase = pv.status?.phase;
  const shouldDelete = deleting ? finalizer && phase !== "Bound" : phase === "Released";
  if (!shouldDelete) {
    // OBSERVATION: in use (or being deleted without our finalizer): with HonorPVReclaimPolicy,
    // make sure a live Delete PV carries the finalizer (PVs from before the gate was on).
    if (!deleting && !finalizer && ctx.options.features.honorPVReclaimPolicy)
      await addFinalizer(ctx.client, GVR.persistentVolumes, pv, FINALIZER, rc.signal);
    return;
  }
  const className = pv.spec.storageClassName ?? "";
  const started = ctx.clock.now();
  const uid = pv.metadata?.uid ?? "";
  const alreadyDeleted = ctx.state.deletedVolumes.get(name) === uid;
  if (!alreadyDeleted)
    try {
      // As upstream's Delete: never DeleteVolume a volume some node still has attached.
      const attachment = ctx.view.attachmentOf(name);
      if (attachment)
        throw new CsikitError(
          "CSIKIT_ERR_VOLUME_ATTACHED",
          `persistentvolume ${name} is still attached to node ${attachment.spec?.nodeName ?? ""}`,
        );
      const secrets = await readSecret(ctx.view, deletionSecretRef(ctx, pv), rc.signal);
      // An in-tree PV (translated for the call) is metered migrated="true".
      await withMigratedCalls(target !== pv, () =>
        ctx.csi.controller.deleteVolume(
          { volumeId: csi.volumeHandle, secrets },
          { timeoutMs: ctx.options.timeoutMs, signal: rc.signal },
        ),
      );
    } catch (error) {
      const message = formatCsiError(error);
      ctx.metrics.deleteFailed.inc({ class: className });
      ctx.events.event(objectReference(pv, PV_TYPE), "Warning", "VolumeFailedDelete", message);
      rc.logger.info(2, "DeleteVolume failed, will retry", { pv: name, err: message });
      throw error;
    }
  if (!alreadyDeleted) {
    ctx.state.deletedVolumes.set(name, uid);
    ctx.capacityRefresh.deleted(pv);
    ctx.metrics.deleteTotal.inc({ class: className });
    ctx.metrics.deleteDuration.observe({ class: className }, (ctx.clock.now() - started) / 1000);
    rc.logger.info(2, "volume deleted", { pv: name });
  }
  try {
    if (!deleting)
      await ctx.client.delete(
        GVR.persistentVolumes,
        name,
        { preconditions: { uid: pv.metadata?.uid ?? "" } },
        rc.signal,
      );
    if (finalizer) await removeFinalizer(ctx.client, GVR.persistentVolumes, pv, FINALIZER, rc.signal);
  } catch (error) {
    if (!isNotFound(error)) {
      rc.logger.warn("failed to delete PersistentVolume, will retry", { pv: name, err: errorMessage(error) });
      throw error;
    }
  }
}
