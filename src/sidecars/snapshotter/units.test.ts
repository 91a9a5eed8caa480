// The snapshotter's pure parts, table-tested against upstream's rules: CSI snapshot names,
// class parameters handed to the driver, secret reference templates, which CreateSnapshot errors
// are final, which content updates are worth a sync, and the flags' ranges.

import assert from "node:assert/strict";
import { test } from "node:test";
import { Flags, FlagError, LOGGING_FLAGS, parseFlags } from "../../base/index.ts";
import type { VolumeSnapshotContent } from "../../api/index.ts";
import { CsiError, GrpcStatus } from "../../csi/index.ts";
import { contentChangeMatters } from "./changes.ts";
import { isFinalError } from "./errors.ts";
import { SNAPSHOTTER_FLAGS, snapshotterOptionsFromFlags } from "./flags.ts";
import { driverParameters, groupSnapshotName, snapshotName } from "./names.ts";
import { annotatedSecretReference, snapshotSecretReference } from "./secrets.ts";

const UID = "4ac4b0f0-5e9b-4e4a-9f4b-1c2d3e4f5a6b";

test("snapshot names: <prefix>-<UID>, or the UID without dashes cut to --snapshot-name-uuid-length", () => {
  assert.equal(snapshotName("snapshot", UID, -1), `snapshot-${UID}`);
  assert.equal(snapshotName("snap", UID, 8), "snap-4ac4b0f0");
  assert.equal(snapshotName("snap", UID, 32), "snap-4ac4b0f05e9b4e4a9f4b1c2d3e4f5a6b");
  assert.equal(groupSnapshotName("groupsnapshot", UID, -1), `groupsnapshot-${UID}`);
  assert.equal(groupSnapshotName("g", UID, 4), "g-4ac4");
  assert.throws(() => snapshotName("snapshot", "", -1), /missing UID/);
});

test("class parameters: the sidecar's csi.storage.k8s.io/ keys stripped, an unknown one refused", () => {
  assert.deepEqual(
    driverParameters({
      tier: "gold",
      "csi.storage.k8s.io/snapshotter-secret-name": "s",
      "csi.storage.k8s.io/snapshotter-secret-namespace": "ns",
      "csi.storage.k8s.io/snapshotter-list-secret-name": "l",
      "csi.storage.k8s.io/snapshotter-list-secret-namespace": "ns",
      "csi.storage.k8s.io/group-snapshotter-get-secret-name": "g",
      "csi.storage.k8s.io/group-snapshotter-get-secret-namespace": "ns",
    }),
    { tier: "gold" },
  );
  assert.throws(
    () => driverParameters({ "csi.storage.k8s.io/fstype": "ext4" }),
    /found unknown parameter key "csi.storage.k8s.io\/fstype" with reserved namespace csi.storage.k8s.io\//,
  );
});

test("secret templates: the tokens upstream allows for a name and for a namespace", () => {
  const params = {
    "csi.storage.k8s.io/snapshotter-secret-name": "${volumesnapshot.name}-${volumesnapshotcontent.name}",
    "csi.storage.k8s.io/snapshotter-secret-namespace": "${volumesnapshot.namespace}",
  };
  assert.deepEqual(
    snapshotSecretReference("Snapshotter", params, {
      contentName: "snapcontent-1",
      snapshot: { name: "snap", namespace: "team-a" },
    }),
    { name: "snap-snapcontent-1", namespace: "team-a" },
  );
  assert.equal(snapshotSecretReference("Snapshotter", {}, { contentName: "c" }), undefined);
  // The snapshot's name may not pick the namespace.
  assert.throws(
    () =>
      snapshotSecretReference(
        "Snapshotter",
        { ...params, "csi.storage.k8s.io/snapshotter-secret-namespace": "${volumesnapshot.name}" },
        { contentName: "c", snapshot: { name: "snap", namespace: "team-a" } },
      ),
    /invalid tokens: \["volumesnapshot.name"\]/,
  );
  // At status-check time only the content name is known.
  assert.throws(() => snapshotSecretReference("Snapshotter", params, { contentName: "c" }), /invalid tokens/);
  assert.throws(
    () =>
      snapshotSecretReference(
        "Snapshotter",
        { "csi.storage.k8s.io/snapshotter-secret-name": "s" },
        { contentName: "c" },
      ),
    /either name and namespace for Snapshotter secrets specified, Both must be specified/,
  );
  assert.throws(
    () =>
      snapshotSecretReference(
        "SnapshotterList",
        {
          "csi.storage.k8s.io/snapshotter-list-secret-name": "Bad_Name",
          "csi.storage.k8s.io/snapshotter-list-secret-namespace": "ns",
        },
        { contentName: "c" },
      ),
    /"Bad_Name" is not a valid secret name/,
  );
  assert.deepEqual(
    snapshotSecretReference(
      "GroupSnapshotter",
      {
        "csi.storage.k8s.io/group-snapshotter-secret-name": "${volumegroupsnapshotcontent.name}",
        "csi.storage.k8s.io/group-snapshotter-secret-namespace": "${volumegroupsnapshot.namespace}",
      },
      { contentName: "groupsnapcontent-1", snapshot: { name: "g", namespace: "team-b" } },
    ),
    { name: "groupsnapcontent-1", namespace: "team-b" },
  );
  const keys = { name: "a/name", namespace: "a/namespace" };
  assert.equal(annotatedSecretReference({}, keys, "content c"), undefined);
  assert.deepEqual(annotatedSecretReference({ "a/name": "s", "a/namespace": "n" }, keys, "content c"), {
    name: "s",
    namespace: "n",
  });
  assert.throws(
    () => annotatedSecretReference({ "a/name": "", "a/namespace": "n" }, keys, "content c"),
    /secret name or namespace not specified/,
  );
});

test("final CreateSnapshot errors: only those that prove the driver is not cutting a snapshot", () => {
  for (const code of [
    GrpcStatus.INVALID_ARGUMENT,
    GrpcStatus.NOT_FOUND,
    GrpcStatus.INTERNAL,
    GrpcStatus.ALREADY_EXISTS,
  ])
    assert.equal(isFinalError(new CsiError(code, "x")), true, `code ${code}`);
  for (const code of [
    GrpcStatus.CANCELLED,
    GrpcStatus.DEADLINE_EXCEEDED,
    GrpcStatus.UNAVAILABLE,
    GrpcStatus.RESOURCE_EXHAUSTED,
    GrpcStatus.ABORTED,
  ])
    assert.equal(isFinalError(new CsiError(code, "x")), false, `code ${code}`);
  assert.equal(isFinalError(new Error("socket closed")), false, "not a gRPC status: may have been sent");
});

test("content updates: the sidecar's own writes wake nothing, anyone else's do", () => {
  const base: VolumeSnapshotContent = {
    metadata: { name: "c", resourceVersion: "1", annotations: { keep: "x" }, finalizers: [] },
    spec: {
      driver: "d",
      deletionPolicy: "Delete",
      source: { volumeHandle: "v" },
      volumeSnapshotRef: { name: "s", namespace: "n", uid: "u" },
    },
  };
  const next = (change: (c: VolumeSnapshotContent) => void): VolumeSnapshotContent => {
    const copy = structuredClone(base);
    copy.metadata.resourceVersion = "2";
    change(copy);
    return copy;
  };
  assert.equal(
    contentChangeMatters(
      base,
      next((c) => (c.status = { readyToUse: true })),
    ),
    false,
  );
  assert.equal(
    contentChangeMatters(
      base,
      next((c) => (c.metadata.finalizers = ["f"])),
    ),
    false,
  );
  assert.equal(
    contentChangeMatters(
      base,
      next(
        (c) =>
          (c.metadata.annotations!["snapshot.storage.kubernetes.io/volumesnapshot-being-created"] = "yes"),
      ),
    ),
    false,
  );
  assert.equal(
    contentChangeMatters(
      base,
      next(
        (c) =>
          (c.metadata.annotations!["snapshot.storage.kubernetes.io/volumesnapshot-being-deleted"] = "yes"),
      ),
    ),
    true,
  );
  assert.equal(
    contentChangeMatters(
      base,
      next((c) => (c.metadata.deletionTimestamp = "2026-01-01T00:00:00Z")),
    ),
    true,
  );
  assert.equal(
    contentChangeMatters(
      base,
      next((c) => (c.spec.deletionPolicy = "Retain")),
    ),
    true,
  );
});

test("flags: upstream's defaults; bad UUID lengths and empty prefixes refused with the flag named", () => {
  const parse = (argv: string[]) =>
    snapshotterOptionsFromFlags(new Flags(parseFlags({ ...LOGGING_FLAGS, ...SNAPSHOTTER_FLAGS }, argv)), {});
  const defaults = parse([]);
  assert.equal(defaults.timeoutMs, 60_000);
  assert.equal(defaults.workerThreads, 10);
  assert.equal(defaults.resyncPeriodMs, 15 * 60_000);
  assert.equal(defaults.snapshotNamePrefix, "snapshot");
  assert.equal(defaults.snapshotNameUuidLength, -1);
  assert.equal(defaults.groupSnapshotNamePrefix, "groupsnapshot");
  assert.equal(defaults.extraCreateMetadata, false);
  assert.equal(defaults.volumeGroupSnapshots, true);
  assert.equal(defaults.retryIntervalStartMs, 1000);
  assert.equal(defaults.retryIntervalMaxMs, 300_000);
  assert.equal(defaults.csiAddress, "/run/csi/socket");
  assert.throws(() => parse(["--snapshot-name-uuid-length=33"]), FlagError);
  assert.throws(() => parse(["--groupsnapshot-name-uuid-length=0"]), /groupsnapshot-name-uuid-length/);
  assert.throws(() => parse(["--snapshot-name-prefix="]), /cannot be of length 0/);
  assert.throws(() => parse(["--feature-gates=Unknown=true"]), /unrecognized feature gate/);
  assert.equal(parse(["--feature-gates=CSIVolumeGroupSnapshot=false"]).volumeGroupSnapshots, false);
  // Go-only and logging flags of upstream's --help are accepted.
  parse(["--automaxprocs", "--logging-format=json", "--leader-election-labels=a=b", "--metrics-path=/m"]);
});
