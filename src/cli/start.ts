// `csikit start` (what `npm start` runs until `csikit up` exists): starts the hostpath driver
// in-process on a socket under the state dir, runs the whole sanity suite against it with fresh
// temp staging/target dirs (the driver's only allowed path roots), prints the results and the
// summary, stops the driver, and exits non-zero on any failure.
//
// As root, the run re-executes itself inside a private mount namespace (`unshare -m`), so the
// driver's real mounts can never outlive the run or show up on the host.

import { spawnSync } from "node:child_process";
import { mkdir, mkdtemp, rmdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { DEFAULT_MUTABLE_PARAMETERS, serveHostpathDriver } from "../drivers/index.ts";
import type { Command } from "./command.ts";
import { runAndReport } from "./sanity.ts";

const NAMESPACE_ENV = "CSIKIT_START_IN_MOUNT_NS";

/** Re-runs this command in a private mount namespace; undefined when that is not possible or needed. */
function inMountNamespace(argv: readonly string[]): number | undefined {
  if (process.getuid?.() !== 0 || process.env[NAMESPACE_ENV] === "1") return undefined;
  if (spawnSync("unshare", ["--version"]).status !== 0) return undefined;
  const child = spawnSync("unshare", ["-m", "--propagation", "private", process.execPath, ...argv], {
    stdio: "inherit",
    env: { ...process.env, [NAMESPACE_ENV]: "1" },
  });
  return child.status ?? 1;
}

export const startCommand: Command = {
  name: "start",
  summary: "Start the hostpath driver and run the sanity suite against it (what `npm start` does)",
  usage: "csikit start [--state-dir=.csikit] [--focus=REGEX] [--skip=REGEX] [--junit=FILE]",
  description:
    "The driver keeps its state under <state-dir>/hostpath and listens on <state-dir>/hostpath.sock.\n" +
    "Without root the node service may not mount: those tests are skipped with the reason.",
  flags: {
    "state-dir": { type: "string", default: ".csikit", help: "Directory for csikit's state." },
    focus: { type: "string", help: "Run only sanity tests whose full name matches this regular expression." },
    skip: { type: "string", help: "Skip sanity tests whose full name matches this regular expression." },
    junit: { type: "string", help: "Also write the sanity results as JUnit XML to this file." },
  },
  async run(context) {
    const reexec = inMountNamespace(process.argv.slice(1));
    if (reexec !== undefined) return reexec;
    const { flags, signal } = context;
    const stateDir = resolve(flags.string("state-dir"));
    await mkdir(stateDir, { recursive: true, mode: 0o700 });
    // Staging and target dirs live in one fresh temp parent, the only root the driver may
    // mount under; removed non-recursively at the end so a leftover mount is never traversed.
    const scratch = await mkdtemp(join(tmpdir(), "csikit-start-"));
    const stagingDir = join(scratch, "staging");
    const targetDir = join(scratch, "target");
    await mkdir(stagingDir);
    await mkdir(targetDir);
    const removeScratch = async (): Promise<void> => {
      for (const dir of [stagingDir, targetDir, scratch])
        await rmdir(dir).catch((error: unknown) =>
          context.logger.warn("left a temp dir in place", { dir, reason: String(error) }),
        );
    };
    const driver = await serveHostpathDriver(
      {
        endpoint: join(stateDir, "hostpath.sock"),
        nodeId: "csikit-node",
        stateDir: join(stateDir, "hostpath"),
        allowedPathRoots: [scratch],
        // The suite's ModifyVolume and SnapshotMetadata tests run too (upstream's defaults leave
        // both off).
        enableControllerModifyVolume: true,
        enableSnapshotMetadata: true,
        logger: context.logger,
      },
      signal,
    ).catch(async (error: unknown) => {
      await removeScratch();
      throw error;
    });
    try {
      context.stdout.write(`hostpath driver ${driver.config.driverName} on ${driver.path}\n`);
      const focus = flags.string("focus");
      const skip = flags.string("skip");
      const report = await runAndReport(
        {
          endpoint: driver.path,
          stagingDir,
          targetDir,
          // Values are opaque to hostpath; the keys are the ones it accepts.
          mutableParameters: Object.fromEntries(DEFAULT_MUTABLE_PARAMETERS.map((key) => [key, "1000"])),
          ...(focus ? { focus: new RegExp(focus) } : {}),
          ...(skip ? { skip: new RegExp(skip) } : {}),
        },
        context,
        flags.string("junit"),
      );
      return report.failed > 0 || signal.aborted ? 1 : 0;
    } finally {
      await driver.close();
      await removeScratch();
    }
  },
};
