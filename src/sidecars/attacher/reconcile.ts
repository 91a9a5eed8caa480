// The --reconcile-sync loop (csiHandler.ReconcileVA), run only when the driver has LIST_VOLUMES
// and LIST_VOLUMES_PUBLISHED_NODES: every period, ListVolumes (paged by --max-entries) says on
// which nodes each volume is published; a VolumeAttachment of this driver whose
// status.attached disagrees is marked for a forced sync and queued, so its worker publishes
// (or unpublishes) again. The loop never writes itself: the one writer of a VolumeAttachment
// stays its queue worker, which may run on a fresher object.

import { errorMessage, CsikitError } from "../../base/index.ts";
import type { AttacherContext } from "./context.ts";
import { nodeIdFor } from "./node-id.ts";
import { attachmentVolume } from "./volume-source.ts";

/** volume_id → node IDs it is published to, over every ListVolumes page. */
export async function listPublishedNodes(
  ctx: AttacherContext,
  signal: AbortSignal,
): Promise<Map<string, string[]>> {
  const published = new Map<string, string[]>();
  let startingToken = "";
  const seenTokens = new Set<string>();
  for (;;) {
    const page = await ctx.csi.controller.listVolumes(
      { maxEntries: ctx.maxEntries, startingToken },
      { timeoutMs: ctx.timeoutMs, signal },
    );
    for (const entry of page.entries) {
      const id = entry.volume?.volumeId;
      if (id) published.set(id, [...(entry.status?.publishedNodeIds ?? [])]);
    }
    if (page.nextToken === "") return published;
    // A driver handing out the same token twice would page forever.
    if (seenTokens.has(page.nextToken))
      throw new CsikitError(
        "CSIKIT_ERR_DRIVER",
        `ListVolumes returned next_token ${JSON.stringify(page.nextToken)} twice`,
      );
    seenTokens.add(page.nextToken);
    startingToken = page.nextToken;
  }
}

/** One reconcile pass; returns the names it queued for a forced sync. */
export async function reconcileAttachments(
  ctx: AttacherContext,
  enqueue: (name: string) => void,
  signal: AbortSignal,
): Promise<string[]> {
  ctx.logger.info(4, "reconciling VolumeAttachments with the driver's ListVolumes");
  const published = await listPublishedNodes(ctx, signal);
  const queued: string[] = [];
  for (const va of ctx.attachments.list()) {
    if (va.spec.attacher !== ctx.driver.name) continue;
    const name = va.metadata.name!;
    let nodeId: string;
    let handle: string;
    try {
      nodeId = await nodeIdFor(ctx, va.spec.nodeName, { va, signal });
      handle = attachmentVolume(va, (pvName) => ctx.volumes.get(pvName)).csi.volumeHandle;
    } catch (error) {
      ctx.logger.info(4, "skipping attachment in reconcile", {
        volumeAttachment: name,
        err: errorMessage(error),
      });
      continue;
    }
    const attached = va.status?.attached ?? false;
    const found = published.get(handle)?.includes(nodeId) ?? false;
    if (attached === found) continue;
    ctx.logger.warn("attachment status disagrees with the driver; syncing it again", {
      volumeAttachment: name,
      volumeHandle: handle,
      attached,
      published: found,
    });
    ctx.forceSync.add(name);
    enqueue(name);
    queued.push(name);
  }
  return queued;
}

/** Runs a pass at once, then every `periodMs`, until the signal aborts; a failed pass is logged. */
export async function runReconcileLoop(
  ctx: AttacherContext,
  options: { periodMs: number; enqueue: (name: string) => void },
  signal: AbortSignal,
): Promise<void> {
  while (!signal.aborted) {
    try {
      await reconcileAttachments(ctx, options.enqueue, signal);
    } catch (error) {
      if (!signal.aborted)
        ctx.logger.error("failed to reconcile VolumeAttachments", { err: errorMessage(error) });
    }
    try {
      await ctx.clock.sleep(options.periodMs, signal);
    } catch {
      return;
    }
  }
}
