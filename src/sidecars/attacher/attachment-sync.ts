// `syncAttachment(ctx, name, rc)`: one VolumeAttachment of this driver brought to what its
// spec and deletionTimestamp ask, as external-attacher's csiHandler (or, for a driver without
// PUBLISH_UNPUBLISH_VOLUME, its trivialHandler) does. Idempotent and crash-safe:
//
// attach (no deletionTimestamp; skipped when attached unless ListVolumes disagreed):
//   check the volume source, capability, secrets and node ID first (an error there leaves no
//   finalizer behind to block the VolumeAttachment's deletion) → PV finalizer → VolumeAttachment
//   finalizer + node-id annotation → ControllerPublishVolume → status.attached + metadata.
//   A kill -9 anywhere leaves at most a finalizer, so the next run publishes again (the call
//   is idempotent) or, once deleted, unpublishes.
// detach (deletionTimestamp; skipped without our finalizer unless ListVolumes disagreed):
//   ControllerUnpublishVolume with the node ID of CSINode, the Node or the annotation → only
//   then the finalizer comes off → attached=false.
// A failure is saved in status.attachError/detachError, recorded as a Warning Event on the
// VolumeAttachment and thrown, so the work queue retries with per-item exponential backoff.
// When the failure is the driver's (ControllerPublish/Unpublish returned a gRPC status), the
// error's errorCode is that status code, as external-attacher v4.10+ writes it (KEP-4876: the
// kubelet reacts to ResourceExhausted); a failure before the call (secret, node ID, PV) has none.

import {
  EVENT_REASONS,
  GVR,
  type CSIPersistentVolumeSource,
  type PersistentVolume,
  type Secret,
  type VolumeAttachment,
} from "../../api/index.ts";
import { grpcCode } from "../../csi/index.ts";
import {
  csiErrorText,
  objectReference,
  secretStrings,
  withMigratedCalls,
  type ProcessResult,
  type ReconcileContext,
} from "../../kube/index.ts";
import {
  addVolumeFinalizer,
  hasFinalizer,
  markAttached,
  markDetached,
  saveAttachIntent,
  saveVolumeError,
} from "./attachment-writes.ts";
import { consumeForceSync, isSuperseded, noteSuperseded, type AttacherContext } from "./context.ts";
import { nodeIdFor } from "./node-id.ts";
import { attachmentVolume, volumeCapability } from "./volume-source.ts";

/** An attach or detach step that failed; its message is what status and Event show. */
export class AttachmentError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "AttachmentError";
  }
}

/** ControllerPublish/ControllerUnpublish itself failed: `grpcCode` is the driver's status code. */
export class DriverCallError extends Error {
  readonly grpcCode: number;
  constructor(cause: unknown, code: number) {
    super(csiErrorText(cause), { cause });
    this.name = "DriverCallError";
    this.grpcCode = code;
  }
}

/** Runs one CSI call; a failure with a gRPC status comes out as a DriverCallError. */
async function driverCall<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const code = grpcCode(error);
    if (code === undefined || code === 0) throw error;
    throw new DriverCallError(error, code);
  }
}

export async function syncAttachment(
  ctx: AttacherContext,
  name: string,
  rc: ReconcileContext,
): Promise<ProcessResult | void> {
  const va = ctx.attachments.get(name);
  // OBSERVATION: gone from the cache; nothing holds it (a finalizer would have kept it).
  if (!va) return;
  // OBSERVATION: another driver's attachment.
  if (va.spec.attacher !== ctx.driver.name) return;
  // OBSERVATION: the cache predates our own last write; the watch will bring the newer object.
  if (isSuperseded(ctx, name, va.metadata.resourceVersion)) {
    rc.logger.info(4, "cached attachment predates our last write; waiting for the watch");
    return;
  }
  if (!ctx.driver.publishUnpublish) {
    await trivialSync(ctx, va, rc);
    return;
  }
  if (va.metadata.deletionTimestamp) await syncDetach(ctx, va, rc);
  else await syncAttach(ctx, va, rc);
}

async function syncAttach(ctx: AttacherContext, va: VolumeAttachment, rc: ReconcileContext): Promise<void> {
  const forced = consumeForceSync(ctx, va.metadata.name!);
  if (!forced && va.status?.attached) {
    rc.logger.info(4, "already attached");
    return;
  }
  rc.logger.info(2, "attaching", { node: va.spec.nodeName, forced });
  let attached: { va: VolumeAttachment; publishContext: Record<string, string> };
  try {
    attached = await csiAttach(ctx, va, rc.signal);
  } catch (error) {
    await reportFailure(ctx, va, "attachError", error, rc);
    throw new AttachmentError(`failed to attach: ${csiErrorText(error)}`, { cause: error });
  }
  rc.logger.info(2, "attached", { node: va.spec.nodeName });
  const written = await markAttached(ctx, attached.va, attached.publishContext, rc.signal);
  noteSuperseded(
    ctx,
    va.metadata.name!,
    [va.metadata.resourceVersion, attached.va.metadata.resourceVersion],
    written.metadata.resourceVersion,
  );
}

async function syncDetach(ctx: AttacherContext, va: VolumeAttachment, rc: ReconcileContext): Promise<void> {
  const forced = consumeForceSync(ctx, va.metadata.name!);
  if (!forced && !hasFinalizer(va, ctx.finalizer)) {
    rc.logger.info(4, "already detached");
    return;
  }
  rc.logger.info(2, "detaching", { node: va.spec.nodeName, forced });
  try {
    await csiDetach(ctx, va, rc.signal);
  } catch (error) {
    await reportFailure(ctx, va, "detachError", error, rc);
    throw new AttachmentError(`failed to detach: ${csiErrorText(error)}`, { cause: error });
  }
  rc.logger.info(2, "detached", { node: va.spec.nodeName });
  const { replaced, current } = await markDetached(ctx, va, rc.signal);
  noteSuperseded(ctx, va.metadata.name!, replaced, current);
}

/** Status error + Warning Event; a failure to save is logged, the original error wins. */
async function reportFailure(
  ctx: AttacherContext,
  va: VolumeAttachment,
  field: "attachError" | "detachError",
  error: unknown,
  rc: ReconcileContext,
): Promise<void> {
  if (rc.signal.aborted) return;
  const message = csiErrorText(error);
  const attach = field === "attachError";
  const reason = attach ? EVENT_REASONS.failedAttachVolume : EVENT_REASONS.failedDetachVolume;
  const volume = va.spec.source.persistentVolumeName ?? "(inline)";
  ctx.events.event(
    objectReference(va, { kind: "VolumeAttachment", apiVersion: "storage.k8s.io/v1" }),
    "Warning",
    reason.key,
    `${attach ? "AttachVolume.Attach" : "DetachVolume.Detach"} failed for volume "${volume}" on node "${va.spec.nodeName}": ${message}`,
  );
  try {
    const errorCode = ctx.errorCodes && error instanceof DriverCallError ? error.grpcCode : undefined;
    await saveVolumeError(
      ctx,
      va,
      { field, message, ...(errorCode === undefined ? {} : { errorCode }) },
      rc.signal,
    );
  } catch (saveError) {
    rc.logger.info(2, `failed to save ${field}`, { err: csiErrorText(saveError) });
  }
}

/** Secrets of controllerPublishSecretRef as strings; {} without one. Values never leave here but to CSI. */
async function publishSecrets(
  ctx: AttacherContext,
  source: CSIPersistentVolumeSource,
  signal: AbortSignal,
): Promise<Record<string, string>> {
  const ref = source.controllerPublishSecretRef;
  if (!ref?.name) return {};
  const namespace = ref.namespace ?? "";
  try {
    const secret = await ctx.client.get<Secret>(GVR.secrets, ref.name, { namespace }, signal);
    return secretStrings(secret);
  } catch (error) {
    throw new AttachmentError(`failed to load secret "${namespace}/${ref.name}": ${csiErrorText(error)}`, {
      cause: error,
    });
  }
}

async function csiAttach(
  ctx: AttacherContext,
  va: VolumeAttachment,
  signal: AbortSignal,
): Promise<{ va: VolumeAttachment; publishContext: Record<string, string> }> {
  const volume = attachmentVolume(va, (pvName) => ctx.volumes.get(pvName));
  let pv: PersistentVolume | undefined = volume.pv;
  if (pv) {
    // Refuse to attach a volume on its way out.
    if (pv.metadata.deletionTimestamp)
      throw new AttachmentError(`PersistentVolume "${pv.metadata.name}" is marked for deletion`);
    try {
      pv = await addVolumeFinalizer(ctx, pv, signal);
    } catch (error) {
      throw new AttachmentError(`could not add PersistentVolume finalizer: ${csiErrorText(error)}`, {
        cause: error,
      });
    }
  }
  // The spec says the CO MUST send readonly=false to a driver without PUBLISH_READONLY.
  const readonly = ctx.driver.publishReadonly ? (volume.csi.readOnly ?? false) : false;
  const capability = volumeCapability(volume.spec, {
    singleNodeMultiWriter: ctx.driver.singleNodeMultiWriter,
    defaultFsType: ctx.defaultFsType,
  });
  const secrets = await publishSecrets(ctx, volume.csi, signal);
  const nodeId = await nodeIdFor(ctx, va.spec.nodeName, { signal });
  let saved: VolumeAttachment;
  try {
    saved = await saveAttachIntent(ctx, va, nodeId, signal);
  } catch (error) {
    throw new AttachmentError(`could not save VolumeAttachment: ${csiErrorText(error)}`, { cause: error });
  }
  const response = await withMigratedCalls(volume.migrated, () =>
    driverCall(() =>
      ctx.csi.controller.controllerPublishVolume(
        {
          volumeId: volume.csi.volumeHandle,
          nodeId,
          volumeCapability: capability,
          readonly,
          secrets,
          volumeContext: volume.csi.volumeAttributes ?? {},
        },
        { timeoutMs: ctx.timeoutMs, signal },
      ),
    ),
  );
  return { va: saved, publishContext: response.publishContext };
}

async function csiDetach(ctx: AttacherContext, va: VolumeAttachment, signal: AbortSignal): Promise<void> {
  const volume = attachmentVolume(va, (pvName) => ctx.volumes.get(pvName));
  const secrets = await publishSecrets(ctx, volume.csi, signal);
  const nodeId = await nodeIdFor(ctx, va.spec.nodeName, { va, signal });
  await withMigratedCalls(volume.migrated, () =>
    driverCall(() =>
      ctx.csi.controller.controllerUnpublishVolume(
        { volumeId: volume.csi.volumeHandle, nodeId, secrets },
        { timeoutMs: ctx.timeoutMs, signal },
      ),
    ),
  );
}

/**
 * A driver without PUBLISH_UNPUBLISH_VOLUME: attaching is marking attached (no finalizer, as
 * upstream's trivial handler); a finalizer left by an earlier run that did publish is taken
 * off once the VolumeAttachment is deleted, so nothing blocks its removal.
 */
async function trivialSync(ctx: AttacherContext, va: VolumeAttachment, rc: ReconcileContext): Promise<void> {
  if (!va.metadata.deletionTimestamp) {
    if (va.status?.attached) return;
    rc.logger.info(2, "marking attached (driver has no PUBLISH_UNPUBLISH_VOLUME)");
    const written = await markAttached(ctx, va, {}, rc.signal);
    noteSuperseded(ctx, va.metadata.name!, [va.metadata.resourceVersion], written.metadata.resourceVersion);
    return;
  }
  if (!hasFinalizer(va, ctx.finalizer)) return;
  const { replaced, current } = await markDetached(ctx, va, rc.signal);
  noteSuperseded(ctx, va.metadata.name!, replaced, current);
}
