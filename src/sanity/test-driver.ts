// A small in-memory CSI driver for the suite's own tests (catalogue.test.ts; not exported from
// index.ts): Identity, Controller (volumes, snapshots, publish, expansion, lists with offset
// tokens) and Node (publish without mounting, volume stats, expansion) on a real socket. It is
// correct for the test groups it serves unless a deliberate bug is switched on, so a test of the
// suite can show that exactly the sanity tests for that bug fail.
//
// Choices the spec leaves open (DriverChoice) can be switched on too, to show the suite accepts
// them.
//
// Invariants: state lives in memory only; node publish creates and removes just the target
// directory (no mounts); block capabilities are refused with INVALID_ARGUMENT.

import { mkdir, rmdir, stat } from "node:fs/promises";
import { CsiError, GrpcStatus, serveCsi } from "../csi/index.ts";
import type { CsiServer, VolumeCapability } from "../csi/index.ts";

/** Deliberate spec violations the driver can be told to commit. */
export type DriverBug =
  /** A second identical NodePublishVolume answers ALREADY_EXISTS. */
  | "publish-not-idempotent"
  /** The page after the first of a paged ListVolumes starts with the first page's last entry. */
  | "list-volumes-repeats"
  /** ListSnapshots returns every snapshot whatever source_volume_id says. */
  | "list-snapshots-ignores-source"
  /** NodeGetVolumeStats reports used one byte above total. */
  | "stats-used-over-total"
  /** DeleteVolume of an unknown id answers NOT_FOUND. */
  | "delete-unknown-not-found"
  /** ControllerExpandVolume expands a published volume though expansion is OFFLINE. */
  | "expands-online"
  /** NodeGetVolumeStats/NodeExpandVolume answer NOT_FOUND only for a missing path. */
  | "node-checks-path-only"
  /** A SINGLE_NODE_SINGLE_WRITER volume is published at a second target path (csi-test#602). */
  | "single-writer-published-twice";

/**
 * Choices the spec leaves to the driver, which the suite must accept: each differs from the
 * driver's default behaviour, and a run with it switched on must still pass.
 */
export type DriverChoice =
  /**
   * Node RPCs look the volume up before checking any other field, so an unknown volume is
   * NOT_FOUND even when a path is missing too (upstream hostpath's order; the spec orders none).
   */
  | "volume-checked-first"
  /** VOLUME_CONDITION (controller and node) offered, and every volume reported abnormal. */
  | "abnormal-volumes";

export interface TestDriverOptions {
  endpoint: string;
  /** The plugin's VolumeExpansion type. Default ONLINE. */
  expansion?: "ONLINE" | "OFFLINE";
  /** Default none. */
  bugs?: readonly DriverBug[];
  /** Default none. */
  choices?: readonly DriverChoice[];
}

interface FakeVolume {
  name: string;
  capacity: number;
  /** Node ids the volume is controller-published to. */
  nodes: Set<string>;
  /** Target paths it is node-published at, with the readonly flag. */
  targets: Map<string, boolean>;
}

interface FakeSnapshot {
  name: string;
  sourceVolumeId: string;
}

const NODE_ID = "test-node";
const { INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS, ABORTED, FAILED_PRECONDITION } = GrpcStatus;

function fail(code: number, message: string): never {
  throw new CsiError(code, message);
}

function require(value: string, field: string): void {
  if (value === "") fail(INVALID_ARGUMENT, `${field} is required`);
}

function checkCapability(capability: VolumeCapability | null, field: string): void {
  if (!capability?.accessMode) fail(INVALID_ARGUMENT, `${field}: access mode is required`);
  if (capability.block) fail(INVALID_ARGUMENT, `${field}: block volumes are not offered`);
  if (!capability.mount) fail(INVALID_ARGUMENT, `${field}: access type is required`);
}

/**
 * One page of `items` from an offset token ("" = start). Tokens are decimal offsets, optionally
 * marked "r" (issued by the repeat bug); anything else was never issued (ABORTED). `repeatOnce`
 * makes the first page's next_token point at its own last entry, so one entry is listed twice.
 */
function page<T>(
  items: readonly T[],
  options: { token: string; maxEntries: number; what: string; repeatOnce: boolean },
): { entries: T[]; nextToken: string } {
  const { token, maxEntries, what } = options;
  if (maxEntries < 0) fail(INVALID_ARGUMENT, `${what}: max_entries must not be negative`);
  if (token !== "" && !/^r?\d+$/.test(token))
    fail(ABORTED, `${what}: starting_token ${token} was never issued`);
  const start = token === "" ? 0 : Number(token.replace("r", ""));
  const end = maxEntries === 0 ? items.length : Math.min(items.length, start + maxEntries);
  const nextToken =
    end >= items.length ? "" : options.repeatOnce && token === "" ? `r${end - 1}` : String(end);
  return { entries: items.slice(start, end), nextToken };
}

/** Serves the driver on `options.endpoint`; close the returned server to stop it. */
export async function serveTestDriver(options: TestDriverOptions): Promise<CsiServer> {
  const bugs = new Set(options.bugs ?? []);
  const choices = new Set(options.choices ?? []);
  const abnormal = choices.has("abnormal-volumes");
  const condition = { abnormal: true, message: "every volume of this driver is degraded" };
  /** With volume-checked-first, an unknown (non-empty) id is NOT_FOUND before other fields. */
  const volumeFirst = (volumeId: string): void => {
    if (choices.has("volume-checked-first") && volumeId !== "") volume(volumeId);
  };
  const volumes = new Map<string, FakeVolume>();
  const snapshots = new Map<string, FakeSnapshot>();
  let next = 0;
  const volume = (volumeId: string): FakeVolume =>
    volumes.get(volumeId) ?? fail(NOT_FOUND, `volume ${volumeId} does not exist`);
  /** The volume published at `path` (NOT_FOUND otherwise), honouring the path-only bug. */
  const publishedAt = async (volumeId: string, path: string): Promise<FakeVolume | undefined> => {
    if (bugs.has("node-checks-path-only")) {
      await stat(path).catch(() => fail(NOT_FOUND, `${path} does not exist`));
      return volumes.get(volumeId);
    }
    const found = volume(volumeId);
    if (!found.targets.has(path)) fail(NOT_FOUND, `volume ${volumeId} is not published at ${path}`);
    return found;
  };

  return serveCsi({
    endpoint: options.endpoint,
    identity: {
      getPluginInfo: async () => ({ name: "test.csi.csikit.io", vendorVersion: "1" }),
      getPluginCapabilities: async () => ({
        capabilities: [
          { service: { type: "CONTROLLER_SERVICE" } },
          { volumeExpansion: { type: options.expansion ?? "ONLINE" } },
        ],
      }),
      probe: async () => ({ ready: { value: true } }),
    },
    controller: {
      controllerGetCapabilities: async () => ({
        capabilities: (
          [
            "CREATE_DELETE_VOLUME",
            "LIST_VOLUMES",
            "CREATE_DELETE_SNAPSHOT",
            "LIST_SNAPSHOTS",
            "PUBLISH_UNPUBLISH_VOLUME",
            "EXPAND_VOLUME",
            ...(abnormal ? (["VOLUME_CONDITION"] as const) : []),
          ] as const
        ).map((type) => ({ rpc: { type } })),
      }),
      createVolume: async (request) => {
        require(request.name, "name");
        if (request.volumeCapabilities.length === 0)
          fail(INVALID_ARGUMENT, "volume_capabilities is required");
        for (const capability of request.volumeCapabilities)
          checkCapability(capability, "volume_capabilities");
        const capacity = Number(request.capacityRange?.requiredBytes ?? "0") || 1024 * 1024;
        for (const [volumeId, existing] of volumes) {
          if (existing.name !== request.name) continue;
          if (existing.capacity !== capacity) fail(ALREADY_EXISTS, `volume ${request.name} has another size`);
          return { volume: { volumeId, capacityBytes: String(capacity) } };
        }
        const volumeId = `vol-${++next}`;
        volumes.set(volumeId, { name: request.name, capacity, nodes: new Set(), targets: new Map() });
        return { volume: { volumeId, capacityBytes: String(capacity) } };
      },
      deleteVolume: async (request) => {
        require(request.volumeId, "volume_id");
        // In use on the node: refused, so a publish the suite failed to undo shows in its cleanup.
        const targets = volumes.get(request.volumeId)?.targets.size ?? 0;
        if (targets > 0)
          fail(FAILED_PRECONDITION, `volume ${request.volumeId} is published at ${targets} targets`);
        if (!volumes.delete(request.volumeId) && bugs.has("delete-unknown-not-found")) {
          fail(NOT_FOUND, `volume ${request.volumeId} does not exist`);
        }
        return {};
      },
      listVolumes: async (request) => {
        const all = [...volumes].map(([volumeId, v]) => ({
          volume: { volumeId, capacityBytes: String(v.capacity) },
          ...(abnormal ? { status: { publishedNodeIds: [...v.nodes], volumeCondition: condition } } : {}),
        }));
        return page(all, {
          token: request.startingToken,
          maxEntries: request.maxEntries,
          what: "ListVolumes",
          repeatOnce: bugs.has("list-volumes-repeats"),
        });
      },
      controllerPublishVolume: async (request) => {
        require(request.volumeId, "volume_id");
        require(request.nodeId, "node_id");
        checkCapability(request.volumeCapability, "volume_capability");
        const found = volume(request.volumeId);
        if (request.nodeId !== NODE_ID) fail(NOT_FOUND, `node ${request.nodeId} does not exist`);
        found.nodes.add(request.nodeId);
        return { publishContext: {} };
      },
      controllerUnpublishVolume: async (request) => {
        require(request.volumeId, "volume_id");
        const found = volumes.get(request.volumeId);
        if (request.nodeId === "") found?.nodes.clear();
        else found?.nodes.delete(request.nodeId);
        return {};
      },
      controllerExpandVolume: async (request) => {
        require(request.volumeId, "volume_id");
        if (!request.capacityRange) fail(INVALID_ARGUMENT, "capacity_range is required");
        const found = volume(request.volumeId);
        const online = options.expansion !== "OFFLINE" || bugs.has("expands-online");
        if (!online && found.nodes.size > 0) {
          fail(FAILED_PRECONDITION, `volume ${request.volumeId} is published; expansion is OFFLINE only`);
        }
        found.capacity = Math.max(found.capacity, Number(request.capacityRange.requiredBytes));
        return { capacityBytes: String(found.capacity), nodeExpansionRequired: false };
      },
      createSnapshot: async (request) => {
        require(request.name, "name");
        require(request.sourceVolumeId, "source_volume_id");
        volume(request.sourceVolumeId);
        for (const [snapshotId, existing] of snapshots) {
          if (existing.name !== request.name) continue;
          if (existing.sourceVolumeId !== request.sourceVolumeId) {
            fail(ALREADY_EXISTS, `snapshot ${request.name} has another source`);
          }
          return { snapshot: { snapshotId, sourceVolumeId: request.sourceVolumeId, readyToUse: true } };
        }
        const snapshotId = `snap-${++next}`;
        snapshots.set(snapshotId, { name: request.name, sourceVolumeId: request.sourceVolumeId });
        return { snapshot: { snapshotId, sourceVolumeId: request.sourceVolumeId, readyToUse: true } };
      },
      deleteSnapshot: async (request) => {
        require(request.snapshotId, "snapshot_id");
        snapshots.delete(request.snapshotId);
        return {};
      },
      listSnapshots: async (request) => {
        const source = bugs.has("list-snapshots-ignores-source") ? "" : request.sourceVolumeId;
        const all = [...snapshots]
          .filter(
            ([id, s]) =>
              (request.snapshotId === "" || id === request.snapshotId) &&
              (source === "" || s.sourceVolumeId === source),
          )
          .map(([snapshotId, s]) => ({
            snapshot: { snapshotId, sourceVolumeId: s.sourceVolumeId, readyToUse: true },
          }));
        return page(all, {
          token: request.startingToken,
          maxEntries: request.maxEntries,
          what: "ListSnapshots",
          repeatOnce: false,
        });
      },
    },
    node: {
      nodeGetCapabilities: async () => ({
        capabilities: [
          { rpc: { type: "GET_VOLUME_STATS" } },
          { rpc: { type: "EXPAND_VOLUME" } },
          { rpc: { type: "SINGLE_NODE_MULTI_WRITER" } },
          ...(abnormal ? [{ rpc: { type: "VOLUME_CONDITION" as const } }] : []),
        ],
      }),
      nodeGetInfo: async () => ({ nodeId: NODE_ID }),
      nodePublishVolume: async (request) => {
        require(request.volumeId, "volume_id");
        require(request.targetPath, "target_path");
        checkCapability(request.volumeCapability, "volume_capability");
        const found = volume(request.volumeId);
        const readonly = found.targets.get(request.targetPath);
        if (readonly !== undefined) {
          if (readonly !== request.readonly || bugs.has("publish-not-idempotent")) {
            fail(ALREADY_EXISTS, `volume ${request.volumeId} is already published at ${request.targetPath}`);
          }
          return {};
        }
        const single = request.volumeCapability?.accessMode?.mode === "SINGLE_NODE_SINGLE_WRITER";
        if (single && found.targets.size > 0 && !bugs.has("single-writer-published-twice"))
          fail(FAILED_PRECONDITION, `volume ${request.volumeId} is a single writer published elsewhere`);
        await mkdir(request.targetPath, { recursive: false }).catch(() => undefined);
        found.targets.set(request.targetPath, request.readonly);
        return {};
      },
      nodeUnpublishVolume: async (request) => {
        volumeFirst(request.volumeId);
        require(request.volumeId, "volume_id");
        require(request.targetPath, "target_path");
        volumes.get(request.volumeId)?.targets.delete(request.targetPath);
        await rmdir(request.targetPath).catch(() => undefined);
        return {};
      },
      nodeGetVolumeStats: async (request) => {
        volumeFirst(request.volumeId);
        require(request.volumeId, "volume_id");
        require(request.volumePath, "volume_path");
        const total = (await publishedAt(request.volumeId, request.volumePath))?.capacity ?? 1024 * 1024;
        const used = bugs.has("stats-used-over-total") ? total + 1 : 0;
        return {
          usage: [
            {
              unit: "BYTES",
              total: String(total),
              used: String(used),
              available: String(Math.max(0, total - used)),
            },
          ],
          ...(abnormal ? { volumeCondition: condition } : {}),
        };
      },
      nodeExpandVolume: async (request) => {
        volumeFirst(request.volumeId);
        require(request.volumeId, "volume_id");
        require(request.volumePath, "volume_path");
        const found = await publishedAt(request.volumeId, request.volumePath);
        return { capacityBytes: String(found?.capacity ?? 0) };
      },
    },
  });
}
