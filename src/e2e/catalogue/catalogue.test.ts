// The catalogue's two halves: the definition-file parser accepts an upstream-style file, applies
// upstream's defaults, reports unknown keys by path (errors under strict) and rejects bad values
// naming the key; the suite tables are consistent and produce upstream's exact test names and
// skip messages for a real definition.

import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import {
  PATTERNS,
  SUITES,
  TestDriverError,
  classSourceKind,
  effectiveTimeouts,
  hasPattern,
  loadTestDriver,
  parseGoDuration,
  parseTestDriver,
  planTests,
} from "./index.ts";
import type { DriverDefinition, PlannedTest } from "./index.ts";

const TESTDATA = join(import.meta.dirname, "testdata");

async function hostpath(): Promise<DriverDefinition> {
  const { definition, warnings } = await loadTestDriver(join(TESTDATA, "hostpath-driver.yaml"), {
    strict: true,
  });
  assert.deepEqual(warnings, []);
  return definition;
}

function problemsOf(text: string, strict = false): readonly string[] {
  try {
    parseTestDriver(text, { source: "t.yaml", strict });
  } catch (err) {
    assert.ok(err instanceof TestDriverError, String(err));
    assert.match(err.message, /^t\.yaml: /);
    return err.problems;
  }
  assert.fail("expected the definition to be rejected");
}

test("the hostpath example parses with upstream's defaults applied", async () => {
  const def = await hostpath();
  assert.equal(def.DriverInfo.Name, "hostpath.csi.k8s.io");
  assert.equal(classSourceKind(def.StorageClass), "existing");
  assert.equal(def.StorageClass.FromExistingClassName, "csi-hostpath-fast");
  assert.equal(classSourceKind(def.SnapshotClass), "name");
  assert.equal(classSourceKind(def.GroupSnapshotClass), null);
  assert.deepEqual(def.DriverInfo.SupportedFsType, ["", "ext4"]);
  assert.deepEqual(def.DriverInfo.SupportedSizeRange, { Min: "1Mi", Max: "", Step: "" });
  assert.deepEqual(def.DriverInfo.SupportedMountOption, ["noatime"]);
  assert.equal(def.DriverInfo.RequiredMountOption, null);
  assert.deepEqual(def.DriverInfo.StressTestOptions, { NumPods: 10, NumRestarts: 10 });
  // controllerExpansion implies offline expansion when the file does not say.
  assert.equal(def.DriverInfo.Capabilities["offlineExpansion"], true);
  assert.deepEqual(def.InlineVolumes, [{ Attributes: {}, Shared: false, ReadOnly: false }]);
  assert.deepEqual(def.Timeouts, { PodStart: 180_000, ClaimProvision: 90_000 });
  const t = effectiveTimeouts(def);
  assert.equal(t.PodStart, 180_000);
  assert.equal(t.PVDelete, 5 * 60_000, "unset keys keep upstream's default");
});

test("a minimal definition gets upstream's defaults", () => {
  const { definition, warnings } = parseTestDriver("DriverInfo:\n  Name: x.example.com\n");
  assert.deepEqual(warnings, []);
  assert.deepEqual(definition.DriverInfo.SupportedFsType, [""]);
  assert.equal(definition.DriverInfo.SupportedSizeRange.Min, "5Gi");
  assert.deepEqual(definition.DriverInfo.Capabilities, {});
  assert.equal(classSourceKind(definition.StorageClass), null);
  // Explicit false is kept: the expansion defaults only fill keys the file leaves out.
  const caps = parseTestDriver(
    "DriverInfo:\n  Name: x\n  Capabilities:\n    controllerExpansion: true\n    onlineExpansion: false\n",
  ).definition.DriverInfo.Capabilities;
  assert.deepEqual(caps, { controllerExpansion: true, onlineExpansion: false, offlineExpansion: true });
});

test("unknown keys are warnings naming their path, and errors under strict", async () => {
  const path = join(TESTDATA, "typo-driver.json");
  const { definition, warnings } = await loadTestDriver(path);
  const expected = [
    /^DriverInfo\.Capabilities\.Block: unknown capability \(did you mean block\?\)$/,
    /^DriverInfo\.StressTestOptions\.NumSnapshots: unknown key/,
    /^storageClass: unknown key, ignored by upstream \(did you mean StorageClass\?\)$/,
    /^Timeouts\.SnapshotCreat: unknown timeout$/,
    /^StorageClass: more than one source set; upstream uses name$/,
  ];
  assert.equal(warnings.length, expected.length, warnings.join("\n"));
  for (const re of expected)
    assert.ok(
      warnings.some((w) => re.test(w)),
      `no warning matching ${re}:\n${warnings.join("\n")}`,
    );
  // Timeout names match case-insensitively, as upstream's encoding/json does.
  assert.deepEqual(definition.Timeouts, { PodStart: 600_000 });
  assert.equal(
    definition.DriverInfo.Capabilities["block"],
    undefined,
    "a mis-cased capability does not enable block",
  );

  await assert.rejects(loadTestDriver(path, { strict: true }), (err: unknown) => {
    assert.ok(err instanceof TestDriverError);
    assert.ok(err.message.startsWith(`${path}: `));
    assert.equal(err.problems.length, 4, err.message);
    assert.ok(err.message.includes("DriverInfo.Capabilities.Block"));
    return true;
  });
});

test("bad values are rejected with the key that is wrong", () => {
  assert.deepEqual(problemsOf("StorageClass:\n  FromName: true\n"), ["DriverInfo.Name not set"]);
  assert.deepEqual(problemsOf("- a\n- b\n"), ["document: want a map, got a list", "DriverInfo.Name not set"]);
  assert.match(problemsOf("DriverInfo: [\n")[0] ?? "", /^not valid YAML\/JSON: /);
  const problems = problemsOf(
    [
      "DriverInfo:",
      "  Name: x",
      "  Capabilities: {block: yes-please}",
      "  SupportedSizeRange: {Min: lots}",
      "  RequiredAccessModes: [ReadWriteOnce, RWO]",
      "  NumAllowedTopologies: 1.5",
      "  TopologyKeys: zone",
      "InlineVolumes:",
      "  - Attributes: {size: 5}",
      "Timeouts:",
      "  PodStart: 5 minutes",
      "  PVDelete: 300",
    ].join("\n"),
  );
  assert.deepEqual(problems, [
    'DriverInfo.SupportedSizeRange.Min: "lots" is not a quantity (like 1Gi)',
    'DriverInfo.Capabilities.block: want true or false, got string "yes-please"',
    'DriverInfo.RequiredAccessModes[1]: "RWO" is not an access mode (ReadWriteOnce, ReadOnlyMany, ReadWriteMany, ReadWriteOncePod)',
    'DriverInfo.TopologyKeys: want a list, got string "zone"',
    "DriverInfo.NumAllowedTopologies: want an integer, got number 1.5",
    "InlineVolumes[0].Attributes.size: want a string, got number 5",
    'Timeouts.PodStart: "5 minutes" is not a Go duration (like 5m30s)',
    'Timeouts.PVDelete: want a duration string like "5m", got number 300',
  ]);
});

test("Go durations parse as time.ParseDuration does", () => {
  const cases: [string, number | null][] = [
    ["5m", 300_000],
    ["1h2m3.5s", 3_723_500],
    ["300ms", 300],
    ["1.5h", 5_400_000],
    ["-1m", -60_000],
    ["0", 0],
    ["1500us", 1.5],
    ["", null],
    ["5", null],
    ["5 m", null],
    ["1d", null],
    ["m", null],
  ];
  for (const [text, want] of cases) assert.equal(parseGoDuration(text), want, text);
});

test("the tables are consistent: ids, names and titles unique, every referenced pattern exists", () => {
  const ids = PATTERNS.map((p) => p.id);
  assert.equal(new Set(ids).size, ids.length, "pattern ids unique");
  const names = PATTERNS.map((p) => p.name);
  assert.equal(new Set(names).size, names.length, "pattern names unique");
  const suiteNames = SUITES.map((s) => s.name);
  assert.equal(new Set(suiteNames).size, suiteNames.length, "suite names unique");
  assert.deepEqual([...suiteNames].sort(), [
    "capacity",
    "disruptive",
    "ephemeral",
    "fsgroupchangepolicy",
    "multiVolume",
    "provisioning",
    "read-write-once-pod",
    "snapshottable",
    "subPath",
    "topology",
    "volume-expand",
    "volume-modify",
    "volumeIO",
    "volumeLimits",
    "volumeMode",
    "volumegroupsnapshottable",
    "volumes",
  ]);
  for (const suite of SUITES) {
    assert.ok(suite.patterns.length > 0, suite.name);
    for (const id of suite.patterns) assert.ok(hasPattern(id), `${suite.name}: unknown pattern ${id}`);
    assert.equal(new Set(suite.patterns).size, suite.patterns.length, `${suite.name}: pattern listed twice`);
    const titles = suite.tests.map((t) => [...t.containers, t.title].join(" "));
    assert.equal(new Set(titles).size, titles.length, `${suite.name}: test titles unique`);
    for (const t of suite.tests)
      for (const tag of t.tags) assert.match(tag, /^\[[^\]]+\]$/, `${suite.name}: ${t.title}`);
  }
});

/** A definition enabling everything, so every registered test is planned. */
function everything(): DriverDefinition {
  const caps = [
    "persistence",
    "block",
    "fsGroup",
    "exec",
    "snapshotDataSource",
    "pvcDataSource",
    "multipods",
    "RWX",
    "controllerExpansion",
    "topology",
  ];
  const text = [
    "StorageClass: {FromName: true}",
    "SnapshotClass: {FromName: true}",
    "InlineVolumes: [{Attributes: {}}]",
    "DriverInfo:",
    "  Name: all.example.com",
    "  SupportedFsType: ['', ext3, ext4, xfs, ntfs]",
    `  Capabilities: {${caps.map((c) => `${c}: true`).join(", ")}}`,
  ].join("\n");
  return parseTestDriver(text, { strict: true }).definition;
}

function byName(plan: PlannedTest[], name: string): PlannedTest {
  const hit = plan.find((p) => p.name === name);
  assert.ok(
    hit,
    `no planned test named:\n${name}\namong e.g.\n${plan
      .slice(0, 5)
      .map((p) => p.name)
      .join("\n")}`,
  );
  return hit;
}

test("every planned test name is unique", () => {
  const plan = planTests(everything());
  const names = plan.map((p) => p.name);
  const dup = names.find((n, i) => names.indexOf(n) !== i);
  assert.equal(dup, undefined, `duplicate test name: ${dup}`);
  assert.ok(plan.length > 300, `only ${plan.length} tests planned`);
});

test("test names and skips match upstream's for the hostpath definition", async () => {
  const def = await hostpath();
  const plan = planTests(def);
  const D = "External Storage [Driver: hostpath.csi.k8s.io]";

  const mount = byName(
    plan,
    `${D} [Testpattern: Dynamic PV (default fs)] provisioning should provision storage with mount options`,
  );
  assert.equal(mount.skip, null);
  assert.equal(
    byName(
      plan,
      `${D} [Testpattern: Dynamic PV (block volmode)] provisioning should provision storage with mount options`,
    ).skip,
    "Block volumes do not support mount options - skipping",
  );
  assert.equal(
    byName(
      plan,
      `${D} [Testpattern: Dynamic PV (default fs)] provisioning should provision storage with snapshot data source [Feature:VolumeSnapshotDataSource]`,
    ).skip,
    null,
  );
  assert.equal(
    byName(
      plan,
      `${D} [Testpattern: Dynamic PV (default fs)] provisioning should provision storage with pvc data source (ROX mode)`,
    ).skip,
    'Driver "hostpath.csi.k8s.io" does not support ROX access mode - skipping',
  );
  // Pattern tags follow the pattern name; xfs is not in this driver's SupportedFsType.
  assert.equal(
    byName(plan, `${D} [Testpattern: Dynamic PV (xfs)] [Slow] volumes should store data`).skip,
    "Driver hostpath.csi.k8s.io doesn't support xfs -- skipping",
  );
  assert.equal(byName(plan, `${D} [Testpattern: Dynamic PV (ext4)] volumes should store data`).skip, null);
  assert.equal(
    byName(plan, `${D} [Testpattern: Pre-provisioned PV (default fs)] volumes should store data`).skip,
    'Driver "hostpath.csi.k8s.io" does not support volume type "PreprovisionedPV" - skipping',
  );
  assert.equal(
    byName(plan, `${D} [Testpattern: Dynamic PV (ntfs)] [Feature:Windows] volumes should store data`).skip,
    "Driver hostpath.csi.k8s.io doesn't support ntfs -- skipping",
  );
  // Suite tags and an unnamed Context (the double space) as upstream renders them.
  assert.equal(
    byName(
      plan,
      `${D} [Testpattern: Dynamic Snapshot (delete policy)] snapshottable [Feature:VolumeSnapshotDataSource] volume snapshot controller  should check snapshot fields, check restore correctly works after modifying source data, check deletion (persistent)`,
    ).skip,
    null,
  );
  assert.equal(
    byName(
      plan,
      `${D} [Testpattern: Ephemeral Snapshot (delete policy)] snapshottable [Feature:VolumeSnapshotDataSource] volume snapshot controller  should check snapshot fields, check restore correctly works after modifying source data, check deletion (persistent)`,
    ).skip,
    'volume type "GenericEphemeralVolume" is ephemeral',
  );
  assert.equal(
    byName(
      plan,
      `${D} [Testpattern: Dynamic PV (default fs)] subPath should fail if subpath directory is outside the volume [Slow] [LinuxOnly]`,
    ).skip,
    null,
  );
  assert.equal(
    byName(
      plan,
      `${D} [Testpattern: Dynamic PV (block volmode)] disruptive [Disruptive] [LinuxOnly] Should test that pv written before kubelet restart is readable after restart.`,
    ).skip,
    null,
  );
  // The driver has topology keys, so immediate binding of generic ephemeral volumes is skipped first.
  assert.equal(
    byName(
      plan,
      `${D} [Testpattern: Generic Ephemeral-volume (default fs) (immediate-binding)] ephemeral should support multiple inline ephemeral volumes`,
    ).skip,
    "Multiple generic ephemeral volumes with immediate binding may cause pod startup failures when the volumes get created in separate topology segments.",
  );
  assert.equal(
    byName(
      plan,
      `${D} [Testpattern: CSI Ephemeral-volume (default fs)] ephemeral should create read/write inline ephemeral volume`,
    ).skip,
    null,
  );
  assert.equal(
    byName(
      plan,
      `${D} [Testpattern: Dynamic PV (filesystem volmode)] multiVolume [Slow] should concurrently access the single volume from pods on different node`,
    ).skip,
    "Driver hostpath.csi.k8s.io doesn't support RWX -- skipping",
  );
  assert.equal(
    byName(
      plan,
      `${D} [Testpattern: Dynamic PV (default fs)(allowExpansion)] volume-expand Verify if offline PVC expansion works`,
    ).skip,
    null,
  );
  assert.equal(
    byName(
      plan,
      `${D} [Testpattern: Dynamic PV (default fs)] volume-expand should not allow expansion of pvcs without AllowVolumeExpansion property`,
    ).skip,
    null,
  );
  assert.equal(
    byName(
      plan,
      `${D} [Testpattern: Dynamic PV (default fs)] read-write-once-pod [MinimumKubeletVersion:1.27] should block a second pod from using an in-use ReadWriteOncePod volume on the same node`,
    ).skip,
    null,
  );
  assert.equal(
    byName(
      plan,
      `${D} [Testpattern: Dynamic PV (default fs)] fsgroupchangepolicy (Always)[LinuxOnly], pod created with an initial fsgroup, new pod fsgroup applied to volume contents`,
    ).skip,
    'Driver "hostpath.csi.k8s.io" does not support FsGroup - skipping',
  );
  assert.equal(
    byName(
      plan,
      `${D} [Testpattern: Dynamic PV (filesystem volmode)] volumeLimits should support volume limits [Serial]`,
    ).skip,
    "Driver hostpath.csi.k8s.io does not support volume limits",
  );

  // Registration follows the pattern: no "AllowVolumeExpansion" refusal test where expansion is allowed.
  assert.ok(
    !plan.some((p) => p.pattern.allowExpansion && p.test.title.startsWith("should not allow expansion")),
  );
  // A block-capable driver never gets volumeMode's "should fail ... failing to mount" tests.
  assert.ok(
    !plan.some((p) => p.suite.name === "volumeMode" && p.test.title.startsWith("should fail to create pod")),
  );
  // Nothing from the hostpath definition runs on a pre-provisioned or inline (non-CSI) volume.
  assert.ok(
    plan
      .filter((p) => p.pattern.volType === "PreprovisionedPV" || p.pattern.volType === "InlineVolume")
      .every((p) => p.skip !== null),
  );
});
