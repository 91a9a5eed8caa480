// One VolumeSnapshot brought to its desired state (external-snapshotter's syncSnapshotByKey →
// checkAndUpdateSnapshotClass → syncSnapshot → syncUnreadySnapshot / syncReadySnapshot), with
// upstream's decisions, messages and Events. Where csikit deliberately differs, it says why:
//   - the source PV and claim come from the informer caches (upstream GETs the PV on every
//     sync and the snapshot before every status write: requests a client-side limiter charges,
//     external-snapshotter#1344);
//   - the content is created carrying its bound-protection finalizer (upstream adds it with a
//     patch right after: one write less per snapshot, the same end state);
//   - a snapshot being deleted skips the default-class step (no class is needed to delete, and
//     a class that vanished must not keep its finalizers forever).
// Deletion is snapshot-delete.ts; the claim's finalizer claim-protection.ts.

import {
  FINALIZERS,
  GVR,
  LABELS,
  type PersistentVolume,
  type VolumeSnapshot,
  type VolumeSnapshotClass,
  type VolumeSnapshotContent,
} from "../../api/index.ts";
import { isAlreadyExists, isConflict, isNotFound } from "../../kube/index.ts";
import { nodeSelectorTermMatches } from "../pv/index.ts";
import { creatingContentFrom, protectClaim, releaseClaimIfUnused } from "./claim-protection.ts";
import type { SnapshotSyncContext } from "./context.ts";
import { OPERATIONS } from "./metrics.ts";
import {
  DEFAULT_SNAPSHOT_CLASS,
  SNAPSHOTTER_SECRET,
  boundContentName,
  contentNameForSnapshot,
  contentPointsTo,
  groupOwnerReference,
  has,
  isCreated,
  isDefaultClass,
  isDeleting,
  isReady,
  parentGroupName,
  secretReference,
  snapshotKey,
} from "./names.ts";
import { processSnapshotDeletion } from "./snapshot-delete.ts";
import { nextSnapshotStatus } from "./status.ts";
import {
  controllerUpdateError,
  errorText,
  setSnapshotFinalizers,
  snapshotErrorStatus,
  snapshotEvent,
} from "./writes.ts";

const AS_SOURCE = FINALIZERS.volumeSnapshotAsSource.key;
const BOUND = FINALIZERS.volumeSnapshotBound.key;
const CONTENT_BOUND = FINALIZERS.volumeSnapshotContentBound.key;

/** The reconcile of the snapshot queue. */
export async function syncSnapshotKey(ctx: SnapshotSyncContext, key: string): Promise<void> {
  let snapshot = ctx.snapshots.get(key);
  if (snapshot === undefined) return; // deleted: the delete handler recorded it and resynced its content
  if (!isDeleting(snapshot)) snapshot = await ensureSnapshotClass(ctx, snapshot);
  await syncSnapshot(ctx, snapshot);
}

/** Upstream's checkAndUpdateSnapshotClass with SetDefaultSnapshotClass. */
async function ensureSnapshotClass(
  ctx: SnapshotSyncContext,
  snapshot: VolumeSnapshot,
): Promise<VolumeSnapshot> {
  const className = snapshot.spec.volumeSnapshotClassName;
  if (className) {
    if (ctx.classes.get(className) === undefined) {
      const message = `Failed to get snapshot class with error volumesnapshotclass.snapshot.storage.k8s.io "${className}" not found`;
      await snapshotErrorStatus(ctx, snapshot, {
        setReadyToFalse: false,
        type: "Warning",
        reason: "GetSnapshotClassFailed",
        message,
      });
      throw new Error(message);
    }
    return snapshot;
  }
  if (snapshot.spec.source.volumeSnapshotContentName || parentGroupName(snapshot)) return snapshot;
  let chosen: VolumeSnapshotClass;
  try {
    const driver = sourceVolume(ctx, snapshot).spec?.csi?.driver;
    if (!driver)
      throw new Error(`snapshotting non-CSI volumes is not supported, snapshot:${snapshotKey(snapshot)}`);
    const defaults = ctx.classes
      .list()
      .filter((c) => isDefaultClass(c, DEFAULT_SNAPSHOT_CLASS) && c.driver === driver);
    if (defaults.length === 0) throw new Error("cannot find default snapshot class");
    if (defaults.length > 1) throw new Error(`${defaults.length} default snapshot classes were found`);
    chosen = defaults[0]!;
  } catch (error) {
    await snapshotErrorStatus(ctx, snapshot, {
      setReadyToFalse: false,
      type: "Warning",
      reason: "SetDefaultSnapshotClassFailed",
      message: `Failed to set default snapshot class with error ${errorText(error)}`,
    });
    throw error;
  }
  const latest = ctx.snapshots.get(snapshotKey(snapshot)) ?? snapshot;
  return ctx.snapshots.remember(
    await ctx.client.update(
      GVR.volumeSnapshots,
      { ...latest, spec: { ...latest.spec, volumeSnapshotClassName: chosen.metadata?.name ?? "" } },
      {},
      ctx.signal,
    ),
  );
}

/** The bound PV of the snapshot's claim, checked both ways (upstream's getVolumeFromVolumeSnapshot). */
export function sourceVolume(ctx: SnapshotSyncContext, snapshot: VolumeSnapshot): PersistentVolume {
  const claimName = snapshot.spec.source.persistentVolumeClaimName;
  if (!claimName) throw new Error("the snapshot source PVC name is not specified");
  const claim = ctx.claims.get(`${snapshot.metadata?.namespace ?? ""}/${claimName}`);
  if (claim === undefined)
    throw new Error(
      `failed to retrieve PVC ${claimName} from the lister: "persistentvolumeclaim \\"${claimName}\\" not found"`,
    );
  if (claim.status?.phase !== "Bound")
    throw new Error(`the PVC ${claimName} is not yet bound to a PV, will not attempt to take a snapshot`);
  const pvName = claim.spec?.volumeName ?? "";
  const volume = ctx.volumes.get(pvName);
  if (volume === undefined)
    throw new Error(
      `failed to retrieve PV ${pvName} from the API server: "persistentvolumes \\"${pvName}\\" not found"`,
    );
  const ref = volume.spec?.claimRef;
  if (
    !ref ||
    ref.name !== claimName ||
    ref.namespace !== snapshot.metadata?.namespace ||
    (ref.uid && ref.uid !== claim.metadata?.uid)
  )
    throw new Error("claim in dataSource not bound or invalid");
  return volume;
}

async function syncSnapshot(ctx: SnapshotSyncContext, snapshot: VolumeSnapshot): Promise<void> {
  try {
    await releaseClaimIfUnused(ctx, snapshot, false);
  } catch (error) {
    ctx.logger.error("could not release the source claim", { err: errorText(error) });
    snapshotEvent(
      ctx,
      snapshot,
      "Warning",
      "ErrorPVCFinalizer",
      "Error check and remove PVC Finalizer for VolumeSnapshot",
    );
  }
  if (isDeleting(snapshot)) return processSnapshotDeletion(ctx, snapshot);
  const source = snapshot.spec.source;
  // Set-ness as upstream's pointers: a member whose claim was not found carries "" and is valid.
  if ((source.persistentVolumeClaimName === undefined) === (source.volumeSnapshotContentName === undefined)) {
    const message =
      "Exactly one of PersistentVolumeClaimName and VolumeSnapshotContentName should be specified";
    await snapshotErrorStatus(ctx, snapshot, {
      setReadyToFalse: true,
      type: "Warning",
      reason: "SnapshotValidationError",
      message,
    });
    throw new Error(message);
  }
  let current: VolumeSnapshot;
  try {
    current = await addSnapshotFinalizers(ctx, snapshot);
  } catch (error) {
    snapshotEvent(
      ctx,
      snapshot,
      "Warning",
      "SnapshotFinalizerError",
      `Failed to check and update snapshot: ${errorText(error)}`,
    );
    throw error;
  }
  if (!isReady(current) || !boundContentName(current)) return syncUnreadySnapshot(ctx, current);
  return syncReadySnapshot(ctx, current);
}

/** Upstream's checkandAddSnapshotFinalizers: as-source always, bound once bound to a Delete content. */
async function addSnapshotFinalizers(
  ctx: SnapshotSyncContext,
  snapshot: VolumeSnapshot,
): Promise<VolumeSnapshot> {
  const content = snapshot.spec.source.volumeSnapshotContentName
    ? await preProvisionedContent(ctx, snapshot)
    : await dynamicContent(ctx, snapshot);
  const add: string[] = [];
  if (!has(snapshot, AS_SOURCE)) add.push(AS_SOURCE);
  if (
    content !== undefined &&
    !has(snapshot, BOUND) &&
    boundContentName(snapshot) !== undefined &&
    content.spec.deletionPolicy === "Delete"
  )
    add.push(BOUND);
  return add.length > 0 ? setSnapshotFinalizers(ctx, snapshot, add, []) : snapshot;
}

/** Upstream's getPreprovisionedContentFromStore, with its error statuses. */
export async function preProvisionedContent(
  ctx: SnapshotSyncContext,
  snapshot: VolumeSnapshot,
): Promise<VolumeSnapshotContent | undefined> {
  const name = snapshot.spec.source.volumeSnapshotContentName ?? "";
  if (name === "") throw new Error(`empty VolumeSnapshotContentName for snapshot ${snapshotKey(snapshot)}`);
  const content = ctx.contents.get(name);
  if (content === undefined) return undefined;
  if (!content.spec.source.snapshotHandle) {
    await snapshotErrorStatus(ctx, snapshot, {
      setReadyToFalse: true,
      type: "Warning",
      reason: "SnapshotContentMismatch",
      message: "VolumeSnapshotContent is dynamically provisioned while expecting a pre-provisioned one",
    });
    throw new Error(
      `snapshot ${snapshotKey(snapshot)} expects a pre-provisioned VolumeSnapshotContent ${name} but gets a dynamically provisioned one`,
    );
  }
  const ref = content.spec.volumeSnapshotRef;
  if (
    ref.name !== snapshot.metadata?.name ||
    ref.namespace !== snapshot.metadata?.namespace ||
    (ref.uid && ref.uid !== snapshot.metadata?.uid)
  ) {
    const message = `VolumeSnapshotContent [${name}] is bound to a different snapshot`;
    await snapshotErrorStatus(ctx, snapshot, {
      setReadyToFalse: true,
      type: "Warning",
      reason: "SnapshotContentMisbound",
      message,
    });
    throw new Error(message);
  }
  return content;
}

/** Upstream's getDynamicallyProvisionedContentFromStore, with its error statuses. */
export async function dynamicContent(
  ctx: SnapshotSyncContext,
  snapshot: VolumeSnapshot,
): Promise<VolumeSnapshotContent | undefined> {
  const name = contentNameForSnapshot(snapshot);
  const content = ctx.contents.get(name);
  if (content === undefined) return undefined;
  if (!content.spec.source.volumeHandle) {
    await snapshotErrorStatus(ctx, snapshot, {
      setReadyToFalse: true,
      type: "Warning",
      reason: "SnapshotContentMismatch",
      message: `VolumeSnapshotContent ${name} is pre-provisioned while expecting a dynamically provisioned one`,
    });
    throw new Error(
      `snapshot ${snapshotKey(snapshot)} expects a dynamically provisioned VolumeSnapshotContent ${name} but gets a pre-provisioned one`,
    );
  }
  if (!contentPointsTo(content, snapshot)) {
    const message = `VolumeSnapshotContent [${name}] is bound to a different snapshot`;
    await snapshotErrorStatus(ctx, snapshot, {
      setReadyToFalse: true,
      type: "Warning",
      reason: "SnapshotContentMisbound",
      message,
    });
    throw new Error(message);
  }
  return content;
}

async function syncReadySnapshot(ctx: SnapshotSyncContext, snapshot: VolumeSnapshot): Promise<void> {
  const content = ctx.contents.get(boundContentName(snapshot) ?? "");
  if (content === undefined) {
    await snapshotErrorStatus(ctx, snapshot, {
      setReadyToFalse: true,
      type: "Warning",
      reason: "SnapshotContentMissing",
      message: "VolumeSnapshotContent is missing",
    });
    return;
  }
  if (!contentPointsTo(content, snapshot)) {
    await snapshotErrorStatus(ctx, snapshot, {
      setReadyToFalse: true,
      type: "Warning",
      reason: "SnapshotMisbound",
      message: "VolumeSnapshotContent is not bound to the VolumeSnapshot correctly",
    });
    return;
  }
  // A pre-provisioned member of a group snapshot gets its owner, as upstream's addVolumeGroupSnapshotOwnership.
  const groupName = snapshot.status?.volumeGroupSnapshotName;
  if (groupName && !parentGroupName(snapshot) && ctx.group !== undefined) {
    const group = ctx.group.groups.get(`${snapshot.metadata?.namespace ?? ""}/${groupName}`);
    if (group === undefined) throw new Error(`missing parent group for snapshot ${snapshotKey(snapshot)}`);
    const latest = ctx.snapshots.get(snapshotKey(snapshot)) ?? snapshot;
    ctx.snapshots.remember(
      await ctx.client.update(
        GVR.volumeSnapshots,
        {
          ...latest,
          metadata: {
            ...latest.metadata,
            ownerReferences: [...(latest.metadata?.ownerReferences ?? []), groupOwnerReference(group)],
          },
        },
        {},
        ctx.signal,
      ),
    );
  }
}

function driverOf(ctx: SnapshotSyncContext, snapshot: VolumeSnapshot): string {
  const contentName = snapshot.spec.source.volumeSnapshotContentName;
  if (contentName) {
    const driver = ctx.contents.get(contentName)?.spec.driver;
    if (driver) return driver;
  }
  const className = snapshot.spec.volumeSnapshotClassName;
  return (className && ctx.classes.get(className)?.driver) || "";
}

async function syncUnreadySnapshot(ctx: SnapshotSyncContext, snapshot: VolumeSnapshot): Promise<void> {
  const uid = snapshot.metadata?.uid ?? "";
  const type = snapshot.spec.source.volumeSnapshotContentName ? "pre-provisioned" : "dynamic";
  const driver = driverOf(ctx, snapshot);
  if (!isCreated(snapshot)) ctx.metrics.start(OPERATIONS.createSnapshot, uid, driver, type);
  ctx.metrics.start(OPERATIONS.createSnapshotAndReady, uid, driver, type);

  if (snapshot.spec.source.volumeSnapshotContentName) {
    const content = await preProvisionedContent(ctx, snapshot);
    if (content === undefined) {
      await snapshotErrorStatus(ctx, snapshot, {
        setReadyToFalse: true,
        type: "Warning",
        reason: "SnapshotContentMissing",
        message: "VolumeSnapshotContent is missing",
      });
      throw new Error(
        `snapshot ${snapshotKey(snapshot)} requests an non-existing content ${snapshot.spec.source.volumeSnapshotContentName}`,
      );
    }
    let bound: VolumeSnapshotContent;
    try {
      bound = await bindPreProvisionedContent(ctx, snapshot, content);
    } catch (error) {
      await snapshotErrorStatus(ctx, snapshot, {
        setReadyToFalse: true,
        type: "Warning",
        reason: "SnapshotBindFailed",
        message: `Snapshot failed to bind VolumeSnapshotContent, ${errorText(error)}`,
      });
      throw error;
    }
    await writeStatusFromContent(ctx, snapshot, bound);
    return;
  }

  if (parentGroupName(snapshot)) {
    const contentName = boundContentName(snapshot);
    if (!contentName)
      throw new Error(`detected group snapshot member ${snapshotKey(snapshot)} with no content, retrying`);
    const content = ctx.contents.get(contentName);
    if (content === undefined)
      throw new Error(
        `group snapshot member ${snapshotKey(snapshot)} requests an non-existing content ${contentName}`,
      );
    await writeStatusFromContent(ctx, snapshot, content);
    return;
  }

  const existing = await dynamicContent(ctx, snapshot);
  if (existing !== undefined) {
    if (existing.spec.source.snapshotHandle) {
      await snapshotErrorStatus(ctx, snapshot, {
        setReadyToFalse: true,
        type: "Warning",
        reason: "SnapshotHandleSet",
        message: `Snapshot handle should not be set in content ${snapshotKey(snapshot)} for dynamic provisioning`,
      });
      throw new Error(
        `snapshotHandle should not be set in the content for dynamic provisioning for snapshot ${snapshotKey(snapshot)}`,
      );
    }
    await writeStatusFromContent(ctx, snapshot, existing, { setReadyToFalseOnError: true });
    return;
  }
  if (!snapshot.spec.source.persistentVolumeClaimName) {
    await snapshotErrorStatus(ctx, snapshot, {
      setReadyToFalse: true,
      type: "Warning",
      reason: "SnapshotPVCSourceMissing",
      message: `PVC source for snapshot ${snapshotKey(snapshot)} is missing`,
    });
    throw new Error(`expected PVC source for snapshot ${snapshotKey(snapshot)} but got nil`);
  }
  let content: VolumeSnapshotContent;
  try {
    content = await creatingContentFrom(ctx, snapshot, () => createContent(ctx, snapshot));
  } catch (error) {
    await snapshotErrorStatus(ctx, snapshot, {
      setReadyToFalse: true,
      type: "Warning",
      reason: "SnapshotContentCreationFailed",
      message: `Failed to create snapshot content with error ${errorText(error)}`,
    });
    throw error;
  }
  await writeStatusFromContent(ctx, snapshot, content);
}

/** Upstream's checkandBindSnapshotContent: a pre-provisioned content gets the snapshot's UID (and class). */
async function bindPreProvisionedContent(
  ctx: SnapshotSyncContext,
  snapshot: VolumeSnapshot,
  content: VolumeSnapshotContent,
): Promise<VolumeSnapshotContent> {
  const ref = content.spec.volumeSnapshotRef;
  if (ref.name !== snapshot.metadata?.name || (ref.uid && ref.uid !== snapshot.metadata?.uid))
    throw new Error(
      `Could not bind snapshot ${snapshot.metadata?.name ?? ""} and content ${content.metadata?.name ?? ""}, the VolumeSnapshotRef does not match`,
    );
  if (ref.uid && content.spec.volumeSnapshotClassName) return content;
  const spec: Record<string, unknown> = { volumeSnapshotRef: { uid: snapshot.metadata?.uid ?? "" } };
  if (snapshot.spec.volumeSnapshotClassName)
    spec.volumeSnapshotClassName = snapshot.spec.volumeSnapshotClassName;
  return ctx.contents.remember(
    await ctx.client.patch<VolumeSnapshotContent>(
      GVR.volumeSnapshotContents,
      content.metadata?.name ?? "",
      { metadata: { resourceVersion: content.metadata?.resourceVersion }, spec },
      { type: "merge" },
      ctx.signal,
    ),
  );
}

/** The node whose labels match the PV's node affinity (distributed snapshotting's managed-by). */
function managingNode(ctx: SnapshotSyncContext, volume: PersistentVolume): string | undefined {
  const terms = volume.spec?.nodeAffinity?.required?.nodeSelectorTerms;
  if (!terms || terms.length === 0) return undefined;
  for (const node of ctx.nodes?.list() ?? [])
    if (terms.some((term) => nodeSelectorTermMatches(term, node))) return node.metadata?.name;
  ctx.logger.error("failed to find nodes that match the node affinity requirements for pv", {
    pv: volume.metadata?.name,
  });
  return undefined;
}

/** Upstream's createSnapshotContent: claim finalizer first, then `snapcontent-<uid>`. */
async function createContent(
  ctx: SnapshotSyncContext,
  snapshot: VolumeSnapshot,
): Promise<VolumeSnapshotContent> {
  await protectClaim(ctx, snapshot);
  const className = snapshot.spec.volumeSnapshotClassName;
  const name = contentNameForSnapshot(snapshot);
  let klass: VolumeSnapshotClass | undefined;
  let volume: PersistentVolume;
  let secret: { name: string; namespace: string } | undefined;
  try {
    if (!className)
      throw new Error(`failed to take snapshot ${snapshot.metadata?.name ?? ""} without a snapshot class`);
    klass = ctx.classes.get(className);
    if (klass === undefined)
      throw new Error(`volumesnapshotclass.snapshot.storage.k8s.io "${className}" not found`);
    volume = sourceVolume(ctx, snapshot);
    secret = secretReference(SNAPSHOTTER_SECRET, klass.parameters, {
      prefix: "volumesnapshot",
      contentName: name,
      name: snapshot.metadata?.name ?? "",
      namespace: snapshot.metadata?.namespace ?? "",
    });
  } catch (error) {
    throw new Error(
      `failed to get input parameters to create snapshot ${snapshot.metadata?.name ?? ""}: "${errorText(error)}"`,
    );
  }
  const csi = volume.spec?.csi;
  if (!csi)
    throw new Error(`cannot find CSI PersistentVolumeSource for volume ${volume.metadata?.name ?? ""}`);
  const labels: Record<string, string> = {};
  if (ctx.distributed) {
    const node = managingNode(ctx, volume);
    if (node) labels[LABELS.snapshotManagedBy.key] = node;
  }
  const annotations: Record<string, string> = {};
  if (secret) {
    annotations["snapshot.storage.kubernetes.io/deletion-secret-name"] = secret.name;
    annotations["snapshot.storage.kubernetes.io/deletion-secret-namespace"] = secret.namespace;
  }
  const content: VolumeSnapshotContent = {
    apiVersion: "snapshot.storage.k8s.io/v1",
    kind: "VolumeSnapshotContent",
    metadata: {
      name,
      // csikit: created with its protection finalizer (upstream patches it in right after).
      finalizers: [CONTENT_BOUND],
      ...(Object.keys(labels).length > 0 ? { labels } : {}),
      ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
    },
    spec: {
      volumeSnapshotRef: {
        kind: "VolumeSnapshot",
        namespace: snapshot.metadata?.namespace ?? "",
        name: snapshot.metadata?.name ?? "",
        uid: snapshot.metadata?.uid ?? "",
        apiVersion: "snapshot.storage.k8s.io/v1",
        resourceVersion: snapshot.metadata?.resourceVersion ?? "",
      },
      source: { volumeHandle: csi.volumeHandle },
      volumeSnapshotClassName: klass.metadata?.name ?? "",
      deletionPolicy: klass.deletionPolicy,
      driver: klass.driver,
      ...(ctx.preventVolumeModeConversion && volume.spec?.volumeMode
        ? { sourceVolumeMode: volume.spec.volumeMode }
        : {}),
    },
  };
  let saved: VolumeSnapshotContent;
  try {
    saved = ctx.contents.remember(await ctx.client.create(GVR.volumeSnapshotContents, content, ctx.signal));
  } catch (error) {
    if (!isAlreadyExists(error)) {
      const message = `Error creating volume snapshot content object for snapshot ${snapshotKey(snapshot)}: ${errorText(error)}.`;
      snapshotEvent(ctx, snapshot, "Warning", "CreateSnapshotContentFailed", message);
      throw controllerUpdateError(snapshotKey(snapshot), errorText(error));
    }
    ctx.logger.info(3, "volume snapshot content already exists, reusing", { content: name });
    saved = ctx.contents.get(name) ?? content;
  }
  snapshotEvent(
    ctx,
    snapshot,
    "Normal",
    "CreatingSnapshot",
    `Waiting for a snapshot ${snapshotKey(snapshot)} to be created by the CSI driver.`,
  );
  return saved;
}

/** The group snapshot a member content belongs to, by its group handle (upstream's lookup). */
function groupNameOfContent(ctx: SnapshotSyncContext, content: VolumeSnapshotContent): string | undefined {
  const handle = content.status?.volumeGroupSnapshotHandle;
  if (!handle) return undefined;
  const group = ctx.group?.groupContents.list().find((g) => g.status?.volumeGroupSnapshotHandle === handle);
  if (group === undefined)
    throw new Error(
      `updateSnapshotStatus: cannot find the group snapshot for VolumeSnapshot [${content.spec.volumeSnapshotRef.namespace ?? ""}/${content.spec.volumeSnapshotRef.name ?? ""}], will not update snapshot status`,
    );
  return group.spec.volumeGroupSnapshotRef.name;
}

/** Upstream's updateSnapshotStatus (+ its Events and metrics); a status write only when something changed. */
async function writeStatusFromContent(
  ctx: SnapshotSyncContext,
  snapshot: VolumeSnapshot,
  content: VolumeSnapshotContent,
  options: { setReadyToFalseOnError?: boolean } = {},
): Promise<void> {
  const latest = ctx.snapshots.get(snapshotKey(snapshot)) ?? snapshot;
  try {
    const status = nextSnapshotStatus(latest, content, groupNameOfContent(ctx, content));
    if (status === undefined) return;
    const uid = latest.metadata?.uid ?? "";
    const next = { ...latest, status };
    if (!isCreated(latest) && isCreated(next)) {
      ctx.metrics.succeeded(OPERATIONS.createSnapshot, uid, content.spec.driver);
      snapshotEvent(
        ctx,
        latest,
        "Normal",
        "SnapshotCreated",
        `Snapshot ${snapshotKey(latest)} was successfully created by the CSI driver.`,
      );
    }
    if (!isReady(latest) && isReady(next)) {
      ctx.metrics.succeeded(OPERATIONS.createSnapshotAndReady, uid, content.spec.driver);
      snapshotEvent(
        ctx,
        latest,
        "Normal",
        "SnapshotReady",
        `Snapshot ${snapshotKey(latest)} is ready to use.`,
      );
    }
    try {
      ctx.snapshots.remember(await ctx.client.updateStatus(GVR.volumeSnapshots, next, ctx.signal));
    } catch (error) {
      if (isNotFound(error)) return;
      // A stale copy: rethrown as is, so the queue retries the key after its rate-limited
      // backoff, deciding on the newer copy the watch has delivered by then; no error status
      // (a write, and an Event, about a conflict that is not an error of the snapshot).
      if (isConflict(error)) throw error;
      throw controllerUpdateError(snapshotKey(latest), errorText(error));
    }
  } catch (error) {
    if (isConflict(error)) throw error;
    await snapshotErrorStatus(ctx, latest, {
      setReadyToFalse: options.setReadyToFalseOnError ?? false,
      type: "Warning",
      reason: "SnapshotStatusUpdateFailed",
      message: `Snapshot status update failed, ${errorText(error)}`,
    }).catch(() => undefined);
    throw error;
  }
}
