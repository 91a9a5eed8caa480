// snapshot.storage.kubernetes.io/pvc-as-source-protection: the source claim is kept while a
// snapshot is being taken from it. Added right before the content is created (upstream's
// ensurePVCFinalizer), removed when no snapshot still needs the claim.
//
// "Needs" is where csikit differs from upstream, to close external-snapshotter#1305 and #764
// (claims stuck Terminating): upstream counts every unready dynamic snapshot of the claim, so a
// snapshot that can never proceed (a class that does not exist, a failed validation) holds the
// claim forever. Here a snapshot needs the claim while
//   - its content exists and the snapshot is not ready: the driver may be cutting it; or
//   - it has no content yet, but neither it nor the claim is being deleted: it may still create
//     one (while the claim is live, keeping the finalizer costs nothing and avoids flapping).
// A deleting claim is therefore released as soon as no content is being cut from it, whatever
// broken snapshots still name it; and because createContent refuses a deleting claim (as
// upstream), no content starts from a claim that has been released.
//
// The one window between the two: a content create that passed its check of the claim (live,
// protected) but has not answered yet, while the claim is deleted and its release is decided
// on a cache with no content in it. The claim would go while the content it protects is being
// cut. So a create marks its claim in flight (creatingContentFrom) before the check, and the
// release counts a marked claim as used; when the create has answered, the claim is
// reconsidered: kept while the new content is cut, released if the create failed. The window
// is within one process: a second controller would need the Lease.
//
// Besides the snapshot syncs (upstream's only trigger), every claim that carries the finalizer
// is reconciled on its own (syncClaim, enqueued by claim events), so a crash between "finalizer
// added" and "content created", or a snapshot deleted while the controller was down, converges
// without waiting for a snapshot event that may never come.

import { FINALIZERS, type PersistentVolumeClaim, type VolumeSnapshot } from "../../api/index.ts";
import { SNAPSHOTS_BY_CLAIM, type SnapshotSyncContext } from "./context.ts";
import { contentNameForSnapshot, has, isDeleting, isReady } from "./names.ts";
import { controllerUpdateError, setClaimFinalizers } from "./writes.ts";

const PVC_FINALIZER = FINALIZERS.pvcAsSource.key;

export const claimKeyOf = (snapshot: VolumeSnapshot): string | undefined => {
  const claim = snapshot.spec.source.persistentVolumeClaimName;
  return claim ? `${snapshot.metadata?.namespace ?? ""}/${claim}` : undefined;
};

/** Whether `snapshot` still needs its source claim (see the header). */
export function snapshotNeedsClaim(
  ctx: SnapshotSyncContext,
  snapshot: VolumeSnapshot,
  claim: PersistentVolumeClaim,
): boolean {
  if (!snapshot.spec.source.persistentVolumeClaimName || snapshot.spec.source.volumeSnapshotContentName)
    return false;
  if (isReady(snapshot)) return false;
  const content = ctx.contents.get(contentNameForSnapshot(snapshot));
  if (content !== undefined) return true;
  return !isDeleting(snapshot) && !isDeleting(claim);
}

/** Whether any snapshot (except `skip`) still needs the claim, or a content is being created from it. */
export function claimInUse(
  ctx: SnapshotSyncContext,
  claim: PersistentVolumeClaim,
  skip?: VolumeSnapshot,
): boolean {
  const key = `${claim.metadata?.namespace ?? ""}/${claim.metadata?.name ?? ""}`;
  if ((ctx.claimsInContentCreation.get(key) ?? 0) > 0) {
    ctx.logger.info(4, "keeping claim: a content is being created from it", { claim: key });
    return true;
  }
  for (const cached of ctx.snapshotStore.byIndex(SNAPSHOTS_BY_CLAIM, key)) {
    if (skip !== undefined && cached.metadata?.name === skip.metadata?.name) continue;
    const snapshot = ctx.snapshots.get(`${cached.metadata?.namespace ?? ""}/${cached.metadata?.name ?? ""}`);
    if (snapshot !== undefined && snapshotNeedsClaim(ctx, snapshot, claim)) {
      ctx.logger.info(4, "keeping claim: a snapshot is being taken from it", {
        claim: key,
        snapshot: snapshot.metadata?.name,
      });
      return true;
    }
  }
  return false;
}

/** Upstream's checkandRemovePVCFinalizer: drops the finalizer from the snapshot's claim when unused. */
export async function releaseClaimIfUnused(
  ctx: SnapshotSyncContext,
  snapshot: VolumeSnapshot,
  skipCurrent: boolean,
): Promise<void> {
  const key = claimKeyOf(snapshot);
  if (key === undefined || snapshot.spec.source.volumeSnapshotContentName) return;
  const claim = ctx.claims.get(key);
  if (claim === undefined || !has(claim, PVC_FINALIZER)) return;
  if (claimInUse(ctx, claim, skipCurrent ? snapshot : undefined)) return;
  await setClaimFinalizers(ctx, claim, [], [PVC_FINALIZER]);
  ctx.logger.info(2, "removed pvc-as-source-protection: no snapshot is being taken from the claim", {
    claim: key,
  });
}

/**
 * Runs `create` (which checks and protects the snapshot's claim, then creates its content) with
 * the claim marked in flight from before the check until the create has answered, then has the
 * claim reconsidered (see the header).
 */
export async function creatingContentFrom<T>(
  ctx: SnapshotSyncContext,
  snapshot: VolumeSnapshot,
  create: () => Promise<T>,
): Promise<T> {
  const key = claimKeyOf(snapshot);
  if (key === undefined) return create();
  const inFlight = ctx.claimsInContentCreation;
  inFlight.set(key, (inFlight.get(key) ?? 0) + 1);
  try {
    return await create();
  } finally {
    const left = (inFlight.get(key) ?? 1) - 1;
    if (left > 0) inFlight.set(key, left);
    else inFlight.delete(key);
    ctx.enqueueClaim(key);
  }
}

/** Upstream's ensurePVCFinalizer, before a content is created. */
export async function protectClaim(ctx: SnapshotSyncContext, snapshot: VolumeSnapshot): Promise<void> {
  const key = claimKeyOf(snapshot);
  if (key === undefined) return;
  const claim = ctx.claims.get(key);
  if (claim === undefined)
    throw controllerUpdateError(snapshot.metadata?.name ?? "", "cannot get claim from snapshot");
  if (isDeleting(claim))
    throw controllerUpdateError(
      claim.metadata?.name ?? "",
      "cannot add finalizer on claim because it is being deleted",
    );
  if (has(claim, PVC_FINALIZER)) return;
  await setClaimFinalizers(ctx, claim, [PVC_FINALIZER], []);
}

/** The claim queue's reconcile: a claim with the finalizer that no snapshot needs loses it. */
export async function syncClaim(ctx: SnapshotSyncContext, key: string): Promise<void> {
  const claim = ctx.claims.get(key);
  if (claim === undefined || !has(claim, PVC_FINALIZER)) return;
  if (claimInUse(ctx, claim)) return;
  await setClaimFinalizers(ctx, claim, [], [PVC_FINALIZER]);
  ctx.logger.info(2, "removed pvc-as-source-protection: no snapshot is being taken from the claim", {
    claim: key,
  });
}
