// Every write the attacher makes to a VolumeAttachment or a PV, each one merge PATCH shaped as
// upstream's (external-attacher util.go / csi_handler.go), built from the cached object
// without changing it:
// - intent before any ControllerPublishVolume: the finalizer on the PV, then the finalizer and
//   the node-id annotation on the VolumeAttachment (with resourceVersion: a stale cache
//   conflicts and retries instead of dropping someone else's finalizer);
// - outcome: status.attached/attachmentMetadata (attachError cleared), or attachError /
//   detachError {time, message, errorCode: the driver's gRPC code};
// - detach: the finalizer goes first, then the status is reset — a VolumeAttachment being
//   deleted without the finalizer counts as detached, while the other order would make the
//   next sync unpublish a second time (external-attacher#587).

import {
  ANNOTATIONS,
  GVR,
  type PersistentVolume,
  type VolumeAttachment,
  type VolumeError,
} from "../../api/index.ts";
import { isNotFound } from "../../kube/index.ts";
import type { AttacherContext } from "./context.ts";

function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

export function hasFinalizer(object: { metadata?: { finalizers?: string[] } }, finalizer: string): boolean {
  return object.metadata?.finalizers?.includes(finalizer) ?? false;
}

/** Adds the attacher finalizer to the PV (no write when present); returns the PV as stored. */
export async function addVolumeFinalizer(
  ctx: AttacherContext,
  pv: PersistentVolume,
  signal: AbortSignal,
): Promise<PersistentVolume> {
  if (hasFinalizer(pv, ctx.finalizer)) return pv;
  return ctx.client.patch<PersistentVolume>(
    GVR.persistentVolumes,
    pv.metadata.name!,
    {
      metadata: {
        finalizers: [...(pv.metadata.finalizers ?? []), ctx.finalizer],
        resourceVersion: pv.metadata.resourceVersion,
      },
    },
    {},
    signal,
  );
}

/** Removes the attacher finalizer from the PV. */
export async function removeVolumeFinalizer(
  ctx: AttacherContext,
  pv: PersistentVolume,
  signal: AbortSignal,
): Promise<void> {
  await ctx.client.patch(
    GVR.persistentVolumes,
    pv.metadata.name!,
    {
      metadata: {
        finalizers: (pv.metadata.finalizers ?? []).filter((f) => f !== ctx.finalizer),
        resourceVersion: pv.metadata.resourceVersion,
      },
    },
    {},
    signal,
  );
}

/**
 * Records the intent to attach: finalizer and `csi.alpha.kubernetes.io/node-id` on the
 * VolumeAttachment (one write, none when both are there). Returns the object as stored.
 */
export async function saveAttachIntent(
  ctx: AttacherContext,
  va: VolumeAttachment,
  nodeId: string,
  signal: AbortSignal,
): Promise<VolumeAttachment> {
  const key = ANNOTATIONS.attachmentNodeID.key;
  const needsFinalizer = !hasFinalizer(va, ctx.finalizer);
  const needsNodeId = va.metadata.annotations?.[key] !== nodeId;
  if (!needsFinalizer && !needsNodeId) return va;
  return ctx.client.patch<VolumeAttachment>(
    GVR.volumeAttachments,
    va.metadata.name!,
    {
      metadata: {
        ...(needsFinalizer ? { finalizers: [...(va.metadata.finalizers ?? []), ctx.finalizer] } : {}),
        ...(needsNodeId ? { annotations: { [key]: nodeId } } : {}),
        resourceVersion: va.metadata.resourceVersion,
      },
    },
    {},
    signal,
  );
}

/** A merge patch value that makes `attachmentMetadata` exactly `metadata` (null when empty). */
function metadataPatch(
  old: Record<string, string> | undefined,
  metadata: Record<string, string>,
): Record<string, string | null> | null {
  if (Object.keys(metadata).length === 0) return null;
  const patch: Record<string, string | null> = { ...metadata };
  for (const key of Object.keys(old ?? {})) if (!(key in metadata)) patch[key] = null;
  return patch;
}

/**
 * status.attached=true with the publish context; attachError cleared. Returns the object as
 * written: the same resourceVersion when nothing changed (a forced re-attach of an attached
 * volume), as the API server does not bump it for a no-op patch.
 */
export async function markAttached(
  ctx: AttacherContext,
  va: VolumeAttachment,
  publishContext: Record<string, string>,
  signal: AbortSignal,
): Promise<VolumeAttachment> {
  return ctx.client.patch<VolumeAttachment>(
    GVR.volumeAttachments,
    va.metadata.name!,
    {
      status: {
        attached: true,
        attachmentMetadata: metadataPatch(va.status?.attachmentMetadata, publishContext),
        attachError: null,
      },
    },
    { subresource: "status" },
    signal,
  );
}

/**
 * Saves a failure in status.attachError or status.detachError. The merge patch sets errorCode
 * to null when there is none, so an older error's code never stays beside a newer message.
 */
export async function saveVolumeError(
  ctx: AttacherContext,
  va: VolumeAttachment,
  failure: { field: "attachError" | "detachError"; message: string; errorCode?: number },
  signal: AbortSignal,
): Promise<void> {
  const error: Omit<VolumeError, "errorCode"> & { errorCode: number | null } = {
    time: rfc3339(ctx.clock.now()),
    message: failure.message,
    errorCode: failure.errorCode ?? null,
  };
  await ctx.client.patch(
    GVR.volumeAttachments,
    va.metadata.name!,
    { status: { [failure.field]: error } },
    { subresource: "status" },
    signal,
  );
}

/**
 * After ControllerUnpublishVolume succeeded: finalizer off, then attached=false. Returns the
 * resourceVersions its writes replaced and the one they left (undefined: the object is gone),
 * which equals the last replaced one when a write changed nothing.
 */
export async function markDetached(
  ctx: AttacherContext,
  va: VolumeAttachment,
  signal: AbortSignal,
): Promise<{ replaced: (string | undefined)[]; current: string | undefined }> {
  const finalizerFound = hasFinalizer(va, ctx.finalizer);
  if (!finalizerFound && !va.status?.attached) return { replaced: [], current: va.metadata.resourceVersion };
  const replaced = [va.metadata.resourceVersion];
  if (finalizerFound) {
    const updated = await ctx.client.patch<VolumeAttachment>(
      GVR.volumeAttachments,
      va.metadata.name!,
      {
        metadata: {
          finalizers: (va.metadata.finalizers ?? []).filter((f) => f !== ctx.finalizer),
          resourceVersion: va.metadata.resourceVersion,
        },
      },
      {},
      signal,
    );
    replaced.push(updated.metadata.resourceVersion);
  }
  try {
    const written = await ctx.client.patch<VolumeAttachment>(
      GVR.volumeAttachments,
      va.metadata.name!,
      { status: { attached: false, detachError: null, attachmentMetadata: null } },
      { subresource: "status" },
      signal,
    );
    return { replaced, current: written.metadata.resourceVersion };
  } catch (error) {
    // Without the finalizer the API server may have removed the object already.
    if (!isNotFound(error)) throw error;
    return { replaced, current: undefined };
  }
}
