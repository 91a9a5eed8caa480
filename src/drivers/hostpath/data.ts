// Where volume and snapshot data live under the state dir, and the disk steps that create,
// copy and remove it. Layout: volumes/<id> (directory, mount volumes) or volumes/<id>.img
// (sparse file, block volumes); snapshots/<id>.tar (mount) or snapshots/<id>.img (block);
// ephemeral/<eph-sha256> (inline ephemeral volumes). Names come only from validated IDs.
//
// Every step is re-entrant so a retry after a crash can finish it: data is built under a
// `.tmp` name, the partial leftover of an earlier attempt is removed first, and the finished
// data is renamed into place; removal tolerates data that is already gone.

import { mkdir, rename, rm, stat, truncate, open } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fsyncDir } from "./json-file.ts";
import { isErrno } from "../../base/index.ts";
import type { AccessType } from "./state.ts";
import { copyDirectoryContents, copySparseFile, tarDirectory, untarInto } from "./system.ts";

export class DataLayout {
  readonly stateDir: string;
  constructor(stateDir: string) {
    this.stateDir = stateDir;
  }
  get volumesDir(): string {
    return join(this.stateDir, "volumes");
  }
  get snapshotsDir(): string {
    return join(this.stateDir, "snapshots");
  }
  get ephemeralDir(): string {
    return join(this.stateDir, "ephemeral");
  }
  volumePath(id: string, accessType: AccessType): string {
    return join(this.volumesDir, accessType === "block" ? `${id}.img` : id);
  }
  snapshotPath(id: string, accessType: AccessType): string {
    return join(this.snapshotsDir, accessType === "block" ? `${id}.img` : `${id}.tar`);
  }
  ephemeralPath(dirName: string): string {
    return join(this.ephemeralDir, dirName);
  }
}

/** Where a new volume's content comes from. */
export type VolumeContent =
  { type: "empty" } | { type: "snapshot"; path: string } | { type: "volume"; path: string };

export interface CreateVolumeDataOptions {
  path: string;
  accessType: AccessType;
  sizeBytes: number;
  content: VolumeContent;
  signal?: AbortSignal;
  /**
   * false: the caller makes the rename durable (fsyncs the parent dir, e.g. batched with the
   * state change that records the volume ready). Default true.
   */
  syncParent?: boolean;
}

/** Builds a volume's data at `path` (re-entrant; see header). */
export async function createVolumeData(options: CreateVolumeDataOptions): Promise<void> {
  const { path, accessType, sizeBytes, content } = options;
  const temp = `${path}.tmp`;
  const run = options.signal ? { signal: options.signal } : {};
  if (accessType === "mount" && content.type === "empty") {
    // The common case costs two syscalls and a rename: the leftover and parent checks run
    // only when mkdir says they are needed.
    await freshDirectory(temp);
    await renameOver(temp, path);
    if (options.syncParent !== false) await fsyncDir(dirname(path));
    return;
  }
  await rm(temp, { recursive: true, force: true });
  await mkdir(join(path, ".."), { recursive: true, mode: 0o700 });
  if (accessType === "block") {
    if (content.type === "empty") {
      const handle = await open(temp, "w", 0o600);
      await handle.close();
    } else {
      await copySparseFile(content.path, temp, run);
    }
    // Grows the copy when the new volume is larger than its source; never shrinks.
    const current = (await stat(temp)).size;
    if (current < sizeBytes) await truncate(temp, sizeBytes);
  } else {
    await mkdir(temp, { mode: 0o777 });
    if (content.type === "snapshot") await untarInto(content.path, temp, run);
    else if (content.type === "volume") await copyDirectoryContents(content.path, temp, run);
  }
  await renameOver(temp, path);
  if (options.syncParent !== false) await fsyncDir(dirname(path));
}

/** Creates the empty directory `path`, replacing a crashed attempt's leftover, parents as needed. */
async function freshDirectory(path: string): Promise<void> {
  try {
    await mkdir(path, { mode: 0o777 });
  } catch (error) {
    if (isErrno(error, "EEXIST")) await rm(path, { recursive: true, force: true });
    else if (isErrno(error, "ENOENT")) await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    else throw error;
    await mkdir(path, { mode: 0o777 });
  }
}

/** Renames `from` to `to`, removing whatever an interrupted earlier attempt left at `to`. */
async function renameOver(from: string, to: string): Promise<void> {
  try {
    await rename(from, to);
  } catch (error) {
    if (!["ENOTEMPTY", "EEXIST", "EISDIR", "ENOTDIR"].some((code) => isErrno(error, code))) throw error;
    await rm(to, { recursive: true, force: true });
    await rename(from, to);
  }
}

/** Copies a volume's data into a snapshot file (tar for directories, sparse copy for block). */
export async function createSnapshotData(options: {
  volumePath: string;
  snapshotPath: string;
  accessType: AccessType;
  signal?: AbortSignal;
}): Promise<void> {
  const temp = `${options.snapshotPath}.tmp`;
  const run = options.signal ? { signal: options.signal } : {};
  await rm(temp, { force: true });
  await mkdir(join(options.snapshotPath, ".."), { recursive: true, mode: 0o700 });
  if (options.accessType === "block") await copySparseFile(options.volumePath, temp, run);
  else await tarDirectory(options.volumePath, temp, run);
  await rename(temp, options.snapshotPath);
  await fsyncDir(dirname(options.snapshotPath));
}

/** Removes a volume's or snapshot's data and any partial temp copy; missing data is fine. */
export async function removeData(path: string): Promise<void> {
  await rm(path, { recursive: true, force: true });
  await rm(`${path}.tmp`, { recursive: true, force: true });
}

/** Grows a block volume's backing file (never shrinks). */
export async function growFile(path: string, sizeBytes: number): Promise<void> {
  const current = (await stat(path)).size;
  if (current < sizeBytes) await truncate(path, sizeBytes);
}

/** Undefined when the data is present and of the right kind, else what is wrong. */
export async function dataProblem(path: string, accessType: AccessType): Promise<string | undefined> {
  try {
    const info = await stat(path);
    if (accessType === "block" && !info.isFile()) return "backing file is not a regular file";
    if (accessType === "mount" && !info.isDirectory()) return "data directory is not a directory";
    return undefined;
  } catch (error) {
    // upstream hostpath's message for a volume whose backing directory is gone
    if (isErrno(error, "ENOENT")) return "The source path of the volume doesn't exist";
    return `volume data cannot be read: ${error instanceof Error ? error.message : String(error)}`;
  }
}
