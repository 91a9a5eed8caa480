// The wire contract between the snapshot-controller and the csi-snapshotter sidecar, both ways,
// with every name spelled out here as external-snapshotter v8.6 spells it (pkg/utils/util.go),
// not taken from csikit's own constants, so a mistyped constant shared by both csikit parts
// fails here instead of passing unnoticed:
//   1. csikit's snapshotter against a content written exactly as upstream's controller writes
//      it: it reads the deletion-secret annotations and the class's secret, sets
//      volumesnapshot-being-created before CreateSnapshot and clears it after, writes the
//      status upstream's controller reads (snapshotHandle, creationTime in ns, restoreSize in
//      bytes, readyToUse), and on volumesnapshot-being-deleted plus a deletion calls
//      DeleteSnapshot and removes volumesnapshotcontent-bound-protection.
//   2. csikit's snapshot-controller against a sidecar played here as upstream's behaves: the
//      content it creates carries upstream's name, finalizer, annotations and fields; it copies
//      the status (error first, then ready) upstream's sidecar writes; it protects the claim
//      with pvc-as-source-protection until ready; on deletion it marks the content
//      volumesnapshot-being-deleted and waits for the sidecar to drop the finalizer.

import assert from "node:assert/strict";
import { test } from "node:test";
import {
  GVR,
  type PersistentVolumeClaim,
  type VolumeSnapshot,
  type VolumeSnapshotContent,
} from "../../src/api/index.ts";
import type { KubeObject } from "../../src/kube/index.ts";
import {
  boundClaim,
  createClass,
  createSnapshot,
  getContent,
  getSnapshot,
  gone,
  runController,
  setup,
} from "../harness/snapshot-controller.ts";
import {
  SCRIPTED,
  createSnapshotClass,
  runSnapshotter,
  startCluster,
  startScriptedSnapshots,
} from "../harness/snapshotter.ts";
import { installSnapshotCrds } from "../harness/snapshots.ts";
import { until } from "../harness/until.ts";

// Upstream's names (external-snapshotter v8.6 pkg/utils/util.go).
const BEING_CREATED = "snapshot.storage.kubernetes.io/volumesnapshot-being-created";
const BEING_DELETED = "snapshot.storage.kubernetes.io/volumesnapshot-being-deleted";
const DELETION_SECRET_NAME = "snapshot.storage.kubernetes.io/deletion-secret-name";
const DELETION_SECRET_NAMESPACE = "snapshot.storage.kubernetes.io/deletion-secret-namespace";
const CONTENT_BOUND = "snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection";
const SNAPSHOT_BOUND = "snapshot.storage.kubernetes.io/volumesnapshot-bound-protection";
const SNAPSHOT_AS_SOURCE = "snapshot.storage.kubernetes.io/volumesnapshot-as-source-protection";
const PVC_AS_SOURCE = "snapshot.storage.kubernetes.io/pvc-as-source-protection";
const SECRET_NAME_PARAMETER = "csi.storage.k8s.io/snapshotter-secret-name";
const SECRET_NAMESPACE_PARAMETER = "csi.storage.k8s.io/snapshotter-secret-namespace";
const NS = "default";
const STEP = { timeoutMs: 30_000 };

test("csikit snapshotter with a content written as upstream's snapshot-controller writes it", async (t) => {
  const cluster = await startCluster(t);
  const { client } = cluster;
  await installSnapshotCrds(client);
  const driver = await startScriptedSnapshots(t, cluster.dir);
  await client.create(GVR.secrets, {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "snap-secret", namespace: NS },
    data: { token: Buffer.from("s3cret").toString("base64") },
  } as KubeObject);
  await createSnapshotClass(client, "scripted", {
    driver: SCRIPTED,
    parameters: { [SECRET_NAME_PARAMETER]: "snap-secret", [SECRET_NAMESPACE_PARAMETER]: NS },
  });
  let releaseCreate = (): void => undefined;
  const createHeld = new Promise<void>((resolve) => (releaseCreate = resolve));
  t.after(() => releaseCreate());
  driver.onCreate = () => createHeld;
  runSnapshotter(t, cluster, driver.path);

  // As upstream's controller creates it for VolumeSnapshot default/snap (createSnapshotContent).
  const uid = "6f7e1c2a-3b4d-4e5f-8a9b-0c1d2e3f4a5b";
  const name = `snapcontent-${uid}`;
  await client.create(GVR.volumeSnapshotContents, {
    apiVersion: "snapshot.storage.k8s.io/v1",
    kind: "VolumeSnapshotContent",
    metadata: {
      name,
      finalizers: [CONTENT_BOUND],
      annotations: { [DELETION_SECRET_NAME]: "snap-secret", [DELETION_SECRET_NAMESPACE]: NS },
    },
    spec: {
      volumeSnapshotRef: {
        kind: "VolumeSnapshot",
        apiVersion: "snapshot.storage.k8s.io/v1",
        namespace: NS,
        name: "snap",
        uid,
        resourceVersion: "1",
      },
      source: { volumeHandle: "vol-1" },
      volumeSnapshotClassName: "scripted",
      deletionPolicy: "Delete",
      driver: SCRIPTED,
      sourceVolumeMode: "Filesystem",
    },
  } as KubeObject);

  // The intent is on the content while CreateSnapshot is in the driver.
  const during = await until(
    async () => {
      const c = await client.get<VolumeSnapshotContent>(GVR.volumeSnapshotContents, name);
      return driver.creates.length === 1 && c.metadata?.annotations?.[BEING_CREATED] === "yes"
        ? c
        : undefined;
    },
    `${BEING_CREATED}: yes while CreateSnapshot runs`,
    STEP,
  );
  assert.equal(during.status?.readyToUse ?? false, false);
  const request = driver.creates[0]!;
  assert.equal(request.name, `snapshot-${uid}`);
  assert.equal(request.sourceVolumeId, "vol-1");
  assert.deepEqual(request.secrets, { token: "s3cret" });
  releaseCreate();

  // The status upstream's controller reads, and the intent cleared.
  const cut = await until(
    async () => {
      const c = await client.get<VolumeSnapshotContent>(GVR.volumeSnapshotContents, name);
      return c.status?.readyToUse === true && c.metadata?.annotations?.[BEING_CREATED] === undefined
        ? c
        : undefined;
    },
    "the content cut and ready, the intent cleared",
    STEP,
  );
  const status = cut.status as Record<string, unknown>;
  assert.equal(status.snapshotHandle, `snap-snapshot-${uid}`);
  assert.equal(status.restoreSize, 1048576, "restoreSize: bytes, an integer");
  assert.equal(typeof status.creationTime, "number", "creationTime: nanoseconds since the epoch, an integer");
  assert.ok(Math.abs((status.creationTime as number) - 1_700_000_000e9) < 1e6, String(status.creationTime));
  assert.equal(status.error, undefined);
  assert.deepEqual(cut.metadata?.finalizers, [CONTENT_BOUND]);

  // Deleted as upstream's controller deletes it: the annotation first, then the object.
  await client.patch(
    GVR.volumeSnapshotContents,
    name,
    { metadata: { annotations: { [BEING_DELETED]: "yes" } } },
    { type: "merge" },
  );
  await client.delete(GVR.volumeSnapshotContents, name);
  await until(
    () => gone(() => client.get(GVR.volumeSnapshotContents, name)),
    "the content gone (finalizer removed)",
    STEP,
  );
  assert.deepEqual(driver.deletes, [{ snapshotId: `snap-snapshot-${uid}`, secrets: { token: "s3cret" } }]);
  assert.equal(driver.snapshots.size, 0, "the backend snapshot deleted");
});

test("csikit snapshot-controller with a sidecar behaving as upstream's", async (t) => {
  const f = await setup(t, { standIn: false });
  await createClass(f.admin, "csi-snapclass", {
    parameters: {
      [SECRET_NAME_PARAMETER]: "${volumesnapshotcontent.name}",
      [SECRET_NAMESPACE_PARAMETER]: NS,
    },
  });
  const claim = (): Promise<PersistentVolumeClaim> =>
    f.admin.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "data", { namespace: NS });
  await boundClaim(f.admin, "data");
  runController(t, f);
  const created = await createSnapshot(f.admin, "snap", { claim: "data" }, "csi-snapclass");
  const uid = created.metadata.uid!;
  const name = `snapcontent-${uid}`;

  // What upstream's sidecar reads from the content the controller creates.
  const content = await until(
    () =>
      getContent(f.admin, name).then(
        (c) => c,
        () => undefined,
      ),
    `content ${name}`,
    STEP,
  );
  assert.deepEqual(content.metadata?.finalizers, [CONTENT_BOUND]);
  assert.deepEqual(content.metadata?.annotations, {
    [DELETION_SECRET_NAME]: name,
    [DELETION_SECRET_NAMESPACE]: NS,
  });
  const ref = content.spec.volumeSnapshotRef;
  assert.deepEqual(
    { kind: ref.kind, apiVersion: ref.apiVersion, namespace: ref.namespace, name: ref.name, uid: ref.uid },
    { kind: "VolumeSnapshot", apiVersion: "snapshot.storage.k8s.io/v1", namespace: NS, name: "snap", uid },
  );
  assert.deepEqual(content.spec.source, { volumeHandle: "vol-data" });
  assert.equal(content.spec.driver, "hostpath.csi.k8s.io");
  assert.equal(content.spec.deletionPolicy, "Delete");
  assert.equal(content.spec.volumeSnapshotClassName, "csi-snapclass");
  assert.equal(content.spec.sourceVolumeMode, "Filesystem");
  assert.ok((await claim()).metadata?.finalizers?.includes(PVC_AS_SOURCE), "the claim protected while cut");

  // The sidecar's failure status, then its success, as upstream's writes them (status subresource).
  const writeStatus = (body: Record<string, unknown>) =>
    f.admin.patch(
      GVR.volumeSnapshotContents,
      name,
      { status: body },
      { type: "merge", subresource: "status" },
    );
  await writeStatus({
    readyToUse: false,
    error: { message: "CreateSnapshot: injected", time: "2026-01-01T00:00:00Z" },
  });
  await until(
    async () => (await getSnapshot(f.admin, "snap")).status?.error?.message === "CreateSnapshot: injected",
    "the content's error copied to the snapshot",
    STEP,
  );
  await writeStatus({
    error: null,
    snapshotHandle: "handle-1",
    creationTime: 1_700_000_000_000_000_000,
    restoreSize: 1048576,
    readyToUse: true,
  });
  const ready = await until(
    async () => {
      const s = await getSnapshot(f.admin, "snap");
      return s.status?.readyToUse === true ? s : undefined;
    },
    "the snapshot ready from the content's status",
    STEP,
  );
  assert.equal(ready.status?.boundVolumeSnapshotContentName, name);
  assert.equal(ready.status?.restoreSize, "1Mi");
  assert.equal(ready.status?.creationTime, "2023-11-14T22:13:20Z");
  await until(
    async () => {
      const s = await getSnapshot(f.admin, "snap");
      const finalizers = s.metadata?.finalizers ?? [];
      return finalizers.includes(SNAPSHOT_AS_SOURCE) && finalizers.includes(SNAPSHOT_BOUND);
    },
    "the snapshot's as-source and bound finalizers",
    STEP,
  );
  await until(
    async () => !(await claim()).metadata?.finalizers?.includes(PVC_AS_SOURCE),
    "the claim released once ready",
    STEP,
  );

  // Deletion: the controller marks the content and deletes it; the sidecar drops its finalizer.
  await f.admin.delete(GVR.volumeSnapshots, "snap", { namespace: NS });
  const deleting = await until(
    async () => {
      const c = await getContent(f.admin, name);
      return c.metadata?.annotations?.[BEING_DELETED] === "yes" && c.metadata.deletionTimestamp
        ? c
        : undefined;
    },
    `${BEING_DELETED}: yes, and the content deleted`,
    STEP,
  );
  assert.ok(
    !(await gone(() => getSnapshot(f.admin, "snap"))),
    "the snapshot waits for its content (volumesnapshot-bound-protection)",
  );
  await f.admin.update(GVR.volumeSnapshotContents, {
    ...deleting,
    metadata: { ...deleting.metadata, finalizers: [] },
  });
  await until(() => gone(() => getSnapshot(f.admin, "snap")), "the snapshot gone", STEP);
  await until(() => gone(() => getContent(f.admin, name)), "the content gone", STEP);
  const left: VolumeSnapshot[] = (await f.admin.list<VolumeSnapshot>(GVR.volumeSnapshots, { namespace: NS }))
    .items;
  assert.deepEqual(left, []);
});
