// The catalogue catches real spec violations: a small driver with deliberate bugs (on a real
// socket) must fail exactly the tests for those bugs, with messages naming the rule, and the
// suite must still remove every volume the buggy driver handed out. The scripted driver of
// test-driver.ts passes its groups without bugs, and each bug switched on fails exactly the
// sanity tests for that rule (including tests that need an OFFLINE-only driver).

import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import type { TestContext } from "node:test";
import { CsiError, GrpcStatus, serveCsi } from "../csi/index.ts";
import { fullName } from "./framework.ts";
import { catalogue, runSanity } from "./index.ts";
import type { SanityReport } from "./index.ts";
import { serveTestDriver } from "./test-driver.ts";
import type { DriverBug, TestDriverOptions } from "./test-driver.ts";

test("tests fail for a driver that breaks the spec, and cleanup still removes its volumes", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "csikit-sanity-buggy-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const volumes = new Map<string, string>();
  let next = 0;
  const server = await serveCsi({
    endpoint: join(dir, "csi.sock"),
    identity: {
      // Bug: longer than 63 characters.
      getPluginInfo: async () => ({ name: `${"x".repeat(70)}.csi.test`, vendorVersion: "1" }),
      getPluginCapabilities: async () => ({ capabilities: [{ service: { type: "CONTROLLER_SERVICE" } }] }),
      probe: async () => ({}),
    },
    controller: {
      controllerGetCapabilities: async () => ({
        capabilities: [{ rpc: { type: "CREATE_DELETE_VOLUME" } }, { rpc: { type: "LIST_VOLUMES" } }],
      }),
      // Bugs: accepts an empty name; a new volume on every call (not idempotent).
      createVolume: async (request) => {
        const volumeId = `vol-${++next}`;
        volumes.set(volumeId, request.name);
        return { volume: { volumeId, capacityBytes: request.capacityRange?.requiredBytes ?? "0" } };
      },
      // Bug: NOT_FOUND for a volume it does not know.
      deleteVolume: async (request) => {
        if (!volumes.delete(request.volumeId)) throw new CsiError(GrpcStatus.NOT_FOUND, "no such volume");
        return {};
      },
      // Bug: ignores starting_token.
      listVolumes: async () => ({
        entries: [...volumes.keys()].map((volumeId) => ({ volume: { volumeId } })),
      }),
    },
    node: {
      nodeGetCapabilities: async () => ({ capabilities: [] }),
      nodeGetInfo: async () => ({ nodeId: "n" }),
    },
  });
  t.after(() => server.close());

  const targets = [
    "Identity GetPluginInfo returns a name in domain-name notation of at most 63 characters",
    "Controller CreateVolume fails with INVALID_ARGUMENT when the name is missing",
    "Controller CreateVolume is idempotent: the same request answers the same volume",
    "Controller DeleteVolume succeeds for a volume id that does not exist",
    "Controller ListVolumes fails with ABORTED for a starting_token it never issued",
    "Controller DeleteVolume deletes a volume, and deleting it again succeeds",
  ];
  const names = new Set(catalogue().map(fullName));
  for (const name of targets) assert.ok(names.has(name), `catalogue has ${name}`);
  const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const report = await runSanity({
    endpoint: server.path,
    stagingDir: join(dir, "staging"),
    targetDir: join(dir, "target"),
    focus: new RegExp(`^(${targets.map(escape).join("|")})$`),
  });
  const reasons = Object.fromEntries(
    report.results.map((r) => [fullName(r), `${r.outcome}: ${r.reason ?? ""}`]),
  );
  assert.match(reasons[targets[0]!]!, /^failed: .*longer than 63 characters/);
  assert.match(reasons[targets[1]!]!, /^failed: CreateVolume without name: want INVALID_ARGUMENT, got OK$/);
  assert.match(reasons[targets[2]!]!, /^failed: CreateVolume again: volume_id vol-\d+, first vol-\d+$/);
  assert.match(
    reasons[targets[3]!]!,
    /^failed: DeleteVolume of an unknown volume: want OK, got NOT_FOUND \(no such volume\)$/,
  );
  assert.match(
    reasons[targets[4]!]!,
    /^failed: ListVolumes with a bogus starting_token: want ABORTED, got OK$/,
  );
  assert.match(reasons[targets[5]!]!, /^failed: DeleteVolume vol-\d+: want OK, got NOT_FOUND/);
  assert.equal(report.failed, targets.length);
  assert.deepEqual([...volumes.keys()], [], "every volume the suite made is deleted, also after failures");
});

// The scripted driver (test-driver.ts) is correct for these groups unless told to commit a bug.
const GROUPS =
  /^(Controller (DeleteVolume|ListVolumes|ListSnapshots|ControllerExpandVolume)|Node (NodePublishVolume|NodeGetVolumeStats|NodeExpandVolume)) /;

/** Runs GROUPS against a fresh scripted driver; answers the report and "outcome: reason" by full name. */
async function runScripted(
  t: TestContext,
  options: Omit<TestDriverOptions, "endpoint">,
  focus: RegExp = GROUPS,
): Promise<{ report: SanityReport; failed: Record<string, string> }> {
  const dir = await mkdtemp(join(tmpdir(), "csikit-sanity-scripted-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const server = await serveTestDriver({ ...options, endpoint: join(dir, "csi.sock") });
  t.after(() => server.close());
  const report = await runSanity({
    endpoint: server.path,
    stagingDir: join(dir, "staging"),
    targetDir: join(dir, "target"),
    focus,
  });
  const failed = Object.fromEntries(
    report.results.filter((r) => r.outcome === "failed").map((r) => [fullName(r), r.reason ?? ""]),
  );
  return { report, failed };
}

for (const expansion of ["ONLINE", "OFFLINE"] as const) {
  test(`the scripted driver without bugs (${expansion} expansion) passes its groups`, async (t) => {
    const { report, failed } = await runScripted(t, { expansion });
    assert.deepEqual(failed, {});
    assert.ok(report.passed >= 30, `${report.passed} passed`);
    assert.deepEqual(report.warnings, []);
    const offline = report.results.find((r) => r.name.includes("without ONLINE expansion"));
    assert.equal(offline?.outcome, expansion === "OFFLINE" ? "passed" : "skipped");
  });
}

// Each case has exactly one fault: a driver that checks the volume before the other fields
// (upstream hostpath's order) passes the missing-field cases, and a condition is only required
// to be present, not normal (CSI v1.12: VolumeCondition "MUST be specified if the
// VOLUME_CONDITION ... capability is supported", nothing about its value).
test("a driver making the spec's open choices (volume checked first, abnormal volumes) passes", async (t) => {
  const { report, failed } = await runScripted(
    t,
    { choices: ["volume-checked-first", "abnormal-volumes"] },
    new RegExp(`${GROUPS.source}|^Node NodeUnpublishVolume `),
  );
  assert.deepEqual(failed, {});
  assert.ok(report.passed >= 30, `${report.passed} passed`);
  const ran = (name: string): string | undefined => report.results.find((r) => fullName(r) === name)?.outcome;
  assert.equal(
    ran("Node NodeExpandVolume fails with INVALID_ARGUMENT when the volume path is missing"),
    "passed",
  );
  assert.equal(
    ran("Node NodeGetVolumeStats fails with INVALID_ARGUMENT when the volume path is missing"),
    "passed",
  );
  assert.equal(
    ran("Node NodeUnpublishVolume fails with INVALID_ARGUMENT when the target path is missing"),
    "passed",
  );
  assert.equal(ran("Controller ListVolumes reports a volume condition"), "passed");
  assert.equal(
    ran("Node NodeGetVolumeStats reports byte usage with total > 0 and used + available within total"),
    "passed",
  );
});

const SINGLE_WRITER_TEST =
  "Node NodePublishVolume SINGLE_NODE_SINGLE_WRITER fails with FAILED_PRECONDITION when published at a second target path";

const BUGS: { bug: DriverBug; expansion?: "OFFLINE"; fails: Record<string, RegExp> }[] = [
  {
    bug: "publish-not-idempotent",
    fails: {
      "Node NodePublishVolume publishes, and publishing again with the same arguments succeeds":
        /^NodePublishVolume again: want OK, got ALREADY_EXISTS/,
      "Node NodePublishVolume SINGLE_NODE_SINGLE_WRITER publishes again at the same target path (the kubelet republishes)":
        /^NodePublishVolume of a SINGLE_NODE_SINGLE_WRITER volume again at its target path: want OK, got ALREADY_EXISTS/,
    },
  },
  {
    bug: "list-volumes-repeats",
    fails: {
      "Controller ListVolumes pages with max_entries and next_token without losing or repeating entries":
        /^ListVolumes paging with max_entries 1 listed vol-\d+ twice \(pages must not repeat entries\)$/,
    },
  },
  {
    bug: "list-snapshots-ignores-source",
    fails: {
      "Controller ListSnapshots filters by source volume id":
        /^ListSnapshots by source vol-\d+ lists a snapshot of vol-\d+$/,
    },
  },
  {
    bug: "stats-used-over-total",
    fails: {
      "Node NodeGetVolumeStats reports byte usage with total > 0 and used + available within total":
        /^NodeGetVolumeStats: BYTES used \d+ > total \d+ \(used must be within total\)$/,
    },
  },
  {
    bug: "delete-unknown-not-found",
    fails: {
      "Controller DeleteVolume succeeds for a volume id that does not exist":
        /^DeleteVolume of an unknown volume: want OK, got NOT_FOUND/,
      "Controller DeleteVolume deletes a volume, and deleting it again succeeds":
        /^DeleteVolume vol-\d+: want OK, got NOT_FOUND/,
    },
  },
  {
    // NOT_FOUND that only comes from a missing path must not pass for "volume unknown" or
    // "not published there": the suite asks at existing directories.
    bug: "node-checks-path-only",
    fails: {
      "Node NodeGetVolumeStats fails with NOT_FOUND for a volume that does not exist":
        /^NodeGetVolumeStats of an unknown volume: want NOT_FOUND, got OK$/,
      "Node NodeGetVolumeStats fails with NOT_FOUND for a path the volume is not published at":
        /^NodeGetVolumeStats at an existing directory the volume is not published at: want NOT_FOUND, got OK$/,
      "Node NodeExpandVolume fails with NOT_FOUND for a volume that does not exist":
        /^NodeExpandVolume of an unknown volume: want NOT_FOUND, got OK$/,
    },
  },
  {
    bug: "single-writer-published-twice",
    fails: {
      [SINGLE_WRITER_TEST]:
        /^NodePublishVolume of a SINGLE_NODE_SINGLE_WRITER volume at a second target path: want FAILED_PRECONDITION, got OK$/,
    },
  },
  {
    bug: "expands-online",
    expansion: "OFFLINE",
    fails: {
      "Controller ControllerExpandVolume refuses to expand a published volume without ONLINE expansion":
        /^ControllerExpandVolume of a published volume \(OFFLINE expansion only\): want FAILED_PRECONDITION, got OK$/,
    },
  },
];

for (const { bug, expansion, fails } of BUGS) {
  test(`a driver with bug ${bug} fails exactly the tests for it`, async (t) => {
    const names = new Set(catalogue().map(fullName));
    for (const name of Object.keys(fails)) assert.ok(names.has(name), `catalogue has ${name}`);
    const { failed } = await runScripted(t, { bugs: [bug], ...(expansion ? { expansion } : {}) });
    assert.deepEqual(Object.keys(failed).sort(), Object.keys(fails).sort());
    for (const [name, reason] of Object.entries(fails)) assert.match(failed[name] ?? "", reason, name);
  });
}

// csi-test v5.5 never unpublishes the second target a driver wrongly accepts, and that mount
// fails most of its later specs. Here the suite unpublishes it after the test (the scripted
// driver refuses to delete a volume still published somewhere, so a leftover would show as a
// cleanup failure), and every later test runs as it would against a correct driver.
test("a second target a driver wrongly accepted is unpublished after the test: nothing cascades", async (t) => {
  const correct = await runScripted(t, {});
  const buggy = await runScripted(t, { bugs: ["single-writer-published-twice"] });
  assert.deepEqual(Object.keys(buggy.failed), [SINGLE_WRITER_TEST]);
  // Failed for the refusal it did not get, and nothing else: its cleanup undid everything.
  assert.match(buggy.failed[SINGLE_WRITER_TEST] ?? "", /: want FAILED_PRECONDITION, got OK$/);
  assert.doesNotMatch(buggy.failed[SINGLE_WRITER_TEST] ?? "", /cleanup/);
  assert.deepEqual(buggy.report.warnings, []);
  const outcomes = (report: SanityReport): Record<string, string> =>
    Object.fromEntries(
      report.results.filter((r) => fullName(r) !== SINGLE_WRITER_TEST).map((r) => [fullName(r), r.outcome]),
    );
  assert.deepEqual(outcomes(buggy.report), outcomes(correct.report));
  assert.equal(buggy.report.passed, correct.report.passed - 1);
});
