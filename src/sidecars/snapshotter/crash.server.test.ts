// Crash safety with `csikit snapshotter` as a real child process, SIGKILLed at the worst points,
// with the upstream-behaving stand-in snapshot-controller deleting the VolumeSnapshot while the
// sidecar is down. After a restart nothing is leaked: the backend holds no snapshot of a
// deleted VolumeSnapshot and no content is left.
//   1. CreateSnapshot in flight (the backend finishes cutting after the sidecar died);
//   2. CreateSnapshot answered but its status write not done (the API server refuses it);
//   3. DeleteSnapshot done but the status not cleared.

import assert from "node:assert/strict";
import { test } from "node:test";
import { GVR, type VolumeSnapshotContent } from "../../api/index.ts";
import {
  NS,
  SCRIPTED,
  createBoundClaim,
  createSnapshotClass,
  createVolumeSnapshot,
  getOrUndefined,
  startCluster,
  startScriptedSnapshots,
  startSnapshotControllerStandIn,
  startSnapshotterChild,
  type SnapshotterChild,
} from "../../../test/harness/snapshotter.ts";
import { installSnapshotCrds } from "../../../test/harness/snapshots.ts";
import { until } from "../../../test/harness/until.ts";

const GUARD = "snapshot.storage.kubernetes.io/volumesnapshot-being-created";
const STEP = { timeoutMs: 60_000 };

async function waitGone(
  client: Parameters<typeof installSnapshotCrds>[0],
  name: string,
  child: SnapshotterChild,
  t: { diagnostic(message: string): void },
): Promise<void> {
  try {
    await until(
      async () => !(await getOrUndefined(() => client.get(GVR.volumeSnapshotContents, name))),
      `${name} gone`,
      STEP,
    );
  } catch (error) {
    t.diagnostic(child.stderr.join("").slice(-3000));
    throw error;
  }
}

test("kill -9 between CreateSnapshot and its status, and after DeleteSnapshot: restart converges, no backend snapshot leaked", async (t) => {
  const cluster = await startCluster(t);
  const { client, faults } = cluster;
  await installSnapshotCrds(client);
  const driver = await startScriptedSnapshots(t, cluster.dir);
  await createSnapshotClass(client, "scripted", { driver: SCRIPTED });
  await createBoundClaim(client, "c1", { driver: SCRIPTED, volumeHandle: "vol-1" });
  await createBoundClaim(client, "c2", { driver: SCRIPTED, volumeHandle: "vol-2" });
  await createBoundClaim(client, "c3", { driver: SCRIPTED, volumeHandle: "vol-3" });
  startSnapshotControllerStandIn(t, client);

  // 1. CreateSnapshot hangs; the sidecar dies with it in flight; the snapshot is deleted; the
  //    backend then cuts the snapshot anyway.
  let finishCreate: () => void = () => undefined;
  const createGate = new Promise<void>((resolve) => (finishCreate = resolve));
  driver.onCreate = (request) => (request.sourceVolumeId === "vol-1" ? createGate : Promise.resolve());
  let sidecar = startSnapshotterChild(t, cluster.kubeconfig, driver.path);
  const vs1 = await createVolumeSnapshot(client, "s1", { claim: "c1", className: "scripted" });
  const content1 = `snapcontent-${vs1.metadata.uid}`;
  await until(() => driver.creates.length >= 1, "CreateSnapshot of vol-1 in flight", STEP);
  const inFlight = await client.get<VolumeSnapshotContent>(GVR.volumeSnapshotContents, content1);
  assert.equal(inFlight.metadata.annotations?.[GUARD], "yes", "intent recorded before the call");
  await sidecar.kill();
  await client.delete(GVR.volumeSnapshots, "s1", { namespace: NS });
  await until(
    async () =>
      (await client.get<VolumeSnapshotContent>(GVR.volumeSnapshotContents, content1)).metadata
        .deletionTimestamp,
    "content of s1 being deleted",
    STEP,
  );
  finishCreate();
  await until(
    () => driver.snapshots.size === 1,
    "the backend cut s1's snapshot after the sidecar died",
    STEP,
  );

  // 2. CreateSnapshot answers, but the API server refuses every status write; the sidecar dies
  //    before recording the handle; the snapshot is deleted meanwhile.
  sidecar = startSnapshotterChild(t, cluster.kubeconfig, driver.path);
  await waitGone(client, content1, sidecar, t);
  assert.equal(driver.snapshots.size, 0, "s1's late snapshot was found again and deleted");
  driver.onCreate = async (request) => {
    if (request.sourceVolumeId === "vol-2")
      faults.failNext({
        verb: "patch",
        resource: "volumesnapshotcontents",
        subresource: "status",
        code: 503,
        count: 1_000_000,
      });
  };
  const vs2 = await createVolumeSnapshot(client, "s2", { claim: "c2", className: "scripted" });
  const content2 = `snapcontent-${vs2.metadata.uid}`;
  await until(
    () => driver.snapshots.size === 1 && faults.fired > 0,
    "s2 cut, its status write refused",
    STEP,
  );
  await sidecar.kill();
  faults.clear();
  const unrecorded = await client.get<VolumeSnapshotContent>(GVR.volumeSnapshotContents, content2);
  assert.equal(unrecorded.status?.snapshotHandle, undefined, "the handle never reached the API server");
  assert.equal(unrecorded.metadata.annotations?.[GUARD], "yes", "the guard says a snapshot may exist");
  await client.delete(GVR.volumeSnapshots, "s2", { namespace: NS });

  // 3. DeleteSnapshot succeeds, the status clear is refused, the sidecar dies.
  driver.onCreate = undefined;
  let s3Deleted = false;
  driver.onDelete = async (snapshotId) => {
    if (driver.snapshots.get(snapshotId)?.sourceVolumeId !== "vol-3" || s3Deleted) return;
    s3Deleted = true;
    faults.failNext({
      verb: "patch",
      resource: "volumesnapshotcontents",
      subresource: "status",
      code: 503,
      count: 1_000_000,
    });
  };
  sidecar = startSnapshotterChild(t, cluster.kubeconfig, driver.path);
  await waitGone(client, content2, sidecar, t);
  assert.equal(driver.snapshots.size, 0, "s2's unrecorded snapshot was found again and deleted");
  const vs3 = await createVolumeSnapshot(client, "s3", { claim: "c3", className: "scripted" });
  const content3 = `snapcontent-${vs3.metadata.uid}`;
  await until(
    async () =>
      (await client.get<VolumeSnapshotContent>(GVR.volumeSnapshotContents, content3)).status?.readyToUse,
    "s3 ready",
    STEP,
  );
  await client.delete(GVR.volumeSnapshots, "s3", { namespace: NS });
  await until(
    () => s3Deleted && driver.snapshots.size === 0 && faults.fired > 0,
    "s3 deleted in the backend, status clear refused",
    STEP,
  );
  await sidecar.kill();
  faults.clear();
  assert.ok(
    await getOrUndefined(() => client.get(GVR.volumeSnapshotContents, content3)),
    "the content waits",
  );
  sidecar = startSnapshotterChild(t, cluster.kubeconfig, driver.path);
  await waitGone(client, content3, sidecar, t);
  assert.equal(driver.snapshots.size, 0, "no backend snapshot left");
  const contents = await client.list<VolumeSnapshotContent>(GVR.volumeSnapshotContents);
  assert.deepEqual(
    contents.items.map((c) => c.metadata.name),
    [],
    "no content left",
  );
  await sidecar.kill();
});
