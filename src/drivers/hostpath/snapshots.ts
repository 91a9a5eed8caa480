// Snapshot RPCs of the Controller service. A snapshot is a real, independent copy of the
// volume's data (a tar archive of a directory volume, a sparse copy of a block volume's file),
// so volumes and snapshots can be deleted in any order. Group-snapshot members carry their
// group's ID and can only be deleted with the group.

import type {
  CreateSnapshotRequest,
  CreateSnapshotResponseInput,
  DeleteSnapshotRequest,
  DeleteSnapshotResponseInput,
  GetSnapshotRequest,
  GetSnapshotResponseInput,
  ListSnapshotsRequest,
  ListSnapshotsResponseInput,
  CallContext,
} from "../../csi/index.ts";
import { CsiError, GrpcStatus, type ControllerService, type SnapshotInput } from "../../csi/index.ts";
import type { ControllerContext } from "./controller-context.ts";
import { createSnapshotData, removeData } from "./data.ts";
import { isSnapshotId, isVolumeId, newSnapshotId } from "./ids.ts";
import { invalid, page, required, withinStringLimit } from "./requests.ts";
import {
  nowTimestamp,
  requireSnapshot,
  requireVolume,
  snapshotByName,
  type SnapshotRecord,
} from "./state.ts";

export function snapshotMessage(snapshot: SnapshotRecord): SnapshotInput {
  return {
    snapshotId: snapshot.id,
    sourceVolumeId: snapshot.sourceVolumeId,
    sizeBytes: String(snapshot.sizeBytes),
    creationTime: snapshot.creationTime,
    readyToUse: snapshot.phase === "ready",
    groupSnapshotId: snapshot.groupSnapshotId ?? "",
  };
}

/** Copies the source volume's data into the snapshot and marks it ready (re-entrant). */
export async function finishSnapshotCreate(
  context: ControllerContext,
  snapshots: readonly SnapshotRecord[],
  signal?: AbortSignal,
): Promise<void> {
  for (const snapshot of snapshots) {
    const volume = requireVolume(context.store.current, snapshot.sourceVolumeId);
    await createSnapshotData({
      volumePath: context.layout.volumePath(volume.id, volume.accessType),
      snapshotPath: context.layout.snapshotPath(snapshot.id, snapshot.accessType),
      accessType: snapshot.accessType,
      ...(signal ? { signal } : {}),
    });
  }
  await context.store.update((draft) => {
    for (const snapshot of snapshots) {
      const record = draft.snapshots[snapshot.id];
      if (record) record.phase = "ready";
    }
  });
}

/** Removes snapshots' data and records (re-entrant: marks them deleting first). */
export async function finishSnapshotDelete(
  context: ControllerContext,
  snapshots: readonly SnapshotRecord[],
): Promise<void> {
  await context.store.update((draft) => {
    for (const snapshot of snapshots) {
      const record = draft.snapshots[snapshot.id];
      if (record) record.phase = "deleting";
    }
  });
  for (const snapshot of snapshots)
    await removeData(context.layout.snapshotPath(snapshot.id, snapshot.accessType));
  await context.store.update((draft) => {
    for (const snapshot of snapshots) delete draft.snapshots[snapshot.id];
  });
}

async function createSnapshot(
  context: ControllerContext,
  request: CreateSnapshotRequest,
  call: CallContext,
): Promise<CreateSnapshotResponseInput> {
  const name = withinStringLimit(required(request.name, "name"), "name");
  const sourceId = required(request.sourceVolumeId, "source_volume_id");
  return context.locks.run([`snapshot-name:${name}`, `volume:${sourceId}`], async () => {
    const existing = snapshotByName(context.store, name);
    if (existing) {
      if (existing.sourceVolumeId !== sourceId)
        throw new CsiError(
          GrpcStatus.ALREADY_EXISTS,
          `snapshot ${JSON.stringify(name)} already exists for source volume ${existing.sourceVolumeId}`,
        );
      if (existing.phase === "deleting") await finishSnapshotDelete(context, [existing]);
      else {
        if (existing.phase === "creating")
          await finishSnapshotCreate(context, [existing], call.signal).catch(async (error: unknown) => {
            await finishSnapshotDelete(context, [existing]);
            throw error;
          });
        return { snapshot: snapshotMessage(requireSnapshot(context.store.current, existing.id)) };
      }
    }
    if (!isVolumeId(sourceId))
      throw new CsiError(GrpcStatus.NOT_FOUND, `source volume ${JSON.stringify(sourceId)} does not exist`);
    const volume = requireVolume(context.store.current, sourceId);
    const snapshot: SnapshotRecord = {
      id: newSnapshotId(),
      name,
      sourceVolumeId: sourceId,
      sizeBytes: volume.sizeBytes,
      accessType: volume.accessType,
      creationTime: nowTimestamp(context.config.now()),
      phase: "creating",
    };
    await context.store.update((draft) => {
      draft.snapshots[snapshot.id] = snapshot;
    });
    try {
      await finishSnapshotCreate(context, [snapshot], call.signal);
    } catch (error) {
      await finishSnapshotDelete(context, [snapshot]).catch(() => undefined);
      throw error;
    }
    context.config.logger.info(4, "created snapshot", {
      snapshotId: snapshot.id,
      sourceVolumeId: sourceId,
    });
    return { snapshot: snapshotMessage(requireSnapshot(context.store.current, snapshot.id)) };
  });
}

async function deleteSnapshot(
  context: ControllerContext,
  request: DeleteSnapshotRequest,
): Promise<DeleteSnapshotResponseInput> {
  const id = required(request.snapshotId, "snapshot_id");
  if (!isSnapshotId(id)) return {};
  return context.locks.run([`snapshot:${id}`], async () => {
    const snapshot = context.store.current.snapshots[id];
    if (!snapshot) return {};
    if (
      snapshot.groupSnapshotId !== undefined &&
      context.store.current.groupSnapshots[snapshot.groupSnapshotId]
    )
      throw invalid(
        `snapshot ${id} is part of group snapshot ${snapshot.groupSnapshotId}; delete the group instead`,
      );
    await finishSnapshotDelete(context, [snapshot]);
    return {};
  });
}

async function listSnapshots(
  context: ControllerContext,
  request: ListSnapshotsRequest,
): Promise<ListSnapshotsResponseInput> {
  // Not advertised means not served (upstream answers INVALID_ARGUMENT "unsupported capability").
  if (!context.config.enableListSnapshots)
    throw new CsiError(
      GrpcStatus.UNIMPLEMENTED,
      "ListSnapshots is not offered: LIST_SNAPSHOTS is off (flag --enable-list-snapshots)",
    );
  const state = context.store.current;
  let ready = Object.values(state.snapshots).filter((s) => s.phase === "ready");
  if (request.snapshotId !== "") ready = ready.filter((s) => s.id === request.snapshotId);
  if (request.sourceVolumeId !== "") ready = ready.filter((s) => s.sourceVolumeId === request.sourceVolumeId);
  const { ids, nextToken } = page(
    ready.map((s) => s.id),
    { token: request.startingToken, maxEntries: request.maxEntries, isId: isSnapshotId },
  );
  return { entries: ids.map((id) => ({ snapshot: snapshotMessage(state.snapshots[id]!) })), nextToken };
}

async function getSnapshot(
  context: ControllerContext,
  request: GetSnapshotRequest,
): Promise<GetSnapshotResponseInput> {
  if (!context.config.enableAlphaCapabilities)
    throw new CsiError(
      GrpcStatus.UNIMPLEMENTED,
      "GetSnapshot is not offered: GET_SNAPSHOT is withheld (flag --enable-alpha-capabilities=false)",
    );
  const id = required(request.snapshotId, "snapshot_id");
  if (!isSnapshotId(id))
    throw new CsiError(GrpcStatus.NOT_FOUND, `snapshot ${JSON.stringify(id)} does not exist`);
  return { snapshot: snapshotMessage(requireSnapshot(context.store.current, id)) };
}

/** The service as grpc-js serves it: each RPC is one function above, readable and testable alone. */
export function snapshotHandlers(context: ControllerContext): Partial<ControllerService> {
  return {
    createSnapshot: (request, call) => createSnapshot(context, request, call),
    deleteSnapshot: (request) => deleteSnapshot(context, request),
    listSnapshots: (request) => listSnapshots(context, request),
    getSnapshot: (request) => getSnapshot(context, request),
  };
}
