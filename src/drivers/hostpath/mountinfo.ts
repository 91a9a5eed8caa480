// Parsing /proc/self/mountinfo: the source of truth for "is this path already mounted, and
// from what" that makes NodeStage/NodePublish idempotent across driver restarts. Two mounts
// show the same data when they share the device (major:minor) and the root inside it.

import { readFile } from "node:fs/promises";

export interface MountEntry {
  /** major:minor of the mounted filesystem. */
  device: string;
  /** The directory inside that filesystem that is mounted (bind mounts show their source). */
  root: string;
  mountPoint: string;
  /** Per-mount options, e.g. ["ro", "nosuid"]. */
  options: string[];
  fsType: string;
  source: string;
}

/** Undoes mountinfo's octal escapes (\040 for space, \011 tab, \012 newline, \134 backslash). */
function unescape(text: string): string {
  return text.replace(/\\([0-7]{3})/g, (_m, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

export function parseMountInfo(text: string): MountEntry[] {
  const entries: MountEntry[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const fields = line.split(" ");
    const dash = fields.indexOf("-");
    if (dash < 6 || fields.length < dash + 3) continue;
    entries.push({
      device: fields[2]!,
      root: unescape(fields[3]!),
      mountPoint: unescape(fields[4]!),
      options: fields[5]!.split(","),
      fsType: fields[dash + 1]!,
      source: unescape(fields[dash + 2]!),
    });
  }
  return entries;
}

export async function readMountInfo(): Promise<MountEntry[]> {
  return parseMountInfo(await readFile("/proc/self/mountinfo", "utf8"));
}

/** The topmost mount at exactly `path` (the last one listed wins, as the kernel stacks them). */
export function mountAt(entries: readonly MountEntry[], path: string): MountEntry | undefined {
  let found: MountEntry | undefined;
  for (const entry of entries) if (entry.mountPoint === path) found = entry;
  return found;
}

export function sameData(a: MountEntry, b: MountEntry): boolean {
  return a.device === b.device && a.root === b.root;
}

export function isReadOnly(entry: MountEntry): boolean {
  return entry.options.includes("ro");
}
