// Rolling a failed modification back (external-resizer v2.0.0, #513), on the real API server with
// a scripted driver: after an infeasible class the user may go back to the current class (the
// driver is called with that class's parameters — a rollback is a modification like any other —
// and the status clears), or unset the class when none was current (given up without a call:
// VolumeModifyCancelled). A modification whose outcome is uncertain keeps its target however
// the spec changes, until the driver answers.

import assert from "node:assert/strict";
import { test } from "node:test";
import { GVR, type VolumeAttributesClass } from "../../api/index.ts";
import {
  CsiError,
  GrpcStatus,
  STUB,
  boundClaim,
  claimStatus,
  events,
  getVolume,
  runResizer,
  startCluster,
  startResizeStub,
  type Cluster,
} from "../../../test/harness/resizer.ts";
import { until } from "../../../test/harness/until.ts";

async function createVac(cluster: Cluster, name: string, parameters: Record<string, string>): Promise<void> {
  await cluster.client.create<VolumeAttributesClass>(GVR.volumeAttributesClasses, {
    apiVersion: "storage.k8s.io/v1beta1",
    kind: "VolumeAttributesClass",
    metadata: { name },
    driverName: STUB,
    parameters,
  });
}

async function setClass(cluster: Cluster, claim: string, vac: string | null): Promise<void> {
  await cluster.client.patch(
    GVR.persistentVolumeClaims,
    claim,
    { spec: { volumeAttributesClassName: vac } },
    { namespace: "default" },
  );
}

const infeasible = (status: Awaited<ReturnType<typeof claimStatus>>) =>
  status.modifyVolumeStatus?.status === "Infeasible" ? status : undefined;

test("rollback to the current class after Infeasible: the driver gets the current class again, the error clears", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startResizeStub(t, cluster.dir);
  stub.onModify = async (request) => {
    if (request.mutableParameters.iops === "999999")
      throw new CsiError(GrpcStatus.INVALID_ARGUMENT, "iops too high");
  };
  await createVac(cluster, "silver", { iops: "500" });
  await createVac(cluster, "absurd", { iops: "999999" });
  await boundClaim(cluster, { name: "rb1", driver: STUB, handle: "vol-rb1" });
  runResizer(t, cluster, stub.server.path);
  await setClass(cluster, "rb1", "silver");
  await until(
    async () => (await claimStatus(cluster, "rb1")).currentVolumeAttributesClassName === "silver",
    "silver current",
  );
  await setClass(cluster, "rb1", "absurd");
  const failed = await until(async () => infeasible(await claimStatus(cluster, "rb1")), "Infeasible");
  assert.equal(failed.modifyVolumeStatus?.targetVolumeAttributesClassName, "absurd");
  assert.equal(failed.currentVolumeAttributesClassName, "silver");
  const before = stub.modifies.length;
  await setClass(cluster, "rb1", "silver");
  const done = await until(async () => {
    const s = await claimStatus(cluster, "rb1");
    return s.modifyVolumeStatus === undefined ? s : undefined;
  }, "status cleared");
  assert.equal(done.currentVolumeAttributesClassName, "silver");
  assert.deepEqual(
    (done.conditions ?? []).filter((c) => c.type === "ModifyingVolume" || c.type === "ModifyVolumeError"),
    [],
  );
  // Not retried at --retry-interval-max: the rollback went at once, with silver's parameters.
  assert.deepEqual(
    stub.modifies.slice(before).map((r) => r.mutableParameters.iops),
    ["500"],
  );
  assert.equal((await getVolume(cluster, "pv-rb1"))?.spec?.volumeAttributesClassName, "silver");
});

test("rollback to no class after Infeasible: given up without a driver call, VolumeModifyCancelled", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startResizeStub(t, cluster.dir);
  stub.onModify = async () => {
    throw new CsiError(GrpcStatus.INVALID_ARGUMENT, "not supported here");
  };
  await createVac(cluster, "absurd", { iops: "999999" });
  await boundClaim(cluster, { name: "rb2", driver: STUB, handle: "vol-rb2" });
  runResizer(t, cluster, stub.server.path);
  await setClass(cluster, "rb2", "absurd");
  await until(async () => infeasible(await claimStatus(cluster, "rb2")), "Infeasible");
  const calls = stub.modifies.length;
  await setClass(cluster, "rb2", null);
  await until(
    async () => (await events(cluster)).some((e) => e.reason === "VolumeModifyCancelled"),
    "VolumeModifyCancelled",
  );
  const status = await until(async () => {
    const s = await claimStatus(cluster, "rb2");
    return (s.conditions ?? []).some((c) => c.type === "ModifyingVolume") ? undefined : s;
  }, "modify conditions cleared");
  assert.equal(status.currentVolumeAttributesClassName, undefined);
  // The last attempt stays on record; nothing more is asked of the driver.
  assert.equal(status.modifyVolumeStatus?.targetVolumeAttributesClassName, "absurd");
  assert.equal(stub.modifies.length, calls);
});

test("an uncertain modification keeps its target when the spec changes, until the driver answers", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startResizeStub(t, cluster.dir);
  let failures = 3;
  stub.onModify = async () => {
    if (failures-- > 0) throw new CsiError(GrpcStatus.DEADLINE_EXCEEDED, "still working");
  };
  await createVac(cluster, "gold", { iops: "3000" });
  await createVac(cluster, "bronze", { iops: "100" });
  await boundClaim(cluster, { name: "rb3", driver: STUB, handle: "vol-rb3" });
  runResizer(t, cluster, stub.server.path);
  await setClass(cluster, "rb3", "gold");
  await until(() => stub.modifies.length >= 1, "first call");
  await setClass(cluster, "rb3", "bronze");
  await until(
    async () => (await claimStatus(cluster, "rb3")).currentVolumeAttributesClassName === "bronze",
    "bronze current in the end",
  );
  const iops = stub.modifies.map((r) => r.mutableParameters.iops);
  // Every call up to the first answer (the 4th) is gold's; bronze follows only after it.
  assert.deepEqual(iops.slice(0, 4), ["3000", "3000", "3000", "3000"]);
  assert.equal(iops.at(-1), "100");
});
