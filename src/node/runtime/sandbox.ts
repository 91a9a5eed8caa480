// The sandbox a container runs in: bubblewrap (bwrap) with its own mount, PID, IPC and UTS
// namespaces; the host's root filesystem bound read-only (each top-level dir, so mount points
// the host lacks can be made on bwrap's own root, which is then remounted read-only); the
// virtual node's root dir hidden under an empty read-only tmpfs (no pod sees another pod's
// volumes there); minimal /dev and a fresh /proc; the pod's volumes bound at their paths.
// Volumes whose mountPropagation is None are made private first (propagation.ts). The
// command runs as the container's user through setpriv with every capability dropped
// (bounding, inheritable and ambient sets, no_new_privs), so even uid 0 inside holds none.
// This module only builds command lines and probes whether the machine can sandbox at all.

import { execFile } from "node:child_process";
import { lstatSync, readdirSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { errorMessage } from "../../base/index.ts";
import { privateMountsPrelude, type MountPropagation } from "./propagation.ts";

const run = promisify(execFile);

export interface SandboxMount {
  /** Host path. */
  source: string;
  /** Path inside the container. */
  dest: string;
  readOnly: boolean;
  /** A block device (volumeDevices): bound with its device node usable. */
  device: boolean;
  /** The volumeMount's mountPropagation (default None: private in the sandbox). */
  propagation?: MountPropagation;
  /**
   * Read-only down to every mount below it (KEP-3857; recursive-read-only.ts); otherwise a
   * read-only mount is read-only at its top only, as upstream's plain readOnly.
   */
  recursiveReadOnly?: boolean;
}

export interface SandboxUser {
  uid: number;
  gid: number;
  groups: number[];
}

export interface SandboxSpec {
  hostname: string;
  mounts: SandboxMount[];
  user: SandboxUser;
  workingDir: string;
  argv: string[];
  /** Host paths no container may see (the node's root dir). */
  hidden: string[];
}

/** setpriv's arguments: become the container's user with no capability at all. */
function dropPrivileges(user: SandboxUser): string[] {
  return [
    "setpriv",
    `--reuid=${user.uid}`,
    `--regid=${user.gid}`,
    user.groups.length > 0 ? `--groups=${user.groups.join(",")}` : "--clear-groups",
    "--inh-caps=-all",
    "--bounding-set=-all",
    "--no-new-privs",
    "--",
  ];
}

function isUnder(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith("/") ? dir : `${dir}/`);
}

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * The read-only view of the host's root: each entry of dir bound at the same path, except dirs
 * that must hold a mount point the host lacks, which become a dir on bwrap's root holding
 * their own entries in turn. /proc and /dev are bwrap's own.
 */
function rootBinds(dir: string, needs: readonly string[], out: string[]): void {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (dir === "/" && (name === "proc" || name === "dev")) continue;
    let stat;
    try {
      stat = lstatSync(path);
    } catch {
      continue;
    }
    if (stat.isSymbolicLink()) {
      out.push("--symlink", readlinkSync(path), path);
    } else if (stat.isDirectory() && needs.some((need) => isUnder(need, path) && need !== path)) {
      // A mount point below a host dir that lacks it: expand the dir one level.
      const missing = needs.some((need) => {
        if (!isUnder(need, path) || need === path) return false;
        const child = join(path, need.slice(path.length + 1).split("/")[0]!);
        return !exists(child);
      });
      if (missing) {
        out.push("--dir", path);
        rootBinds(path, needs, out);
      } else out.push("--ro-bind", path, path);
    } else if (stat.isDirectory() || stat.isFile()) {
      out.push("--ro-bind", path, path);
    }
  }
}

/** bwrap's arguments for spec; the status of the sandbox is written as JSON to fd 3. */
export function bwrapArgs(spec: SandboxSpec): string[] {
  const args: string[] = [];
  const mounts = [...spec.mounts].sort((a, b) => a.dest.split("/").length - b.dest.split("/").length);
  const needs = mounts
    .map((m) => m.dest)
    .filter((dest) => !exists(dest) && !spec.hidden.some((hidden) => isUnder(dest, hidden)));
  rootBinds("/", needs, args);
  args.push("--dev", "/dev", "--proc", "/proc");
  for (const hidden of spec.hidden) {
    if (!exists(hidden)) continue;
    args.push("--tmpfs", hidden, "--remount-ro", hidden);
  }
  for (const mount of mounts) {
    if (mount.device) args.push("--dev-bind", mount.source, mount.dest);
    // --ro-bind remounts every submount read-only too; --remount-ro only the mount itself.
    else if (mount.readOnly && mount.recursiveReadOnly === true)
      args.push("--ro-bind", mount.source, mount.dest);
    else if (mount.readOnly) args.push("--bind", mount.source, mount.dest, "--remount-ro", mount.dest);
    else args.push("--bind", mount.source, mount.dest);
  }
  args.push(
    "--remount-ro",
    "/",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--hostname",
    spec.hostname,
    "--as-pid-1",
    "--die-with-parent",
    "--new-session",
    "--chdir",
    spec.workingDir,
    "--json-status-fd",
    "3",
    "--",
    ...privateMountsPrelude(
      mounts.filter((m) => !m.device && m.propagation !== "HostToContainer").map((m) => m.dest),
    ),
    ...dropPrivileges(spec.user),
    ...spec.argv,
  );
  return args;
}

/** nsenter's arguments to run argv in the namespaces of the sandbox whose pid 1 is pid. */
export function execArgs(pid: number, user: SandboxUser, workingDir: string, argv: string[]): string[] {
  return [
    `--target=${pid}`,
    "--mount",
    "--pid",
    "--ipc",
    "--uts",
    "--root",
    `--wdns=${workingDir}`,
    "--",
    ...dropPrivileges(user),
    ...argv,
  ];
}

let probed: Promise<string | undefined> | undefined;

/**
 * Whether this machine can sandbox: undefined if so, else why not (bwrap or setpriv missing,
 * or namespaces refused, e.g. unprivileged without user namespaces). Asked once per process.
 */
export function sandboxUnavailable(): Promise<string | undefined> {
  probed ??= (async () => {
    if (process.getuid?.() !== 0)
      return "the node agent is not root: a sandbox needs root to bind volumes and set the container's user";
    for (const tool of ["bwrap", "setpriv", "nsenter"]) {
      try {
        await run(tool, ["--version"]);
      } catch (error) {
        return `${tool} is not installed (run \`npm run setup\` as root to install bubblewrap and util-linux): ${errorMessage(error)}`;
      }
    }
    try {
      await run("bwrap", [
        "--ro-bind",
        "/",
        "/",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--",
        "true",
      ]);
    } catch (error) {
      const stderr = (error as { stderr?: string }).stderr?.trim();
      return `bwrap cannot create namespaces on this machine: ${stderr || errorMessage(error)}`;
    }
    return undefined;
  })();
  return probed;
}
