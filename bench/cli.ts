// The command line every benchmark shares: the same Go-style flags as csikit's commands,
// `--help` printed from the flag specs, and a bad flag answered in one line with exit code 2,
// as `csikit <command>` answers it, instead of a stack trace.

import { spawnSync } from "node:child_process";
import { FlagError, Flags, formatHelp, parseFlags, type FlagSpecs } from "../src/base/index.ts";
import { csikitVersion } from "../src/cli/command.ts";

/**
 * Parses this process's arguments for `npm run bench:<name>`. Prints the help and exits 0 on
 * `--help`, prints csikit's version on `--version`, and exits 2 on a flag it cannot parse.
 */
export function benchFlags(name: string, specs: FlagSpecs, description?: string): Flags {
  const usage = `npm run bench:${name} -- [flags]`;
  let flags: Flags;
  try {
    flags = new Flags(parseFlags(specs, process.argv.slice(2)));
  } catch (error) {
    if (!(error instanceof FlagError)) throw error;
    process.stderr.write(`bench:${name}: ${error.message}\n`);
    process.exit(2);
  }
  if (flags.parsed.help) {
    process.stdout.write(formatHelp(usage, specs, description));
    process.exit(0);
  }
  if (flags.parsed.version) {
    process.stdout.write(`csikit ${csikitVersion()} (bench:${name}, node ${process.version})\n`);
    process.exit(0);
  }
  return flags;
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
