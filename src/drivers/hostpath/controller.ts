// The Controller service: volumes (create/delete/publish/list/expand/modify/validate),
// capacity, and — through snapshots.ts — snapshots. Each handler: capability check →
// argument validation (INVALID_ARGUMENT naming the field) → per-object lock (ABORTED when
// busy) → idempotency by name/ID → intent persisted → act on disk → commit (see state.ts).
//
// Topology: the volume lives on one node ID (segment `topology.hostpath.csi/node`). Without
// accessibility requirements that is this driver's --nodeid; with them, the first preferred
// then requisite segment naming a node ID (and nothing else) that has room. Node IDs seen in
// requirements become "known nodes" (persisted), which ControllerPublish accepts; any other
// node ID is NOT_FOUND. Published node IDs are recorded per volume.

import type {
  ControllerExpandVolumeRequest,
  ControllerExpandVolumeResponseInput,
  ControllerGetVolumeRequest,
  ControllerGetVolumeResponseInput,
  ControllerModifyVolumeRequest,
  ControllerModifyVolumeResponseInput,
  ControllerPublishVolumeRequest,
  ControllerPublishVolumeResponseInput,
  ControllerUnpublishVolumeRequest,
  ControllerUnpublishVolumeResponseInput,
  DeleteVolumeRequest,
  DeleteVolumeResponseInput,
  GetCapacityRequest,
  GetCapacityResponseInput,
  ListVolumesRequest,
  ListVolumesResponseInput,
  ValidateVolumeCapabilitiesRequest,
  ValidateVolumeCapabilitiesResponseInput,
} from "../../csi/index.ts";
import {
  CsiError,
  GrpcStatus,
  type ControllerService,
  type ControllerServiceCapability_RPC_Type,
  type CreateVolumeRequest,
  type CreateVolumeResponseInput,
  type TopologyRequirement,
  type VolumeInput,
} from "../../csi/index.ts";
import type { ControllerContext } from "./controller-context.ts";
import {
  DEFAULT_VOLUME_SIZE,
  STORAGE_KIND_PARAMETER,
  TOPOLOGY_KEY_NODE,
  type HostpathConfig,
  NEWER_ALPHA_CONTROLLER_CAPABILITIES,
} from "./driver.ts";
import { dirname } from "node:path";
import { createVolumeData, dataProblem, growFile, removeData, type VolumeContent } from "./data.ts";
import { isVolumeId, newVolumeId } from "./ids.ts";
import {
  capabilitiesAccessType,
  capabilityAccessType,
  fitsRange,
  invalid,
  isMultiNode,
  page,
  required,
  sizeRange,
  type SizeRange,
  withinStringLimit,
} from "./requests.ts";
import {
  allocatedBytes,
  publishedCount,
  requireSnapshot,
  requireVolume,
  volumeByName,
  type AccessType,
  type ControllerStateData,
  type VolumeRecord,
} from "./state.ts";
import { snapshotHandlers } from "./snapshots.ts";

/** The controller capabilities this driver implements (ControllerGetCapabilities lists them). */
export function controllerCapabilities(config: HostpathConfig): ControllerServiceCapability_RPC_Type[] {
  const list: ControllerServiceCapability_RPC_Type[] = [
    "CREATE_DELETE_VOLUME",
    "LIST_VOLUMES",
    "LIST_VOLUMES_PUBLISHED_NODES",
    "GET_CAPACITY",
    "CREATE_DELETE_SNAPSHOT",
    "CLONE_VOLUME",
    "VOLUME_CONDITION",
    "GET_VOLUME",
    "SINGLE_NODE_MULTI_WRITER",
  ];
  if (config.enableListSnapshots) list.push("LIST_SNAPSHOTS");
  if (config.controllerExpansion) list.push("EXPAND_VOLUME");
  if (config.enableControllerModifyVolume) list.push("MODIFY_VOLUME");
  if (config.enableAttach) list.push("PUBLISH_UNPUBLISH_VOLUME", "PUBLISH_READONLY");
  if (config.enableAlphaCapabilities) list.push(...NEWER_ALPHA_CONTROLLER_CAPABILITIES);
  return list;
}

function notFound(what: string, id: string): CsiError {
  return new CsiError(GrpcStatus.NOT_FOUND, `${what} ${JSON.stringify(id)} does not exist`);
}

function volumeMessage(context: ControllerContext, volume: VolumeRecord): VolumeInput {
  const source =
    volume.source?.type === "snapshot"
      ? { snapshot: { snapshotId: volume.source.id } }
      : volume.source?.type === "volume"
        ? { volume: { volumeId: volume.source.id } }
        : null;
  return {
    volumeId: volume.id,
    capacityBytes: String(volume.sizeBytes),
    volumeContext: volume.parameters,
    contentSource: source,
    accessibleTopology: context.config.topologyOf(volume.nodeId),
  };
}

/** Node IDs the request allows, in preference order; undefined = no constraint. */
function candidateNodes(
  config: HostpathConfig,
  requirement: TopologyRequirement | null,
): string[] | undefined {
  if (!config.enableTopology || !requirement) return undefined;
  const { requisite, preferred } = requirement;
  if (requisite.length === 0 && preferred.length === 0) return undefined;
  const nodes: string[] = [];
  for (const topology of [...preferred, ...requisite]) {
    const keys = Object.keys(topology.segments);
    const node = topology.segments[TOPOLOGY_KEY_NODE];
    if (keys.length === 1 && node !== undefined && node !== "" && !nodes.includes(node)) nodes.push(node);
  }
  if (requisite.length === 0 && nodes.length === 0) return undefined;
  return nodes;
}

function hasRoom(
  context: ControllerContext,
  state: ControllerStateData,
  node: string,
  kind: string,
  size: number,
): boolean {
  if (context.config.capacity.size === 0) return true;
  const pool = context.config.capacity.get(kind) ?? 0;
  return allocatedBytes(state, node, kind) + size <= pool;
}

/** Picks the node for a new volume inside a store update, so the capacity check is atomic. */
function placeVolume(
  context: ControllerContext,
  state: ControllerStateData,
  options: { candidates: string[] | undefined; kind: string; size: number },
): string {
  const candidates = options.candidates ?? [context.config.nodeId];
  if (candidates.length === 0)
    throw new CsiError(
      GrpcStatus.RESOURCE_EXHAUSTED,
      `accessibility_requirements name no segment this driver can serve (it needs exactly the key ${TOPOLOGY_KEY_NODE})`,
    );
  for (const node of candidates) if (hasRoom(context, state, node, options.kind, options.size)) return node;
  throw new CsiError(
    GrpcStatus.RESOURCE_EXHAUSTED,
    `not enough capacity of kind ${JSON.stringify(options.kind)} for ${options.size} bytes on node(s) ${candidates.join(", ")}`,
  );
}

interface SourceInfo {
  source: { type: "snapshot" | "volume"; id: string } | undefined;
  content: VolumeContent;
  sizeBytes: number;
  lockKey: string | undefined;
}

function resolveSource(
  context: ControllerContext,
  request: CreateVolumeRequest,
  accessType: AccessType,
): SourceInfo {
  const contentSource = request.volumeContentSource;
  const state = context.store.current;
  if (!contentSource)
    return { source: undefined, content: { type: "empty" }, sizeBytes: 0, lockKey: undefined };
  if (contentSource.snapshot) {
    const id = required(contentSource.snapshot.snapshotId, "volume_content_source.snapshot.snapshot_id");
    const snapshot = requireSnapshot(state, id);
    if (snapshot.accessType !== accessType)
      throw invalid(
        `snapshot ${id} holds a ${snapshot.accessType} volume; cannot restore it as ${accessType}`,
      );
    return {
      source: { type: "snapshot", id },
      content: { type: "snapshot", path: context.layout.snapshotPath(id, accessType) },
      sizeBytes: snapshot.sizeBytes,
      lockKey: `snapshot:${id}`,
    };
  }
  if (contentSource.volume) {
    const id = required(contentSource.volume.volumeId, "volume_content_source.volume.volume_id");
    const volume = requireVolume(state, id);
    if (volume.accessType !== accessType)
      throw invalid(`volume ${id} is a ${volume.accessType} volume; cannot clone it as ${accessType}`);
    return {
      source: { type: "volume", id },
      content: { type: "volume", path: context.layout.volumePath(id, accessType) },
      sizeBytes: volume.sizeBytes,
      lockKey: `volume:${id}`,
    };
  }
  throw invalid("volume_content_source must name a snapshot or a volume");
}

/** The size a new volume gets: the requested range, at least its source, within limits. */
function chooseSize(context: ControllerContext, range: SizeRange, sourceSize: number): number {
  if (sourceSize > 0 && range.limit > 0 && range.limit < sourceSize)
    throw new CsiError(
      GrpcStatus.OUT_OF_RANGE,
      `capacity_range.limit_bytes ${range.limit} is smaller than the source (${sourceSize} bytes)`,
    );
  let size =
    range.required > 0
      ? range.required
      : range.limit > 0
        ? Math.min(range.limit, DEFAULT_VOLUME_SIZE)
        : DEFAULT_VOLUME_SIZE;
  if (sourceSize > 0 && range.required > 0 && range.required < sourceSize)
    throw new CsiError(
      GrpcStatus.OUT_OF_RANGE,
      `capacity_range.required_bytes ${range.required} is smaller than the source (${sourceSize} bytes)`,
    );
  size = Math.max(size, sourceSize);
  if (size > context.config.maxVolumeSize)
    throw new CsiError(
      GrpcStatus.OUT_OF_RANGE,
      `requested capacity ${size} exceeds the maximum volume size ${context.config.maxVolumeSize} (flag --max-volume-size)`,
    );
  return size;
}

function sameRecord(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => b[k] === a[k]);
}

function checkCompatible(
  existing: VolumeRecord,
  request: CreateVolumeRequest,
  wanted: { range: SizeRange; accessType: AccessType; source: SourceInfo["source"] },
): void {
  const conflict = (why: string): CsiError =>
    new CsiError(
      GrpcStatus.ALREADY_EXISTS,
      `volume ${JSON.stringify(existing.name)} already exists with ${why}`,
    );
  if (!fitsRange(existing.sizeBytes, wanted.range))
    throw conflict(`size ${existing.sizeBytes}, outside the requested capacity_range`);
  if (existing.accessType !== wanted.accessType) throw conflict(`access type ${existing.accessType}`);
  if (!sameRecord(existing.parameters, request.parameters)) throw conflict("different parameters");
  const a = existing.source;
  const b = wanted.source;
  if (a?.type !== b?.type || a?.id !== b?.id) throw conflict("a different volume_content_source");
}

async function populate(
  context: ControllerContext,
  volume: VolumeRecord,
  content: VolumeContent,
  signal: AbortSignal,
): Promise<void> {
  const path = context.layout.volumePath(volume.id, volume.accessType);
  // The rename into place is made durable with the "ready" record: one fsync of the volumes
  // dir per batch of concurrent creates instead of one per volume.
  await createVolumeData({
    path,
    accessType: volume.accessType,
    sizeBytes: volume.sizeBytes,
    content,
    signal,
    syncParent: false,
  });
  await context.store.update(
    (draft) => {
      const record = draft.volumes[volume.id];
      if (record) record.phase = "ready";
    },
    { syncDirs: [dirname(path)] },
  );
}

/** Finishes deleting a volume whose record exists (re-entrant). */
export async function finishVolumeDelete(context: ControllerContext, volume: VolumeRecord): Promise<void> {
  if (volume.phase !== "deleting")
    await context.store.update((draft) => {
      const record = draft.volumes[volume.id];
      if (record) record.phase = "deleting";
    });
  await removeData(context.layout.volumePath(volume.id, volume.accessType));
  await context.store.update((draft) => {
    delete draft.volumes[volume.id];
  });
}

async function createVolume(
  context: ControllerContext,
  request: CreateVolumeRequest,
  signal: AbortSignal,
): Promise<CreateVolumeResponseInput> {
  const name = withinStringLimit(required(request.name, "name"), "name");
  const accessType = capabilitiesAccessType(request.volumeCapabilities, "volume_capabilities");
  const range = sizeRange(request.capacityRange);
  checkMutableParameters(context, request.mutableParameters, "mutable_parameters");
  let firstSource: SourceInfo;
  try {
    firstSource = resolveSource(context, request, accessType);
  } catch (error) {
    // A create interrupted by a crash whose source is gone now can never finish: drop its
    // intent so it stops reserving capacity, then report why.
    const stale = volumeByName(context.store, name);
    if (stale?.phase === "creating")
      await context.locks.run([`name:${name}`], () => finishVolumeDelete(context, stale));
    throw error;
  }
  const lockKeys = [`name:${name}`, ...(firstSource.lockKey ? [firstSource.lockKey] : [])];
  return context.locks.run(lockKeys, async () => {
    const existing = volumeByName(context.store, name);
    if (existing?.phase === "deleting") await finishVolumeDelete(context, existing);
    else if (existing) {
      checkCompatible(existing, request, { range, accessType, source: firstSource.source });
      if (existing.phase === "creating") {
        const source = resolveSource(context, request, accessType);
        await populate(context, existing, source.content, signal);
      }
      return { volume: volumeMessage(context, requireVolume(context.store.current, existing.id)) };
    }
    const source = resolveSource(context, request, accessType);
    const size = chooseSize(context, range, source.sizeBytes);
    const kind = request.parameters[STORAGE_KIND_PARAMETER] ?? "";
    const candidates = candidateNodes(context.config, request.accessibilityRequirements);
    const id = newVolumeId();
    const record = await context.store.update((draft) => {
      const nodeId = placeVolume(context, context.store.latest, { candidates, kind, size });
      if (nodeId !== context.config.nodeId && !draft.knownNodes.includes(nodeId))
        draft.knownNodes.push(nodeId);
      const volume: VolumeRecord = {
        id,
        name,
        sizeBytes: size,
        accessType,
        kind,
        nodeId,
        parameters: { ...request.parameters },
        mutableParameters: { ...request.mutableParameters },
        accessModes: request.volumeCapabilities.map((c) => c.accessMode?.mode ?? "UNKNOWN"),
        phase: "creating",
        published: {},
        ...(source.source ? { source: source.source } : {}),
      };
      draft.volumes[id] = volume;
      return volume;
    });
    try {
      await populate(context, record, source.content, signal);
    } catch (error) {
      // The source could not be copied: undo the intent so the name is free for a retry.
      await finishVolumeDelete(context, record).catch(() => undefined);
      throw error;
    }
    context.config.logger.info(4, "created volume", {
      volumeId: id,
      name,
      sizeBytes: size,
      nodeId: record.nodeId,
    });
    return { volume: volumeMessage(context, requireVolume(context.store.current, id)) };
  });
}

function checkMutableParameters(
  context: ControllerContext,
  parameters: Record<string, string>,
  field: string,
): void {
  const accepted = context.config.acceptedMutableParameterNames;
  // No list: every key is mutable, as upstream without --accepted-mutable-parameter-names.
  if (accepted.size === 0) return;
  const unknown = Object.keys(parameters).filter((k) => !accepted.has(k));
  if (unknown.length > 0)
    throw invalid(
      `${field} has unsupported keys ${unknown.join(", ")} (accepted: ${[...accepted].join(", ")}; flag --accepted-mutable-parameter-names)`,
    );
}

function knownNode(context: ControllerContext, nodeId: string): boolean {
  return nodeId === context.config.nodeId || context.store.current.knownNodes.includes(nodeId);
}

function requireOffered(offered: boolean, method: string, flag: string): void {
  if (!offered) throw new CsiError(GrpcStatus.UNIMPLEMENTED, `${method} is not offered (${flag})`);
}

function requireAttach(context: ControllerContext, method: string): void {
  if (!context.config.enableAttach)
    throw new CsiError(
      GrpcStatus.UNIMPLEMENTED,
      `${method} is not offered: attach is disabled (flag --enable-attach)`,
    );
}

async function volumeStatus(
  context: ControllerContext,
  volume: VolumeRecord,
): Promise<{ publishedNodeIds: string[]; volumeCondition: { abnormal: boolean; message: string } }> {
  const problem = await dataProblem(
    context.layout.volumePath(volume.id, volume.accessType),
    volume.accessType,
  );
  return {
    publishedNodeIds: Object.keys(volume.published).sort(),
    volumeCondition: { abnormal: problem !== undefined, message: problem ?? "volume is healthy" },
  };
}

function lookupVolume(context: ControllerContext, id: string): VolumeRecord {
  if (!isVolumeId(id)) throw notFound("volume", id);
  return requireVolume(context.store.current, id);
}

export type { ControllerContext };

async function deleteVolume(
  context: ControllerContext,
  request: DeleteVolumeRequest,
): Promise<DeleteVolumeResponseInput> {
  const { config } = context;
  const id = required(request.volumeId, "volume_id");
  if (!isVolumeId(id)) return {};
  return context.locks.run([`volume:${id}`], async () => {
    const volume = context.store.current.volumes[id];
    if (!volume) return {};
    const nodes = Object.keys(volume.published);
    if (nodes.length > 0)
      throw new CsiError(
        GrpcStatus.FAILED_PRECONDITION,
        `volume ${id} is still published to node(s) ${nodes.join(", ")}`,
      );
    await finishVolumeDelete(context, volume);
    config.logger.info(4, "deleted volume", { volumeId: id });
    return {};
  });
}

async function controllerPublishVolume(
  context: ControllerContext,
  request: ControllerPublishVolumeRequest,
): Promise<ControllerPublishVolumeResponseInput> {
  const { config } = context;
  requireAttach(context, "ControllerPublishVolume");
  const id = required(request.volumeId, "volume_id");
  const nodeId = required(request.nodeId, "node_id");
  const accessType = capabilityAccessType(request.volumeCapability, "volume_capability");
  const volume = lookupVolume(context, id);
  if (!knownNode(context, nodeId)) throw notFound("node", nodeId);
  if (volume.accessType !== accessType)
    throw invalid(
      `volume_capability asks for ${accessType} access but volume ${id} is a ${volume.accessType} volume`,
    );
  return context.locks.run([`volume:${id}`], async () => {
    const current = requireVolume(context.store.current, id);
    const existing = current.published[nodeId];
    if (existing) {
      if (existing.readonly !== request.readonly)
        throw new CsiError(
          GrpcStatus.ALREADY_EXISTS,
          `volume ${id} is already published to node ${nodeId} with readonly=${existing.readonly}`,
        );
      return { publishContext: {} };
    }
    const others = Object.keys(current.published);
    if (others.length > 0 && !isMultiNode(request.volumeCapability))
      throw new CsiError(
        GrpcStatus.FAILED_PRECONDITION,
        `volume ${id} is already published to node ${others.join(", ")} and the access mode is single-node`,
      );
    await context.store.update((draft) => {
      if (config.attachLimit > 0 && publishedCount(context.store.latest, nodeId) >= config.attachLimit)
        throw new CsiError(
          GrpcStatus.RESOURCE_EXHAUSTED,
          `node ${nodeId} already has the maximum of ${config.attachLimit} volumes attached (flag --attach-limit)`,
        );
      if (
        config.maxVolumesPerNode > 0 &&
        publishedCount(context.store.latest, nodeId) >= config.maxVolumesPerNode
      )
        throw new CsiError(
          GrpcStatus.RESOURCE_EXHAUSTED,
          `node ${nodeId} already has the maximum of ${config.maxVolumesPerNode} volumes published (flag --max-volumes-per-node)`,
        );
      const record = draft.volumes[id];
      if (record) record.published[nodeId] = { readonly: request.readonly };
    });
    return { publishContext: {} };
  });
}

async function controllerUnpublishVolume(
  context: ControllerContext,
  request: ControllerUnpublishVolumeRequest,
): Promise<ControllerUnpublishVolumeResponseInput> {
  requireAttach(context, "ControllerUnpublishVolume");
  const id = required(request.volumeId, "volume_id");
  // An unknown volume or node cannot be published there: it is already unpublished.
  if (!isVolumeId(id)) return {};
  return context.locks.run([`volume:${id}`], async () => {
    const volume = context.store.current.volumes[id];
    if (!volume) return {};
    const nodes = request.nodeId === "" ? Object.keys(volume.published) : [request.nodeId];
    if (!nodes.some((n) => Object.hasOwn(volume.published, n))) return {};
    await context.store.update((draft) => {
      const record = draft.volumes[id];
      for (const node of nodes) if (record) delete record.published[node];
    });
    return {};
  });
}

async function validateVolumeCapabilities(
  context: ControllerContext,
  request: ValidateVolumeCapabilitiesRequest,
): Promise<ValidateVolumeCapabilitiesResponseInput> {
  const id = required(request.volumeId, "volume_id");
  const accessType = capabilitiesAccessType(request.volumeCapabilities, "volume_capabilities");
  const volume = lookupVolume(context, id);
  if (accessType !== volume.accessType)
    return {
      confirmed: null,
      message: `volume ${id} is a ${volume.accessType} volume, not ${accessType}`,
    };
  if (Object.keys(request.parameters).length > 0 && !sameRecord(request.parameters, volume.parameters))
    return { confirmed: null, message: `parameters differ from those volume ${id} was created with` };
  return {
    confirmed: {
      volumeContext: request.volumeContext,
      volumeCapabilities: request.volumeCapabilities,
      parameters: request.parameters,
      mutableParameters: request.mutableParameters,
    },
    message: "",
  };
}

async function listVolumes(
  context: ControllerContext,
  request: ListVolumesRequest,
): Promise<ListVolumesResponseInput> {
  const state = context.store.current;
  const ready = Object.values(state.volumes).filter((v) => v.phase === "ready");
  const { ids, nextToken } = page(
    ready.map((v) => v.id),
    { token: request.startingToken, maxEntries: request.maxEntries, isId: isVolumeId },
  );
  const entries = [];
  for (const id of ids) {
    const volume = state.volumes[id]!;
    entries.push({ volume: volumeMessage(context, volume), status: await volumeStatus(context, volume) });
  }
  return { entries, nextToken };
}

async function controllerGetVolume(
  context: ControllerContext,
  request: ControllerGetVolumeRequest,
): Promise<ControllerGetVolumeResponseInput> {
  const id = required(request.volumeId, "volume_id");
  const volume = lookupVolume(context, id);
  return { volume: volumeMessage(context, volume), status: await volumeStatus(context, volume) };
}

async function getCapacity(
  context: ControllerContext,
  request: GetCapacityRequest,
): Promise<GetCapacityResponseInput> {
  const { config } = context;
  // Capabilities do not change capacity, and upstream hostpath ignores them: the
  // external-provisioner's capacity tracking sends one mount capability with access mode
  // UNKNOWN, which a check for a set mode would refuse.
  const kind = request.parameters[STORAGE_KIND_PARAMETER] ?? "";
  let node = config.nodeId;
  const segments = request.accessibleTopology?.segments ?? {};
  if (config.enableTopology && Object.keys(segments).length > 0) {
    const named = segments[TOPOLOGY_KEY_NODE];
    // A controller-only instance serves every node (CreateVolume places a volume on any node its
    // requirements name), so it answers for any node segment, including one it has not placed a
    // volume on yet: otherwise a new cluster's CSIStorageCapacity would say 0 everywhere and the
    // scheduler would never place the first WaitForFirstConsumer claim.
    const servable = named !== undefined && (!config.nodeService || knownNode(context, named));
    node = servable && Object.keys(segments).length === 1 ? named : "";
  }
  let available: number;
  if (node === "") available = 0;
  else if (config.capacity.size === 0) available = config.maxVolumeSize;
  else
    available = Math.max(
      0,
      (config.capacity.get(kind) ?? 0) - allocatedBytes(context.store.current, node, kind),
    );
  return {
    availableCapacity: String(available),
    maximumVolumeSize: { value: String(Math.min(available, config.maxVolumeSize)) },
    minimumVolumeSize: { value: "0" },
  };
}

async function controllerExpandVolume(
  context: ControllerContext,
  request: ControllerExpandVolumeRequest,
): Promise<ControllerExpandVolumeResponseInput> {
  const { config } = context;
  requireOffered(
    config.controllerExpansion,
    "ControllerExpandVolume",
    "flags --enable-volume-expansion, --disable-controller-expansion",
  );
  const id = required(request.volumeId, "volume_id");
  if (!request.capacityRange) throw invalid("capacity_range is required");
  const range = sizeRange(request.capacityRange);
  if (request.volumeCapability) capabilityAccessType(request.volumeCapability, "volume_capability");
  lookupVolume(context, id);
  if (range.required > config.maxVolumeSize)
    throw new CsiError(
      GrpcStatus.OUT_OF_RANGE,
      `capacity_range.required_bytes ${range.required} exceeds the maximum volume size ${config.maxVolumeSize}`,
    );
  return context.locks.run([`volume:${id}`], async () => {
    const volume = requireVolume(context.store.current, id);
    if (range.limit > 0 && range.limit < volume.sizeBytes)
      throw new CsiError(
        GrpcStatus.OUT_OF_RANGE,
        `capacity_range.limit_bytes ${range.limit} is below the current size ${volume.sizeBytes}; volumes cannot shrink`,
      );
    const target = Math.max(volume.sizeBytes, range.required);
    if (target > volume.sizeBytes) {
      await context.store.update((draft) => {
        const grow = target - volume.sizeBytes;
        if (!hasRoom(context, context.store.latest, volume.nodeId, volume.kind, grow))
          throw new CsiError(
            GrpcStatus.OUT_OF_RANGE,
            `not enough capacity of kind ${JSON.stringify(volume.kind)} on node ${volume.nodeId} to grow volume ${id} to ${target} bytes`,
          );
        const record = draft.volumes[id];
        if (record) record.sizeBytes = target;
      });
      // After the record: a crash here leaves the file smaller, and a retry grows it.
      if (volume.accessType === "block") await growFile(context.layout.volumePath(id, "block"), target);
    } else if (volume.accessType === "block") {
      await growFile(context.layout.volumePath(id, "block"), target);
    }
    return { capacityBytes: String(target), nodeExpansionRequired: true };
  });
}

async function controllerModifyVolume(
  context: ControllerContext,
  request: ControllerModifyVolumeRequest,
): Promise<ControllerModifyVolumeResponseInput> {
  const { config } = context;
  requireOffered(
    config.enableControllerModifyVolume,
    "ControllerModifyVolume",
    "flag --enable-controller-modify-volume",
  );
  const id = required(request.volumeId, "volume_id");
  if (Object.keys(request.mutableParameters).length === 0) throw invalid("mutable_parameters is required");
  checkMutableParameters(context, request.mutableParameters, "mutable_parameters");
  lookupVolume(context, id);
  return context.locks.run([`volume:${id}`], async () => {
    await context.store.update((draft) => {
      const record = draft.volumes[id];
      if (!record || record.phase !== "ready") throw notFound("volume", id);
      Object.assign(record.mutableParameters, request.mutableParameters);
    });
    return {};
  });
}

/** The service as grpc-js serves it: each RPC is one function above, readable and testable alone. */
export function controllerHandlers(context: ControllerContext): Partial<ControllerService> {
  const { config } = context;
  return {
    controllerGetCapabilities: () =>
      Promise.resolve({ capabilities: controllerCapabilities(config).map((type) => ({ rpc: { type } })) }),
    createVolume: (request, call) => createVolume(context, request, call.signal),
    deleteVolume: (request) => deleteVolume(context, request),
    controllerPublishVolume: (request) => controllerPublishVolume(context, request),
    controllerUnpublishVolume: (request) => controllerUnpublishVolume(context, request),
    validateVolumeCapabilities: (request) => validateVolumeCapabilities(context, request),
    listVolumes: (request) => listVolumes(context, request),
    controllerGetVolume: (request) => controllerGetVolume(context, request),
    getCapacity: (request) => getCapacity(context, request),
    controllerExpandVolume: (request) => controllerExpandVolume(context, request),
    controllerModifyVolume: (request) => controllerModifyVolume(context, request),
    ...snapshotHandlers(context),
  };
}
