// `csikit up --walkthrough`: alone it runs the whole walkthrough (with the growth step), `=expand`
// the expansion one, `=false` none; anything else is a flag error naming the choices. A bad
// --feature-gates ends `up` before it starts anything.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { FlagError, Flags, LOGGING_FLAGS, parseFlags } from "../base/index.ts";
import { upCommand, walkthroughOf } from "./up.ts";

const MAIN = fileURLToPath(new URL("./main.ts", import.meta.url));

const which = (argv: readonly string[]) =>
  walkthroughOf(new Flags(parseFlags({ ...LOGGING_FLAGS, ...upCommand.flags }, argv)).string("walkthrough"));

test("--walkthrough alone, =expand, =true, =false and absent", () => {
  assert.equal(which(["--walkthrough", "--exit"]), "all");
  assert.equal(which(["--walkthrough=expand"]), "expand");
  assert.equal(which(["--walkthrough=true"]), "all");
  assert.equal(which(["--walkthrough=false"]), undefined);
  assert.equal(which([]), undefined);
  assert.throws(
    () => which(["--walkthrough=grow"]),
    (error: unknown) => error instanceof FlagError && /-walkthrough: want all or expand/.test(error.message),
  );
});

test("--feature-gates: a removed or malformed gate fails up at once (exit 2, naming it), before any state is made", async () => {
  const base = await mkdtemp(join(tmpdir(), "csikit-upfg-"));
  try {
    for (const [gate, message, version] of [
      [
        "CSIMigrationGCE=false",
        /unrecognized feature gate: CSIMigrationGCE \(GA and removed upstream/,
        "1.37",
      ],
      [
        "CSIMigrationPortworx=maybe",
        /invalid value of CSIMigrationPortworx=maybe, want true or false/,
        "1.37",
      ],
      // A storage gate is known from its release on: 1.34's cluster has no VolumeLimitScaling.
      [
        "VolumeLimitScaling=true",
        /VolumeLimitScaling \(introduced in Kubernetes 1\.35, not in 1\.34\)/,
        "1.34",
      ],
    ] as const) {
      const run = spawnSync(
        process.execPath,
        [
          MAIN,
          "up",
          `--state-dir=${join(base, "s")}`,
          `--kubernetes-version=${version}`,
          `--feature-gates=${gate}`,
        ],
        {
          encoding: "utf8",
          timeout: 60_000,
        },
      );
      assert.equal(run.status, 2, run.stderr);
      assert.match(run.stderr, message);
      assert.equal(existsSync(join(base, "s")), false, "no state dir made");
    }
  } finally {
    await rm(base, { recursive: true, force: true });
  }
});

test("--kubernetes-version: a release csikit cannot act as fails up at once (exit 2), before any state is made", async () => {
  const base = await mkdtemp(join(tmpdir(), "csikit-upkv-"));
  try {
    const run = spawnSync(
      process.execPath,
      [MAIN, "up", `--state-dir=${join(base, "s")}`, "--kubernetes-version=1.30"],
      {
        encoding: "utf8",
        timeout: 60_000,
      },
    );
    assert.equal(run.status, 2, run.stderr);
    assert.match(
      run.stderr,
      /kubernetes-version: unsupported Kubernetes version "1.30": want one of 1.32, 1.33, 1.34, 1.35, 1.36, 1.37/,
    );
    assert.equal(existsSync(join(base, "s")), false, "no state dir made");
  } finally {
    await rm(base, { recursive: true, force: true });
  }
});
