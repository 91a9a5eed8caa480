// Resolve-beneath for the paths the node side creates, mounts or removes (target and staging
// paths, and the block file inside a staging dir). A lexical check (paths.ts) is not enough:
// with a symlink `R/link -> /etc` below an allowed root R, `R/link/x` passes it, yet acting on
// it would create /etc/x. So the parent directory is opened (O_PATH) and its real location is
// read back from the kernel (/proc/self/fd/N) and checked against the roots; every later step
// acts through that held directory (`/proc/self/fd/N/<name>`), so a symlink swapped into the
// path after the check cannot redirect it; and the final component is never followed (a
// symlink there is refused). Mounts target an O_PATH|O_NOFOLLOW handle of the final component
// itself (see system.ts bindMountOnto), never a path string.

import { constants } from "node:fs";
import { lstat, open, readlink, type FileHandle } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { isErrno } from "../../base/index.ts";
import { CsiError, GrpcStatus } from "../../csi/index.ts";
import { isInside, type PathRules } from "./paths.ts";

/** Linux O_PATH: a handle that names a file without opening it for I/O (Node has no constant).
 * libuv adds O_CLOEXEC itself; a child gets a handle only when it is passed explicitly. */
const O_PATH = 0o10000000;

export interface Beneath {
  /** Where the path really is: the parent's kernel-reported location plus the final name. */
  readonly real: string;
  /**
   * The final component reached through the held parent directory: lstat, mkdir, rmdir,
   * unlink and open on it act on exactly that directory entry. When the parent does not
   * exist, `missing` is true and nothing may be created.
   */
  readonly at: string;
  readonly missing: boolean;
  /** A child of this directory, resolved the same way (the block file in a staging dir). */
  child(name: string): Promise<Beneath>;
  close(): Promise<void>;
}

/** The reason `real` (a kernel-resolved location) is outside the rules, or undefined. */
function realProblem(real: string, rules: PathRules): string | undefined {
  if (isInside(real, rules.stateDir)) return `resolves to ${real}, inside the driver's state directory`;
  if (!rules.allowedRoots.some((root) => real !== root && isInside(real, root)))
    return `resolves to ${real}, outside the allowed roots (--allowed-path-roots: ${rules.allowedRoots.join(", ")}); symlinks may not lead out`;
  return undefined;
}

/**
 * Opens the parent of `path` (already lexically checked) and checks where it really is.
 * Returns the Beneath handle, or a problem string (the caller turns it into INVALID_ARGUMENT).
 */
export async function openBeneath(path: string, rules: PathRules): Promise<Beneath | string> {
  return openIn(dirname(path), basename(path), rules, constants.O_DIRECTORY);
}

async function openIn(
  parentPath: string,
  name: string,
  rules: PathRules,
  extraFlags: number,
): Promise<Beneath | string> {
  let parent: FileHandle;
  try {
    parent = await open(parentPath, O_PATH | extraFlags);
  } catch (error) {
    if (isErrno(error, "ENOENT") || isErrno(error, "ENOTDIR")) return missingAt(join(parentPath, name));
    throw error;
  }
  try {
    const realParent = await readlink(`/proc/self/fd/${parent.fd}`);
    const real = join(realParent, name);
    const problem = realProblem(real, rules);
    if (problem) {
      await parent.close();
      return problem;
    }
    const at = `/proc/self/fd/${parent.fd}/${name}`;
    const info = await lstat(at).catch((error: unknown) => {
      if (isErrno(error, "ENOENT")) return undefined;
      throw error;
    });
    if (info?.isSymbolicLink()) {
      await parent.close();
      return `is a symlink (${real}); the final component is never followed`;
    }
    return {
      real,
      at,
      missing: false,
      // A child is opened through `at` with O_NOFOLLOW: this directory itself must not have
      // become a symlink since it was checked.
      child: async (childName) => {
        const result = await openIn(at, childName, rules, constants.O_DIRECTORY | constants.O_NOFOLLOW);
        if (typeof result === "string")
          throw new CsiError(GrpcStatus.INVALID_ARGUMENT, `${join(real, childName)} ${result}`);
        return result;
      },
      close: () => parent.close(),
    };
  } catch (error) {
    await parent.close();
    throw error;
  }
}

function missingAt(path: string): Beneath {
  return {
    real: path,
    at: path,
    missing: true,
    child: (name) => Promise.resolve(missingAt(join(path, name))),
    close: () => Promise.resolve(),
  };
}

/** An O_PATH handle of exactly the final component (never a symlink), for mounting onto it. */
export async function openFinal(target: Beneath): Promise<FileHandle> {
  const handle = await open(target.at, O_PATH | constants.O_NOFOLLOW);
  try {
    if ((await handle.stat()).isSymbolicLink())
      throw new CsiError(
        GrpcStatus.INVALID_ARGUMENT,
        `${target.real} became a symlink; refusing to mount onto it`,
      );
    return handle;
  } catch (error) {
    await handle.close();
    throw error;
  }
}
