// Tests of the sanity framework itself, against a small scripted CSI server on a real socket:
// capability and mount gates, cleanup after failures, per-test timeouts, focus/skip, the
// closing line, and JUnit XML.

import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test, type TestContext as NodeTestContext } from "node:test";
import { CsiError, GrpcStatus, serveCsi } from "../csi/index.ts";
import type { ControllerServiceCapability_RPC_Type } from "../csi/index.ts";
import { check } from "./expect.ts";
import { capabilityGate, describe, selectTests } from "./framework.ts";
import type { SanityTest } from "./framework.ts";
import { formatJUnit, formatText, summaryLine } from "./report.ts";
import type { SanityReport } from "./report.ts";
import { ordered, runSanity } from "./runner.ts";
import { parseLabelFilter } from "./label-filter.ts";
import type { SanityOptions } from "./config.ts";

interface FakeDriver {
  endpoint: string;
  calls: string[];
}

/** A CSI server with the given controller capabilities whose node may not mount. */
/** Released when the test that creates a "slow-" volume times out. */
const slowRelease = Promise.withResolvers<void>();

async function fakeDriver(
  t: NodeTestContext,
  controllerCaps: ControllerServiceCapability_RPC_Type[],
): Promise<FakeDriver> {
  const dir = await mkdtemp(join(tmpdir(), "csikit-sanity-fw-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const calls: string[] = [];
  let next = 0;
  const server = await serveCsi({
    endpoint: join(dir, "csi.sock"),
    identity: {
      getPluginInfo: async () => ({ name: "fake.csi.test", vendorVersion: "1" }),
      getPluginCapabilities: async () => ({ capabilities: [{ service: { type: "CONTROLLER_SERVICE" } }] }),
      probe: async () => ({ ready: { value: true } }),
    },
    controller: {
      controllerGetCapabilities: async () => ({
        capabilities: controllerCaps.map((type) => ({ rpc: { type } })),
      }),
      createVolume: async (request) => {
        // A slow driver: the call is held until the test that made it has timed out (explicit
        // synchronization, not a delay that must outlast the deadline).
        if (request.name.startsWith("slow-")) await slowRelease.promise;
        calls.push(`CreateVolume ${request.name}`);
        return { volume: { volumeId: `vol-${++next}`, capacityBytes: "1048576" } };
      },
      deleteVolume: async (request) => {
        calls.push(`DeleteVolume ${request.volumeId}`);
        return {};
      },
    },
    node: {
      nodeGetCapabilities: async () => ({ capabilities: [] }),
      nodeGetInfo: async () => ({ nodeId: "fake-node" }),
      nodePublishVolume: async (request) => {
        calls.push(`NodePublishVolume ${request.volumeId}`);
        throw new CsiError(GrpcStatus.FAILED_PRECONDITION, "this process may not mount (not root)");
      },
      nodeUnpublishVolume: async (request) => {
        calls.push(`NodeUnpublishVolume ${request.volumeId}`);
        return {};
      },
    },
  });
  t.after(() => server.close());
  return { endpoint: server.path, calls };
}

async function run(
  t: NodeTestContext,
  driver: FakeDriver,
  tests: SanityTest[],
  extra: Partial<SanityOptions> = {},
): Promise<SanityReport> {
  const dir = await mkdtemp(join(tmpdir(), "csikit-sanity-fw-dirs-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return runSanity({
    endpoint: driver.endpoint,
    stagingDir: join(dir, "s"),
    targetDir: join(dir, "t"),
    tests,
    ...extra,
  });
}

const outcome = (report: SanityReport, name: string) => report.results.find((r) => r.name === name);

test("capabilityGate names the missing capability and honours negation", () => {
  const caps = {
    plugin: new Set(["CONTROLLER_SERVICE"]),
    controller: new Set(["LIST_VOLUMES"]),
    node: new Set<string>(),
    group: new Set<string>(),
  };
  assert.equal(capabilityGate(["controller:LIST_VOLUMES"], caps), undefined);
  assert.equal(
    capabilityGate(["controller:CREATE_DELETE_VOLUME"], caps),
    "driver lacks controller capability CREATE_DELETE_VOLUME",
  );
  assert.equal(
    capabilityGate(["group:CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT"], caps),
    "driver lacks group controller capability CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT",
  );
  assert.equal(
    capabilityGate(["!plugin:CONTROLLER_SERVICE"], caps),
    "driver has plugin capability CONTROLLER_SERVICE",
  );
  assert.equal(capabilityGate(["!node:STAGE_UNSTAGE_VOLUME"], caps), undefined);
});

test("selectTests applies focus, then skip, to `Service Group name`", () => {
  const tests = describe("Controller", "CreateVolume", {}, ({ it }) => {
    it("alpha", async () => {});
    it("beta", async () => {});
  });
  assert.deepEqual(
    selectTests(tests, { focus: /CreateVolume/ }).map((x) => x.name),
    ["alpha", "beta"],
  );
  assert.deepEqual(
    selectTests(tests, { focus: /^Controller CreateVolume beta$/ }).map((x) => x.name),
    ["beta"],
  );
  assert.deepEqual(
    selectTests(tests, { skip: /alpha/ }).map((x) => x.name),
    ["beta"],
  );
  assert.deepEqual(
    selectTests(tests, { focus: /Node/ }).map((x) => x.name),
    [],
  );
});

test("runs tests, skips by capability, fails with the reason, and cleans up after a failing test", async (t) => {
  const driver = await fakeDriver(t, ["CREATE_DELETE_VOLUME"]);
  const tests = describe("Controller", "Demo", { requires: ["plugin:CONTROLLER_SERVICE"] }, ({ it }) => {
    it("passes", async (t) => {
      await t.createVolume();
    });
    it("needs snapshots", { requires: ["controller:CREATE_DELETE_SNAPSHOT"] }, async () => {
      throw new Error("must not run");
    });
    it("fails after creating volumes", async (t) => {
      await t.createVolume();
      await t.createVolume();
      check(false, "deliberate failure");
    });
  });
  const report = await run(t, driver, tests);
  assert.equal(outcome(report, "passes")?.outcome, "passed");
  assert.deepEqual(
    {
      outcome: outcome(report, "needs snapshots")?.outcome,
      reason: outcome(report, "needs snapshots")?.reason,
    },
    { outcome: "skipped", reason: "driver lacks controller capability CREATE_DELETE_SNAPSHOT" },
  );
  assert.deepEqual(
    {
      outcome: outcome(report, "fails after creating volumes")?.outcome,
      reason: outcome(report, "fails after creating volumes")?.reason,
    },
    { outcome: "failed", reason: "deliberate failure" },
  );
  const created = driver.calls.filter((c) => c.startsWith("CreateVolume")).length;
  assert.equal(created, 3);
  // Every volume is deleted, newest first within a test.
  assert.deepEqual(
    driver.calls.filter((c) => c.startsWith("DeleteVolume")),
    ["DeleteVolume vol-1", "DeleteVolume vol-3", "DeleteVolume vol-2"],
  );
  assert.equal(summaryLine(report), "1 passed, 1 failed, 1 skipped");
  assert.match(formatText(report), /\n1 passed, 1 failed, 1 skipped\n$/);
});

test("a node that may not mount skips mounting tests with its reason, and cleans up", async (t) => {
  const driver = await fakeDriver(t, ["CREATE_DELETE_VOLUME"]);
  let secondRan = false;
  const tests = describe("Node", "Lifecycle", {}, ({ it }) => {
    it("first mount", { mounts: true }, async (t) => {
      const capability = t.mountCapability();
      const volume = await t.createVolume({ volumeCapabilities: [capability] });
      await t.publish(volume, capability, { stagingPath: undefined, publishContext: {} });
    });
    it("second mount", { mounts: true }, async () => {
      secondRan = true;
    });
    it("no mount", async () => {});
  });
  const report = await run(t, driver, tests);
  const reason = "needs mount privilege: this process may not mount (not root)";
  assert.deepEqual(
    report.results.map((r) => [r.name, r.outcome, r.reason]),
    [
      ["first mount", "skipped", reason],
      ["second mount", "skipped", reason],
      ["no mount", "passed", undefined],
    ],
  );
  assert.equal(secondRan, false);
  assert.match(driver.calls[0] ?? "", /^CreateVolume sanity-volume-/);
  assert.deepEqual(driver.calls.slice(1), [
    "NodePublishVolume vol-1",
    "NodeUnpublishVolume vol-1",
    "DeleteVolume vol-1",
  ]);
});

test("a test that outlives its deadline fails and is cleaned up; later tests still run", async (t) => {
  const driver = await fakeDriver(t, ["CREATE_DELETE_VOLUME"]);
  const tests = describe("Controller", "Slow", {}, ({ it }) => {
    it("hangs", async (t) => {
      await t.createVolume();
      await new Promise<void>((resolve) => t.signal.addEventListener("abort", () => resolve()));
    });
    it("after", async () => {});
  });
  const report = await run(t, driver, tests, { testTimeoutMs: 200 });
  assert.equal(outcome(report, "hangs")?.outcome, "failed");
  assert.match(outcome(report, "hangs")?.reason ?? "", /timed out after 200ms/);
  assert.equal(outcome(report, "after")?.outcome, "passed");
  assert.ok(driver.calls.includes("DeleteVolume vol-1"));
});

test("what a call in flight at the deadline creates is still cleaned up", async (t) => {
  const driver = await fakeDriver(t, ["CREATE_DELETE_VOLUME"]);
  const tests = describe("Controller", "Slow", {}, ({ it }) => {
    it("creates slowly", async (t) => {
      t.signal.addEventListener("abort", () => slowRelease.resolve(), { once: true });
      await t.createVolume({ name: "slow-volume" });
    });
  });
  const report = await run(t, driver, tests, { testTimeoutMs: 50 });
  assert.match(outcome(report, "creates slowly")?.reason ?? "", /timed out after 50ms/);
  assert.deepEqual(driver.calls, ["CreateVolume slow-volume", "DeleteVolume vol-1"]);
});

test("focus and skip select what runs; the rest is not reported", async (t) => {
  const driver = await fakeDriver(t, []);
  const ran: string[] = [];
  const tests = describe("Identity", "Demo", {}, ({ it }) => {
    for (const name of ["one", "two", "three"]) it(name, async () => void ran.push(name));
  });
  const report = await run(t, driver, tests, { focus: /Demo (one|two)/, skip: /two/ });
  assert.deepEqual(ran, ["one"]);
  assert.deepEqual(
    report.results.map((r) => r.name),
    ["one"],
  );
});

test("an unreachable endpoint is one failed result, not a crash", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "csikit-sanity-fw-none-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const report = await runSanity({ endpoint: join(dir, "nothing.sock"), callTimeoutMs: 300, tests: [] });
  assert.equal(report.failed, 1);
  assert.match(report.results[0]?.reason ?? "", /did not become ready/);
});

/** A small well-formedness check: balanced tags, quoted attributes, known entities only. */
function assertWellFormedXml(text: string): string[] {
  const body = text.replace(/^<\?xml [^?]*\?>\s*/, "");
  const stack: string[] = [];
  const seen: string[] = [];
  const token = /<(\/?)([A-Za-z_][\w.-]*)((?:\s+[A-Za-z_][\w.-]*="[^"<]*")*)\s*(\/?)>|([^<]+)/gy;
  let match: RegExpExecArray | null;
  let consumed = 0;
  while ((match = token.exec(body)) !== null) {
    consumed = token.lastIndex;
    const [, closing, name, attrs, selfClosing, textPart] = match;
    const content = textPart ?? attrs ?? "";
    for (const entity of content.matchAll(/&([^;\s]*);?/g)) {
      assert.ok(
        ["amp;", "lt;", "gt;", "quot;", "apos;"].includes(`${entity[1]};`) && entity[0].endsWith(";"),
        `bad entity ${entity[0]}`,
      );
    }
    if (textPart !== undefined) continue;
    if (closing) assert.equal(stack.pop(), name, `mismatched </${name}>`);
    else if (!selfClosing) stack.push(name!);
    if (!closing) seen.push(name!);
  }
  assert.equal(consumed, body.length, `unparsed XML at ${consumed}: ${body.slice(consumed, consumed + 40)}`);
  assert.deepEqual(stack, []);
  return seen;
}

test("JUnit XML is well-formed and carries every result", () => {
  const report: SanityReport = {
    results: [
      { service: "Identity", group: "Probe", name: "works", outcome: "passed", durationMs: 3 },
      {
        service: "Controller",
        group: "CreateVolume",
        name: 'quotes " & <tags>',
        outcome: "failed",
        reason: "want OK,\ngot <NOT_FOUND> & \u0001",
        durationMs: 5,
      },
      {
        service: "Node",
        group: "Lifecycle",
        name: "mounts",
        outcome: "skipped",
        reason: "needs mount privilege: EPERM",
        durationMs: 0,
      },
    ],
    passed: 1,
    failed: 1,
    skipped: 1,
    durationMs: 10,
    warnings: [],
  };
  const xml = formatJUnit(report);
  const elements = assertWellFormedXml(xml);
  assert.equal(elements.filter((e) => e === "testcase").length, 3);
  assert.equal(elements.filter((e) => e === "testsuite").length, 3);
  assert.deepEqual(
    elements.filter((e) => e === "failure" || e === "skipped"),
    ["failure", "skipped"],
  );
  assert.match(xml, /<testsuites name="csikit sanity" tests="3" failures="1" skipped="1"/);
  assert.match(xml, /name="quotes &quot; &amp; &lt;tags&gt;"/);
  assert.equal(
    formatText(report),
    [
      "Identity",
      "  ✔ Probe: works",
      "Controller",
      '  ✖ CreateVolume: quotes " & <tags>: want OK, got <NOT_FOUND> & \u0001',
      "Node",
      "  - Lifecycle: mounts (skipped: needs mount privilege: EPERM)",
      "1 passed, 1 failed, 1 skipped",
      "",
    ].join("\n"),
  );
});

test("a driver whose Probe fails is reported at once with the Probe's error, not as a timeout", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "csikit-sanity-fw-probe-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const server = await serveCsi({
    endpoint: join(dir, "csi.sock"),
    identity: {
      getPluginInfo: async () => ({ name: "broken.csi.test", vendorVersion: "1" }),
      getPluginCapabilities: async () => ({ capabilities: [] }),
      probe: async () => {
        throw new CsiError(GrpcStatus.FAILED_PRECONDITION, "backend not configured");
      },
    },
  });
  t.after(() => server.close());
  const report = await runSanity({ endpoint: server.path, callTimeoutMs: 60_000, tests: [] });
  assert.equal(report.failed, 1);
  assert.match(report.results[0]?.reason ?? "", /failed its readiness Probe: .*backend not configured/);
});

test("Ginkgo's run flags: fail-fast stops, flake-attempts retries, dry-run contacts nothing, the run deadline fails the run", async (t) => {
  const driver = await fakeDriver(t, []);
  let flaky = 0;
  const ran: string[] = [];
  const tests = describe("Identity", "Demo", {}, ({ it }) => {
    it("flaky", async () => {
      ran.push("flaky");
      check(++flaky >= 2, "fails the first time");
    });
    it("broken", async () => {
      ran.push("broken");
      check(false, "always fails");
    });
    it("after", async () => void ran.push("after"));
  });

  const fast = await run(t, driver, tests, { failFast: true });
  assert.deepEqual(ran, ["flaky"], "fail-fast: nothing after the first failure runs");
  assert.deepEqual(
    fast.results.map((r) => r.outcome),
    ["failed"],
  );
  assert.match(fast.warnings.join("\n"), /fail-fast: stopped after the first failure; 2 tests not run/);

  ran.length = 0;
  flaky = 0;
  const retried = await run(t, driver, tests, { flakeAttempts: 3 });
  assert.deepEqual(ran, ["flaky", "flaky", "broken", "broken", "broken", "after"]);
  assert.deepEqual(
    retried.results.map((r) => `${r.name} ${r.outcome}`),
    ["flaky passed", "broken failed", "after passed"],
  );
  assert.match(retried.warnings.join("\n"), /Demo: flaky: flaky, passed on attempt 2 of 3/);

  ran.length = 0;
  const dry = await runSanity({ endpoint: "/nonexistent/csi.sock", tests, dryRun: true });
  assert.equal(ran.length, 0, "dry run runs nothing");
  assert.equal(summaryLine(dry), "0 passed, 0 failed, 3 skipped");
  assert.match(dry.results[0]?.reason ?? "", /dry run/);

  // A test that never returns by itself: the run's deadline stops it and fails the run.
  const hanging = describe("Identity", "Hang", {}, ({ it }) => {
    it("waits for its signal", (t) =>
      new Promise((resolve) => t.signal.addEventListener("abort", () => resolve())));
    it("never starts", async () => void ran.push("never"));
  });
  const timedOut = await run(t, driver, hanging, { runTimeoutMs: 200, graceMs: 1000 });
  assert.deepEqual(
    timedOut.results.map((r) => `${r.name} ${r.outcome}`),
    ["waits for its signal failed", "the run completes within -ginkgo.timeout failed"],
  );
  assert.match(timedOut.results[0]?.reason ?? "", /the run timed out after 200ms/);
  assert.ok(!ran.includes("never"));
});

test("run order: the catalogue's by default; a seed shuffles groups (or every test) the same way each time", () => {
  const tests = [
    ...describe("Identity", "A", {}, ({ it }) => ["a1", "a2", "a3"].forEach((n) => it(n, async () => {}))),
    ...describe("Controller", "B", {}, ({ it }) => ["b1", "b2"].forEach((n) => it(n, async () => {}))),
    ...describe("Node", "C", {}, ({ it }) => ["c1", "c2"].forEach((n) => it(n, async () => {}))),
  ];
  const names = (list: SanityTest[]) => list.map((x) => x.name).join(" ");
  assert.equal(names(ordered(tests, undefined)), "a1 a2 a3 b1 b2 c1 c2");
  const seeds = Array.from({ length: 20 }, (_, seed) => names(ordered(tests, { seed, shuffle: "groups" })));
  for (const order of seeds)
    assert.match(order, /^(?=.*a1 a2 a3)(?=.*b1 b2)(?=.*c1 c2)/, "groups stay whole");
  assert.ok(new Set(seeds).size > 1, "different seeds give different orders");
  assert.equal(
    names(ordered(tests, { seed: 7, shuffle: "tests" })),
    names(ordered(tests, { seed: 7, shuffle: "tests" })),
  );
  assert.notEqual(
    Array.from({ length: 10 }, (_, seed) => names(ordered(tests, { seed, shuffle: "tests" }))).find(
      (order) => !/a1 a2 a3/.test(order),
    ),
    undefined,
    "randomize-all splits groups",
  );
});

test("label filters use Ginkgo's language over each test's service and group", () => {
  const labels = ["Node", "NodeExpandVolume"];
  const cases: Array<[string, boolean]> = [
    ["Node", true],
    ["node", true],
    ["Controller", false],
    ["!Controller", true],
    ["Node && !NodeExpandVolume", false],
    ["Controller || NodeExpandVolume", true],
    ["Controller, NodeExpandVolume", true],
    ["(Controller || Node) && /expand/", true],
    ["!(Node)", false],
    ["/^Ctrl/", false],
    ["", true],
  ];
  for (const [filter, want] of cases) assert.equal(parseLabelFilter(filter)(labels), want, filter);
  for (const bad of ["Node &&", "(Node", "Node)", "/unterminated", "os: containsAny {linux}"])
    assert.throws(() => parseLabelFilter(bad), /label filter/, bad);
  const tests = [
    ...describe("Node", "NodeExpandVolume", {}, ({ it }) => it("x", async () => {})),
    ...describe("Node", "NodeGetInfo", {}, ({ it }) => it("y", async () => {})),
  ];
  assert.deepEqual(
    selectTests(tests, { labels: parseLabelFilter("Node && !NodeExpandVolume") }).map((x) => x.name),
    ["y"],
  );
});
