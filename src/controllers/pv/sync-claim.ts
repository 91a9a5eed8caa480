// syncClaim: the claim half of upstream's PV controller state machine (pv_controller.go),
// written "space shuttle style": each branch names what it observed. A claim without the
// bind-completed annotation is unbound (find or wait for a volume, or hand it to a
// provisioner); with it, it is bound and only kept consistent (or declared Lost).
//
// csikit addition (documented in docs/controllers.md): a WaitForFirstConsumer claim that the
// scheduler annotated with volume.kubernetes.io/selected-node is matched against unbound
// volumes whose node affinity that node satisfies before it is handed to the provisioner.
// Upstream's scheduler pre-binds such volumes itself; a claim it pre-bound is still bound here
// the upstream way (the volume's claimRef points at it).

import {
  ANNOTATIONS,
  EVENT_REASONS,
  GVR,
  type Node,
  type PersistentVolumeClaim,
  type Pod,
  type StorageClass,
} from "../../api/index.ts";
import { isNotFound } from "../../kube/index.ts";
import type { PvSyncContext } from "./context.ts";
import { POD_CLAIM_INDEX } from "./context.ts";
import { claimClass, findBestMatchForClaim, isVolumeBoundToClaim } from "./match.ts";
import { bind, claimEvent, updateClaim, updateClaimStatus, updateClaimStatusWithEvent } from "./writes.ts";
import { checkVolumeSatisfiesClaim } from "./satisfy.ts";
import { claimMigrationAnnotations, migratedProvisioner } from "./migration.ts";

const SELECTED_NODE = ANNOTATIONS.selectedNode.key;
const STORAGE_PROVISIONER = ANNOTATIONS.storageProvisioner.key;
const BETA_STORAGE_PROVISIONER = ANNOTATIONS.betaStorageProvisioner.key;
const MIGRATED_TO = ANNOTATIONS.migratedTo.key;

export function claimClassObject(ctx: PvSyncContext, claim: PersistentVolumeClaim): StorageClass | undefined {
  const name = claimClass(claim);
  return name === "" ? undefined : ctx.classes.get(name);
}

/** The class binds late; an unknown class does not (upstream IsDelayBindingMode). */
export function isDelayBinding(ctx: PvSyncContext, claim: PersistentVolumeClaim): boolean {
  return claimClassObject(ctx, claim)?.volumeBindingMode === "WaitForFirstConsumer";
}

export async function syncClaim(ctx: PvSyncContext, original: PersistentVolumeClaim): Promise<void> {
  const claim = await updateClaimMigrationAnnotations(ctx, original);
  if (claim.metadata?.annotations?.[ANNOTATIONS.bindCompleted.key] === undefined)
    await syncUnboundClaim(ctx, claim);
  else await syncBoundClaim(ctx, claim);
}

function isPodTerminated(pod: Pod): boolean {
  return pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed";
}

/** WaitForFirstConsumer, or WaitForPodScheduled naming the pods that wait for a node. */
function emitEventForUnboundDelayBindingClaim(ctx: PvSyncContext, claim: PersistentVolumeClaim): void {
  const key = `${claim.metadata?.namespace}/${claim.metadata?.name}`;
  const waiting = ctx.pods
    .byIndex(POD_CLAIM_INDEX, key)
    .filter((pod) => !isPodTerminated(pod) && !pod.spec?.nodeName)
    .map((pod) => pod.metadata?.name ?? "");
  if (waiting.length === 0) {
    claimEvent(
      ctx,
      claim,
      "Normal",
      EVENT_REASONS.waitForFirstConsumer.key,
      "waiting for first consumer to be created before binding",
    );
  } else {
    const message =
      waiting.length > 1
        ? `waiting for pods ${waiting.join(",")} to be scheduled`
        : `waiting for pod ${waiting[0]} to be scheduled`;
    claimEvent(ctx, claim, "Normal", EVENT_REASONS.waitForPodScheduled.key, message);
  }
}

/** The node the scheduler chose for a late-binding claim, when it exists. */
function selectedNode(ctx: PvSyncContext, claim: PersistentVolumeClaim): Node | undefined {
  const name = claim.metadata?.annotations?.[SELECTED_NODE];
  return name ? ctx.nodes.get(name) : undefined;
}

async function syncUnboundClaim(ctx: PvSyncContext, claim: PersistentVolumeClaim): Promise<void> {
  const volumeName = claim.spec?.volumeName ?? "";
  if (volumeName === "") {
    // OBSERVATION: claim Pending, no volume named: find the best one.
    const delayBinding = isDelayBinding(ctx, claim);
    const provisioningNow = claim.metadata?.annotations?.[SELECTED_NODE] !== undefined;
    const node = delayBinding && provisioningNow ? selectedNode(ctx, claim) : undefined;
    const volume = findBestMatchForClaim(claim, ctx.volumes.list(), {
      delayBinding,
      ...(node ? { node } : {}),
    });
    if (volume !== undefined) {
      // OBSERVATION: claim Pending, volume Available (or pre-bound to it): bind.
      await bind(ctx, volume, claim);
      return;
    }
    if (delayBinding && !provisioningNow) {
      // OBSERVATION: claim Pending, no volume, class binds late and no node chosen yet.
      emitEventForUnboundDelayBindingClaim(ctx, claim);
    } else if (claimClass(claim) !== "") {
      // OBSERVATION: claim Pending, no volume, a class to provision from.
      await provisionClaim(ctx, claim);
      return;
    } else {
      // OBSERVATION: claim Pending, no volume, no class.
      claimEvent(
        ctx,
        claim,
        "Normal",
        EVENT_REASONS.failedBinding.key,
        "no persistent volumes available for this claim and no storage class is set",
      );
    }
    await updateClaimStatus(ctx, claim, "Pending", undefined);
    return;
  } else {
    // OBSERVATION: claim Pending, it names a volume (pre-bound by the user or half-bound by us).
    const volume = ctx.volumes.get(volumeName);
    if (volume === undefined) {
      // OBSERVATION: the named volume does not exist (yet): wait for it.
      ctx.logger.info(4, "claim waits for its volume to appear", { volume: volumeName });
      await updateClaimStatus(ctx, claim, "Pending", undefined);
      return;
    } else if (!volume.spec?.claimRef) {
      // OBSERVATION: the named volume is unbound: bind it if it fits.
      const mismatch = checkVolumeSatisfiesClaim(volume, claim);
      if (mismatch !== undefined) {
        claimEvent(ctx, claim, "Warning", EVENT_REASONS.volumeMismatch.key, mismatch);
        await updateClaimStatus(ctx, claim, "Pending", undefined);
        return;
      } else {
        await bind(ctx, volume, claim);
        return;
      }
    } else if (isVolumeBoundToClaim(volume, claim)) {
      // OBSERVATION: the volume already points at this claim: finish the bind.
      await bind(ctx, volume, claim);
      return;
    } else {
      // OBSERVATION: the user asked for a volume bound to another claim.
      const message = `volume "${volumeName}" already bound to a different claim.`;
      claimEvent(ctx, claim, "Warning", EVENT_REASONS.failedBinding.key, message);
      await updateClaimStatus(ctx, claim, "Pending", undefined);
      return;
    }
  }
}

/** Sets or removes migrated-to first, as upstream's syncClaim does, and goes on with the result. */
async function updateClaimMigrationAnnotations(
  ctx: PvSyncContext,
  claim: PersistentVolumeClaim,
): Promise<PersistentVolumeClaim> {
  const annotations = claimMigrationAnnotations(ctx.featureGates, claim.metadata?.annotations);
  if (annotations === undefined) return claim;
  const next = structuredClone(claim);
  next.metadata = { ...next.metadata, annotations: { ...annotations } };
  return updateClaim(ctx, next);
}

async function syncBoundClaim(ctx: PvSyncContext, claim: PersistentVolumeClaim): Promise<void> {
  const volumeName = claim.spec?.volumeName ?? "";
  if (volumeName === "") {
    // OBSERVATION: claim was bound, its volumeName was cleared.
    await updateClaimStatusWithEvent(ctx, claim, "Lost", {
      type: "Warning",
      reason: EVENT_REASONS.claimLost.key,
      message: "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!",
    });
    return;
  }
  const volume = ctx.volumes.get(volumeName);
  if (volume === undefined) {
    // OBSERVATION: claim Bound, its volume is gone.
    await updateClaimStatusWithEvent(ctx, claim, "Lost", {
      type: "Warning",
      reason: EVENT_REASONS.claimLost.key,
      message: "Bound claim has lost its PersistentVolume. Data on the volume is lost!",
    });
    return;
  } else if (!volume.spec?.claimRef) {
    // OBSERVATION: claim Bound, volume unbound (someone cleared its claimRef): bind it back.
    await bind(ctx, volume, claim);
    return;
  } else if (volume.spec.claimRef.uid === claim.metadata?.uid) {
    // OBSERVATION: claim Bound, volume bound to it: keep phases and status right.
    await bind(ctx, volume, claim);
    return;
  } else {
    // OBSERVATION: claim Bound, its volume is bound to another claim.
    await updateClaimStatusWithEvent(ctx, claim, "Lost", {
      type: "Warning",
      reason: EVENT_REASONS.claimMisbound.key,
      message: "Two claims are bound to the same volume, this one is bound incorrectly",
    });
    return;
  }
}

/**
 * Hands the claim to its class's provisioner: every provisioner is external here (csikit has
 * no in-tree volume plugins), so this sets both storage-provisioner annotations and reports
 * ExternalProvisioning; the provisioner creates a volume whose claimRef points at the claim.
 */
async function provisionClaim(ctx: PvSyncContext, claim: PersistentVolumeClaim): Promise<void> {
  const className = claimClass(claim);
  const storageClass = ctx.classes.get(className);
  if (storageClass === undefined) {
    // Upstream reports the missing class and retries at the next periodic sync.
    claimEvent(
      ctx,
      claim,
      "Warning",
      EVENT_REASONS.provisioningFailed.key,
      `storageclass.storage.k8s.io "${className}" not found`,
    );
    return;
  }
  // A migrated in-tree class is provisioned by its CSI driver (the seed's PV controller section).
  const migratedTo = migratedProvisioner(ctx.featureGates, storageClass.provisioner);
  const provisioner = migratedTo ?? storageClass.provisioner;
  if (provisioner.startsWith("kubernetes.io/")) {
    // An in-tree plugin name (e.g. kubernetes.io/no-provisioner): nothing here can provision it.
    claimEvent(
      ctx,
      claim,
      "Warning",
      EVENT_REASONS.provisioningFailed.key,
      `no volume plugin matched name: ${provisioner}`,
    );
    return;
  }
  let current = claim;
  const annotations = claim.metadata?.annotations ?? {};
  if (
    annotations[STORAGE_PROVISIONER] !== provisioner ||
    annotations[BETA_STORAGE_PROVISIONER] !== provisioner ||
    annotations[MIGRATED_TO] !== migratedTo
  ) {
    const next = structuredClone(claim);
    const nextAnnotations: Record<string, string> = {
      ...annotations,
      [BETA_STORAGE_PROVISIONER]: provisioner,
      [STORAGE_PROVISIONER]: provisioner,
    };
    if (migratedTo !== undefined) nextAnnotations[MIGRATED_TO] = migratedTo;
    else delete nextAnnotations[MIGRATED_TO];
    next.metadata = { ...next.metadata, annotations: nextAnnotations };
    try {
      current = await updateClaim(ctx, next);
    } catch (error) {
      if (!isNotFound(error))
        claimEvent(
          ctx,
          claim,
          "Warning",
          EVENT_REASONS.provisioningFailed.key,
          `Error saving claim: ${String(error)}`,
        );
      throw error;
    }
  }
  claimEvent(
    ctx,
    current,
    "Normal",
    EVENT_REASONS.externalProvisioning.key,
    `Waiting for a volume to be created either by the external provisioner '${provisioner}' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered.`,
  );
}

/** A live read of a claim the cache does not have (the cache may lag: never release on it alone). */
export async function getClaimLive(
  ctx: PvSyncContext,
  namespace: string,
  name: string,
): Promise<PersistentVolumeClaim | undefined> {
  try {
    return await ctx.client.get<PersistentVolumeClaim>(
      GVR.persistentVolumeClaims,
      name,
      { namespace },
      ctx.signal,
    );
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}
