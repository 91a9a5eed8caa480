// The snapshotter against csikit's hostpath driver over real gRPC and the real API server, with
// the upstream-behaving stand-in snapshot-controller creating the contents: a dynamic snapshot
// is cut and its content status written as upstream writes it; deleting the snapshot deletes
// the backend snapshot (Delete) or keeps it (Retain); a pre-provisioned content gets its
// status from the driver; metrics and events are upstream's.

import assert from "node:assert/strict";
import { test } from "node:test";
import { GVR, type VolumeSnapshotContent } from "../../api/index.ts";
import { connect } from "../../../test/harness/csi.ts";
import {
  HOSTPATH,
  NS,
  contentOf,
  createBoundClaim,
  createSnapshotClass,
  createVolumeSnapshot,
  getOrUndefined,
  runSnapshotter,
  startCluster,
  startHostpath,
  startSnapshotControllerStandIn,
} from "../../../test/harness/snapshotter.ts";
import { installSnapshotCrds } from "../../../test/harness/snapshots.ts";
import { until } from "../../../test/harness/until.ts";

const MiB = 1024 * 1024;

test("dynamic snapshot on hostpath: status as upstream, Delete removes the backend snapshot, Retain keeps it", async (t) => {
  const cluster = await startCluster(t);
  const { client } = cluster;
  await installSnapshotCrds(client);
  const hostpath = await startHostpath(t, cluster.dir);
  const csi = connect(t, hostpath.path);
  const volume = await csi.controller.createVolume({
    name: "vol-snap",
    capacityRange: { requiredBytes: String(2 * MiB) },
    volumeCapabilities: [{ mount: {}, accessMode: { mode: "SINGLE_NODE_WRITER" } }],
  });
  const volumeHandle = volume.volume!.volumeId;
  await createBoundClaim(client, "data", { driver: HOSTPATH, volumeHandle });
  await createSnapshotClass(client, "hostpath-delete", { driver: HOSTPATH });
  await createSnapshotClass(client, "hostpath-retain", { driver: HOSTPATH, deletionPolicy: "Retain" });
  const standIn = startSnapshotControllerStandIn(t, client);
  const sidecar = runSnapshotter(t, cluster, hostpath.path, ["--http-endpoint=127.0.0.1:0"]);

  const before = Date.now();
  const vs = await createVolumeSnapshot(client, "snap-1", { claim: "data", className: "hostpath-delete" });
  const ready = await until(
    async () => {
      const content = await contentOf(client, "snap-1");
      // Status first, then the guard goes (upstream's order).
      const guard =
        content?.metadata.annotations?.["snapshot.storage.kubernetes.io/volumesnapshot-being-created"];
      return content?.status?.readyToUse && guard === undefined ? content : undefined;
    },
    "snap-1's content ready and its being-created guard gone",
    { timeoutMs: 30_000 },
  ).catch((error: unknown) => {
    t.diagnostic(standIn.errors.slice(-3).join("\n"));
    t.diagnostic(sidecar.logs.slice(-20).join("\n"));
    throw error;
  });
  const status = ready.status!;
  assert.match(status.snapshotHandle ?? "", /^snap-[0-9a-f]{32}$/);
  assert.equal(status.restoreSize, 2 * MiB, "restoreSize: the snapshot's size in bytes");
  assert.equal(typeof status.creationTime, "number", "creationTime: int64 nanoseconds");
  assert.ok(
    status.creationTime! >= (before - 5_000) * 1e6 && status.creationTime! <= (Date.now() + 5_000) * 1e6,
  );
  assert.equal(status.error, undefined);
  const listed = await csi.controller.listSnapshots({ snapshotId: status.snapshotHandle! });
  assert.equal(listed.entries.length, 1, "the backend holds the snapshot");
  assert.equal(listed.entries[0]!.snapshot!.sourceVolumeId, volumeHandle);

  // Metrics: upstream's histogram with the driver and the CSI method.
  const metrics = await (await fetch(`${sidecar.url!}/metrics`)).text();
  assert.match(
    metrics,
    /csi_sidecar_operations_seconds_count\{driver_name="hostpath\.csi\.k8s\.io",method_name="\/csi\.v1\.Controller\/CreateSnapshot",grpc_status_code="OK"\} 1/,
  );

  // Delete: the backend snapshot goes, then the content.
  const contentName = `snapcontent-${vs.metadata.uid}`;
  await client.delete(GVR.volumeSnapshots, "snap-1", { namespace: NS });
  await until(
    async () => !(await getOrUndefined(() => client.get(GVR.volumeSnapshotContents, contentName))),
    "snap-1's content deleted",
    { timeoutMs: 30_000 },
  );
  assert.equal(
    (await csi.controller.listSnapshots({ snapshotId: status.snapshotHandle! })).entries.length,
    0,
    "DeleteSnapshot was called",
  );

  // Retain: the content and the backend snapshot stay after the snapshot is deleted.
  const kept = await createVolumeSnapshot(client, "snap-2", { claim: "data", className: "hostpath-retain" });
  const keptContent = await until(
    async () => {
      const content = await contentOf(client, "snap-2");
      return content?.status?.readyToUse ? content : undefined;
    },
    "snap-2's content ready",
    { timeoutMs: 30_000 },
  );
  await client.delete(GVR.volumeSnapshots, "snap-2", { namespace: NS });
  await until(
    async () => !(await getOrUndefined(() => client.get(GVR.volumeSnapshots, "snap-2", { namespace: NS }))),
    "snap-2 gone",
    { timeoutMs: 30_000 },
  );
  const retained = await client.get<VolumeSnapshotContent>(
    GVR.volumeSnapshotContents,
    `snapcontent-${kept.metadata.uid}`,
  );
  assert.equal(retained.status?.snapshotHandle, keptContent.status!.snapshotHandle);
  // The admin deletes the retained content: the finalizer goes, the backend snapshot stays.
  await client.delete(GVR.volumeSnapshotContents, retained.metadata.name!);
  await until(
    async () =>
      !(await getOrUndefined(() => client.get(GVR.volumeSnapshotContents, retained.metadata.name!))),
    "retained content gone",
    { timeoutMs: 30_000 },
  );
  assert.equal(
    (await csi.controller.listSnapshots({ snapshotId: keptContent.status!.snapshotHandle! })).entries.length,
    1,
    "Retain: the backend snapshot is kept",
  );
  assert.deepEqual(
    standIn.errors.filter((e) => !/conflict|Conflict|modified/.test(e)),
    [],
  );
});

test("pre-provisioned content on hostpath: status from ListSnapshots; unbound and deleted, its finalizer goes", async (t) => {
  const cluster = await startCluster(t);
  const { client } = cluster;
  await installSnapshotCrds(client);
  const hostpath = await startHostpath(t, cluster.dir);
  const csi = connect(t, hostpath.path);
  const volume = await csi.controller.createVolume({
    name: "vol-pre",
    capacityRange: { requiredBytes: String(MiB) },
    volumeCapabilities: [{ mount: {}, accessMode: { mode: "SINGLE_NODE_WRITER" } }],
  });
  const snapshot = await csi.controller.createSnapshot({
    name: "existing",
    sourceVolumeId: volume.volume!.volumeId,
  });
  const handle = snapshot.snapshot!.snapshotId;
  runSnapshotter(t, cluster, hostpath.path);
  await client.create<VolumeSnapshotContent>(GVR.volumeSnapshotContents, {
    apiVersion: "snapshot.storage.k8s.io/v1",
    kind: "VolumeSnapshotContent",
    metadata: {
      name: "pre-1",
      finalizers: ["snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection"],
    },
    spec: {
      driver: HOSTPATH,
      deletionPolicy: "Retain",
      source: { snapshotHandle: handle },
      volumeSnapshotRef: { name: "pre-snap", namespace: NS },
    },
  });
  const content = await until(
    async () => {
      const found = await client.get<VolumeSnapshotContent>(GVR.volumeSnapshotContents, "pre-1");
      return found.status?.readyToUse ? found : undefined;
    },
    "pre-provisioned content ready",
    { timeoutMs: 30_000 },
  );
  assert.equal(content.status?.snapshotHandle, handle);
  assert.equal(content.status?.restoreSize, MiB);
  // Never bound (no UID in the reference) and deleted: nothing holds the content any more.
  await client.delete(GVR.volumeSnapshotContents, "pre-1");
  await until(
    async () => !(await getOrUndefined(() => client.get(GVR.volumeSnapshotContents, "pre-1"))),
    "pre-1 gone",
    { timeoutMs: 30_000 },
  );
  assert.equal((await csi.controller.listSnapshots({ snapshotId: handle })).entries.length, 1, "Retain");
});
