// The Node service: stage/publish with real bind mounts, inline ephemeral volumes, stats,
// expansion and node info.
//
// Filesystem volumes: data dir --bind--> staging_target_path --bind--> target_path (the
// second one remounted read-only when asked). Block volumes: the backing file is attached to
// a loop device at stage and the device is bind-mounted onto the file
// <staging_target_path>/<volume_id>; publish bind-mounts the same device onto a file at
// target_path. Idempotency comes from /proc/self/mountinfo (node-mounts.ts), so it survives
// restarts: "already mounted with the same data and flags" is success, anything else at the
// path is ALREADY_EXISTS. Paths from the CO are validated (paths.ts) before any use; the only
// things created or removed outside the state dir are the given path itself (never parents).
// Where the process may not mount, these calls answer FAILED_PRECONDITION saying why.

import type {
  NodeExpandVolumeRequest,
  NodeExpandVolumeResponseInput,
  NodeGetVolumeStatsRequest,
  NodeGetVolumeStatsResponseInput,
  NodePublishVolumeResponseInput,
  NodeStageVolumeRequest,
  NodeStageVolumeResponseInput,
  NodeUnpublishVolumeRequest,
  NodeUnpublishVolumeResponseInput,
  NodeUnstageVolumeRequest,
  NodeUnstageVolumeResponseInput,
} from "../../csi/index.ts";
import { constants } from "node:fs";
import { lstat, mkdir, open, readdir, rm, rmdir, statfs, unlink } from "node:fs/promises";
import { dirname, join } from "node:path";
import { isErrno, errorMessage } from "../../base/index.ts";
import {
  CsiError,
  GrpcStatus,
  type NodeService,
  type NodeServiceCapability_RPC_Type,
  type NodePublishVolumeRequest,
  type VolumeCapability_AccessMode_Mode,
} from "../../csi/index.ts";
import { EPHEMERAL_CONTEXT_KEY, type HostpathConfig } from "./driver.ts";
import { dataProblem, type DataLayout } from "./data.ts";
import { ephemeralDirName, isVolumeId } from "./ids.ts";

import { isLoopBind, mountAtPath, mountStateOf, otherMountsOf, type MountState } from "./node-mounts.ts";
import type { MountEntry } from "./mountinfo.ts";
import { mountsReadOnly, publishesAtOneTarget } from "./access-modes.ts";
import { pathProblem, type PathRules } from "./paths.ts";
import { Locks, capabilityAccessType, invalid, required, sizeRange } from "./requests.ts";
import type { AccessType, NodeStore, VolumeSource } from "./state.ts";
import { attachLoop, bindMountOnto, detachLoops, loopDevicesOf, refreshLoops, unmount } from "./system.ts";
import { openBeneath, openFinal, type Beneath } from "./beneath.ts";

export interface NodeContext {
  config: HostpathConfig;
  layout: DataLayout;
  volumes: VolumeSource;
  store: NodeStore;
  locks: Locks;
  /** --allowed-path-roots, each as given and symlink-resolved (paths.ts resolveRoots). */
  allowedRoots: readonly string[];
  /** Why this process may not mount, or undefined when it may (probed once, cached). */
  mountProblem: () => Promise<string | undefined>;
}

/** The node capabilities this driver implements (NodeGetCapabilities lists them). */
export function nodeCapabilities(config: HostpathConfig): NodeServiceCapability_RPC_Type[] {
  const list: NodeServiceCapability_RPC_Type[] = [
    "STAGE_UNSTAGE_VOLUME",
    "GET_VOLUME_STATS",
    "VOLUME_CONDITION",
    "SINGLE_NODE_MULTI_WRITER",
  ];
  if (config.nodeExpansion) list.push("EXPAND_VOLUME");
  return list;
}

interface NodeVolume {
  id: string;
  accessType: AccessType;
  dataPath: string;
  sizeBytes: number;
  ephemeral: boolean;
}

function pathRules(context: NodeContext): PathRules {
  return { stateDir: context.config.stateDir, allowedRoots: context.allowedRoots };
}

function checkPath(context: NodeContext, value: string, field: string): string {
  required(value, field);
  const problem = pathProblem(value, pathRules(context));
  if (problem) throw invalid(`${field} ${JSON.stringify(value)} ${problem}`);
  return value;
}

/**
 * A path the CO names to ask about a volume it says is there (NodeGetVolumeStats,
 * NodeExpandVolume): nothing is created or mounted at it, so a path no volume can be at —
 * relative, outside the allowed roots — means "the volume is not there": NOT_FOUND, as the
 * spec's table says and csi-sanity asks (`some/path`, `/path/does/not/exist`).
 */
function pathOfVolume(context: NodeContext, volume: NodeVolume, value: string, field: string): string {
  const problem = pathProblem(value, pathRules(context));
  if (problem)
    throw new CsiError(
      GrpcStatus.NOT_FOUND,
      `volume ${volume.id} is not at ${field} ${JSON.stringify(value)}: no volume can be, the path ${problem}`,
    );
  return value;
}

/**
 * checkPath, then resolve-beneath (beneath.ts): where the path really is must also lie inside
 * the roots. The caller closes the result.
 */
async function resolvePath(context: NodeContext, value: string, field: string): Promise<Beneath> {
  checkPath(context, value, field);
  const result = await openBeneath(value, {
    stateDir: context.config.stateDir,
    allowedRoots: context.allowedRoots,
  });
  if (typeof result === "string") throw invalid(`${field} ${JSON.stringify(value)} ${result}`);
  return result;
}

/** Runs `body` with `value` resolved beneath the roots; the held directory is closed after. */
async function withPath<T>(
  context: NodeContext,
  value: string,
  field: string,
  body: (path: Beneath) => Promise<T>,
): Promise<T> {
  const path = await resolvePath(context, value, field);
  try {
    return await body(path);
  } finally {
    await path.close();
  }
}

/** Bind-mounts onto exactly the checked final component of `target` (see system.ts). */
async function mountOnto(source: string | Beneath, target: Beneath, readonly: boolean): Promise<void> {
  const targetHandle = await openFinal(target);
  const sourceHandle =
    typeof source === "string"
      ? source
      : await openFinal(source).catch(async (error: unknown) => {
          await targetHandle.close();
          throw error;
        });
  try {
    await bindMountOnto(sourceHandle, targetHandle, { readonly, reopen: () => openFinal(target) });
  } finally {
    await targetHandle.close();
    if (typeof sourceHandle !== "string") await sourceHandle.close();
  }
}

async function requireMountPrivilege(context: NodeContext): Promise<void> {
  const problem = await context.mountProblem();
  if (problem)
    throw new CsiError(GrpcStatus.FAILED_PRECONDITION, `this node plugin cannot mount: ${problem}`);
}

async function mayMount(context: NodeContext): Promise<boolean> {
  return (await context.mountProblem()) === undefined;
}

async function findVolume(context: NodeContext, id: string): Promise<NodeVolume> {
  const ephemeral = Object.hasOwn(context.store.current.ephemeral, id)
    ? context.store.current.ephemeral[id]
    : undefined;
  if (ephemeral && ephemeral.phase !== "deleting")
    return {
      id,
      accessType: "mount",
      dataPath: context.layout.ephemeralPath(ephemeral.dirName),
      sizeBytes: 0,
      ephemeral: true,
    };
  const volume = isVolumeId(id) ? await context.volumes.volume(id) : undefined;
  if (!volume) throw new CsiError(GrpcStatus.NOT_FOUND, `volume ${JSON.stringify(id)} does not exist`);
  return {
    id,
    accessType: volume.accessType,
    dataPath: context.layout.volumePath(id, volume.accessType),
    sizeBytes: volume.sizeBytes,
    ephemeral: false,
  };
}

/** Creates `path` as a directory (not its parents); an existing directory is fine. */
async function ensureDirectory(path: Beneath, field: string): Promise<void> {
  if (path.missing) throw invalid(`the parent directory of ${field} ${path.real} does not exist`);
  try {
    await mkdir(path.at, { mode: 0o750 });
  } catch (error) {
    if (isErrno(error, "EEXIST")) {
      if ((await lstat(path.at)).isDirectory()) return;
      throw invalid(`${field} ${path.real} exists and is not a directory`);
    }
    throw error;
  }
}

/** Creates `path` as an empty file (not its parents) to bind a device onto; an empty dir is replaced. */
async function ensureFile(path: Beneath, field: string): Promise<void> {
  if (path.missing) throw invalid(`the parent directory of ${field} ${path.real} does not exist`);
  try {
    const info = await lstat(path.at);
    if (info.isFile()) return;
    if (info.isDirectory() && (await readdir(path.at)).length === 0) await rmdir(path.at);
    else throw invalid(`${field} ${path.real} exists and is neither a file nor an empty directory`);
  } catch (error) {
    if (!isErrno(error, "ENOENT")) throw error;
  }
  // O_NOFOLLOW: a symlink put in its place meanwhile is an error, never followed.
  const handle = await open(path.at, constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW, 0o640);
  await handle.close();
}

/** Removes the file or empty directory the driver created at a target; content is never deleted. */
async function removeMountPoint(context: NodeContext, path: Beneath): Promise<void> {
  if (path.missing) return;
  try {
    const info = await lstat(path.at);
    if (info.isDirectory()) await rmdir(path.at);
    else if (info.isFile() && info.size === 0) await unlink(path.at);
  } catch (error) {
    if (isErrno(error, "ENOENT")) return;
    if (isErrno(error, "ENOTEMPTY") || isErrno(error, "EBUSY")) {
      context.config.logger.warn("left a mount point in place", {
        path: path.real,
        reason: errorMessage(error),
      });
      return;
    }
    throw error;
  }
}

/** Unmounts everything stacked at `path`, bounded so a stuck mount cannot loop forever. */
async function unmountAll(path: string): Promise<void> {
  for (let i = 0; i < 8 && (await mountAtPath(path)); i++) await unmount(path);
}

function conflict(field: string, path: string, why: string): CsiError {
  return new CsiError(GrpcStatus.ALREADY_EXISTS, `${field} ${path} already has ${why}`);
}

async function stageVolume(context: NodeContext, volume: NodeVolume, staging: Beneath): Promise<void> {
  if (volume.accessType === "mount") {
    const state = await mountStateOf(staging.real, volume.dataPath);
    if (state.kind === "ours") return;
    if (state.kind === "other") throw conflict("staging_target_path", staging.real, "another mount");
    await ensureDirectory(staging, "staging_target_path");
    await mountOnto(volume.dataPath, staging, false);
    return;
  }
  await ensureDirectory(staging, "staging_target_path");
  const device = await attachLoop(volume.dataPath);
  const file = await staging.child(volume.id);
  try {
    const state = await mountStateOf(file.real, device);
    if (state.kind === "ours") return;
    if (state.kind === "other") throw conflict("staging_target_path", file.real, "another mount");
    await ensureFile(file, "staging_target_path");
    await mountOnto(device, file, false);
  } finally {
    await file.close();
  }
}

async function unstageVolume(context: NodeContext, volume: NodeVolume, staging: Beneath): Promise<void> {
  if (volume.accessType === "mount") {
    const state = await mountStateOf(staging.real, volume.dataPath);
    if (state.kind === "other")
      throw new CsiError(
        GrpcStatus.FAILED_PRECONDITION,
        `staging_target_path ${staging.real} holds a mount of other data; not touching it`,
      );
    if (state.kind === "ours") await unmountAll(staging.real);
    return;
  }
  const file = await staging.child(volume.id);
  try {
    await unmountAll(file.real);
    await removeMountPoint(context, file);
  } finally {
    await file.close();
  }
  await detachLoops(volume.dataPath);
}

/** How a NodePublishVolume asks to publish: its access mode and readonly flag. */
interface PublishMode {
  mode: VolumeCapability_AccessMode_Mode;
  readonly: boolean;
}

/**
 * FAILED_PRECONDITION when the access mode allows one target path per node (access-modes.ts)
 * and this node already has the volume mounted at another one. `identity` is the volume's
 * staged mount, whose data every publish of it shows; `except` the staging and target paths.
 */
async function requireSoleTarget(
  context: NodeContext,
  volume: NodeVolume,
  request: PublishMode & { identity: MountEntry; except: readonly string[] },
): Promise<void> {
  if (!publishesAtOneTarget(request.mode)) return;
  const elsewhere = await otherMountsOf(request.identity, {
    roots: context.allowedRoots,
    except: request.except,
  });
  if (elsewhere.length > 0)
    throw new CsiError(
      GrpcStatus.FAILED_PRECONDITION,
      `volume ${volume.id} has access mode ${request.mode}, which allows one target path on a node, and is already published at ${elsewhere.join(", ")}: unpublish it there first`,
    );
}

async function publishVolume(
  context: NodeContext,
  volume: NodeVolume,
  request: PublishMode,
  staging: Beneath,
  target: Beneath,
): Promise<void> {
  const readonly = mountsReadOnly(request.mode, request.readonly);
  if (volume.accessType === "mount") {
    const staged = await mountStateOf(staging.real, volume.dataPath);
    if (staged.kind !== "ours")
      throw new CsiError(
        GrpcStatus.FAILED_PRECONDITION,
        `volume ${volume.id} is not staged at staging_target_path ${staging.real}`,
      );
    const state = await mountStateOf(target.real, volume.dataPath);
    if (state.kind === "ours") {
      if (state.entry.options.includes("ro") !== readonly)
        throw conflict("target_path", target.real, `this volume mounted with readonly=${!readonly}`);
      return;
    }
    if (state.kind === "other") throw conflict("target_path", target.real, "another mount");
    await requireSoleTarget(context, volume, {
      ...request,
      identity: staged.entry,
      except: [staging.real, target.real],
    });
    await ensureDirectory(target, "target_path");
    await mountOnto(staging, target, readonly);
    return;
  }
  const stagedFile = await staging.child(volume.id);
  try {
    await publishBlock(context, volume, request, stagedFile, target);
  } finally {
    await stagedFile.close();
  }
}

async function publishBlock(
  context: NodeContext,
  volume: NodeVolume,
  request: PublishMode,
  stagedFile: Beneath,
  target: Beneath,
): Promise<void> {
  const readonly = mountsReadOnly(request.mode, request.readonly);
  const stagedMount = await mountAtPath(stagedFile.real);
  const device = stagedMount ? `/dev/${stagedMount.root.slice(1)}` : undefined;
  if (!stagedMount || !device || !isLoopBind(stagedMount, device) || !/^\/dev\/loop\d+$/.test(device))
    throw new CsiError(
      GrpcStatus.FAILED_PRECONDITION,
      `volume ${volume.id} is not staged at staging_target_path ${dirname(stagedFile.real)}`,
    );
  const state = await mountStateOf(target.real, device);
  if (state.kind === "ours") {
    if (state.entry.options.includes("ro") !== readonly)
      throw conflict("target_path", target.real, `this volume mounted with readonly=${!readonly}`);
    return;
  }
  if (state.kind === "other") throw conflict("target_path", target.real, "another mount");
  await requireSoleTarget(context, volume, {
    ...request,
    identity: stagedMount,
    except: [stagedFile.real, target.real],
  });
  await ensureFile(target, "target_path");
  await mountOnto(device, target, readonly);
}

/**
 * What `path` shows compared with this volume's data: for a filesystem volume a bind of its
 * directory, for a block volume a bind of a loop device backed by its file.
 */
async function volumeMountAt(volume: NodeVolume, path: string): Promise<MountState> {
  if (volume.accessType === "mount") return mountStateOf(path, volume.dataPath);
  const at = await mountAtPath(path);
  if (!at) return { kind: "none" };
  for (const device of await loopDevicesOf(volume.dataPath)) {
    const state = await mountStateOf(path, device);
    if (state.kind === "ours") return state;
  }
  return { kind: "other", entry: at };
}

/**
 * Unmounts this volume's mounts stacked at `target` (bounded) and removes the mount point only
 * once nothing is mounted there. A mount of other data on top is refused untouched.
 */
async function unpublishVolume(context: NodeContext, volume: NodeVolume, path: Beneath): Promise<void> {
  const target = path.real;
  const state = await volumeMountAt(volume, target);
  if (state.kind === "other")
    throw new CsiError(
      GrpcStatus.FAILED_PRECONDITION,
      `target_path ${target} holds a mount of other data (${state.entry.fsType} ${state.entry.source}${state.entry.root}), not of volume ${volume.id}; not touching it`,
    );
  for (let i = 0; i < 8 && (await volumeMountAt(volume, target)).kind === "ours"; i++) await unmount(target);
  if (await mountAtPath(target)) {
    context.config.logger.warn("left a mount of other data under the unpublished target in place", {
      path: target,
    });
    return;
  }
  await removeMountPoint(context, path);
}

function isEphemeralRequest(context: NodeContext, request: NodePublishVolumeRequest): boolean {
  const flag = request.volumeContext[EPHEMERAL_CONTEXT_KEY];
  return flag === "true" || (flag === undefined && context.config.ephemeral);
}

async function publishEphemeral(
  context: NodeContext,
  request: NodePublishVolumeRequest,
  path: Beneath,
): Promise<void> {
  const id = request.volumeId;
  const target = request.targetPath;
  if (capabilityAccessType(request.volumeCapability, "volume_capability") !== "mount")
    throw invalid("inline ephemeral volumes support only mount access");
  const existing = context.store.current.ephemeral[id];
  if (existing && existing.targetPath !== target)
    throw conflict("volume", id, `been published as an inline ephemeral volume at ${existing.targetPath}`);
  const dirName = ephemeralDirName(id);
  if (!existing)
    await context.store.update((draft) => {
      draft.ephemeral[id] = { volumeId: id, dirName, targetPath: target, phase: "creating" };
    });
  const dataPath = context.layout.ephemeralPath(dirName);
  await mkdir(dataPath, { recursive: true, mode: 0o777 });
  const state = await mountStateOf(path.real, dataPath);
  if (state.kind === "other") throw conflict("target_path", path.real, "another mount");
  if (state.kind === "none") {
    await ensureDirectory(path, "target_path");
    await mountOnto(dataPath, path, request.readonly);
  }
  if (context.store.current.ephemeral[id]?.phase !== "ready")
    await context.store.update((draft) => {
      const record = draft.ephemeral[id];
      if (record) record.phase = "ready";
    });
}

/** Unpublishes and deletes an inline ephemeral volume (re-entrant: intent recorded first). */
export async function finishEphemeralDelete(context: NodeContext, id: string): Promise<void> {
  const record = context.store.current.ephemeral[id];
  if (!record) return;
  if (record.phase !== "deleting")
    await context.store.update((draft) => {
      const r = draft.ephemeral[id];
      if (r) r.phase = "deleting";
    });
  const dataPath = context.layout.ephemeralPath(record.dirName);
  await withPath(context, record.targetPath, "target_path", async (path) => {
    const state = await mountStateOf(path.real, dataPath).catch(() => ({ kind: "none" as const }));
    if (state.kind === "ours") await unmountAll(path.real);
    if (state.kind !== "other") await removeMountPoint(context, path);
  });
  await rm(dataPath, { recursive: true, force: true });
  await context.store.update((draft) => {
    delete draft.ephemeral[id];
  });
}

async function usageOf(
  path: string,
): Promise<Array<{ unit: "BYTES" | "INODES"; total: string; available: string; used: string }>> {
  const fs = await statfs(path, { bigint: true });
  const totalBytes = fs.blocks * fs.bsize;
  const availableBytes = fs.bavail * fs.bsize;
  const usedBytes = (fs.blocks - fs.bfree) * fs.bsize;
  return [
    { unit: "BYTES", total: String(totalBytes), available: String(availableBytes), used: String(usedBytes) },
    {
      unit: "INODES",
      total: String(fs.files),
      available: String(fs.ffree),
      used: String(fs.files - fs.ffree),
    },
  ];
}

async function requireExisting(path: string, field: string): Promise<void> {
  try {
    await lstat(path);
  } catch (error) {
    if (isErrno(error, "ENOENT")) throw new CsiError(GrpcStatus.NOT_FOUND, `${field} ${path} does not exist`);
    throw error;
  }
}

/** True when `path` is a mount of this volume's data (for block also: a staging dir holding one). */
async function isMountedAt(volume: NodeVolume, path: string): Promise<boolean> {
  if ((await volumeMountAt(volume, path)).kind === "ours") return true;
  return (
    volume.accessType === "block" && (await volumeMountAt(volume, join(path, volume.id))).kind === "ours"
  );
}

/**
 * NOT_FOUND unless one of `paths` (the first is the field the message names) shows this
 * volume: an existing path with other data must not answer with that data's numbers.
 */
async function requireVolumeAt(
  volume: NodeVolume,
  paths: ReadonlyArray<{ path: string; field: string }>,
): Promise<void> {
  const [first] = paths;
  if (!first) return;
  await requireExisting(first.path, first.field);
  for (const { path } of paths) if (await isMountedAt(volume, path)) return;
  throw new CsiError(
    GrpcStatus.NOT_FOUND,
    `volume ${volume.id} is not mounted at ${paths.map((p) => `${p.field} ${p.path}`).join(" or ")}`,
  );
}

async function nodeStageVolume(
  context: NodeContext,
  request: NodeStageVolumeRequest,
): Promise<NodeStageVolumeResponseInput> {
  const id = required(request.volumeId, "volume_id");
  const staging = checkPath(context, request.stagingTargetPath, "staging_target_path");
  const accessType = capabilityAccessType(request.volumeCapability, "volume_capability");
  const volume = await findVolume(context, id);
  if (volume.accessType !== accessType)
    throw new CsiError(
      GrpcStatus.FAILED_PRECONDITION,
      `volume ${id} is a ${volume.accessType} volume; ${accessType} access is not supported`,
    );
  await requireMountPrivilege(context);
  await context.locks.run([`node-volume:${id}`], () =>
    withPath(context, staging, "staging_target_path", (path) => stageVolume(context, volume, path)),
  );
  return {};
}

async function nodeUnstageVolume(
  context: NodeContext,
  request: NodeUnstageVolumeRequest,
): Promise<NodeUnstageVolumeResponseInput> {
  const id = required(request.volumeId, "volume_id");
  const staging = checkPath(context, request.stagingTargetPath, "staging_target_path");
  const volume = await findVolume(context, id);
  // Nothing staged there is success (spec: MUST answer OK), also for a plugin that could
  // never have mounted it; reading mountinfo needs no privilege.
  const unstage = (): Promise<void> =>
    withPath(context, staging, "staging_target_path", (path) => unstageVolume(context, volume, path));
  const stagedAt = await withPath(context, staging, "staging_target_path", async (path) => {
    if (volume.accessType === "mount") return path.real;
    const file = await path.child(volume.id);
    await file.close();
    return file.real;
  });
  if (!(await mountAtPath(stagedAt))) {
    if (volume.accessType === "block" && (await mayMount(context))) {
      await context.locks.run([`node-volume:${id}`], unstage);
    }
    return {};
  }
  await requireMountPrivilege(context);
  await context.locks.run([`node-volume:${id}`], unstage);
  return {};
}

async function nodePublishVolume(
  context: NodeContext,
  request: NodePublishVolumeRequest,
): Promise<NodePublishVolumeResponseInput> {
  const id = required(request.volumeId, "volume_id");
  checkPath(context, request.targetPath, "target_path");
  const accessType = capabilityAccessType(request.volumeCapability, "volume_capability");
  // capabilityAccessType refused a capability without a mode.
  const mode = request.volumeCapability?.accessMode?.mode ?? "UNKNOWN";
  if (isEphemeralRequest(context, request)) {
    await requireMountPrivilege(context);
    await context.locks.run([`node-volume:${id}`, `target:${request.targetPath}`], () =>
      withPath(context, request.targetPath, "target_path", (path) =>
        publishEphemeral(context, request, path),
      ),
    );
    return {};
  }
  if (request.stagingTargetPath === "")
    throw new CsiError(
      GrpcStatus.FAILED_PRECONDITION,
      "staging_target_path is required: this plugin has STAGE_UNSTAGE_VOLUME",
    );
  const volume = await findVolume(context, id);
  if (volume.accessType !== accessType)
    throw new CsiError(
      GrpcStatus.FAILED_PRECONDITION,
      `volume ${id} is a ${volume.accessType} volume; ${accessType} access is not supported`,
    );
  await requireMountPrivilege(context);
  checkPath(context, request.stagingTargetPath, "staging_target_path");
  await context.locks.run([`node-volume:${id}`, `target:${request.targetPath}`], () =>
    withPath(context, request.stagingTargetPath, "staging_target_path", (staging) =>
      withPath(context, request.targetPath, "target_path", (target) =>
        publishVolume(context, volume, { mode, readonly: request.readonly }, staging, target),
      ),
    ),
  );
  return {};
}

async function nodeUnpublishVolume(
  context: NodeContext,
  request: NodeUnpublishVolumeRequest,
): Promise<NodeUnpublishVolumeResponseInput> {
  const id = required(request.volumeId, "volume_id");
  const target = checkPath(context, request.targetPath, "target_path");
  const volume = await findVolume(context, id);
  if (volume.ephemeral) {
    await requireMountPrivilege(context);
    await context.locks.run([`node-volume:${id}`, `target:${target}`], () =>
      finishEphemeralDelete(context, id),
    );
    return {};
  }
  // Nothing published there is success (spec: MUST answer OK) without mount privilege.
  const published = await withPath(context, target, "target_path", async (path) => {
    if (await mountAtPath(path.real)) return true;
    await removeMountPoint(context, path);
    return false;
  });
  if (!published) return {};
  await requireMountPrivilege(context);
  await context.locks.run([`node-volume:${id}`, `target:${target}`], () =>
    withPath(context, target, "target_path", (path) => unpublishVolume(context, volume, path)),
  );
  return {};
}

async function nodeGetVolumeStats(
  context: NodeContext,
  request: NodeGetVolumeStatsRequest,
): Promise<NodeGetVolumeStatsResponseInput> {
  const id = required(request.volumeId, "volume_id");
  required(request.volumePath, "volume_path");
  // The volume first: an unknown id is NOT_FOUND whatever the path (csi-sanity asks with
  // volume_path "some/path" and expects NOT_FOUND).
  const volume = await findVolume(context, id);
  const path = pathOfVolume(context, volume, request.volumePath, "volume_path");
  const problem = await dataProblem(volume.dataPath, volume.accessType);
  // With its data gone the volume's mounts can no longer be matched against it: an existing
  // volume_path is enough to answer, abnormal (the health path's whole point).
  if (problem === undefined) await requireVolumeAt(volume, [{ path, field: "volume_path" }]);
  else await requireExisting(path, "volume_path");
  const usage =
    volume.accessType === "block"
      ? [{ unit: "BYTES" as const, total: String(volume.sizeBytes), available: "0", used: "0" }]
      : await usageOf(path);
  return {
    usage,
    volumeCondition: { abnormal: problem !== undefined, message: problem ?? "volume is healthy" },
  };
}

async function nodeExpandVolume(
  context: NodeContext,
  request: NodeExpandVolumeRequest,
): Promise<NodeExpandVolumeResponseInput> {
  const { config } = context;
  if (!config.nodeExpansion)
    throw new CsiError(
      GrpcStatus.UNIMPLEMENTED,
      "NodeExpandVolume is not offered (flags --enable-volume-expansion, --disable-node-expansion)",
    );
  const id = required(request.volumeId, "volume_id");
  required(request.volumePath, "volume_path");
  // Unknown id before the path checks, as NodeGetVolumeStats.
  const volume = await findVolume(context, id);
  const path = pathOfVolume(context, volume, request.volumePath, "volume_path");
  const candidates = [{ path, field: "volume_path" }];
  // The staging path is only a second place to find the volume: one no volume can be at adds none.
  if (
    request.stagingTargetPath !== "" &&
    pathProblem(request.stagingTargetPath, pathRules(context)) === undefined
  )
    candidates.push({ path: request.stagingTargetPath, field: "staging_target_path" });
  const range = sizeRange(request.capacityRange);
  if (request.volumeCapability) capabilityAccessType(request.volumeCapability, "volume_capability");
  await requireVolumeAt(volume, candidates);
  if (range.required > config.maxVolumeSizeNode)
    throw new CsiError(
      GrpcStatus.OUT_OF_RANGE,
      `capacity_range.required_bytes ${range.required} exceeds the maximum volume size on the node ${config.maxVolumeSizeNode} (flag --max-volume-size-node)`,
    );
  if (range.required > volume.sizeBytes)
    throw new CsiError(
      GrpcStatus.OUT_OF_RANGE,
      `capacity_range.required_bytes ${range.required} is larger than volume ${id} (${volume.sizeBytes} bytes): expand it with ControllerExpandVolume first`,
    );
  if (volume.accessType === "block") {
    await requireMountPrivilege(context);
    await context.locks.run([`node-volume:${id}`], () => refreshLoops(volume.dataPath));
  }
  return { capacityBytes: String(volume.sizeBytes) };
}

/** The service as grpc-js serves it: each RPC is one function above, readable and testable alone. */
export function nodeHandlers(context: NodeContext): Partial<NodeService> {
  const { config } = context;
  return {
    nodeGetCapabilities: () =>
      Promise.resolve({ capabilities: nodeCapabilities(config).map((type) => ({ rpc: { type } })) }),
    nodeGetInfo: () =>
      Promise.resolve({
        nodeId: config.nodeId,
        maxVolumesPerNode: String(config.reportedVolumeLimit()),
        accessibleTopology: config.topologyOf(config.nodeId)[0] ?? null,
      }),
    nodeStageVolume: (request) => nodeStageVolume(context, request),
    nodeUnstageVolume: (request) => nodeUnstageVolume(context, request),
    nodePublishVolume: (request) => nodePublishVolume(context, request),
    nodeUnpublishVolume: (request) => nodeUnpublishVolume(context, request),
    nodeGetVolumeStats: (request) => nodeGetVolumeStats(context, request),
    nodeExpandVolume: (request) => nodeExpandVolume(context, request),
  };
}
