// The driver's persistent state: what volumes, snapshots and group snapshots exist, where each
// volume was published, and (per node) which inline ephemeral volumes exist. The controller
// document lives in `<state-dir>/controller.json` and is written only by the instance that
// runs the controller service; each node instance writes only `<state-dir>/node-<hash>.json`.
// A node-only instance reads the controller document fresh (it is replaced atomically).
//
// Crash safety (kill -9 between any two steps): every multi-step operation first records its
// intent (`phase: "creating"` / `"deleting"`), then acts on disk, then commits
// (`phase: "ready"` / record removed). Each disk step is re-entrant (mkdir/rm tolerate
// existing/missing, copies go to a temp name and are renamed), so a retry of the same request
// — or, for deletes, the startup sweep — finishes whatever a crash interrupted.
//
// Lookups that fail throw CsiError with the gRPC code the CSI spec asks for.

import { CsikitError, isRecord } from "../../base/index.ts";
import { CsiError, GrpcStatus } from "../../csi/index.ts";
import { JsonStore } from "./json-store.ts";
import { join } from "node:path";
import { nodeFileName } from "./ids.ts";

export type AccessType = "mount" | "block";
export type Phase = "creating" | "ready" | "deleting";

export interface Timestamp {
  seconds: string;
  nanos: number;
}

export interface VolumeRecord {
  id: string;
  name: string;
  sizeBytes: number;
  accessType: AccessType;
  /** The `kind` parameter: which --capacity pool the volume draws from ("" = default). */
  kind: string;
  /** The topology segment (node ID) the volume lives on. */
  nodeId: string;
  parameters: Record<string, string>;
  mutableParameters: Record<string, string>;
  /** Access modes requested at creation, for CreateVolume idempotency checks. */
  accessModes: string[];
  source?: { type: "snapshot" | "volume"; id: string };
  phase: Phase;
  /** ControllerPublish records: node ID → read-only flag. */
  published: Record<string, { readonly: boolean }>;
}

export interface SnapshotRecord {
  id: string;
  name: string;
  sourceVolumeId: string;
  sizeBytes: number;
  accessType: AccessType;
  creationTime: Timestamp;
  groupSnapshotId?: string;
  phase: Phase;
}

export interface GroupSnapshotRecord {
  id: string;
  name: string;
  sourceVolumeIds: string[];
  snapshotIds: string[];
  creationTime: Timestamp;
  phase: Phase;
}

export interface ControllerStateData {
  version: 1;
  volumes: Record<string, VolumeRecord>;
  snapshots: Record<string, SnapshotRecord>;
  groupSnapshots: Record<string, GroupSnapshotRecord>;
  /** Node IDs ever seen in accessibility requirements (besides the driver's own). */
  knownNodes: string[];
}

export interface EphemeralRecord {
  volumeId: string;
  dirName: string;
  targetPath: string;
  phase: Phase;
}

export interface NodeStateData {
  version: 1;
  ephemeral: Record<string, EphemeralRecord>;
}

// The files are written only by this driver: the shape checks guard against a wrong or
// foreign file, not against a hand-edited one.
function isControllerState(value: unknown): value is ControllerStateData {
  return (
    isRecord(value) &&
    value.version === 1 &&
    isRecord(value.volumes) &&
    isRecord(value.snapshots) &&
    isRecord(value.groupSnapshots) &&
    Array.isArray(value.knownNodes)
  );
}

function isNodeState(value: unknown): value is NodeStateData {
  return isRecord(value) && value.version === 1 && isRecord(value.ephemeral);
}

function validateControllerState(value: unknown, file: string): ControllerStateData {
  if (!isControllerState(value))
    throw new CsikitError(
      "CSIKIT_ERR_HOSTPATH_STATE",
      `state file ${file} is not a hostpath controller state (version 1)`,
    );
  return value;
}

function validateNodeState(value: unknown, file: string): NodeStateData {
  if (!isNodeState(value))
    throw new CsikitError(
      "CSIKIT_ERR_HOSTPATH_STATE",
      `state file ${file} is not a hostpath node state (version 1)`,
    );
  return value;
}

export function controllerStore(stateDir: string): JsonStore<ControllerStateData> {
  return new JsonStore<ControllerStateData>({
    file: join(stateDir, "controller.json"),
    empty: () => ({ version: 1, volumes: {}, snapshots: {}, groupSnapshots: {}, knownNodes: [] }),
    validate: validateControllerState,
  });
}

export function nodeStore(stateDir: string, nodeId: string): JsonStore<NodeStateData> {
  return new JsonStore<NodeStateData>({
    file: join(stateDir, `node-${nodeFileName(nodeId)}.json`),
    empty: () => ({ version: 1, ephemeral: {} }),
    validate: validateNodeState,
  });
}

/** Read access to volumes for the node service: in-memory when co-located, else the file. */
export interface VolumeSource {
  volume(id: string): Promise<VolumeRecord | undefined>;
}

export function memoryVolumeSource(store: JsonStore<ControllerStateData>): VolumeSource {
  return { volume: (id) => Promise.resolve(liveVolume(store.current, id)) };
}

export function fileVolumeSource(stateDir: string): VolumeSource {
  return {
    async volume(id) {
      const store = controllerStore(stateDir);
      return liveVolume(await store.load(), id);
    },
  };
}

function liveVolume(state: ControllerStateData, id: string): VolumeRecord | undefined {
  const volume = Object.hasOwn(state.volumes, id) ? state.volumes[id] : undefined;
  return volume?.phase === "ready" ? volume : undefined;
}

/** A ready volume, or NOT_FOUND. */
export function requireVolume(state: ControllerStateData, id: string): VolumeRecord {
  const volume = liveVolume(state, id);
  if (!volume) throw new CsiError(GrpcStatus.NOT_FOUND, `volume ${JSON.stringify(id)} does not exist`);
  return volume;
}

/** A ready snapshot, or NOT_FOUND. */
export function requireSnapshot(state: ControllerStateData, id: string): SnapshotRecord {
  const snapshot = Object.hasOwn(state.snapshots, id) ? state.snapshots[id] : undefined;
  if (snapshot?.phase !== "ready")
    throw new CsiError(GrpcStatus.NOT_FOUND, `snapshot ${JSON.stringify(id)} does not exist`);
  return snapshot;
}

export function volumeByName(state: ControllerStateData, name: string): VolumeRecord | undefined {
  return Object.values(state.volumes).find((v) => v.name === name);
}

export function snapshotByName(state: ControllerStateData, name: string): SnapshotRecord | undefined {
  return Object.values(state.snapshots).find((s) => s.name === name && s.groupSnapshotId === undefined);
}

export function groupSnapshotByName(
  state: ControllerStateData,
  name: string,
): GroupSnapshotRecord | undefined {
  return Object.values(state.groupSnapshots).find((g) => g.name === name);
}

/** Bytes allocated on `nodeId` to volumes of `kind` (creating ones included: they are reserved). */
export function allocatedBytes(state: ControllerStateData, nodeId: string, kind: string): number {
  let total = 0;
  for (const volume of Object.values(state.volumes))
    if (volume.nodeId === nodeId && volume.kind === kind && volume.phase !== "deleting")
      total += volume.sizeBytes;
  return total;
}

/** Volumes ControllerPublished to `nodeId`. */
export function publishedCount(state: ControllerStateData, nodeId: string): number {
  return Object.values(state.volumes).filter((v) => Object.hasOwn(v.published, nodeId)).length;
}

export function nowTimestamp(nowMs: number): Timestamp {
  return { seconds: String(Math.floor(nowMs / 1000)), nanos: (nowMs % 1000) * 1_000_000 };
}
