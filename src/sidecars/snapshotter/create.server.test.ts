// The snapshotter's CreateSnapshot request and its failure handling, against a scripted CSI
// driver (real gRPC) and the real API server, with the upstream-behaving stand-in
// snapshot-controller: the CSI name (--snapshot-name-prefix / --snapshot-name-uuid-length),
// --extra-create-metadata, the class's prefixed keys stripped, the secret from the class's
// templates (via the controller's deletion-secret annotations) sent to CreateSnapshot and
// DeleteSnapshot and never logged nor put in an Event; a snapshot cut but not ready polled
// until ready; a failure recorded in status.error with a Warning Event and retried, the
// being-created guard kept for an error that may still be running and dropped for a final one.

import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { GVR, type CoreEvent, type Secret, type VolumeSnapshotContent } from "../../api/index.ts";
import {
  CsiError,
  GrpcStatus,
  NS,
  SCRIPTED,
  contentOf,
  createBoundClaim,
  createSnapshotClass,
  createVolumeSnapshot,
  getOrUndefined,
  runSnapshotter,
  startCluster,
  startScriptedSnapshots,
  startSnapshotControllerStandIn,
} from "../../../test/harness/snapshotter.ts";
import { installSnapshotCrds } from "../../../test/harness/snapshots.ts";
import { until } from "../../../test/harness/until.ts";

const GUARD = "snapshot.storage.kubernetes.io/volumesnapshot-being-created";
const SECRET_VALUE = "s3cr3t-value-never-logged";

async function eventsOf(
  client: Parameters<typeof installSnapshotCrds>[0],
  name: string,
): Promise<CoreEvent[]> {
  const events = await client.list<CoreEvent>(GVR.events, { namespace: NS });
  return events.items.filter((event) => event.involvedObject?.name === name);
}

test("CreateSnapshot: name prefix and UUID length, extra metadata, class parameters, secrets by template, never logged", async (t) => {
  const cluster = await startCluster(t);
  const { client } = cluster;
  await installSnapshotCrds(client);
  const driver = await startScriptedSnapshots(t, cluster.dir);
  await client.create<Secret>(GVR.secrets, {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "creds-snap-s", namespace: "default" },
    stringData: { password: SECRET_VALUE },
  });
  await createBoundClaim(client, "data", { driver: SCRIPTED, volumeHandle: "vol-1" });
  await createSnapshotClass(client, "scripted", {
    driver: SCRIPTED,
    parameters: {
      tier: "gold",
      "csi.storage.k8s.io/snapshotter-secret-name": "creds-${volumesnapshot.name}",
      "csi.storage.k8s.io/snapshotter-secret-namespace": "${volumesnapshot.namespace}",
    },
  });
  startSnapshotControllerStandIn(t, client);
  const sidecar = runSnapshotter(t, cluster, driver.path, [
    "--snapshot-name-prefix=backup",
    "--snapshot-name-uuid-length=12",
    "--extra-create-metadata",
  ]);
  const vs = await createVolumeSnapshot(client, "snap-s", { claim: "data", className: "scripted" });
  const content = await until(
    async () => {
      const found = await contentOf(client, "snap-s");
      return found?.status?.readyToUse && found.metadata.annotations?.[GUARD] === undefined
        ? found
        : undefined;
    },
    "snap-s ready",
    { timeoutMs: 30_000 },
  );
  const request = driver.creates[0]!;
  const uid = vs.metadata.uid!;
  assert.equal(request.name, `backup-${uid.replaceAll("-", "").slice(0, 12)}`);
  assert.equal(request.sourceVolumeId, "vol-1");
  assert.deepEqual(request.parameters, {
    tier: "gold",
    "csi.storage.k8s.io/volumesnapshot/name": "snap-s",
    "csi.storage.k8s.io/volumesnapshot/namespace": NS,
    "csi.storage.k8s.io/volumesnapshotcontent/name": `snapcontent-${uid}`,
  });
  assert.deepEqual(request.secrets, { password: SECRET_VALUE });
  assert.equal(content.status?.snapshotHandle, `snap-${request.name}`);
  assert.equal(content.status?.restoreSize, 1048576);
  // The driver's creation time, to the nanosecond's precision a JSON number keeps.
  assert.ok(Math.abs(content.status.creationTime! - 1_700_000_000_000_000_500) < 1_000);

  await client.delete(GVR.volumeSnapshots, "snap-s", { namespace: NS });
  await until(() => driver.deletes.length > 0, "DeleteSnapshot", { timeoutMs: 30_000 });
  assert.deepEqual(driver.deletes[0], {
    snapshotId: `snap-${request.name}`,
    secrets: { password: SECRET_VALUE },
  });
  await until(
    async () => !(await getOrUndefined(() => client.get(GVR.volumeSnapshotContents, `snapcontent-${uid}`))),
    "content gone",
    { timeoutMs: 30_000 },
  );
  const logged = sidecar.logs.join("\n");
  assert.ok(logged.includes("CreateSnapshot"), "the -v 5 trace logs the calls");
  assert.ok(!logged.includes(SECRET_VALUE), "a secret value never reaches a log line");
});

test("not ready, then ready: the content is polled until the driver says ready", async (t) => {
  const cluster = await startCluster(t);
  const { client } = cluster;
  await installSnapshotCrds(client);
  const driver = await startScriptedSnapshots(t, cluster.dir);
  let cutButUploading = true;
  driver.ready = () => !cutButUploading;
  await createBoundClaim(client, "data", { driver: SCRIPTED, volumeHandle: "vol-2" });
  await createSnapshotClass(client, "scripted", { driver: SCRIPTED });
  startSnapshotControllerStandIn(t, client);
  runSnapshotter(t, cluster, driver.path);
  await createVolumeSnapshot(client, "snap-p", { claim: "data", className: "scripted" });
  const cut = await until(
    async () => {
      const found = await contentOf(client, "snap-p");
      return found?.status?.snapshotHandle ? found : undefined;
    },
    "snap-p cut",
    { timeoutMs: 30_000 },
  );
  assert.equal(cut.status?.readyToUse, false);
  await until(() => driver.creates.length >= 3, "polled again (CreateSnapshot, as upstream)", {
    timeoutMs: 30_000,
  });
  assert.equal(driver.snapshots.size, 1, "every poll is the same snapshot");
  cutButUploading = false;
  const ready = await until(
    async () => {
      const found = await contentOf(client, "snap-p");
      return found?.status?.readyToUse ? found : undefined;
    },
    "snap-p ready",
    { timeoutMs: 30_000 },
  );
  assert.equal(ready.status?.snapshotHandle, cut.status?.snapshotHandle);
  const polls = driver.creates.length;
  // Ready: no more calls (a later look would be a resync, 15m away).
  await until(async () => (await contentOf(client, "snap-p"))?.status?.readyToUse, "still ready");
  assert.ok(driver.creates.length <= polls + 1, "no polling once ready");
});

test("errors: status.error and a Warning Event, retried with backoff; the guard stays for a non-final error", async (t) => {
  const cluster = await startCluster(t);
  const { client } = cluster;
  await installSnapshotCrds(client);
  const driver = await startScriptedSnapshots(t, cluster.dir);
  let failWith: CsiError | undefined = new CsiError(GrpcStatus.UNAVAILABLE, "backend busy");
  driver.onCreate = async () => {
    if (failWith) throw failWith;
  };
  await createBoundClaim(client, "data", { driver: SCRIPTED, volumeHandle: "vol-3" });
  await createSnapshotClass(client, "scripted", { driver: SCRIPTED });
  startSnapshotControllerStandIn(t, client);
  runSnapshotter(t, cluster, driver.path);
  await createVolumeSnapshot(client, "snap-e", { claim: "data", className: "scripted" });
  const failed = await until(
    async () => {
      const found = await contentOf(client, "snap-e");
      return found?.status?.error ? found : undefined;
    },
    "snap-e error recorded",
    { timeoutMs: 30_000 },
  );
  assert.match(
    failed.status!.error!.message!,
    /^Failed to create snapshot: failed to take snapshot of the volume vol-3: .*backend busy/,
  );
  assert.equal(failed.status?.readyToUse, false);
  assert.equal(
    failed.metadata.annotations?.[GUARD],
    "yes",
    "UNAVAILABLE may still be running: the guard stays",
  );
  const warnings = await until(async () => {
    const found = (await eventsOf(client, failed.metadata.name!)).filter(
      (e) => e.reason === "SnapshotCreationFailed",
    );
    return found.length > 0 ? found : undefined;
  }, "SnapshotCreationFailed event");
  assert.equal(warnings[0]!.type, "Warning");
  assert.equal(warnings[0]!.source?.component, `csi-snapshotter ${SCRIPTED}`);
  await until(() => driver.creates.length >= 3, "retried", { timeoutMs: 30_000 });

  // A final error: the driver has certainly not cut the snapshot, the guard goes.
  failWith = new CsiError(GrpcStatus.INVALID_ARGUMENT, "bad parameter");
  const final = await until(
    async () => {
      const found = await contentOf(client, "snap-e");
      return found?.status?.error?.message?.includes("bad parameter") &&
        found.metadata.annotations?.[GUARD] === undefined
        ? found
        : undefined;
    },
    "final error recorded, guard removed",
    { timeoutMs: 30_000 },
  );
  assert.equal(final.status?.snapshotHandle, undefined);
  // The driver recovers: the retry succeeds and the error is cleared.
  failWith = undefined;
  const ready = await until(
    async () => {
      const found = await contentOf(client, "snap-e");
      return found?.status?.readyToUse ? found : undefined;
    },
    "snap-e ready after the failures",
    { timeoutMs: 30_000 },
  );
  assert.equal(ready.status?.error, undefined, "readyToUse clears the error");
  assert.equal(driver.snapshots.size, 1);
});

test("a content whose class does not exist fails without a guard and is deleted cleanly", async (t) => {
  const cluster = await startCluster(t);
  const { client } = cluster;
  await installSnapshotCrds(client);
  const driver = await startScriptedSnapshots(t, cluster.dir);
  runSnapshotter(t, cluster, driver.path);
  await client.create<VolumeSnapshotContent>(GVR.volumeSnapshotContents, {
    apiVersion: "snapshot.storage.k8s.io/v1",
    kind: "VolumeSnapshotContent",
    metadata: {
      name: "no-class",
      finalizers: ["snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection"],
    },
    spec: {
      driver: SCRIPTED,
      deletionPolicy: "Delete",
      source: { volumeHandle: "vol-4" },
      volumeSnapshotClassName: "missing",
      volumeSnapshotRef: { name: "s", namespace: NS, uid: "0c5e3d0e-1b1a-4bd2-9d2f-6f1b7c3a9e01" },
    },
  });
  const failed = await until(
    async () => {
      const found = await client.get<VolumeSnapshotContent>(GVR.volumeSnapshotContents, "no-class");
      return found.status?.error ? found : undefined;
    },
    "error recorded",
    { timeoutMs: 30_000 },
  );
  assert.match(
    failed.status!.error!.message!,
    /failed to get input parameters to create snapshot for content no-class: .*missing.* not found/,
  );
  assert.equal(failed.metadata.annotations?.[GUARD], undefined, "no CreateSnapshot was sent: no guard");
  assert.equal(driver.creates.length, 0);
  await client.patch(
    GVR.volumeSnapshotContents,
    "no-class",
    { metadata: { annotations: { "snapshot.storage.kubernetes.io/volumesnapshot-being-deleted": "yes" } } },
    { type: "merge" },
  );
  await client.delete(GVR.volumeSnapshotContents, "no-class");
  await until(
    async () => !(await getOrUndefined(() => client.get(GVR.volumeSnapshotContents, "no-class"))),
    "no-class gone",
    { timeoutMs: 30_000 },
  );
});

test("a CreateSnapshot that fails for good, and a snapshot that stays unready, are retried no faster than the backoff", async (t) => {
  const WINDOW_MS = 4000;
  const ALLOWED = 4; // log2(4s / 1s) + 2 with --retry-interval-start=1s
  const cluster = await startCluster(t);
  const { client } = cluster;
  await installSnapshotCrds(client);
  const driver = await startScriptedSnapshots(t, cluster.dir);
  const failing: number[] = [];
  const polling: number[] = [];
  driver.ready = () => false;
  driver.onCreate = async (request) => {
    if (request.sourceVolumeId === "vol-bad") {
      failing.push(Date.now());
      throw new CsiError(GrpcStatus.INTERNAL, "backend says no");
    }
    polling.push(Date.now());
  };
  await createBoundClaim(client, "bad", { driver: SCRIPTED, volumeHandle: "vol-bad" });
  await createBoundClaim(client, "slow", { driver: SCRIPTED, volumeHandle: "vol-slow" });
  await createSnapshotClass(client, "scripted", { driver: SCRIPTED });
  startSnapshotControllerStandIn(t, client);
  runSnapshotter(t, cluster, driver.path, ["--retry-interval-start=1s", "--retry-interval-max=5m"]);
  await createVolumeSnapshot(client, "snap-bad", { claim: "bad", className: "scripted" });
  await createVolumeSnapshot(client, "snap-slow", { claim: "slow", className: "scripted" });
  await until(() => failing.length > 0 && polling.length > 0, "the first CreateSnapshot of each", {
    timeoutMs: 30_000,
  });
  await delay(WINDOW_MS);
  for (const [what, calls] of [
    ["failing", failing],
    ["unready", polling],
  ] as const) {
    const count = calls.filter((at) => at - calls[0]! <= WINDOW_MS).length;
    assert.ok(
      count <= ALLOWED,
      `${what}: ${count} CreateSnapshot calls in ${WINDOW_MS} ms; backoff allows ${ALLOWED}`,
    );
    assert.ok(count >= 2, `${what}: still retried (${count} calls)`);
  }
});
