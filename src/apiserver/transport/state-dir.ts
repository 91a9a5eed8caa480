// The API server's state directory holds the CA key, the admin token and the database (with
// every Secret): only its owner may enter it. A directory of ours that is group- or
// world-accessible is tightened to 0700; one owned by someone else is refused with the reason.
// What a resumed server finds there was maybe loosened meanwhile (copied, restored, chmod-ed):
// pki/ and everything in it, and the files of the directory itself, are tightened too (0700
// directories, 0600 files). Other directories beside them (`csikit up` keeps its nodes and
// volumes there) are their owner's business.
// The database files are created 0600 before SQLite opens them (SQLite gives the -wal and -shm
// files the mode of the database file), and existing ones are tightened.

import { chmod, lstat, mkdir, open, readdir } from "node:fs/promises";
import { constants } from "node:fs";
import { join } from "node:path";
import { CsikitError, tightenTree } from "../../base/index.ts";

export const STATE_DIR_MODE = 0o700;
export const STATE_FILE_MODE = 0o600;

/** Creates `dir` 0700 or makes sure an existing one is ours and 0700. */
export async function secureStateDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: STATE_DIR_MODE });
  const info = await lstat(dir);
  if (!info.isDirectory())
    throw new CsikitError("CSIKIT_ERR_STATE_DIR", `state directory ${dir} is not a directory`);
  const mode = info.mode & 0o777;
  if ((mode & 0o077) !== 0) {
    const uid = process.getuid?.();
    if (uid !== undefined && info.uid !== uid) {
      throw new CsikitError(
        "CSIKIT_ERR_STATE_DIR",
        `state directory ${dir} is accessible to other users (mode ${mode.toString(8).padStart(4, "0")}) ` +
          `and owned by uid ${info.uid}, not by this process (uid ${uid}): it would expose the CA key, ` +
          `the admin token and every Secret; use a directory of your own or make it 0700`,
      );
    }
    await chmod(dir, STATE_DIR_MODE);
  }
  await tightenTree(join(dir, "pki"));
  for (const entry of await readdir(dir, { withFileTypes: true }))
    if (entry.isFile()) await tightenTree(join(dir, entry.name));
}

/**
 * Creates the SQLite database file 0600 when missing (never following a symlink), and
 * tightens it and any existing -wal/-shm file to 0600.
 */
export async function secureDatabaseFiles(path: string): Promise<void> {
  const handle = await open(
    path,
    constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW,
    STATE_FILE_MODE,
  );
  try {
    await handle.chmod(STATE_FILE_MODE);
  } finally {
    await handle.close();
  }
  for (const suffix of ["-wal", "-shm", "-journal", "-lock"]) {
    try {
      const info = await lstat(path + suffix);
      if (info.isFile() && (info.mode & 0o077) !== 0) await chmod(path + suffix, STATE_FILE_MODE);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
  }
}
