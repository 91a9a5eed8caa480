// Validation of paths handed in by the CO (target_path, staging_target_path, volume_path).
// Invariant: a path that passes is absolute, already normalized (no `.`/`..` segments, no
// doubled or trailing slash), free of NUL and control characters, not `/`, and neither the
// driver's state dir nor anything inside it — so a request can never make the driver mount
// over, or delete, its own data.

import { isAbsolute, normalize, sep } from "node:path";

const MAX_PATH = 4096;

/** Returns why `path` is unacceptable, or undefined when it is fine. */
export function pathProblem(path: string, stateDir: string): string | undefined {
  if (path.length > MAX_PATH) return `is longer than ${MAX_PATH} characters`;
  if (/[\u0000-\u001f]/.test(path)) return "contains control characters";
  if (!isAbsolute(path)) return "must be an absolute path";
  if (path.split("/").includes("..")) return "must not contain '..'";
  if (normalize(path) !== path || (path.length > 1 && path.endsWith(sep)))
    return "must be normalized (no '.', '//' or trailing '/')";
  if (path === "/") return "must not be the root directory";
  if (isInside(path, stateDir)) return "must not be inside the driver's state directory";
  return undefined;
}

/** True when `path` equals `dir` or lies below it. Both must be absolute and normalized. */
export function isInside(path: string, dir: string): boolean {
  const base = dir.endsWith(sep) ? dir.slice(0, -1) : dir;
  return path === base || path.startsWith(base + sep);
}
