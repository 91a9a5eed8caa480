// `csikit up`'s CRD step against the embedded API server: every deploy/crds file created and
// served in each of its versions; a second run (a restart of `up`) writes nothing; a stored CRD
// that drifted from its file is put back, and only that one is written.

import assert from "node:assert/strict";
import { test } from "node:test";
import { GVR } from "../api/index.ts";
import type { KubeObject } from "../kube/index.ts";
import { applyCrds, CRDS_DIR, installCrds } from "./crds.ts";
import { startTestServer } from "../../test/harness/kube-server.ts";
import { defer } from "../../test/harness/cleanup.ts";

const ALL = [
  "snapshotmetadataservices.cbt.storage.k8s.io",
  "volumegroupsnapshotclasses.groupsnapshot.storage.k8s.io",
  "volumegroupsnapshotcontents.groupsnapshot.storage.k8s.io",
  "volumegroupsnapshots.groupsnapshot.storage.k8s.io",
  "volumesnapshotclasses.snapshot.storage.k8s.io",
  "volumesnapshotcontents.snapshot.storage.k8s.io",
  "volumesnapshots.snapshot.storage.k8s.io",
];

interface Crd extends KubeObject {
  spec: { versions: { name: string; additionalPrinterColumns?: { name: string }[] }[] };
}

test("up's CRD step: created and served, idempotent across restarts, drift put back", async (t) => {
  const server = await startTestServer();
  defer(t, () => server.stop());
  const client = server.client();
  const signal = new AbortController().signal;

  const first = await installCrds(client, CRDS_DIR, 60_000, signal);
  assert.deepEqual(first, { created: ALL, updated: [], unchanged: [] });
  // Served in every version, the group snapshot kinds in the three of them.
  for (const version of ["v1", "v1beta2", "v1beta1"])
    await client.list({ group: "groupsnapshot.storage.k8s.io", version, resource: "volumegroupsnapshots" });
  await client.list(GVR.snapshotMetadataServices);
  await client.list(GVR.volumeSnapshots, { namespace: "default" });

  const versions = async () =>
    new Map(
      (await client.list<Crd>(GVR.customResourceDefinitions)).items.map((crd) => [
        crd.metadata!.name!,
        crd.metadata!.resourceVersion!,
      ]),
    );
  const before = await versions();
  const again = await applyCrds(client, CRDS_DIR, signal);
  assert.deepEqual(again, { created: [], updated: [], unchanged: ALL });
  assert.deepEqual(await versions(), before, "a restart writes no CRD");

  // Someone drops VolumeSnapshot's printer columns: the next run restores the file's spec.
  const live = await client.get<Crd>(
    GVR.customResourceDefinitions,
    "volumesnapshots.snapshot.storage.k8s.io",
  );
  for (const version of live.spec.versions) delete version.additionalPrinterColumns;
  await client.update(GVR.customResourceDefinitions, live);
  const repaired = await applyCrds(client, CRDS_DIR, signal);
  assert.deepEqual(repaired.updated, ["volumesnapshots.snapshot.storage.k8s.io"]);
  assert.equal(repaired.unchanged.length, ALL.length - 1);
  const back = await client.get<Crd>(
    GVR.customResourceDefinitions,
    "volumesnapshots.snapshot.storage.k8s.io",
  );
  assert.deepEqual(
    back.spec.versions[0]?.additionalPrinterColumns?.map((column) => column.name),
    [
      "ReadyToUse",
      "SourcePVC",
      "SourceSnapshotContent",
      "RestoreSize",
      "SnapshotClass",
      "SnapshotContent",
      "CreationTime",
      "Age",
    ],
  );
});
