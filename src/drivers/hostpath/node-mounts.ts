// Mount bookkeeping for the Node service: what a given path shows, and whether that is the
// data a volume should show there. Works from /proc/self/mountinfo only, so it stays right
// across driver restarts and needs no state of its own.

import { realpath } from "node:fs/promises";
import { basename, posix, relative } from "node:path";
import { isInside } from "./paths.ts";
import { mountAt, readMountInfo, sameData, type MountEntry } from "./mountinfo.ts";

/** The (device, root) a bind mount of `path` would show, from the mount that holds it. */
export async function bindIdentity(
  path: string,
  mounts: readonly MountEntry[],
): Promise<MountEntry | undefined> {
  const real = await realpath(path);
  let holder: MountEntry | undefined;
  for (const entry of mounts)
    if (isInside(real, entry.mountPoint) || entry.mountPoint === "/")
      if (!holder || entry.mountPoint.length >= holder.mountPoint.length) holder = entry;
  if (!holder) return undefined;
  const inside = holder.mountPoint === "/" ? real.slice(1) : relative(holder.mountPoint, real);
  return { ...holder, root: posix.join(holder.root, inside), mountPoint: path };
}

export type MountState =
  { kind: "none" } | { kind: "ours"; entry: MountEntry } | { kind: "other"; entry: MountEntry };

/** What is mounted at `target`, compared with a bind mount of `source`. */
export async function mountStateOf(target: string, source: string): Promise<MountState> {
  const mounts = await readMountInfo();
  const at = mountAt(mounts, target);
  if (!at) return { kind: "none" };
  const expected = await bindIdentity(source, mounts);
  return expected && sameData(at, expected) ? { kind: "ours", entry: at } : { kind: "other", entry: at };
}

/** The mount at `target`, if any. */
export async function mountAtPath(target: string): Promise<MountEntry | undefined> {
  return mountAt(await readMountInfo(), target);
}

/** True when `entry` is a bind mount of the loop device `device` (/dev/loopN). */
export function isLoopBind(entry: MountEntry, device: string): boolean {
  return entry.root === `/${basename(device)}`;
}

/**
 * Mount points strictly inside one of `roots` that show the same data as `identity` (a mount
 * of the volume), other than the paths in `except`: where else this node has the volume
 * mounted. The roots scope the answer to this node: several node instances may share one
 * machine's mount table, each with its own roots.
 */
export async function otherMountsOf(
  identity: MountEntry,
  options: { roots: readonly string[]; except: readonly string[] },
): Promise<string[]> {
  const found = new Set<string>();
  for (const entry of await readMountInfo()) {
    if (!sameData(entry, identity) || options.except.includes(entry.mountPoint)) continue;
    if (options.roots.some((root) => entry.mountPoint !== root && isInside(entry.mountPoint, root)))
      found.add(entry.mountPoint);
  }
  return [...found];
}
