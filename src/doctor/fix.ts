// Applies one finding's fix. Every fix is idempotent (what is already gone counts as done) and
// pinned to what the check saw (a finalizer is removed by a JSON patch that tests the object's
// uid and the finalizer at its index; an object is deleted with a uid precondition; a loop
// device is detached only while backed by the same file). The one hard rule lives here, not in
// the checks: DeleteVolume is never sent for a volume a PersistentVolume names — the PVs are
// listed afresh right before the call (and likewise the contents before DeleteSnapshot).

import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { GVR, type GroupVersionKindResource, type KubeResource } from "../api/index.ts";
import { ValidationError } from "../base/index.ts";
import { GrpcStatus, grpcCode, type CsiClient } from "../csi/index.ts";
import { apiStatusCode, isNotFound, type KubeClient } from "../kube/index.ts";
import { snapshotHandlesOf } from "./check-backend.ts";
import { namedVolumeHandles } from "./named-volumes.ts";
import { collectCluster } from "./collect-cluster.ts";
import { readMounts } from "./collect-node-root.ts";
import type { BackendState, FixAction, ObjectRef } from "./types.ts";

export interface FixContext {
  kube: KubeClient;
  /** The driver's client and what it is (present with --csi-address). */
  csi?: { client: CsiClient; backend: BackendState };
  signal?: AbortSignal;
}

/** What a fix did: "done" (changed something), "already" (nothing left to do). */
export type FixOutcome = "done" | "already";

export class FixRefused extends Error {}

const KINDS: Record<string, GroupVersionKindResource> = {
  PersistentVolume: GVR.persistentVolumes,
  PersistentVolumeClaim: GVR.persistentVolumeClaims,
  VolumeAttachment: GVR.volumeAttachments,
  VolumeSnapshot: GVR.volumeSnapshots,
  VolumeSnapshotContent: GVR.volumeSnapshotContents,
};

function gvrOf(ref: ObjectRef): GroupVersionKindResource {
  const gvr = KINDS[ref.kind];
  if (!gvr) throw new ValidationError(`doctor cannot change a ${ref.kind}`);
  return gvr;
}

function run(command: string, args: readonly string[]): Promise<void> {
  return new Promise((resolve, reject) =>
    execFile(command, args, { timeout: 30_000 }, (error, _stdout, stderr) =>
      error
        ? reject(new Error(`${command} ${args.join(" ")}: ${stderr.trim() || error.message}`))
        : resolve(),
    ),
  );
}

async function removeFinalizer(context: FixContext, ref: ObjectRef, finalizer: string): Promise<FixOutcome> {
  const gvr = gvrOf(ref);
  const where = ref.namespace ? { namespace: ref.namespace } : {};
  for (let attempt = 0; ; attempt++) {
    let object: KubeResource;
    try {
      object = await context.kube.get<KubeResource>(gvr, ref.name, where, context.signal);
    } catch (error) {
      if (isNotFound(error)) return "already";
      throw error;
    }
    if (ref.uid && object.metadata.uid !== ref.uid)
      throw new FixRefused("the object was replaced by a new one");
    const index = object.metadata.finalizers?.indexOf(finalizer) ?? -1;
    if (index < 0) return "already";
    const patch = [
      { op: "test", path: "/metadata/uid", value: object.metadata.uid },
      { op: "test", path: `/metadata/finalizers/${index}`, value: finalizer },
      { op: "remove", path: `/metadata/finalizers/${index}` },
    ];
    try {
      await context.kube.patch(gvr, ref.name, patch, { ...where, type: "json" }, context.signal);
      return "done";
    } catch (error) {
      // 422: a test failed on a stale read (another finalizer went first); read again.
      if (isNotFound(error)) return "already";
      if (apiStatusCode(error) !== 422 || attempt >= 2) throw error;
    }
  }
}

async function deleteObject(context: FixContext, ref: ObjectRef): Promise<FixOutcome> {
  try {
    await context.kube.delete(
      gvrOf(ref),
      ref.name,
      {
        ...(ref.namespace ? { namespace: ref.namespace } : {}),
        ...(ref.uid ? { preconditions: { uid: ref.uid } } : {}),
      },
      context.signal,
    );
    return "done";
  } catch (error) {
    if (isNotFound(error)) return "already";
    if (apiStatusCode(error) === 409) throw new FixRefused("the object was replaced by a new one");
    throw error;
  }
}

function driverOf(context: FixContext): { client: CsiClient; backend: BackendState } {
  if (!context.csi) throw new FixRefused("no driver socket (--csi-address)");
  return context.csi;
}

async function deleteVolume(context: FixContext, volumeId: string): Promise<FixOutcome> {
  const { client, backend } = driverOf(context);
  // The guard: a fresh look, since a PV may have been created since the findings were made.
  const cluster = await collectCluster(context.kube, context.signal);
  const named = namedVolumeHandles(cluster, backend.driverName);
  if (named.handles.has(volumeId))
    throw new FixRefused(`a PersistentVolume (or an inline volume) names volume ${volumeId}: never deleted`);
  if (!named.complete)
    throw new FixRefused(
      `the handle of ${named.untranslatable.join(", ")} cannot be worked out: it may name ${volumeId}`,
    );
  try {
    await client.controller.deleteVolume({ volumeId }, context.signal ? { signal: context.signal } : {});
  } catch (error) {
    if (grpcCode(error) === GrpcStatus.NOT_FOUND) return "already";
    throw error;
  }
  return "done";
}

async function deleteSnapshot(context: FixContext, snapshotId: string): Promise<FixOutcome> {
  const { client, backend } = driverOf(context);
  const cluster = await collectCluster(context.kube, context.signal);
  if (cluster.volumeSnapshotContents === undefined)
    throw new FixRefused("the snapshot CRDs are not installed: doctor cannot tell what uses it");
  if (snapshotHandlesOf(cluster, backend.driverName).has(snapshotId))
    throw new FixRefused(`a VolumeSnapshotContent names snapshot ${snapshotId}`);
  try {
    await client.controller.deleteSnapshot({ snapshotId }, context.signal ? { signal: context.signal } : {});
  } catch (error) {
    if (grpcCode(error) === GrpcStatus.NOT_FOUND) return "already";
    throw error;
  }
  return "done";
}

/** Unmounts `path` until it is no longer a mount point (a path may hold stacked mounts). */
async function unmount(path: string): Promise<FixOutcome> {
  let outcome: FixOutcome = "already";
  for (let attempt = 0; attempt < 8; attempt++) {
    const mounted = (await readMounts()).some((m) => m.mountPoint === path);
    if (!mounted) return outcome;
    await run("umount", [path]);
    outcome = "done";
  }
  throw new Error(`${path} is still mounted after 8 unmounts`);
}

async function detachLoop(device: string, backingFile: string): Promise<FixOutcome> {
  const name = device.replace(/^\/dev\//, "");
  let current: string;
  try {
    current = (await readFile(join("/sys/block", name, "loop", "backing_file"), "utf8")).replace(/\n$/, "");
  } catch {
    return "already"; // detached meanwhile
  }
  if (current !== backingFile) throw new FixRefused(`${device} is now backed by ${current}`);
  await run("losetup", ["-d", device]);
  return "done";
}

export async function applyFix(context: FixContext, action: FixAction): Promise<FixOutcome> {
  switch (action.type) {
    case "remove-finalizer":
      return removeFinalizer(context, action.target, action.finalizer);
    case "delete-object":
      return deleteObject(context, action.target);
    case "delete-volume":
      return deleteVolume(context, action.volumeId);
    case "delete-snapshot":
      return deleteSnapshot(context, action.snapshotId);
    case "unmount":
      return unmount(action.path);
    case "detach-loop":
      return detachLoop(action.device, action.backingFile);
  }
}
