// Runs the whole sanity suite against the real hostpath driver on a temp Unix socket: no test
// may fail, and a test may be skipped only for a capability the driver lacks or a missing mount
// privilege. As root, the suite runs in a private mount namespace (re-executing this file under
// `unshare -m`), so every mount the driver makes vanishes with the namespace whatever happens.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { DEFAULT_MUTABLE_PARAMETERS, serveHostpathDriver } from "../drivers/index.ts";
import { catalogue, runSanity } from "./index.ts";
import { defer, tempDir } from "../../test/harness/cleanup.ts";

const NAMESPACE_ENV = "CSIKIT_SANITY_IN_MOUNT_NS";
const isRoot = process.getuid?.() === 0;
const inNamespace = process.env[NAMESPACE_ENV] === "1";
const hasUnshare = spawnSync("unshare", ["--version"]).status === 0;

/** What a skip may be for: a capability the driver lacks (or has), or mount privilege. */
const ALLOWED_SKIP =
  /^(driver (lacks|has) (plugin|controller|node|group controller) capability [A-Z_]+|needs mount privilege: .+)$/;

if (isRoot && hasUnshare && !inNamespace) {
  test("sanity against hostpath (in a private mount namespace)", { timeout: 600_000 }, () => {
    const child = spawnSync(
      "unshare",
      ["-m", "--propagation", "private", process.execPath, fileURLToPath(import.meta.url)],
      { env: { ...process.env, [NAMESPACE_ENV]: "1" }, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
    );
    assert.equal(
      child.status,
      0,
      `sanity run in the mount namespace failed:\n${child.stdout}\n${child.stderr}`,
    );
  });
} else {
  test("sanity against hostpath", { timeout: 600_000 }, async (t) => {
    const dir = await tempDir(t, "csikit-sanity-hostpath-");
    const driver = await serveHostpathDriver({
      endpoint: join(dir, "csi.sock"),
      nodeId: "sanity-node",
      stateDir: join(dir, "state"),
      vendorVersion: "0.0.0-test",
      allowedPathRoots: [dir],
      enableControllerModifyVolume: true,
      enableSnapshotMetadata: true,
    });
    defer(t, () => driver.close());
    const lines: string[] = [];
    const report = await runSanity({
      endpoint: driver.path,
      stagingDir: join(dir, "staging"),
      targetDir: join(dir, "target"),
      testVolumeSize: 4 * 1024 * 1024,
      mutableParameters: Object.fromEntries(DEFAULT_MUTABLE_PARAMETERS.map((key) => [key, "1000"])),
      onResult: (r) =>
        lines.push(`${r.outcome} ${r.service} ${r.group}: ${r.name}${r.reason ? ` — ${r.reason}` : ""}`),
    });
    const text = lines.join("\n");
    t.diagnostic(`${report.passed} passed, ${report.failed} failed, ${report.skipped} skipped`);
    assert.equal(
      report.failed,
      0,
      `sanity failures:\n${lines.filter((l) => l.startsWith("failed")).join("\n")}`,
    );
    assert.equal(report.results.length, catalogue().length, "every test of the catalogue is reported");
    for (const result of report.results.filter((r) => r.outcome === "skipped")) {
      assert.match(
        result.reason ?? "",
        ALLOWED_SKIP,
        `skip of ${result.group}: ${result.name} is not for a capability or mount privilege`,
      );
    }
    if (isRoot) {
      const mountSkips = report.results.filter((r) => r.reason?.startsWith("needs mount privilege"));
      assert.equal(mountSkips.length, 0, `as root nothing may skip for mount privilege:\n${text}`);
    }
    const metadata = report.results.filter((r) => r.group.startsWith("GetMetadata"));
    assert.ok(metadata.length >= 8, "the SnapshotMetadata tests are in the catalogue");
    for (const r of metadata) assert.equal(r.outcome, "passed", `${r.group}: ${r.name} ${r.reason ?? ""}`);
    // csi-test v5.5's new rules run (hostpath v1.18 advertises GET_SNAPSHOT and the node's
    // SINGLE_NODE_MULTI_WRITER) and pass.
    for (const group of ["GetSnapshot", "NodePublishVolume SINGLE_NODE_SINGLE_WRITER"]) {
      const results = report.results.filter((r) => r.group === group);
      assert.ok(results.length >= 3, `the ${group} tests are in the catalogue`);
      for (const r of results) {
        // Unprivileged, the publish tests skip for mount privilege (checked above as allowed).
        if (!isRoot && r.outcome === "skipped" && r.reason?.startsWith("needs mount privilege")) continue;
        assert.equal(r.outcome, "passed", `${r.group}: ${r.name} ${r.reason ?? ""}`);
      }
    }
    assert.deepEqual(report.warnings, []);
  });
}
