// What a private write leaves visible in its directory while it runs: the names created there
// (inotify), to check that temp files are named unpredictably (writeAtomic: hidden, 96 random
// bits) and none is left behind.

import { watch } from "node:fs";

/** Names created in `dir` while `work` runs (inotify), waiting (bounded) until `last` shows. */
export async function namesCreatedDuring(
  dir: string,
  last: string,
  work: () => Promise<void>,
): Promise<string[]> {
  const names: string[] = [];
  let seen: () => void = () => {};
  const lastSeen = new Promise<void>((resolve) => (seen = resolve));
  const watcher = watch(dir, (_event, name) => {
    if (name === null) return;
    names.push(name);
    if (name === last) seen();
  });
  try {
    await work();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      lastSeen,
      new Promise(
        (_, reject) => (timer = setTimeout(() => reject(new Error(`no event for ${last}`)), 10_000)),
      ),
    ]).finally(() => clearTimeout(timer));
  } finally {
    watcher.close();
  }
  return [...new Set(names)];
}

/** A temp name as writeAtomic makes it: hidden, 96 random bits. */
export const UNPREDICTABLE_TEMP = /^\..+\.tmp-[0-9a-f]{24}$/;
