// external-provisioner#1469, reproduced: a CreateVolume that answers only after its claim was
// deleted, while the claim's PV name is still held by the PV of an earlier round (deleted, its
// volume gone, the PV terminating on a finalizer). Upstream's PV create gets 409, counts it as
// done and leaks the volume the late call made. csikit must delete that volume: the scripted
// driver blocks CreateVolume until the claim is deleted, so the interleaving is forced, not
// timed.

import assert from "node:assert/strict";
import { test } from "node:test";
import { GVR, type PersistentVolume } from "../../api/index.ts";
import {
  STUB,
  createClaim,
  createClass,
  events,
  getClaim,
  getVolume,
  pvNameOf,
  runProvisioner,
  startCluster,
  startStub,
} from "../../../test/harness/provisioner.ts";
import { defer } from "../../../test/harness/cleanup.ts";
import { until } from "../../../test/harness/until.ts";

const HOLD = "test.csikit.io/hold";

test("late CreateVolume after the claim is deleted, the name held by a terminating PV: the new volume is deleted, nothing leaks (#1469)", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startStub(t, cluster.dir);
  await createClass(cluster, "sc", STUB);
  // The driver answers CreateVolume only once the claim is being deleted.
  stub.onCreate = async () => {
    await until(
      async () => (await getClaim(cluster, "c"))?.metadata?.deletionTimestamp !== undefined,
      "claim deleted before the driver answers",
      { timeoutMs: 30_000 },
    );
  };
  runProvisioner(t, cluster, stub.server.path, ["--timeout=10m"]);
  const claim = await createClaim(cluster, "c", STUB);
  await until(() => stub.creates.length === 1, "CreateVolume in flight");

  // The earlier round: a PV for this claim whose volume ("first-round") is already deleted,
  // itself deleted and held by a finalizer — what upstream's syncVolume leaves for a moment.
  const name = pvNameOf(claim);
  await cluster.client.create<PersistentVolume>(GVR.persistentVolumes, {
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: { name, finalizers: [HOLD] },
    spec: {
      capacity: { storage: "1Mi" },
      accessModes: ["ReadWriteOnce"],
      persistentVolumeReclaimPolicy: "Delete",
      storageClassName: "sc",
      claimRef: { kind: "PersistentVolumeClaim", namespace: "default", name: "c", uid: claim.metadata.uid! },
      csi: { driver: STUB, volumeHandle: "first-round" },
    },
  });
  defer(t, async () => {
    const pv = await getVolume(cluster, name);
    if (pv) await cluster.client.patch(GVR.persistentVolumes, name, { metadata: { finalizers: null } });
  });
  await cluster.client.delete(GVR.persistentVolumes, name);
  await cluster.client.delete(GVR.persistentVolumeClaims, "c", { namespace: "default" });

  // The late call's volume is deleted; the claim's mark then lets it go.
  await until(async () => (await getClaim(cluster, "c")) === undefined, "claim gone");
  assert.equal(stub.creates.length, 1, "one CreateVolume");
  assert.deepEqual(stub.deletes, [`stub-${name}`], "the volume the late call made was deleted");
  assert.equal(stub.volumes.size, 0, "no volume left in the driver");
  const pv = await getVolume(cluster, name);
  assert.equal(pv?.spec?.csi?.volumeHandle, "first-round", "the earlier PV was left alone");
  const failed = (await events(cluster)).filter((e) => e.reason === "ProvisioningFailed");
  assert.ok(
    failed.some((e) => e.message?.includes(`deleted the volume "stub-${name}"`)),
    "the cleanup is reported on the claim",
  );
});
