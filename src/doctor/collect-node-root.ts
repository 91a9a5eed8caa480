// Collects, for each node root, the mounts under it (/proc/self/mountinfo: this process's mount
// namespace) and the loop devices whose backing file lies under it (/sys/block/loopN/loop/
// backing_file, readable without privilege). Roots are resolved to their real path first:
// mountinfo shows real paths, so a root given through a symlink would match nothing.

import { readFile, readdir, realpath } from "node:fs/promises";
import { join } from "node:path";
import { ValidationError, errorMessage, isErrno } from "../base/index.ts";
import type { LoopDevice, MountPoint, NodeRootState } from "./types.ts";

/** Undoes mountinfo's octal escapes (\040 space, \011 tab, \012 newline, \134 backslash). */
function unescapeMountInfo(text: string): string {
  return text.replace(/\\([0-7]{3})/g, (_m, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

export function parseMountInfo(text: string): MountPoint[] {
  const mounts: MountPoint[] = [];
  for (const line of text.split("\n")) {
    const fields = line.split(" ");
    const dash = fields.indexOf("-");
    if (dash < 6 || fields.length < dash + 3) continue;
    mounts.push({
      mountPoint: unescapeMountInfo(fields[4]!),
      fsType: fields[dash + 1]!,
      source: unescapeMountInfo(fields[dash + 2]!),
    });
  }
  return mounts;
}

export async function readMounts(): Promise<MountPoint[]> {
  return parseMountInfo(await readFile("/proc/self/mountinfo", "utf8"));
}

/** Loop devices with a backing file (an unused one has none). */
export async function readLoopDevices(): Promise<LoopDevice[]> {
  let names: string[];
  try {
    names = (await readdir("/sys/block")).filter((name) => /^loop\d+$/.test(name));
  } catch (error) {
    if (isErrno(error, "ENOENT")) return [];
    throw error;
  }
  const loops: LoopDevice[] = [];
  for (const name of names) {
    try {
      const backingFile = (await readFile(join("/sys/block", name, "loop", "backing_file"), "utf8")).replace(
        /\n$/,
        "",
      );
      if (backingFile !== "") loops.push({ device: `/dev/${name}`, backingFile });
    } catch (error) {
      if (!isErrno(error, "ENOENT")) throw error; // ENOENT: not bound to a file
    }
  }
  return loops;
}

function under(root: string, path: string): boolean {
  return path.startsWith(root.endsWith("/") ? root : root + "/");
}

/** Resolves each root (a clear error for one that does not exist) and reads what lies under it. */
export async function collectNodeRoots(roots: readonly string[]): Promise<NodeRootState[]> {
  if (roots.length === 0) return [];
  const resolved: string[] = [];
  for (const root of roots) {
    try {
      resolved.push(await realpath(root));
    } catch (error) {
      throw new ValidationError(`--node-root ${root}: ${errorMessage(error)}`);
    }
  }
  const [mounts, loops] = await Promise.all([readMounts(), readLoopDevices()]);
  return resolved.map((root) => ({
    root,
    mounts: mounts.filter((m) => under(root, m.mountPoint)),
    loops: loops.filter((l) => under(root, l.backingFile)),
  }));
}
