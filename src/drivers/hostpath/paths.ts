// Validation of paths handed in by the CO (target_path, staging_target_path, volume_path).
// Invariant: a path that passes is absolute, already normalized (no `.`/`..` segments, no
// doubled or trailing slash), free of NUL and control characters, not `/`, and neither the
// driver's state dir nor anything inside it — so a request can never make the driver mount
// over, or delete, its own data — and strictly inside one of the allowed roots (the kubelet's
// directory on a real node), so it can never mount over or remove anything else on the host.

import { realpath } from "node:fs/promises";
import { isAbsolute, normalize, sep } from "node:path";

const MAX_PATH = 4096;

export interface PathRules {
  /** The driver's state dir (absolute, normalized). */
  stateDir: string;
  /** Directories a path must lie strictly inside (absolute, normalized; see resolveRoots). */
  allowedRoots: readonly string[];
}

/** Returns why `path` is unacceptable, or undefined when it is fine. */
export function pathProblem(path: string, rules: PathRules): string | undefined {
  if (path.length > MAX_PATH) return `is longer than ${MAX_PATH} characters`;
  if (/[\u0000-\u001f]/.test(path)) return "contains control characters";
  if (!isAbsolute(path)) return "must be an absolute path";
  if (path.split("/").includes("..")) return "must not contain '..'";
  if (normalize(path) !== path || (path.length > 1 && path.endsWith(sep)))
    return "must be normalized (no '.', '//' or trailing '/')";
  if (path === "/") return "must not be the root directory";
  if (isInside(path, rules.stateDir)) return "must not be inside the driver's state directory";
  if (!rules.allowedRoots.some((root) => path !== root && isInside(path, root)))
    return `is not strictly inside an allowed root (--allowed-path-roots: ${rules.allowedRoots.join(", ")})`;
  return undefined;
}

/** True when `path` equals `dir` or lies below it. Both must be absolute and normalized. */
export function isInside(path: string, dir: string): boolean {
  const base = dir.endsWith(sep) ? dir.slice(0, -1) : dir;
  return path === base || path.startsWith(base + sep);
}

/**
 * Each configured root as given (normalized) and, when it exists and differs, its symlink-free
 * real path: the CO may name paths either way. A root that does not exist yet is kept as given.
 */
export async function resolveRoots(roots: readonly string[]): Promise<string[]> {
  const resolved = new Set<string>();
  for (const root of roots) {
    resolved.add(root);
    try {
      resolved.add(await realpath(root));
    } catch {
      // Not there (yet): only the given spelling can match.
    }
  }
  return [...resolved];
}
