// Files only their owner may read: an atomic private write (temp file + rename) and the
// tightening of a directory tree that may have been loosened between two runs (a state dir
// copied with `cp -r`, restored from a backup, chmod-ed by hand). Used for everything that holds
// keys and tokens: the API server's pki/ and kubeconfig, `up`'s state dir.

import { randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { chmod, lstat, open, readdir, rename, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { isErrno } from "./errors.ts";

/** Directories of private state: the owner alone may list or enter them. */
export const PRIVATE_DIR_MODE = 0o700;
/** Files of private state: the owner alone may read them (0700 when the owner may run it). */
export const PRIVATE_FILE_MODE = 0o600;

/**
 * Writes via a temp file and rename so a crash never leaves a half-written file. The temp name
 * is unpredictable (96 random bits) and opened O_CREAT|O_EXCL|O_NOFOLLOW with `mode` from
 * creation: in a shared directory another user can neither pre-create it (we would fail, not
 * write into their file) nor point it elsewhere through a symlink. rename() replaces a symlink
 * at `path` itself, never writing through it.
 */
export async function writeAtomic(path: string, content: string, mode: number): Promise<void> {
  const temp = join(dirname(path), `.${basename(path)}.tmp-${randomBytes(12).toString("hex")}`);
  const handle = await open(
    temp,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    mode,
  );
  try {
    // The umask may have narrowed the mode at creation; never widened it, so this only restores it.
    await handle.chmod(mode);
    await handle.writeFile(content);
    await handle.sync();
  } catch (error) {
    await handle.close();
    await unlink(temp).catch(() => undefined);
    throw error;
  }
  await handle.close();
  try {
    await rename(temp, path);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
}

export interface TightenOptions {
  /**
   * Paths left exactly as they are, not entered either (data whose modes belong to someone
   * else, e.g. the volumes a driver serves to pods, or a mount point). Default: none.
   */
  leave?: (path: string) => boolean;
}

/**
 * Takes group and other access away from `root` and everything under it: directories 0700,
 * files 0600 (0700 for a file its owner may execute). Symlinks are never followed (nor changed);
 * sockets, FIFOs and devices keep their modes (their directory guards them). Returns how many
 * entries it changed. A missing `root` is nothing to do.
 */
export async function tightenTree(root: string, options: TightenOptions = {}): Promise<number> {
  let changed = 0;
  const visit = async (path: string): Promise<void> => {
    if (options.leave?.(path)) return;
    let info;
    try {
      info = await lstat(path);
    } catch (error) {
      if (isErrno(error, "ENOENT")) return;
      throw error;
    }
    const mode = info.mode & 0o7777;
    if (info.isDirectory()) {
      if ((mode & 0o077) !== 0) {
        await chmod(path, PRIVATE_DIR_MODE);
        changed += 1;
      }
      for (const entry of await readdir(path)) await visit(join(path, entry));
    } else if (info.isFile() && (mode & 0o077) !== 0) {
      await chmod(path, (mode & 0o100) !== 0 ? PRIVATE_DIR_MODE : PRIVATE_FILE_MODE);
      changed += 1;
    }
  };
  await visit(root);
  return changed;
}
