// The command line every benchmark shares: csikit's flags and `--help` (parseProgramFlags), and
// the private mount namespace the benchmarks that mount run in as root.

import { spawnSync } from "node:child_process";
import type { Flags, FlagSpecs } from "../src/base/index.ts";
import { parseProgramFlags } from "../src/cli/command.ts";

/** Parses this process's arguments for `npm run bench:<name>` (`parseProgramFlags`). */
export function benchFlags(name: string, specs: FlagSpecs, description?: string): Flags {
  return parseProgramFlags(`bench:${name}`, `npm run bench:${name} -- [flags]`, specs, description);
}

/** Set in the re-run child, so it runs the benchmark instead of re-running again. */
const IN_MOUNT_NAMESPACE = "CSIKIT_BENCH_IN_MOUNT_NS";

/**
 * As root, runs this benchmark again (same arguments) in a private mount namespace, so no mount
 * it makes can outlive it or show on the host, and returns that run's exit code. Returns
 * undefined when the benchmark should run in this process: not root, no `unshare`, or already
 * inside the namespace.
 */
export function rerunInPrivateMountNamespace(script: string): number | undefined {
  if (process.getuid?.() !== 0 || process.env[IN_MOUNT_NAMESPACE] === "1") return undefined;
  if (spawnSync("unshare", ["--version"]).status !== 0) return undefined;
  const child = spawnSync(
    "unshare",
    ["-m", "--propagation", "private", process.execPath, script, ...process.argv.slice(2)],
    { stdio: "inherit", env: { ...process.env, [IN_MOUNT_NAMESPACE]: "1" } },
  );
  return child.status ?? 1;
}
