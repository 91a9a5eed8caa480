// Cloning protection (upstream's CloningProtectionController): a clone source claim carries
// `provisioner.storage.kubernetes.io/cloning-protection` while any claim cloning from it is not
// yet provisioned, so the source cannot vanish mid-CreateVolume. The reconcile of a source key
// removes the finalizer once no clone of it is pending (pending: not deleted, no PV for it yet,
// not bound). Keys are enqueued on any change of a source claim carrying the finalizer and of
// any clone claim (for its source), with --cloning-protection-threads workers.

import { FINALIZERS, GVR, type PersistentVolumeClaim } from "../../api/index.ts";
import type { ReconcileContext, Informer } from "../../kube/index.ts";
import type { ProvisionerContext } from "./context.ts";
import { cloneSourceKey } from "./data-source.ts";
import { hasFinalizer, removeFinalizer } from "./finalizers.ts";
import { volumeName } from "./names.ts";

const FINALIZER = FINALIZERS.cloningProtection.key;

/** The source keys a claim event concerns. */
export function cloneProtectionKeys(claim: PersistentVolumeClaim): string[] {
  const keys: string[] = [];
  if (hasFinalizer(claim, FINALIZER)) keys.push(`${claim.metadata?.namespace}/${claim.metadata?.name}`);
  const source = cloneSourceKey(claim);
  if (source) keys.push(source);
  return keys;
}

export async function syncCloneSource(
  ctx: ProvisionerContext,
  claims: Informer<PersistentVolumeClaim>,
  key: string,
  rc: ReconcileContext,
): Promise<void> {
  const source = claims.store.get(key);
  if (!source || !hasFinalizer(source, FINALIZER)) return;
  const pending = claims.store.list().some((clone) => {
    if (cloneSourceKey(clone) !== key || clone.metadata?.deletionTimestamp) return false;
    if ((clone.spec?.volumeName ?? "") !== "" || clone.status?.phase === "Bound") return false;
    const uid = clone.metadata?.uid ?? "";
    const pv = ctx.view.volume(
      volumeName(ctx.options.volumeNamePrefix, uid, ctx.options.volumeNameUuidLength),
    );
    return !(pv && pv.spec?.claimRef?.uid === uid) && !ctx.state.provisioned.has(uid);
  });
  if (pending) return;
  await removeFinalizer(ctx.client, GVR.persistentVolumeClaims, source, FINALIZER, rc.signal);
}
