// The kubelet's AtomicWriter layout for configMap, secret, downwardAPI and projected volumes:
// the files live in a timestamped dir "..2006_01_02_15_04_05.<random>", a "..data" symlink
// points at it, and each top-level name the user sees is a symlink "<name> -> ..data/<name>".
// An update writes a new timestamped dir and swaps ..data by renaming a fresh symlink over it,
// so a reader sees the whole old or the whole new set, never a mix; then the old dir goes.
// A payload equal to what ..data already holds is not written again (the kubelet's
// shouldWritePayload), so a periodic refresh leaves an unchanged volume alone.

import { randomBytes } from "node:crypto";
import {
  chmod,
  chown,
  lstat,
  mkdir,
  readFile,
  readdir,
  readlink,
  rename,
  rm,
  symlink,
  writeFile,
} from "node:fs/promises";
import { dirname, join } from "node:path";

export interface PayloadFile {
  data: Buffer;
  mode: number;
}

const DATA_DIR = "..data";
const DATA_TMP = "..data_tmp";

function timestampDirName(ms: number): string {
  const d = new Date(ms);
  const pad = (n: number, w = 2): string => String(n).padStart(w, "0");
  const stamp = `${d.getUTCFullYear()}_${pad(d.getUTCMonth() + 1)}_${pad(d.getUTCDate())}_${pad(d.getUTCHours())}_${pad(d.getUTCMinutes())}_${pad(d.getUTCSeconds())}`;
  return `..${stamp}.${randomBytes(5).readUInt32BE(0)}`;
}

/** A relative path that stays inside the volume (no "..", not absolute, not hidden ".." names). */
export function validPayloadPath(path: string): boolean {
  if (path === "" || path.startsWith("/") || path.length > 4096) return false;
  const parts = path.split("/");
  return parts.every((p) => p !== "" && p !== "." && p !== "..") && !parts[0]!.startsWith("..");
}

/** Every regular file below dir, as paths relative to it. */
async function filesBelow(dir: string, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(join(dir, prefix), { withFileTypes: true })) {
    const path = prefix === "" ? entry.name : `${prefix}/${entry.name}`;
    if (entry.isDirectory()) out.push(...(await filesBelow(dir, path)));
    else out.push(path);
  }
  return out;
}

/** Whether the dir's current ..data holds exactly payload (same paths, bytes and modes). */
async function holds(dir: string, payload: ReadonlyMap<string, PayloadFile>): Promise<boolean> {
  const current = await readlink(join(dir, DATA_DIR)).catch(() => undefined);
  if (current === undefined) return false;
  const base = join(dir, current);
  const files = await filesBelow(base).catch(() => undefined);
  if (files?.length !== payload.size) return false;
  for (const path of files) {
    const wanted = payload.get(path);
    if (!wanted) return false;
    const info = await lstat(join(base, path));
    if (!info.isFile() || (info.mode & 0o7777) !== wanted.mode) return false;
    if (!(await readFile(join(base, path))).equals(wanted.data)) return false;
  }
  return true;
}

/**
 * Writes payload (relative path → file) into dir with the atomic layout, unless dir already
 * holds it; resolves whether it wrote. gid, when given, owns every file (the pod's fsGroup).
 * Safe to run again after a crash at any point: the visible links are made and stale
 * timestamped dirs removed also when nothing needs writing.
 */
export async function writeAtomic(
  dir: string,
  payload: ReadonlyMap<string, PayloadFile>,
  nowMs: number,
  gid?: number,
): Promise<boolean> {
  for (const path of payload.keys())
    if (!validPayloadPath(path)) throw new Error(`invalid path ${JSON.stringify(path)}`);
  await mkdir(dir, { recursive: true, mode: 0o755 });
  const write = !(await holds(dir, payload));
  if (write) {
    const tsName = timestampDirName(nowMs);
    const tsDir = join(dir, tsName);
    await mkdir(tsDir, { mode: 0o755 });
    for (const [path, file] of payload) {
      const target = join(tsDir, path);
      await mkdir(dirname(target), { recursive: true, mode: 0o755 });
      await writeFile(target, file.data, { mode: file.mode });
      await chmod(target, file.mode);
      if (gid !== undefined) await chown(target, -1, gid).catch(() => undefined);
    }
    await rm(join(dir, DATA_TMP), { force: true });
    await symlink(tsName, join(dir, DATA_TMP));
    await rename(join(dir, DATA_TMP), join(dir, DATA_DIR));
  }
  const visible = new Set([...payload.keys()].map((p) => p.split("/")[0]!));
  for (const name of visible) {
    const link = join(dir, name);
    const existing = await lstat(link).catch(() => undefined);
    if (existing?.isSymbolicLink()) continue;
    if (existing) await rm(link, { recursive: true, force: true });
    await symlink(join(DATA_DIR, name), link);
  }
  // Names of the old payload that the new one no longer has, then the old timestamped dirs
  // (the one replaced, or one a crash left unswapped).
  const current = await readlink(join(dir, DATA_DIR));
  for (const name of await readdir(dir)) {
    if (name === DATA_DIR || name === current || visible.has(name)) continue;
    await rm(join(dir, name), { recursive: true, force: true });
  }
  return write;
}
