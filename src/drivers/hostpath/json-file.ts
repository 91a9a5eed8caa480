// Crash-safe JSON files (the state snapshots): a write goes to `<file>.tmp`, is fsynced, renamed over the file,
// and the directory is fsynced, so after a crash (kill -9, power loss) the file holds either
// the previous or the new content, never a torn mix. A leftover `.tmp` from a crash is
// ignored and overwritten by the next write.

import { mkdir, open, readFile, rename } from "node:fs/promises";
import { dirname } from "node:path";
import { CsikitError, isErrno } from "../../base/index.ts";

/** Reads and parses `file`; undefined when it does not exist. */
export async function readJsonFile(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if (isErrno(error, "ENOENT")) return undefined;
    throw error;
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new CsikitError(
      "CSIKIT_ERR_HOSTPATH_STATE",
      `state file ${file} is not valid JSON: ${error instanceof Error ? error.message : ""}`,
      {
        cause: error,
      },
    );
  }
}

/** Atomically replaces `file` with `value` as JSON (temp + fsync + rename + fsync dir); its size. */
export async function writeJsonFile(file: string, value: unknown): Promise<number> {
  const dir = dirname(file);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const temp = `${file}.tmp`;
  const text = JSON.stringify(value, null, 1) + "\n";
  const handle = await open(temp, "w", 0o600);
  try {
    await handle.writeFile(text, "utf8");
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temp, file);
  await fsyncDir(dir);
  return Buffer.byteLength(text);
}

/** fsyncs a directory so a rename or unlink inside it is durable. */
export async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
