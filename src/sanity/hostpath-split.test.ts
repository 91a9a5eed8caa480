// Runs the sanity suite against a split deployment: two real hostpath processes' worth of
// servers (in-process, on two sockets, sharing one state dir — one controller instance, one node
// instance, as the driver's README allows) reached through --endpoint (node) and
// --controller-endpoint (controller). Controller tests must really run against the controller
// endpoint (a run that skips them all would pass without testing anything), and a node endpoint
// without the Node service must make the Node tests skip with a reason that says so.
// As root the file re-executes itself under `unshare -m` like hostpath.test.ts.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";
import type { TestContext } from "node:test";
import { fileURLToPath } from "node:url";
import { DEFAULT_MUTABLE_PARAMETERS, serveHostpathDriver } from "../drivers/index.ts";
import { catalogue, runSanity } from "./index.ts";
import type { SanityReport, ServiceName } from "./index.ts";
import { defer, tempDir } from "../../test/harness/cleanup.ts";

const NAMESPACE_ENV = "CSIKIT_SANITY_SPLIT_IN_MOUNT_NS";
const isRoot = process.getuid?.() === 0;
const inNamespace = process.env[NAMESPACE_ENV] === "1";
const hasUnshare = spawnSync("unshare", ["--version"]).status === 0;

/** One controller-only and one node-only hostpath server over one state dir. */
async function splitDriver(
  t: TestContext,
): Promise<{ dir: string; nodePath: string; controllerPath: string }> {
  const dir = await tempDir(t, "csikit-sanity-split-");
  const common = {
    nodeId: "sanity-node",
    stateDir: join(dir, "state"),
    vendorVersion: "0.0.0-test",
    // The suite's staging and target dirs are made under `dir`.
    allowedPathRoots: [dir],
    enableControllerModifyVolume: true,
    enableSnapshotMetadata: true,
  };
  const controller = await serveHostpathDriver({
    ...common,
    endpoint: join(dir, "controller.sock"),
    nodeService: false,
  });
  defer(t, () => controller.close());
  const node = await serveHostpathDriver({
    ...common,
    endpoint: join(dir, "node.sock"),
    controllerService: false,
  });
  defer(t, () => node.close());
  return { dir, nodePath: node.path, controllerPath: controller.path };
}

function passedBy(report: SanityReport): Record<ServiceName, number> {
  const counts: Record<ServiceName, number> = { Identity: 0, Controller: 0, Node: 0, GroupController: 0 };
  for (const r of report.results) if (r.outcome === "passed") counts[r.service]++;
  return counts;
}

function failures(report: SanityReport): string {
  return report.results
    .filter((r) => r.outcome === "failed")
    .map((r) => `${r.service} ${r.group}: ${r.name} — ${r.reason ?? ""}`)
    .join("\n");
}

if (isRoot && hasUnshare && !inNamespace) {
  test("sanity against split hostpath (in a private mount namespace)", { timeout: 600_000 }, () => {
    const child = spawnSync(
      "unshare",
      ["-m", "--propagation", "private", process.execPath, fileURLToPath(import.meta.url)],
      { env: { ...process.env, [NAMESPACE_ENV]: "1" }, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
    );
    assert.equal(
      child.status,
      0,
      `split sanity run in the mount namespace failed:\n${child.stdout}\n${child.stderr}`,
    );
  });
} else {
  test(
    "sanity against hostpath split into controller and node endpoints",
    { timeout: 600_000 },
    async (t) => {
      const { dir, nodePath, controllerPath } = await splitDriver(t);
      const report = await runSanity({
        endpoint: nodePath,
        controllerEndpoint: controllerPath,
        stagingDir: join(dir, "staging"),
        targetDir: join(dir, "target"),
        testVolumeSize: 4 * 1024 * 1024,
        mutableParameters: Object.fromEntries(DEFAULT_MUTABLE_PARAMETERS.map((key) => [key, "1000"])),
      });
      const passed = passedBy(report);
      t.diagnostic(`${report.passed} passed, ${report.failed} failed, ${report.skipped} skipped`);
      t.diagnostic(`passed per service: ${JSON.stringify(passed)}`);
      assert.equal(report.failed, 0, `sanity failures:\n${failures(report)}`);
      assert.equal(report.results.length, catalogue().length);
      const serviceSkips = report.results.filter((r) =>
        /CONTROLLER_SERVICE|Node service/.test(r.reason ?? ""),
      );
      assert.deepEqual(serviceSkips, [], "no test skips for a service one of the endpoints serves");
      for (const r of report.results.filter((result) => result.outcome === "skipped")) {
        assert.match(
          r.reason ?? "",
          /^(driver (lacks|has) (plugin|controller|node|group controller) capability [A-Z_]+|needs mount privilege: .+)$/,
        );
      }
      assert.ok(
        passed.Controller >= 80,
        `Controller tests ran against --controller-endpoint: ${passed.Controller}`,
      );
      assert.ok(passed.GroupController >= 10, `GroupController tests ran: ${passed.GroupController}`);
      // Without mount privilege the mounting Node tests skip (for that reason, checked above); the
      // rest must still have run against --endpoint.
      const minimumNode = isRoot ? 30 : 10;
      assert.ok(passed.Node >= minimumNode, `Node tests ran against --endpoint: ${passed.Node}`);
      if (isRoot) {
        const lifecycle = report.results.filter((r) => r.group === "Lifecycle" && r.outcome === "passed");
        assert.ok(lifecycle.length > 0, "as root the mounting lifecycle tests ran across both endpoints");
      }
      assert.deepEqual(report.warnings, []);
    },
  );

  test("an --endpoint without the Node service skips the Node tests and says why", async (t) => {
    const { dir, controllerPath } = await splitDriver(t);
    const report = await runSanity({
      endpoint: controllerPath,
      stagingDir: join(dir, "staging"),
      targetDir: join(dir, "target"),
      testVolumeSize: 4 * 1024 * 1024,
      focus:
        /^(Node NodeGetCapabilities|Node NodeGetInfo|Controller CreateVolume|Controller ControllerPublishVolume) /,
    });
    assert.equal(report.failed, 0, `sanity failures:\n${failures(report)}`);
    const node = report.results.filter((r) => r.service === "Node");
    assert.ok(node.length > 0);
    for (const r of node) {
      assert.equal(r.outcome, "skipped", `${r.group}: ${r.name}`);
      assert.match(
        r.reason ?? "",
        /^no Node service at --endpoint \(NodeGetCapabilities answered UNIMPLEMENTED\)$/,
      );
    }
    const publish = report.results.filter((r) => r.group === "ControllerPublishVolume");
    assert.ok(publish.some((r) => r.outcome === "skipped" && /no Node service/.test(r.reason ?? "")));
    assert.ok(passedBy(report).Controller > 0, "Controller tests still ran");
  });
}
