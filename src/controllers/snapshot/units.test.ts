// The snapshot controller's pure parts, table-tested: names as upstream computes them, the secret
// reference templates and their errors, the status copied from a content (and when nothing is
// written), finalizer list edits, the operation metrics and the flag list.

import { test } from "node:test";
import assert from "node:assert/strict";
import { Flags, LOGGING_FLAGS, parseFlags } from "../../base/index.ts";
import { Registry } from "../../kube/index.ts";
import type { VolumeSnapshot, VolumeSnapshotContent } from "../../api/index.ts";
import { SNAPSHOT_CONTROLLER_FLAGS, snapshotControllerOptionsFromFlags } from "./flags.ts";
import { OPERATIONS, SnapshotOperationMetrics } from "./metrics.ts";
import {
  GROUP_SNAPSHOTTER_SECRET,
  SNAPSHOTTER_SECRET,
  contentNameForGroupSnapshot,
  contentNameForSnapshot,
  memberContentName,
  memberSnapshotName,
  secretReference,
} from "./names.ts";
import { bytesToQuantity, nanosToTime, nextSnapshotStatus, snapshotLagsContent } from "./status.ts";
import { finalizersAfter } from "./writes.ts";

const snapshot = (status?: VolumeSnapshot["status"]): VolumeSnapshot => ({
  metadata: { name: "s", namespace: "ns", uid: "u-1" },
  spec: { source: { persistentVolumeClaimName: "c" } },
  ...(status ? { status } : {}),
});
const content = (status?: VolumeSnapshotContent["status"]): VolumeSnapshotContent => ({
  metadata: { name: "snapcontent-u-1" },
  spec: {
    volumeSnapshotRef: { name: "s", namespace: "ns", uid: "u-1" },
    deletionPolicy: "Delete",
    driver: "d",
    source: { volumeHandle: "v" },
  },
  ...(status ? { status } : {}),
});

test("names: snapcontent-<uid>, groupsnapcontent-<uid>, members by sha256(group uid + volume handle)", () => {
  assert.equal(contentNameForSnapshot(snapshot()), "snapcontent-u-1");
  assert.equal(
    contentNameForGroupSnapshot({ metadata: { uid: "g" }, spec: { source: {} } }),
    "groupsnapcontent-g",
  );
  assert.equal(memberSnapshotName("g", "v").length, "snapshot-".length + 64);
  assert.equal(
    memberSnapshotName("g", "v").slice("snapshot-".length),
    memberContentName("g", "v").slice("snapcontent-".length),
  );
  assert.notEqual(memberSnapshotName("g", "v"), memberSnapshotName("g", "w"));
  assert.equal(
    memberSnapshotName("abc", ""),
    "snapshot-ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
  );
});

test("secret reference: templates, both keys or neither, DNS names, unknown tokens", () => {
  const ctx = {
    prefix: "volumesnapshot" as const,
    contentName: "snapcontent-u",
    name: "s1",
    namespace: "team",
  };
  const cases: [Record<string, string>, { name: string; namespace: string } | undefined | RegExp][] = [
    [{}, undefined],
    [
      {
        [SNAPSHOTTER_SECRET.name]: "${volumesnapshot.name}-${volumesnapshotcontent.name}",
        [SNAPSHOTTER_SECRET.namespace]: "${volumesnapshot.namespace}",
      },
      { name: "s1-snapcontent-u", namespace: "team" },
    ],
    [{ [SNAPSHOTTER_SECRET.name]: "x" }, /Both must be specified/],
    [
      { [SNAPSHOTTER_SECRET.name]: "", [SNAPSHOTTER_SECRET.namespace]: "ns" },
      /value of either namespace or name is empty/,
    ],
    [
      { [SNAPSHOTTER_SECRET.name]: "x", [SNAPSHOTTER_SECRET.namespace]: "${volumesnapshot.name}" },
      /invalid tokens/,
    ],
    [
      { [SNAPSHOTTER_SECRET.name]: "Bad_Name", [SNAPSHOTTER_SECRET.namespace]: "ns" },
      /"Bad_Name" is not a valid secret name/,
    ],
    [
      { [SNAPSHOTTER_SECRET.name]: "x", [SNAPSHOTTER_SECRET.namespace]: "a.b" },
      /"a.b" is not a valid namespace name/,
    ],
  ];
  for (const [parameters, want] of cases) {
    if (want instanceof RegExp)
      assert.throws(() => secretReference(SNAPSHOTTER_SECRET, parameters, ctx), want);
    else assert.deepEqual(secretReference(SNAPSHOTTER_SECRET, parameters, ctx), want);
  }
  assert.deepEqual(
    secretReference(
      GROUP_SNAPSHOTTER_SECRET,
      {
        [GROUP_SNAPSHOTTER_SECRET.name]: "g-${volumegroupsnapshot.name}",
        [GROUP_SNAPSHOTTER_SECRET.namespace]: "ops",
      },
      { prefix: "volumegroupsnapshot", contentName: "c", name: "grp", namespace: "ns" },
    ),
    { name: "g-grp", namespace: "ops" },
  );
});

test("status from the content: copied once, quantities and times converted, nothing when up to date", () => {
  assert.equal(bytesToQuantity(1048576), "1Mi");
  assert.equal(bytesToQuantity(1000), "1000");
  assert.equal(bytesToQuantity(3 * 1024 ** 3), "3Gi");
  assert.equal(nanosToTime("1795804415170000000"), "2026-11-27T18:33:35Z");
  const bound = nextSnapshotStatus(snapshot(), content(), undefined);
  assert.deepEqual(bound, { boundVolumeSnapshotContentName: "snapcontent-u-1", readyToUse: false });
  const cut = content({
    snapshotHandle: "h",
    creationTime: 1795804415170000000,
    restoreSize: 1048576,
    readyToUse: true,
  });
  const ready = nextSnapshotStatus(snapshot(bound), cut, "grp");
  assert.deepEqual(ready, {
    boundVolumeSnapshotContentName: "snapcontent-u-1",
    readyToUse: true,
    creationTime: "2026-11-27T18:33:35Z",
    restoreSize: "1Mi",
    volumeGroupSnapshotName: "grp",
  });
  assert.equal(nextSnapshotStatus(snapshot(ready), cut, "grp"), undefined, "no write when nothing changed");
  assert.equal(snapshotLagsContent(snapshot(ready), cut), false);
  assert.equal(snapshotLagsContent(snapshot(bound), cut), true);
  const failed = content({ error: { time: "2026-01-01T00:00:00Z", message: "boom" }, readyToUse: false });
  assert.deepEqual(nextSnapshotStatus(snapshot(bound), failed, undefined)?.error, failed.status?.error);
});

test("finalizer edits keep order, append, and say when nothing changes", () => {
  assert.deepEqual(finalizersAfter(["a"], ["b"], []), ["a", "b"]);
  assert.deepEqual(finalizersAfter(["a", "b", "c"], [], ["b"]), ["a", "c"]);
  assert.equal(finalizersAfter(["a", "b"], ["a"], ["x"]), undefined);
  assert.equal(finalizersAfter(undefined, [], ["x"]), undefined);
});

test("operation metrics: started once, recorded once, a completed delete cancels a pending create", async () => {
  const registry = new Registry();
  let now = 0;
  const metrics = new SnapshotOperationMetrics(registry, () => now);
  metrics.start(OPERATIONS.createSnapshot, "u", "d", "dynamic");
  now = 1500;
  metrics.start(OPERATIONS.createSnapshot, "u", "d", "dynamic"); // no restart
  metrics.start(OPERATIONS.createSnapshotAndReady, "u", "", "dynamic");
  metrics.succeeded(OPERATIONS.createSnapshot, "u", "d");
  metrics.succeeded(OPERATIONS.createSnapshot, "u", "d"); // no second sample
  metrics.start(OPERATIONS.deleteSnapshot, "u", "d", "dynamic");
  now = 2000;
  metrics.succeeded(OPERATIONS.deleteSnapshot, "u", "d");
  const text = await registry.metrics();
  assert.match(
    text,
    /snapshot_controller_operation_total_seconds_sum\{driver_name="d",operation_name="CreateSnapshot",snapshot_type="dynamic",operation_status="success"\} 1\.5/,
  );
  assert.match(
    text,
    /snapshot_controller_operation_total_seconds_count\{driver_name="unknown",operation_name="CreateSnapshotAndReady",snapshot_type="dynamic",operation_status="cancel"\} 1/,
  );
  assert.match(
    text,
    /snapshot_controller_operation_total_seconds_count\{[^}]*operation_name="CreateSnapshot",[^}]*\} 1\n/,
  );
  assert.match(text, /snapshot_controller_operations_in_flight 0/);
});

test("flags: upstream's defaults, ranges refused naming the flag, unknown gates refused", () => {
  const parse = (argv: string[]) =>
    snapshotControllerOptionsFromFlags(
      new Flags(parseFlags({ ...LOGGING_FLAGS, ...SNAPSHOT_CONTROLLER_FLAGS }, argv)),
    );
  const defaults = parse([]);
  assert.equal(defaults.resyncPeriodMs, 15 * 60_000);
  assert.equal(defaults.workers, 10);
  assert.equal(defaults.kubeApiQps, 5);
  assert.equal(defaults.kubeApiBurst, 10);
  assert.equal(defaults.retryIntervalStartMs, 1000);
  assert.equal(defaults.retryIntervalMaxMs, 300_000);
  assert.equal(defaults.retryCrdIntervalMaxMs, 30_000);
  assert.equal(defaults.preventVolumeModeConversion, true);
  assert.equal(defaults.enableDistributedSnapshotting, false);
  assert.deepEqual(defaults.featureGates, {
    CSIVolumeGroupSnapshot: true,
    ReleaseLeaderElectionOnExit: false,
  });
  assert.equal(
    parse(["--feature-gates=CSIVolumeGroupSnapshot=false"]).featureGates.CSIVolumeGroupSnapshot,
    false,
  );
  assert.throws(() => parse(["--feature-gates=Nope=true"]), /unrecognized feature gate: Nope/);
  assert.throws(() => parse(["--worker-threads=0"]), /-worker-threads must be at least 1/);
  assert.throws(() => parse(["--retry-interval-max=10ms"]), /-retry-interval-max must not be smaller/);
  assert.throws(() => parse(["--csi-address=/x"]), /csi-address/);
  for (const flag of [
    "kubeconfig",
    "resync-period",
    "worker-threads",
    "leader-election",
    "leader-election-namespace",
    "leader-election-lease-duration",
    "leader-election-renew-deadline",
    "leader-election-retry-period",
    "kube-api-qps",
    "kube-api-burst",
    "http-endpoint",
    "metrics-path",
    "retry-interval-start",
    "retry-interval-max",
    "enable-distributed-snapshotting",
    "prevent-volume-mode-conversion",
    "retry-crd-interval-max",
    "feature-gates",
    "logging-format",
  ])
    assert.ok(flag in SNAPSHOT_CONTROLLER_FLAGS, flag);
});
