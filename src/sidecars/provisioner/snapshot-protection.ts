// Snapshot source protection, as upstream's provisioner (v5.2+): a VolumeSnapshot a claim is
// being restored from carries `provisioner.storage.kubernetes.io/volumesnapshot-as-source-protection`
// from just before CreateVolume until the PV is saved, so the snapshot (and the driver's
// snapshot under it) cannot be deleted while the driver copies from it. The snapshot
// controller's own `snapshot.storage.kubernetes.io/volumesnapshot-as-source-protection` is a
// different finalizer, not touched here.
//
// Removal after a successful provision is best-effort (a failure is logged, never fails the
// provision): a crash between PV save and removal, a claim deleted mid-flight or a claim that
// failed for good leave the finalizer behind, so a periodic sweep (--snapshot-orphan-sweep-interval,
// only when the driver can create snapshots) removes it from every snapshot no Pending claim
// restores from. Without list permission on volumesnapshots the sweep disables itself, as
// upstream treats those RBAC verbs as optional.

import { FINALIZERS, GVR, type PersistentVolumeClaim } from "../../api/index.ts";
import { errorMessage } from "../../base/index.ts";
import {
  apiStatusCode,
  isConflict,
  isNotFound,
  type KubeObject,
  type ReconcileContext,
  type Informer,
} from "../../kube/index.ts";
import type { ProvisionerContext } from "./context.ts";
import { claimDataSource, SNAPSHOT_GROUP, type ResolvedDataSource } from "./data-source.ts";
import { addFinalizer, hasFinalizer, removeFinalizer } from "./finalizers.ts";

export const SNAPSHOT_SOURCE_FINALIZER = FINALIZERS.snapshotAsSourceProtectionProvisioner.key;

/** `namespace/name` of the VolumeSnapshot a claim restores from, if it restores from one. */
export function snapshotSourceKey(claim: PersistentVolumeClaim): string | undefined {
  const ref = claimDataSource(claim);
  if (!ref || ref.kind !== "VolumeSnapshot" || (ref.apiGroup ?? SNAPSHOT_GROUP) !== SNAPSHOT_GROUP)
    return undefined;
  return `${ref.namespace || claim.metadata?.namespace || ""}/${ref.name}`;
}

/**
 * Before CreateVolume: mark the source snapshot. A failure fails this attempt (it is retried),
 * except a 403: upstream (v6.2) made the RBAC for this finalizer optional and provisions without
 * it, so a Role that does not grant it (e.g. upstream's v5 rules) restores unprotected, warned
 * about in the log, instead of leaving every restore Pending.
 */
export async function protectSnapshotSource(
  ctx: ProvisionerContext,
  source: ResolvedDataSource | undefined,
  rc: ReconcileContext,
): Promise<void> {
  if (source?.kind !== "VolumeSnapshot") return;
  const snapshot = await ctx.view.snapshot(source.namespace, source.name, rc.signal);
  if (!snapshot || hasFinalizer(snapshot, SNAPSHOT_SOURCE_FINALIZER)) return;
  try {
    await addFinalizer(ctx.client, GVR.volumeSnapshots, snapshot, SNAPSHOT_SOURCE_FINALIZER, rc.signal);
  } catch (error) {
    if (apiStatusCode(error) !== 403) throw error;
    rc.logger.warn(
      "cannot protect the source snapshot (RBAC: patch volumesnapshots); provisioning without it",
      {
        finalizer: SNAPSHOT_SOURCE_FINALIZER,
        snapshot: `${source.namespace}/${source.name}`,
        err: errorMessage(error),
      },
    );
    return;
  }
  rc.logger.info(3, "added finalizer to snapshot", {
    finalizer: SNAPSHOT_SOURCE_FINALIZER,
    snapshot: `${source.namespace}/${source.name}`,
  });
}

/** After the PV is saved: unmark the source snapshot; failures are left to the sweep. */
export async function releaseSnapshotSource(
  ctx: ProvisionerContext,
  claim: PersistentVolumeClaim,
  rc: ReconcileContext,
): Promise<void> {
  const key = snapshotSourceKey(claim);
  if (key === undefined) return;
  const [namespace = "", name = ""] = key.split("/");
  try {
    const snapshot = await ctx.view.snapshot(namespace, name, rc.signal);
    if (!snapshot || !hasFinalizer(snapshot, SNAPSHOT_SOURCE_FINALIZER)) return;
    await removeFinalizer(ctx.client, GVR.volumeSnapshots, snapshot, SNAPSHOT_SOURCE_FINALIZER, rc.signal);
    rc.logger.info(3, "removed finalizer from snapshot", {
      finalizer: SNAPSHOT_SOURCE_FINALIZER,
      snapshot: key,
    });
  } catch (error) {
    if (isNotFound(error)) return;
    rc.logger.warn("failed to remove snapshot finalizer; the orphan sweep will retry", {
      snapshot: key,
      err: errorMessage(error),
    });
  }
}

/** Snapshots some claim still waits to be restored from (phase Pending or not yet set). */
function pendingSources(claims: readonly PersistentVolumeClaim[]): Set<string> {
  const pending = new Set<string>();
  for (const claim of claims) {
    const phase = claim.status?.phase ?? "";
    if (phase !== "Pending" && phase !== "") continue;
    const key = snapshotSourceKey(claim);
    if (key !== undefined) pending.add(key);
  }
  return pending;
}

export type SweepResult = "swept" | "disabled";

/**
 * One sweep: removes the provisioner's finalizer from every snapshot no pending claim restores
 * from. "disabled" when the snapshot API is absent (no CRDs) or listing it is forbidden.
 */
export async function sweepOrphanedSnapshotFinalizers(
  ctx: ProvisionerContext,
  claims: Informer<PersistentVolumeClaim>,
  signal: AbortSignal,
): Promise<SweepResult> {
  let snapshots: KubeObject[];
  try {
    snapshots = (await ctx.client.list<KubeObject>(GVR.volumeSnapshots, {}, signal)).items;
  } catch (error) {
    const code = apiStatusCode(error);
    if (code === 403 || code === 404) {
      ctx.logger.info(3, "snapshot finalizer sweep disabled: cannot list volumesnapshots", {
        err: errorMessage(error),
      });
      return "disabled";
    }
    throw error;
  }
  const pending = pendingSources(claims.store.list());
  for (const snapshot of snapshots) {
    if (signal.aborted) break;
    if (!hasFinalizer(snapshot, SNAPSHOT_SOURCE_FINALIZER)) continue;
    const key = `${snapshot.metadata?.namespace ?? ""}/${snapshot.metadata?.name ?? ""}`;
    if (pending.has(key)) continue;
    try {
      await removeFinalizer(ctx.client, GVR.volumeSnapshots, snapshot, SNAPSHOT_SOURCE_FINALIZER, signal);
      ctx.logger.info(1, "removed orphaned finalizer from snapshot", { snapshot: key });
    } catch (error) {
      // Gone, changed since the list (the next sweep sees it afresh) or not ours to edit.
      const level = isNotFound(error) || isConflict(error) || apiStatusCode(error) === 422 ? 4 : 3;
      ctx.logger.info(level, "could not remove orphaned snapshot finalizer", {
        snapshot: key,
        err: errorMessage(error),
      });
    }
  }
  return "swept";
}

/**
 * The periodic sweep: at once, then every `intervalMs` until `signal` aborts. Off when the
 * interval is 0 or the driver cannot create snapshots (nothing can be restored then).
 */
export async function runSnapshotSweep(
  ctx: ProvisionerContext,
  claims: Informer<PersistentVolumeClaim>,
  intervalMs: number,
  signal: AbortSignal,
): Promise<void> {
  if (intervalMs <= 0 || !ctx.driver.snapshots) return;
  // Before the claim cache is whole, every restore would look finished: never sweep early.
  try {
    await claims.waitForSync(signal);
  } catch {
    return;
  }
  while (!signal.aborted) {
    try {
      if ((await sweepOrphanedSnapshotFinalizers(ctx, claims, signal)) === "disabled") return;
    } catch (error) {
      if (signal.aborted) return;
      ctx.logger.warn("snapshot finalizer sweep failed", { err: errorMessage(error) });
    }
    try {
      await ctx.clock.sleep(intervalMs, signal);
    } catch {
      return;
    }
  }
}
