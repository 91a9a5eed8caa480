// The GroupController service: volume group snapshots. A group snapshot is one snapshot per
// source volume (real copies, as in snapshots.ts) sharing a creation time and carrying the
// group's ID. Intent first: the group and all member records are written in one update
// ("creating"), then the data is copied, then all are marked ready in one update.

import type {
  CreateVolumeGroupSnapshotRequest,
  CreateVolumeGroupSnapshotResponseInput,
  DeleteVolumeGroupSnapshotRequest,
  DeleteVolumeGroupSnapshotResponseInput,
  GetVolumeGroupSnapshotRequest,
  GetVolumeGroupSnapshotResponseInput,
  CallContext,
} from "../../csi/index.ts";
import {
  CsiError,
  GrpcStatus,
  type GroupControllerService,
  type VolumeGroupSnapshotInput,
} from "../../csi/index.ts";
import type { ControllerContext } from "./controller-context.ts";
import { isGroupSnapshotId, isVolumeId, newGroupSnapshotId, newSnapshotId } from "./ids.ts";
import { invalid, required, withinStringLimit } from "./requests.ts";
import { finishSnapshotCreate, finishSnapshotDelete, snapshotMessage } from "./snapshots.ts";
import {
  groupSnapshotByName,
  nowTimestamp,
  requireVolume,
  type ControllerStateData,
  type GroupSnapshotRecord,
  type SnapshotRecord,
} from "./state.ts";

function members(state: ControllerStateData, group: GroupSnapshotRecord): SnapshotRecord[] {
  return group.snapshotIds.flatMap((id) => (state.snapshots[id] ? [state.snapshots[id]] : []));
}

function groupMessage(state: ControllerStateData, group: GroupSnapshotRecord): VolumeGroupSnapshotInput {
  return {
    groupSnapshotId: group.id,
    snapshots: members(state, group).map(snapshotMessage),
    creationTime: group.creationTime,
    readyToUse: group.phase === "ready",
  };
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  const set = new Set(a);
  return set.size === new Set(b).size && b.every((x) => set.has(x));
}

function checkSnapshotIds(group: GroupSnapshotRecord, snapshotIds: readonly string[]): void {
  if (snapshotIds.length > 0 && !sameSet(group.snapshotIds, snapshotIds))
    throw invalid(`snapshot_ids do not match the members of group snapshot ${group.id}`);
}

async function finishGroupCreate(
  context: ControllerContext,
  group: GroupSnapshotRecord,
  signal?: AbortSignal,
): Promise<void> {
  await finishSnapshotCreate(context, members(context.store.current, group), signal);
  await context.store.update((draft) => {
    const record = draft.groupSnapshots[group.id];
    if (record) record.phase = "ready";
  });
}

async function finishGroupDelete(context: ControllerContext, group: GroupSnapshotRecord): Promise<void> {
  await context.store.update((draft) => {
    const record = draft.groupSnapshots[group.id];
    if (record) record.phase = "deleting";
  });
  await finishSnapshotDelete(context, members(context.store.current, group));
  await context.store.update((draft) => {
    delete draft.groupSnapshots[group.id];
  });
}

export { finishGroupDelete };

async function createVolumeGroupSnapshot(
  context: ControllerContext,
  request: CreateVolumeGroupSnapshotRequest,
  call: CallContext,
): Promise<CreateVolumeGroupSnapshotResponseInput> {
  const name = withinStringLimit(required(request.name, "name"), "name");
  const sources = request.sourceVolumeIds;
  if (sources.length === 0) throw invalid("source_volume_ids is required");
  if (new Set(sources).size !== sources.length) throw invalid("source_volume_ids has duplicates");
  const lockKeys = [`group-name:${name}`, ...sources.map((id) => `volume:${id}`)];
  return context.locks.run(lockKeys, async () => {
    const existing = groupSnapshotByName(context.store, name);
    if (existing) {
      if (!sameSet(existing.sourceVolumeIds, sources))
        throw new CsiError(
          GrpcStatus.ALREADY_EXISTS,
          `group snapshot ${JSON.stringify(name)} already exists with other source volumes`,
        );
      if (existing.phase === "deleting") await finishGroupDelete(context, existing);
      else {
        if (existing.phase === "creating")
          await finishGroupCreate(context, existing, call.signal).catch(async (error: unknown) => {
            await finishGroupDelete(context, existing);
            throw error;
          });
        return {
          groupSnapshot: groupMessage(
            context.store.current,
            context.store.current.groupSnapshots[existing.id]!,
          ),
        };
      }
    }
    for (const id of sources) {
      if (!isVolumeId(id))
        throw new CsiError(GrpcStatus.NOT_FOUND, `source volume ${JSON.stringify(id)} does not exist`);
      requireVolume(context.store.current, id);
    }
    const creationTime = nowTimestamp(context.config.now());
    const groupId = newGroupSnapshotId();
    const snapshots: SnapshotRecord[] = sources.map((volumeId) => {
      const volume = requireVolume(context.store.current, volumeId);
      return {
        id: newSnapshotId(),
        name: `${name}/${volumeId}`,
        sourceVolumeId: volumeId,
        sizeBytes: volume.sizeBytes,
        accessType: volume.accessType,
        creationTime,
        groupSnapshotId: groupId,
        phase: "creating",
      };
    });
    const group: GroupSnapshotRecord = {
      id: groupId,
      name,
      sourceVolumeIds: [...sources],
      snapshotIds: snapshots.map((s) => s.id),
      creationTime,
      phase: "creating",
    };
    await context.store.update((draft) => {
      draft.groupSnapshots[groupId] = group;
      for (const snapshot of snapshots) draft.snapshots[snapshot.id] = snapshot;
    });
    try {
      await finishGroupCreate(context, group, call.signal);
    } catch (error) {
      await finishGroupDelete(context, group).catch(() => undefined);
      throw error;
    }
    return {
      groupSnapshot: groupMessage(context.store.current, context.store.current.groupSnapshots[groupId]!),
    };
  });
}

async function deleteVolumeGroupSnapshot(
  context: ControllerContext,
  request: DeleteVolumeGroupSnapshotRequest,
): Promise<DeleteVolumeGroupSnapshotResponseInput> {
  const id = required(request.groupSnapshotId, "group_snapshot_id");
  if (!isGroupSnapshotId(id)) return {};
  return context.locks.run([`group:${id}`], async () => {
    const group = context.store.current.groupSnapshots[id];
    if (!group) return {};
    checkSnapshotIds(group, request.snapshotIds);
    await finishGroupDelete(context, group);
    return {};
  });
}

async function getVolumeGroupSnapshot(
  context: ControllerContext,
  request: GetVolumeGroupSnapshotRequest,
): Promise<GetVolumeGroupSnapshotResponseInput> {
  const id = required(request.groupSnapshotId, "group_snapshot_id");
  const group = isGroupSnapshotId(id) ? context.store.current.groupSnapshots[id] : undefined;
  // An interrupted create is not a group snapshot yet (as GetSnapshot treats its members).
  if (group?.phase !== "ready")
    throw new CsiError(GrpcStatus.NOT_FOUND, `group snapshot ${JSON.stringify(id)} does not exist`);
  checkSnapshotIds(group, request.snapshotIds);
  return { groupSnapshot: groupMessage(context.store.current, group) };
}

/** The service as grpc-js serves it: each RPC is one function above, readable and testable alone. */
export function groupControllerHandlers(context: ControllerContext): GroupControllerService {
  return {
    groupControllerGetCapabilities: () =>
      Promise.resolve({ capabilities: [{ rpc: { type: "CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT" } }] }),
    createVolumeGroupSnapshot: (request, call) => createVolumeGroupSnapshot(context, request, call),
    deleteVolumeGroupSnapshot: (request) => deleteVolumeGroupSnapshot(context, request),
    getVolumeGroupSnapshot: (request) => getVolumeGroupSnapshot(context, request),
  };
}
