// The driver's persistent state: what volumes, snapshots and group snapshots exist, where each
// volume was published, and (per node) which inline ephemeral volumes exist. The controller
// document lives in `<state-dir>/controller.json` + `controller.journal` (journal-store.ts) and
// is written only by the instance that runs the controller service; each node instance writes
// only `<state-dir>/node-<hash>.json` + `.journal`. A node-only instance reads the controller
// document fresh (snapshot + journal, without taking ownership).
//
// Versions: 1 is the whole-file JSON of csikit before the journal; it is read as is (no journal
// existed) and rewritten as version 2 at the first start, so upgrading keeps every volume.
// Version 2 needs its journal, so an older csikit refuses it instead of losing changes.
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
import { JournalStore, readJournaled } from "./journal-store.ts";
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

export const STATE_VERSION = 2;

export interface ControllerStateData {
  version: typeof STATE_VERSION;
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
  version: typeof STATE_VERSION;
  ephemeral: Record<string, EphemeralRecord>;
}

// The files are written only by this driver: the shape checks guard against a wrong or
// foreign file, not against a hand-edited one.
function knownVersion(value: Record<string, unknown>): boolean {
  return value.version === 1 || value.version === STATE_VERSION;
}

function isControllerState(value: unknown): value is ControllerStateData {
  return (
    isRecord(value) &&
    knownVersion(value) &&
    isRecord(value.volumes) &&
    isRecord(value.snapshots) &&
    isRecord(value.groupSnapshots) &&
    Array.isArray(value.knownNodes)
  );
}

function isNodeState(value: unknown): value is NodeStateData {
  return isRecord(value) && knownVersion(value) && isRecord(value.ephemeral);
}

function validateControllerState(value: unknown, file: string): ControllerStateData {
  if (!isControllerState(value))
    throw new CsikitError(
      "CSIKIT_ERR_HOSTPATH_STATE",
      `state file ${file} is not a hostpath controller state (version 1 or ${STATE_VERSION})`,
    );
  return { ...value, version: STATE_VERSION };
}

function validateNodeState(value: unknown, file: string): NodeStateData {
  if (!isNodeState(value))
    throw new CsikitError(
      "CSIKIT_ERR_HOSTPATH_STATE",
      `state file ${file} is not a hostpath node state (version 1 or ${STATE_VERSION})`,
    );
  return { ...value, version: STATE_VERSION };
}

export type ControllerStore = JournalStore<ControllerStateData>;
export type NodeStore = JournalStore<NodeStateData>;

const CONTROLLER_OPTIONS = {
  version: STATE_VERSION,
  empty: (): ControllerStateData => ({
    version: STATE_VERSION,
    volumes: {},
    snapshots: {},
    groupSnapshots: {},
    knownNodes: [],
  }),
  validate: validateControllerState,
  collections: ["volumes", "snapshots", "groupSnapshots"] as const,
  indexes: {
    volumes: (volume: VolumeRecord) => volume.name,
    // Group members carry their group's name space: only lone snapshots are found by name.
    snapshots: (snapshot: SnapshotRecord) =>
      snapshot.groupSnapshotId === undefined ? snapshot.name : undefined,
    groupSnapshots: (group: GroupSnapshotRecord) => group.name,
  },
};

export function controllerStore(stateDir: string): ControllerStore {
  return new JournalStore<ControllerStateData>({
    file: join(stateDir, "controller.json"),
    ...CONTROLLER_OPTIONS,
  });
}

export function nodeStore(stateDir: string, nodeId: string): NodeStore {
  return new JournalStore<NodeStateData>({
    file: join(stateDir, `node-${nodeFileName(nodeId)}.json`),
    version: STATE_VERSION,
    empty: () => ({ version: STATE_VERSION, ephemeral: {} }),
    validate: validateNodeState,
    collections: ["ephemeral"],
  });
}

/** Read access to volumes for the node service: in-memory when co-located, else the files. */
export interface VolumeSource {
  volume(id: string): Promise<VolumeRecord | undefined>;
}

export function memoryVolumeSource(store: ControllerStore): VolumeSource {
  return { volume: (id) => Promise.resolve(liveVolume(store.current, id)) };
}

export function fileVolumeSource(stateDir: string): VolumeSource {
  return {
    async volume(id) {
      const { doc } = await readJournaled({ file: join(stateDir, "controller.json"), ...CONTROLLER_OPTIONS });
      return liveVolume(doc, id);
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

// Name lookups go through the store's index: a create costs the same with 10 or 10,000 volumes.
export function volumeByName(store: ControllerStore, name: string): VolumeRecord | undefined {
  return store.lookup("volumes", name);
}

export function snapshotByName(store: ControllerStore, name: string): SnapshotRecord | undefined {
  return store.lookup("snapshots", name);
}

export function groupSnapshotByName(store: ControllerStore, name: string): GroupSnapshotRecord | undefined {
  return store.lookup("groupSnapshots", name);
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
