// Where `csikit up` may mount. As root it mounts for real, in the host's mount namespace. Not
// root, it re-executes itself in a new user + mount namespace (`unshare -rm`, as the hostpath
// tests do), where it is root over its own mounts: the whole process tree runs there, mounts
// are real bind mounts, and they vanish with the namespace. Loop devices (raw block volumes)
// still need real root.

import { spawn, spawnSync } from "node:child_process";

const NAMESPACE_ENV = "CSIKIT_UP_IN_USER_NS";

/** True inside the namespace `up` re-executed itself into. */
export function inUserMountNamespace(): boolean {
  return process.env[NAMESPACE_ENV] === "1";
}

/** Why `up` cannot mount here, or undefined when it can (root, or unshare -rm works). */
export function mountProblem(): string | undefined {
  if (process.getuid?.() === 0) return undefined;
  const probe = spawnSync("unshare", ["-rm", "true"], { stdio: "ignore" });
  if (probe.error) return "not root and `unshare` is not installed: volumes cannot be mounted";
  if (probe.status !== 0)
    return "not root and unprivileged user namespaces are disabled (unshare -rm failed): volumes cannot be mounted; run as root";
  return undefined;
}

/**
 * Runs `argv` (this process's own command line) again under `unshare -rm` and resolves with
 * its exit code. SIGINT/SIGTERM are forwarded to the child; this process only waits, so the
 * child's ordered teardown is what ends the run.
 */
export async function reexecInUserMountNamespace(argv: readonly string[]): Promise<number> {
  const child = spawn("unshare", ["-rm", "--propagation", "private", process.execPath, ...argv], {
    // Its own process group: a terminal's Ctrl-C reaches this process alone and is forwarded
    // once (a second SIGINT would cut the child's teardown short).
    stdio: ["ignore", "inherit", "inherit"],
    detached: true,
    env: { ...process.env, [NAMESPACE_ENV]: "1" },
  });
  const forward = (signal: NodeJS.Signals): void => {
    child.kill(signal);
  };
  process.on("SIGINT", forward);
  process.on("SIGTERM", forward);
  return new Promise((resolve) => {
    child.once("close", (code, signal) => {
      process.off("SIGINT", forward);
      process.off("SIGTERM", forward);
      resolve(code ?? (signal ? 1 : 0));
    });
  });
}
