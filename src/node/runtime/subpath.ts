// Resolving a volumeMount's subPath inside its volume, as the kubelet's subpath preparation does:
// the path must be relative and free of "..", and every component is walked one at a time —
// a missing directory is created (with the volume root's permissions), a symlink is followed
// only when it resolves inside the volume. A symlink leading out (to /bin, to a file or a
// missing path outside, or "../") fails, so a container can never bind anything of the host
// through a link planted in its volume. Every failure names the subPath (the kubelet's
// CreateContainerConfigError message does, and upstream's e2e looks for it).

import { lstat, mkdir, realpath, stat } from "node:fs/promises";
import { join } from "node:path";
import { errorMessage } from "../../base/index.ts";

const inside = (base: string, path: string): boolean => path === base || path.startsWith(`${base}/`);

async function walk(volumePath: string, subPath: string): Promise<string> {
  if (subPath.startsWith("/")) throw new Error(`subPath "${subPath}" must be a relative path`);
  if (subPath.split("/").includes("..")) throw new Error(`subPath "${subPath}" must not contain ".."`);
  const base = await realpath(volumePath);
  const mode = (await stat(base)).mode & 0o777;
  let current = base;
  for (const component of subPath.split("/")) {
    if (component === "" || component === ".") continue;
    const next = join(current, component);
    const info = await lstat(next).catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return undefined;
      throw error;
    });
    if (info === undefined) {
      await mkdir(next, { mode });
      current = next;
      continue;
    }
    if (info.isSymbolicLink()) {
      const target = await realpath(next).catch(() => undefined);
      if (target === undefined || !inside(base, target))
        throw new Error(`subPath "${subPath}" leads through symlink "${component}" out of the volume`);
      current = target;
      continue;
    }
    current = next;
  }
  return current;
}

/** The host path a subPath of the volume at `volumePath` binds; creates missing directories. */
export async function resolveSubPath(
  volumePath: string,
  subPath: string,
  where: { mount: string; container: string },
): Promise<string> {
  try {
    return await walk(volumePath, subPath);
  } catch (error) {
    throw new Error(
      `failed to prepare subPath for volumeMount "${where.mount}" of container "${where.container}": ${errorMessage(error)}`,
      { cause: error },
    );
  }
}
