// Mount propagation of a container's volume mounts, as the kubelet asks a CRI runtime for it
// and runc gives it: None (the default) is rprivate — the host's later mounts below the volume
// never reach the container; HostToContainer is rslave — they do, which needs the host side to
// be a shared (or slave) mount, as containerd checks; Bidirectional (rshared) needs a privileged
// container, which csikit's sandbox never is. bwrap binds every volume as a slave of its host
// mount, so a None mount is made private inside the sandbox before the command runs, and the
// node's root dir is made rshared when a HostToContainer volume below it needs it (the
// kubelet does so for its root dir at start-up).

import { execFile } from "node:child_process";
import { readFile, realpath } from "node:fs/promises";
import { promisify } from "node:util";

const run = promisify(execFile);

export type MountPropagation = "None" | "HostToContainer";

/** A container's volumeMount refused by the runtime (the kubelet reports CreateContainerError). */
export class ContainerCreateError extends Error {}

interface MountEntry {
  mountPoint: string;
  shared: boolean;
  slave: boolean;
}

/** mountinfo escapes space, tab, newline and backslash as octal. */
function unescape(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

async function mounts(): Promise<MountEntry[]> {
  const text = await readFile("/proc/self/mountinfo", "utf8");
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => {
      const fields = line.split(" ");
      const optional = fields.slice(6, fields.indexOf("-"));
      return {
        mountPoint: unescape(fields[4] ?? ""),
        shared: optional.some((f) => f.startsWith("shared:")),
        slave: optional.some((f) => f.startsWith("master:")),
      };
    });
}

function under(path: string, dir: string): boolean {
  return dir === "/" || path === dir || path.startsWith(`${dir}/`);
}

/** The mount that holds path (the last, i.e. topmost, of the longest mount point above it). */
export async function mountOf(path: string): Promise<MountEntry> {
  const resolved = await realpath(path);
  let found: MountEntry | undefined;
  for (const entry of await mounts())
    if (under(resolved, entry.mountPoint) && entry.mountPoint.length >= (found?.mountPoint.length ?? 0))
      found = entry;
  return found ?? { mountPoint: "/", shared: false, slave: false };
}

/**
 * The kubelet's MakeRShared: dir becomes a shared mount (bound on itself first when it is no
 * mount point). Resolves whether it made that bind (to undo at stop), false when dir already was
 * shared.
 */
export async function makeRShared(dir: string): Promise<boolean> {
  const resolved = await realpath(dir);
  const holder = await mountOf(resolved);
  if (holder.shared) return false;
  const bound = holder.mountPoint !== resolved;
  if (bound) await run("mount", ["--bind", resolved, resolved]);
  await run("mount", ["--make-rshared", resolved]);
  return bound;
}

/**
 * Checks that a HostToContainer volume's host side propagates (containerd's ensureSharedOrSlave),
 * first making the node's root dir rshared when the volume is below it.
 */
export async function ensureHostToContainer(
  source: string,
  nodeRoot: () => Promise<void>,
  rootDir: string,
): Promise<void> {
  let holder = await mountOf(source);
  if (holder.shared || holder.slave) return;
  if (under(await realpath(source), await realpath(rootDir))) {
    await nodeRoot();
    holder = await mountOf(source);
    if (holder.shared || holder.slave) return;
  }
  throw new ContainerCreateError(
    `path "${source}" is mounted on "${holder.mountPoint}" but it is not a shared or slave mount`,
  );
}

/**
 * The sandbox's first command: makes each None mount rprivate, then execs the rest. bwrap keeps
 * root's capabilities up to here (setpriv drops them after), so `mount` may change propagation.
 */
export function privateMountsPrelude(dests: readonly string[]): string[] {
  if (dests.length === 0) return [];
  return [
    "/bin/sh",
    "-c",
    'while [ "$1" != -- ]; do mount --make-rprivate "$1" || exit 126; shift; done; shift; exec "$@"',
    "csikit-propagation",
    ...dests,
    "--",
  ];
}
