// Provisioning: the reconcile of one claim key (CONVENTIONS §7: it re-reads the cache and drives
// the whole state, never "was this an add or an update").
//
// Leak safety — the durable in-flight mark. Before the first CreateVolume for a claim the
// provisioner adds the finalizer `provisioner.csikit.io/volume-in-flight` to the claim (a
// JSON patch; the API server refuses new finalizers on an object being deleted, so a claim
// already being deleted is never marked and never gets a volume). The mark is removed only when
// the outcome is settled:
//   - CreateVolume succeeded and the PV exists (the PV now owns the volume: its reclaim policy
//     and, with HonorPVReclaimPolicy, its finalizer take over);
//   - CreateVolume failed with a final error (the driver said no: nothing exists);
//   - the claim was deleted meanwhile and the volume a late CreateVolume returned was deleted.
// While the mark is on, a deleted claim stays visible (deletionTimestamp set). The reconcile
// then calls CreateVolume again with the same name — idempotent, so it returns the volume that a
// timed-out call (or a call cut short by kill -9) may have created — and DeleteVolume on it,
// and only then drops the mark. The same path runs after a restart, because the mark is in the
// API server, not in memory (upstream's in-memory claimsInProgress loses it:
// external-provisioner#486). Cost: two claim patches per provisioned volume.
//
// Order of one provisioning: Provisioning event → mark → CreateVolume → PV create (retried
// forever with backoff while the process lives; after a crash the mark makes the next run call
// CreateVolume again and create the PV) → unmark → ProvisioningSucceeded event.

import {
  ANNOTATIONS,
  GVR,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type StorageClass,
} from "../../api/index.ts";
import { errorMessage } from "../../base/index.ts";
import {
  apiStatusCode,
  isAlreadyExists,
  isNotFound,
  objectReference,
  REQUEST_PRIORITY,
  withMigratedCalls,
  withRequestPriority,
  type ProcessResult,
  type ReconcileContext,
} from "../../kube/index.ts";
import type { ProvisionerContext } from "./context.ts";
import { cloneSourceKey, isPopulatorClaim } from "./data-source.ts";
import { protectSnapshotSource, releaseSnapshotSource } from "./snapshot-protection.ts";
import { ProvisionError, formatCsiError, provisioningStateFromError } from "./errors.ts";
import {
  IN_FLIGHT_FINALIZER,
  addFinalizer,
  hasFinalizer,
  removeAnnotation,
  removeFinalizer,
} from "./finalizers.ts";
import { FINALIZERS } from "../../api/index.ts";
import type { InFlightIntent } from "./ledger.ts";
import { volumeName } from "./names.ts";
import { tryToOwnClaim } from "./node-deployment.ts";
import { SELECTED_NODE, prepareProvision, readSecret, type PreparedProvision } from "./request.ts";
import { buildVolume } from "./volume.ts";
import { deletionSecretRef } from "./volume-sync.ts";
import {
  classForDriver,
  inTreeVolume,
  isMigratedClass,
  isOurClaimProvisioner,
  migratedFromPlugin,
} from "./migration.ts";

const CLAIM_TYPE = { kind: "PersistentVolumeClaim", apiVersion: "v1" };

export function claimProvisioner(claim: PersistentVolumeClaim): string | undefined {
  const annotations = claim.metadata?.annotations ?? {};
  return (
    annotations[ANNOTATIONS.storageProvisioner.key] ?? annotations[ANNOTATIONS.betaStorageProvisioner.key]
  );
}

function claimKey(claim: PersistentVolumeClaim): string {
  return `${claim.metadata?.namespace ?? ""}/${claim.metadata?.name ?? ""}`;
}

function event(
  ctx: ProvisionerContext,
  claim: PersistentVolumeClaim,
  type: "Normal" | "Warning",
  reason: string,
  message: string,
): void {
  ctx.events.event(objectReference(claim, CLAIM_TYPE), type, reason, message);
}

/**
 * Removes the in-flight mark, unless this process already did and the cached copy is merely
 * behind that write (a patch that would change nothing). Trailing priority: the user waits on
 * no unmark, so PV creates and new marks get the client's tokens first.
 */
async function unmark(
  ctx: ProvisionerContext,
  claim: PersistentVolumeClaim,
  rc: ReconcileContext,
): Promise<PersistentVolumeClaim> {
  const uid = claim.metadata?.uid ?? "";
  ctx.ledger?.settle(uid);
  if (ctx.state.unmarked.has(uid) || !hasFinalizer(claim, IN_FLIGHT_FINALIZER)) return claim;
  const current = await withRequestPriority(REQUEST_PRIORITY.trailing, () =>
    removeFinalizer(ctx.client, GVR.persistentVolumeClaims, claim, IN_FLIGHT_FINALIZER, rc.signal),
  );
  ctx.state.unmarked.add(uid);
  return current;
}

/**
 * Adds the in-flight mark. A cached copy that still shows a mark this process removed is stale:
 * the patch is built as if the mark were absent (the uid test keeps it to the same claim).
 */
async function mark(
  ctx: ProvisionerContext,
  claim: PersistentVolumeClaim,
  prepared: PreparedProvision,
  rc: ReconcileContext,
): Promise<PersistentVolumeClaim> {
  const uid = claim.metadata?.uid ?? "";
  // --in-flight-record=ledger: one group-committed write for the intents of the moment; the
  // claim's own finalizer only when the ledger is full.
  if (ctx.ledger && (await ctx.ledger.intend(intentOf(claim, prepared)))) return claim;
  const base = ctx.state.unmarked.has(uid)
    ? {
        ...claim,
        metadata: {
          ...claim.metadata,
          finalizers: (claim.metadata?.finalizers ?? []).filter((f) => f !== IN_FLIGHT_FINALIZER),
        },
      }
    : claim;
  const marked = await addFinalizer(
    ctx.client,
    GVR.persistentVolumeClaims,
    base,
    IN_FLIGHT_FINALIZER,
    rc.signal,
  );
  ctx.state.unmarked.delete(uid);
  return marked;
}

function intentOf(claim: PersistentVolumeClaim, prepared: PreparedProvision): InFlightIntent {
  const { secrets: _secrets, ...request } = prepared.request;
  return {
    namespace: claim.metadata?.namespace ?? "",
    name: claim.metadata?.name ?? "",
    uid: claim.metadata?.uid ?? "",
    request,
    ...(prepared.provisionerSecret ? { secret: prepared.provisionerSecret } : {}),
  };
}

/** The claim's in-flight intent is on record: its finalizer, or (ledger) its entry. */
function isMarked(ctx: ProvisionerContext, claim: PersistentVolumeClaim): boolean {
  return hasFinalizer(claim, IN_FLIGHT_FINALIZER) || ctx.ledger?.get(claim.metadata?.uid ?? "") !== undefined;
}

/** The PV this process or the cache knows for the claim (bound, created, or waiting to be saved). */
function knownVolume(
  ctx: ProvisionerContext,
  claim: PersistentVolumeClaim,
  pvName: string,
): PersistentVolume | string | undefined {
  const uid = claim.metadata?.uid ?? "";
  const cached = ctx.view.volume(pvName);
  if (cached && cached.spec?.claimRef?.uid === uid) {
    ctx.state.provisioned.delete(uid);
    return cached;
  }
  return ctx.state.provisioned.get(uid);
}

export async function syncClaim(
  ctx: ProvisionerContext,
  key: string,
  rc: ReconcileContext,
): Promise<ProcessResult | void> {
  const slash = key.indexOf("/");
  const claim = ctx.view.claim(key.slice(0, slash), key.slice(slash + 1));
  // Ledger intents of a claim that is gone (or replaced by a new one of the same name).
  for (const intent of ctx.ledger?.orphansOf(key, claim?.metadata?.uid) ?? [])
    await settleOrphan(ctx, intent, rc);
  if (!claim) return;
  // The cache caught up with this process's unmark: nothing stale left to skip.
  if (!hasFinalizer(claim, IN_FLIGHT_FINALIZER)) ctx.state.unmarked.delete(claim.metadata?.uid ?? "");
  const marked = isMarked(ctx, claim);
  if (claim.metadata?.deletionTimestamp) {
    // OBSERVATION: claim being deleted. Only a marked claim can have a volume in flight.
    if (marked) await settleDeletedClaim(ctx, claim, rc);
    return;
  }
  if (!isOurClaimProvisioner(ctx.driver.name, claimProvisioner(claim))) {
    // OBSERVATION: not ours (or no longer ours); a stale mark is settled like a deleted claim's.
    if (marked) await settleDeletedClaim(ctx, claim, rc);
    return;
  }
  const pvName = volumeName(
    ctx.options.volumeNamePrefix,
    claim.metadata?.uid ?? "",
    ctx.options.volumeNameUuidLength,
  );
  if ((claim.spec?.volumeName ?? "") !== "" || knownVolume(ctx, claim, pvName) !== undefined) {
    // OBSERVATION: provisioned (or bound by the PV controller): settle the mark, nothing else.
    const unsaved = ctx.state.unsaved.get(claim.metadata?.uid ?? "");
    if (unsaved) return saveVolume(ctx, claim, unsaved, rc);
    if (marked) await unmark(ctx, claim, rc);
    ctx.state.inFlightRequests.delete(claim.metadata?.uid ?? "");
    return;
  }
  if (isPopulatorClaim(claim)) return;
  const className = claim.spec?.storageClassName ?? "";
  const classObject = ctx.view.storageClass(className);
  if (!classObject)
    throw new ProvisionError(`storageclass.storage.k8s.io ${JSON.stringify(className)} not found`);
  // Our own class, or (CSI migration) our in-tree plugin's class translated for the driver.
  const storageClass = classForDriver(ctx.driver.name, classObject);
  if (storageClass === undefined) return;
  const selectedNode = claim.metadata?.annotations?.[SELECTED_NODE] ?? "";
  const nd = ctx.options.nodeDeployment;
  if (storageClass.volumeBindingMode === "WaitForFirstConsumer") {
    // OBSERVATION: late binding: wait for the scheduler (and, per node, for our node).
    if (selectedNode === "") return;
    if (nd.enabled && selectedNode !== nd.nodeName) return;
  } else if (nd.enabled) {
    // OBSERVATION: immediate binding in node deployment: race the other nodes for the claim.
    if (selectedNode === "") return tryToOwnClaim(ctx, claim, storageClass, rc);
    if (selectedNode !== nd.nodeName) return;
  }
  // CSI migration: the driver's calls for an in-tree class are metered migrated="true".
  return withMigratedCalls(isMigratedClass(ctx.driver.name, classObject), () =>
    provisionClaim(ctx, claim, storageClass, rc),
  );
}

async function provisionClaim(
  ctx: ProvisionerContext,
  claim: PersistentVolumeClaim,
  storageClass: StorageClass,
  rc: ReconcileContext,
): Promise<ProcessResult | void> {
  const className = storageClass.metadata?.name ?? "";
  const started = ctx.clock.now();
  const uid = claim.metadata?.uid ?? "";
  let prepared: PreparedProvision;
  try {
    prepared = await prepareProvision(
      { view: ctx.view, driver: ctx.driver, options: ctx.options, signal: rc.signal },
      claim,
      storageClass,
    );
  } catch (error) {
    const resent = requestForGoneNode(ctx, claim, error, rc);
    if (resent) prepared = resent;
    else if (error instanceof ProvisionError) {
      event(
        ctx,
        claim,
        "Warning",
        "ProvisioningFailed",
        `failed to provision volume with StorageClass ${JSON.stringify(className)}: ${error.message}`,
      );
      ctx.metrics.provisionFailed.inc({ class: className, source: sourceKind(claim) });
      if (error.reschedule) await rescheduleForMissingNode(ctx, claim, rc);
      throw error;
    } else {
      apiFailureEvent(ctx, claim, className, error);
      throw error;
    }
  }
  event(
    ctx,
    claim,
    "Normal",
    "Provisioning",
    `External provisioner is provisioning volume for claim ${JSON.stringify(claimKey(claim))}`,
  );
  let current: PersistentVolumeClaim;
  try {
    current = await markSourcesAndClaim(ctx, claim, prepared, rc);
  } catch (error) {
    apiFailureEvent(ctx, claim, className, error);
    throw error;
  }
  ctx.state.inFlightRequests.set(uid, prepared);
  let response;
  try {
    response = await ctx.csi.controller.createVolume(prepared.request, {
      timeoutMs: ctx.options.timeoutMs,
      signal: rc.signal,
    });
  } catch (error) {
    return handleCreateError(ctx, current, storageClass, error, rc);
  }
  const volume = response.volume;
  if (!volume) throw new ProvisionError("CreateVolume returned no volume");
  let pv: PersistentVolume;
  try {
    pv = buildVolume(
      {
        driverName: ctx.driver.name,
        identity: ctx.identity,
        honorPVReclaimPolicy: ctx.options.features.honorPVReclaimPolicy,
        controllerPublishReadonly: ctx.options.controllerPublishReadonly,
        volumeAttributesClass: ctx.options.features.volumeAttributesClass,
        topology: ctx.driver.topology,
      },
      current,
      storageClass,
      prepared,
      volume,
    );
    const inTreePlugin = migratedFromPlugin(ctx.driver.name);
    // CSI migration: the PV keeps the in-tree shape its class's plugin would have given it.
    if (inTreePlugin !== undefined && isMigratedClass(ctx.driver.name, ctx.view.storageClass(className)))
      pv = inTreeVolume(pv, inTreePlugin);
  } catch (error) {
    // The driver made a volume we cannot use: delete it, keep the mark until that worked.
    await ctx.csi.controller.deleteVolume(
      { volumeId: volume.volumeId, secrets: prepared.request.secrets ?? {} },
      { timeoutMs: ctx.options.timeoutMs, signal: rc.signal },
    );
    event(
      ctx,
      current,
      "Warning",
      "ProvisioningFailed",
      `failed to provision volume with StorageClass ${JSON.stringify(className)}: ${errorMessage(error)}`,
    );
    await unmark(ctx, current, rc);
    ctx.state.inFlightRequests.delete(uid);
    throw error;
  }
  ctx.state.unsaved.set(current.metadata?.uid ?? "", pv);
  const result = await saveVolume(ctx, current, pv, rc);
  ctx.metrics.provisionTotal.inc({ class: className, source: sourceKind(claim) });
  ctx.metrics.provisionDuration.observe(
    { class: className, source: sourceKind(claim) },
    (ctx.clock.now() - started) / 1000,
  );
  return result;
}

/**
 * The writes before CreateVolume: the clone source's and snapshot source's protection, then the
 * durable in-flight mark on the claim. Returns the marked claim.
 */
async function markSourcesAndClaim(
  ctx: ProvisionerContext,
  claim: PersistentVolumeClaim,
  prepared: PreparedProvision,
  rc: ReconcileContext,
): Promise<PersistentVolumeClaim> {
  const source = cloneSourceKey(claim);
  if (source && prepared.dataSource?.kind === "PersistentVolumeClaim") {
    const sourceClaim = ctx.view.claim(prepared.dataSource.namespace, prepared.dataSource.name);
    if (sourceClaim)
      await addFinalizer(
        ctx.client,
        GVR.persistentVolumeClaims,
        sourceClaim,
        FINALIZERS.cloningProtection.key,
        rc.signal,
      );
  }
  await protectSnapshotSource(ctx, prepared.dataSource, rc);
  // The durable in-flight mark: written before the driver is asked for anything.
  return mark(ctx, claim, prepared, rc);
}

/**
 * A failed Kubernetes API call stops this attempt (the queue retries it): the claim gets a
 * ProvisioningFailed event carrying the API server's answer (which names the verb, resource and
 * identity of a 403), so `kubectl describe` says why the claim stays Pending. Non-API errors
 * are left to their own handling.
 */
function apiFailureEvent(
  ctx: ProvisionerContext,
  claim: PersistentVolumeClaim,
  className: string,
  error: unknown,
): void {
  const code = apiStatusCode(error);
  // No answer at all (0): the API server is unreachable, so an event could not be written either.
  if (code === undefined || code === 0) return;
  event(
    ctx,
    claim,
    "Warning",
    "ProvisioningFailed",
    `failed to provision volume with StorageClass ${JSON.stringify(className)}: ${errorMessage(error)}`,
  );
}

function sourceKind(claim: PersistentVolumeClaim): string {
  return (claim.spec?.dataSourceRef ?? claim.spec?.dataSource)?.kind ?? "";
}

/**
 * The PV for this claim already exists (AlreadyExists): if it records another volume than the
 * one CreateVolume just returned, ours is one nobody will ever delete — the late CreateVolume
 * of external-provisioner#1469, replayed after the claim's first volume was deleted, whose
 * terminating PV still holds the name. Upstream counts the 409 as done and leaks the volume;
 * csikit deletes it (the mark on the claim stays until that worked). The same handle (an
 * idempotent driver answering the same request) is simply done. In-tree-shaped PVs (CSI
 * migration) carry no handle to compare and count as done, as before.
 */
async function deleteUnrecordedVolume(
  ctx: ProvisionerContext,
  claim: PersistentVolumeClaim,
  pvs: { existing: PersistentVolume; created: PersistentVolume },
  rc: ReconcileContext,
): Promise<void> {
  const recorded = pvs.existing.spec?.csi?.volumeHandle;
  const ours = pvs.created.spec?.csi?.volumeHandle;
  if (recorded === undefined || ours === undefined || recorded === ours) return;
  rc.logger.info(2, "PersistentVolume exists with another volume; deleting the one just created", {
    pv: pvs.created.metadata?.name,
    recorded,
    created: ours,
  });
  const secrets = await readSecret(ctx.view, deletionSecretRef(ctx, pvs.created), rc.signal);
  await ctx.csi.controller.deleteVolume(
    { volumeId: ours, secrets },
    { timeoutMs: ctx.options.timeoutMs, signal: rc.signal },
  );
  event(
    ctx,
    claim,
    "Warning",
    "ProvisioningFailed",
    `PersistentVolume ${pvs.created.metadata?.name} already exists with volume ${JSON.stringify(recorded)}; deleted the volume ${JSON.stringify(ours)} a late CreateVolume returned`,
  );
}

/**
 * Creates the PV (AlreadyExists for this claim counts as done once no second volume is left
 * behind: deleteUnrecordedVolume), then settles the mark.
 */
async function saveVolume(
  ctx: ProvisionerContext,
  claim: PersistentVolumeClaim,
  pv: PersistentVolume,
  rc: ReconcileContext,
): Promise<void> {
  const uid = claim.metadata?.uid ?? "";
  try {
    // Completion priority: a claim's PV goes before the next claim's mark (or any event).
    await withRequestPriority(REQUEST_PRIORITY.completion, () =>
      ctx.client.create(GVR.persistentVolumes, pv, rc.signal),
    );
  } catch (error) {
    if (!isAlreadyExists(error)) {
      rc.logger.warn("failed to save PersistentVolume, will retry", {
        pv: pv.metadata?.name,
        err: errorMessage(error),
      });
      throw error;
    }
    // Read from the server, not the cache: the PV may have changed since the cache saw it.
    const existing = await ctx.client.get<PersistentVolume>(
      GVR.persistentVolumes,
      pv.metadata?.name ?? "",
      {},
      rc.signal,
    );
    if (existing.spec?.claimRef?.uid !== uid)
      throw new ProvisionError(`PersistentVolume ${pv.metadata?.name} exists and is bound to another claim`);
    await deleteUnrecordedVolume(ctx, claim, { existing, created: pv }, rc);
  }
  ctx.state.unsaved.delete(uid);
  ctx.state.inFlightRequests.delete(uid);
  ctx.state.provisioned.set(uid, pv.metadata?.name ?? "");
  try {
    await unmark(ctx, claim, rc);
  } catch (error) {
    // A changed claim (finalizer list reordered) or a gone one: the next run settles it.
    if (!isNotFound(error)) throw error;
  }
  event(
    ctx,
    claim,
    "Normal",
    "ProvisioningSucceeded",
    `Successfully provisioned volume ${pv.metadata?.name}`,
  );
  ctx.capacityRefresh.provisioned(pv, pv.spec?.storageClassName);
  await releaseSnapshotSource(ctx, claim, rc);
}

async function handleCreateError(
  ctx: ProvisionerContext,
  claim: PersistentVolumeClaim,
  storageClass: StorageClass,
  error: unknown,
  rc: ReconcileContext,
): Promise<never> {
  const className = storageClass.metadata?.name ?? "";
  const selectedNode = claim.metadata?.annotations?.[SELECTED_NODE] ?? "";
  const state = provisioningStateFromError(error, {
    topology: ctx.driver.topology,
    selectedNode: selectedNode !== "",
  });
  const message = formatCsiError(error);
  ctx.metrics.provisionFailed.inc({ class: className, source: sourceKind(claim) });
  // The driver answered (or may still be working): its free capacity may have changed.
  ctx.capacityRefresh.provisionFailed(className);
  event(
    ctx,
    claim,
    "Warning",
    "ProvisioningFailed",
    `failed to provision volume with StorageClass ${JSON.stringify(className)}: ${message}`,
  );
  if (state === "inBackground") {
    // OBSERVATION: the driver may still be creating it: keep the mark, retry with backoff.
    rc.logger.info(2, "CreateVolume may still be in progress, will retry", { err: message });
  } else {
    // OBSERVATION: final answer: nothing exists; unmark (and reschedule if asked).
    ctx.state.inFlightRequests.delete(claim.metadata?.uid ?? "");
    const current = await unmark(ctx, claim, rc);
    const late =
      storageClass.volumeBindingMode === "WaitForFirstConsumer" || ctx.options.nodeDeployment.enabled;
    if (selectedNode !== "" && (state === "reschedule" || late)) {
      await removeAnnotation(ctx.client, GVR.persistentVolumeClaims, current, SELECTED_NODE, rc.signal);
      rc.logger.info(2, "removed selected-node so the scheduler picks again", { node: selectedNode });
    }
  }
  throw new ProvisionError(message);
}

/**
 * The request to re-send for an in-flight claim whose selected node is gone, or undefined.
 * Without its Node/CSINode the topology cannot be rebuilt (external-provisioner#1437), but a
 * CreateVolume this process sent may still be running in the driver on the old node: its retry
 * must ask for what it asked before (a request elsewhere would land in another zone), so the
 * outcome becomes known — provisioned, or a final error that unmarks and reschedules.
 */
function requestForGoneNode(
  ctx: ProvisionerContext,
  claim: PersistentVolumeClaim,
  error: unknown,
  rc: ReconcileContext,
): PreparedProvision | undefined {
  if (!(error instanceof ProvisionError) || !error.reschedule) return undefined;
  if (!isMarked(ctx, claim)) return undefined;
  const previous = ctx.state.inFlightRequests.get(claim.metadata?.uid ?? "");
  if (previous)
    rc.logger.info(2, "selected node is gone; retrying the in-flight CreateVolume as it was sent", {
      node: claim.metadata?.annotations?.[SELECTED_NODE],
    });
  return previous;
}

/**
 * The selected node is gone (external-provisioner#1437) and no request of this process is in
 * flight for the claim: without its Node/CSINode there is no topology to ask for, so retrying
 * is forever. Clearing selected-node hands the claim back to the scheduler, as upstream v6.1+
 * does (#1438). Also for a claim marked in flight by an earlier process (a restart lost its
 * request): the retry on the next node keeps the volume's name, so an idempotent driver returns
 * the volume the earlier call made instead of making a second one.
 */
async function rescheduleForMissingNode(
  ctx: ProvisionerContext,
  claim: PersistentVolumeClaim,
  rc: ReconcileContext,
): Promise<void> {
  const node = claim.metadata?.annotations?.[SELECTED_NODE];
  await removeAnnotation(ctx.client, GVR.persistentVolumeClaims, claim, SELECTED_NODE, rc.signal);
  rc.logger.info(2, "selected node is gone; removed selected-node so the scheduler picks again", { node });
}

/**
 * A marked claim that is being deleted (or is no longer ours): find out whether a volume exists
 * for it and delete it, then unmark. A PV for the claim means the volume is owned by the PV.
 */
async function settleDeletedClaim(
  ctx: ProvisionerContext,
  claim: PersistentVolumeClaim,
  rc: ReconcileContext,
): Promise<void> {
  const uid = claim.metadata?.uid ?? "";
  const pvName = volumeName(ctx.options.volumeNamePrefix, uid, ctx.options.volumeNameUuidLength);
  const unsaved = ctx.state.unsaved.get(uid);
  let pv: PersistentVolume | undefined = ctx.view.volume(pvName);
  if (!pv && !unsaved) {
    try {
      pv = await ctx.client.get<PersistentVolume>(GVR.persistentVolumes, pvName, {}, rc.signal);
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
  if (pv && pv.spec?.claimRef?.uid === uid) {
    // OBSERVATION: the PV exists: its reclaim policy decides the volume's fate.
    await unmark(ctx, claim, rc);
    ctx.state.inFlightRequests.delete(uid);
    return;
  }
  const classObject = ctx.view.storageClass(claim.spec?.storageClassName ?? "");
  const storageClass = classObject && classForDriver(ctx.driver.name, classObject);
  if (!storageClass) {
    rc.logger.warn(
      "cannot settle an in-flight volume: its StorageClass is gone; remove the finalizer by hand once the backend is checked",
      {
        claim: claimKey(claim),
        finalizer: IN_FLIGHT_FINALIZER,
      },
    );
    throw new ProvisionError(
      `storageclass ${JSON.stringify(claim.spec?.storageClassName ?? "")} of in-flight claim not found`,
    );
  }
  let prepared: PreparedProvision;
  try {
    prepared = await prepareProvision(
      { view: ctx.view, driver: ctx.driver, options: ctx.options, signal: rc.signal },
      claim,
      storageClass,
    );
  } catch (error) {
    const resent = ctx.state.inFlightRequests.get(uid);
    if (resent === undefined) {
      // Without a request there can be no CreateVolume retry; the request was valid when the
      // claim was marked, so this is transient (a missing secret, topology): retry.
      rc.logger.warn("cannot rebuild CreateVolume for a deleted in-flight claim, will retry", {
        err: errorMessage(error),
      });
      throw error;
    }
    // This process's own request (its selected node may be gone since): sent again as it was.
    prepared = resent;
  }
  let volumeId: string;
  try {
    const response = await ctx.csi.controller.createVolume(prepared.request, {
      timeoutMs: ctx.options.timeoutMs,
      signal: rc.signal,
    });
    volumeId = response.volume?.volumeId ?? "";
  } catch (error) {
    const state = provisioningStateFromError(error, { topology: false, selectedNode: false });
    if (state === "inBackground") throw error;
    // OBSERVATION: the driver refuses for sure: nothing was created.
    await unmark(ctx, claim, rc);
    ctx.state.inFlightRequests.delete(uid);
    return;
  }
  if (volumeId !== "") {
    const secrets = await readSecret(ctx.view, prepared.provisionerSecret, rc.signal);
    await ctx.csi.controller.deleteVolume(
      { volumeId, secrets },
      { timeoutMs: ctx.options.timeoutMs, signal: rc.signal },
    );
    rc.logger.info(1, "deleted the volume of a claim deleted while it was being provisioned", {
      claim: claimKey(claim),
      volumeId,
    });
  }
  ctx.state.unsaved.delete(uid);
  await unmark(ctx, claim, rc);
  ctx.state.inFlightRequests.delete(uid);
}

/**
 * A ledger intent whose claim is gone: a PV recorded for it owns the volume; otherwise the
 * recorded CreateVolume is asked again (idempotent: it returns what an earlier call made, or
 * makes it now) and what it returns is deleted, then the intent is dropped.
 */
async function settleOrphan(
  ctx: ProvisionerContext,
  intent: InFlightIntent,
  rc: ReconcileContext,
): Promise<void> {
  const pvName = intent.request.name ?? "";
  let pv: PersistentVolume | undefined = ctx.view.volume(pvName);
  if (!pv) {
    try {
      pv = await ctx.client.get<PersistentVolume>(GVR.persistentVolumes, pvName, {}, rc.signal);
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
  if (pv?.spec?.claimRef?.uid === intent.uid) {
    ctx.ledger?.settle(intent.uid);
    return;
  }
  const secrets = await readSecret(ctx.view, intent.secret, rc.signal);
  let volumeId: string;
  try {
    const response = await ctx.csi.controller.createVolume(
      { ...intent.request, secrets },
      { timeoutMs: ctx.options.timeoutMs, signal: rc.signal },
    );
    volumeId = response.volume?.volumeId ?? "";
  } catch (error) {
    const state = provisioningStateFromError(error, { topology: false, selectedNode: false });
    if (state === "inBackground") throw error;
    // The driver refuses for sure: nothing was created.
    volumeId = "";
  }
  if (volumeId !== "") {
    await ctx.csi.controller.deleteVolume(
      { volumeId, secrets },
      { timeoutMs: ctx.options.timeoutMs, signal: rc.signal },
    );
    rc.logger.info(1, "deleted the volume of a claim deleted while it was being provisioned", {
      claim: `${intent.namespace}/${intent.name}`,
      volumeId,
    });
  }
  ctx.state.unsaved.delete(intent.uid);
  ctx.state.inFlightRequests.delete(intent.uid);
  ctx.ledger?.settle(intent.uid);
}
