// The only place the driver runs external programs: util-linux `mount`, `umount`, `losetup`,
// and GNU `tar`/`cp` for snapshot and clone data. Always execFile with an argument array
// (never a shell), `--` before paths where the tool accepts it, and a bounded output buffer.
// Failures become Errors carrying the tool's stderr so a user can act on them.

import { CsikitError } from "../../base/index.ts";
import { execFile, spawn } from "node:child_process";
import type { FileHandle } from "node:fs/promises";
import { mkdtemp, rmdir } from "node:fs/promises";
import { join } from "node:path";

/**
 * PATH for the tools: the caller's, then the sbin directories, where Debian keeps `losetup`
 * and which a non-login or CI environment often leaves out.
 */
const TOOL_PATH = [process.env.PATH, "/usr/local/sbin", "/usr/sbin", "/sbin"]
  .filter((part): part is string => part !== undefined && part !== "")
  .join(":");

export interface RunOptions {
  signal?: AbortSignal;
}

export class CommandError extends CsikitError {
  readonly exitCode: number | undefined;
  readonly stderr: string;
  constructor(message: string, exitCode: number | undefined, stderr: string) {
    super("CSIKIT_ERR_COMMAND", message);
    this.name = "CommandError";
    this.exitCode = exitCode;
    this.stderr = stderr;
  }
}

/** Runs `file args...`; resolves with stdout, rejects with a CommandError naming the command. */
export function run(file: string, args: readonly string[], options: RunOptions = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      file,
      [...args],
      {
        encoding: "utf8",
        maxBuffer: 1 << 20,
        env: { ...process.env, PATH: TOOL_PATH },
        ...(options.signal ? { signal: options.signal } : {}),
      },
      (error, stdout, stderr) => {
        if (error) {
          const exitCode = typeof error.code === "number" ? error.code : undefined;
          const detail = stderr.trim() || error.message;
          reject(new CommandError(`${file} ${args.join(" ")}: ${detail}`, exitCode, stderr));
          return;
        }
        resolve(stdout);
      },
    );
  });
}

/**
 * Runs `file args...` with `fds` inherited as the child's fds 3, 4, ...: the child names them
 * /proc/self/fd/3, ... so it acts on exactly the files this process holds open.
 */
function runWithFds(file: string, args: readonly string[], fds: readonly number[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, [...args], {
      env: { ...process.env, PATH: TOOL_PATH },
      stdio: ["ignore", "pipe", "pipe", ...fds],
    });
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.once("error", (error) => reject(new CommandError(`${file}: ${error.message}`, undefined, "")));
    child.once("close", (code) => {
      if (code === 0) resolve(stdout);
      else
        reject(
          new CommandError(
            `${file} ${args.join(" ")}: ${stderr.trim() || `exit ${code}`}`,
            code ?? undefined,
            stderr,
          ),
        );
    });
  });
}

/**
 * Bind-mounts `source` (a path of the driver's own, or a held handle) onto the held handle
 * `target`: mount(8) gets /proc/self/fd/N with --no-canonicalize, so no path is looked up
 * again and no symlink swapped in meanwhile can redirect the mount. Read-only needs a remount
 * of the new mount, named by `reopen` (a handle of what is now mounted there).
 */
export async function bindMountOnto(
  source: string | FileHandle,
  target: FileHandle,
  options: { readonly: boolean; reopen: () => Promise<FileHandle> },
): Promise<void> {
  const fds = typeof source === "string" ? [target.fd] : [target.fd, source.fd];
  const sourceArg = typeof source === "string" ? source : "/proc/self/fd/4";
  await runWithFds("mount", ["--no-canonicalize", "--bind", "--", sourceArg, "/proc/self/fd/3"], fds);
  if (!options.readonly) return;
  const mounted = await options.reopen();
  try {
    await runWithFds(
      "mount",
      ["--no-canonicalize", "-o", "remount,bind,ro", "--", "/proc/self/fd/3"],
      [mounted.fd],
    );
  } catch (error) {
    await runWithFds("umount", ["--no-canonicalize", "--", "/proc/self/fd/3"], [mounted.fd]).catch(
      () => undefined,
    );
    throw error;
  } finally {
    await mounted.close();
  }
}

/** Bind-mounts `source` onto `target`; read-only needs a second remount, as the kernel wants. */
export async function bindMount(
  source: string,
  target: string,
  options: { readonly: boolean },
): Promise<void> {
  await run("mount", ["--bind", "--", source, target]);
  if (options.readonly) {
    try {
      await run("mount", ["-o", "remount,bind,ro", "--", target]);
    } catch (error) {
      await run("umount", ["--", target]).catch(() => undefined);
      throw error;
    }
  }
}

export async function unmount(target: string): Promise<void> {
  await run("umount", ["--", target]);
}

/** Loop devices currently backed by `file` (`losetup -j`), e.g. ["/dev/loop3"]. */
export async function loopDevicesOf(file: string): Promise<string[]> {
  const out = await run("losetup", ["-j", file]);
  const devices: string[] = [];
  for (const line of out.split("\n")) {
    const match = /^(\/dev\/loop\d+):/.exec(line);
    if (match) devices.push(match[1]!);
  }
  return devices;
}

/** Attaches `file` to a free loop device, or returns the one it is already attached to. */
export async function attachLoop(file: string): Promise<string> {
  const existing = await loopDevicesOf(file);
  if (existing[0] !== undefined) return existing[0];
  const out = await run("losetup", ["--find", "--show", "--", file]);
  const device = out.trim();
  if (!/^\/dev\/loop\d+$/.test(device))
    throw new CsikitError("CSIKIT_ERR_HOSTPATH_SYSTEM", `losetup printed an unexpected device ${device}`);
  return device;
}

/** Detaches every loop device backed by `file`. */
export async function detachLoops(file: string): Promise<void> {
  for (const device of await loopDevicesOf(file)) await run("losetup", ["-d", device]);
}

/** Makes attached loop devices see a grown backing file. */
export async function refreshLoops(file: string): Promise<void> {
  for (const device of await loopDevicesOf(file)) await run("losetup", ["-c", device]);
}

/** Archives the contents of `dir` into the tar file `archive`. */
export async function tarDirectory(dir: string, archive: string, options: RunOptions = {}): Promise<void> {
  await run("tar", ["--create", "--file", archive, "--directory", dir, "--numeric-owner", "."], options);
}

/** Extracts the tar file `archive` into the existing directory `dir`. */
export async function untarInto(archive: string, dir: string, options: RunOptions = {}): Promise<void> {
  await run("tar", ["--extract", "--file", archive, "--directory", dir, "--numeric-owner"], options);
}

/** Copies the contents of directory `from` into the existing directory `to`, preserving modes. */
export async function copyDirectoryContents(
  from: string,
  to: string,
  options: RunOptions = {},
): Promise<void> {
  await run("cp", ["-a", "--reflink=auto", "--", `${from}/.`, `${to}/`], options);
}

/** Copies a (sparse) file, keeping holes so block volumes stay cheap. */
export async function copySparseFile(from: string, to: string, options: RunOptions = {}): Promise<void> {
  await run("cp", ["--sparse=always", "--reflink=auto", "--", from, to], options);
}

/**
 * Says why this process may not mount, or undefined when it may: tries a real bind mount of a
 * fresh directory under `scratchDir` onto itself and takes it down again.
 */
export async function mountProblem(scratchDir: string): Promise<string | undefined> {
  if (typeof process.getuid === "function" && process.getuid() !== 0)
    return `the driver runs as uid ${process.getuid()}, and mounting needs root (run as root, or in a user+mount namespace: unshare -rm)`;
  const probe = await mkdtemp(join(scratchDir, "mount-probe-"));
  try {
    await run("mount", ["--bind", "--", probe, probe]);
  } catch (error) {
    await rmdir(probe).catch(() => undefined);
    return `a probe bind mount failed: ${error instanceof Error ? error.message : String(error)}`;
  }
  await run("umount", ["--", probe]).catch(() => undefined);
  await rmdir(probe).catch(() => undefined);
  return undefined;
}
