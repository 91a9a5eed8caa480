// The modify controller (gate VolumeAttributesClass) on the real API server with a scripted
// driver and with `csikit hostpath`: success, a class that does not exist yet (Pending),
// InvalidArgument (Infeasible) and then another class, retries of uncertain failures, secrets
// (modify annotations, else the expand secret), a restart mid-modification.

import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { GVR, type VolumeAttributesClass } from "../../api/index.ts";
import { CsiClient } from "../../csi/index.ts";
import { serveHostpathDriver } from "../../drivers/index.ts";
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
import { defer } from "../../../test/harness/cleanup.ts";

const GATE = "--feature-gates=VolumeAttributesClass=true";

async function createVac(
  cluster: Cluster,
  name: string,
  driverName: string,
  parameters: Record<string, string>,
): Promise<void> {
  await cluster.client.create<VolumeAttributesClass>(GVR.volumeAttributesClasses, {
    apiVersion: "storage.k8s.io/v1beta1",
    kind: "VolumeAttributesClass",
    metadata: { name },
    driverName,
    parameters,
  });
}

async function setClass(cluster: Cluster, claim: string, vac: string): Promise<void> {
  await cluster.client.patch(
    GVR.persistentVolumeClaims,
    claim,
    { spec: { volumeAttributesClassName: vac } },
    { namespace: "default" },
  );
}

test("ModifyVolume success: parameters (+ extra metadata) sent, current class and PV recorded, status cleared", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startResizeStub(t, cluster.dir);
  await createVac(cluster, "gold", STUB, { iops: "3000" });
  await boundClaim(cluster, { name: "m1", driver: STUB, handle: "vol-m1" });
  runResizer(t, cluster, stub.server.path, [GATE, "--extra-modify-metadata"]);
  await setClass(cluster, "m1", "gold");
  const status = await until(async () => {
    const s = await claimStatus(cluster, "m1");
    return s.currentVolumeAttributesClassName === "gold" ? s : undefined;
  }, "current class gold");
  assert.equal(status.modifyVolumeStatus, undefined);
  assert.equal((status.conditions ?? []).length, 0);
  assert.equal((await getVolume(cluster, "pv-m1"))?.spec?.volumeAttributesClassName, "gold");
  assert.deepEqual(stub.modifies[0]?.mutableParameters, {
    iops: "3000",
    "csi.storage.k8s.io/pvc/name": "m1",
    "csi.storage.k8s.io/pvc/namespace": "default",
    "csi.storage.k8s.io/pv/name": "pv-m1",
  });
  const reasons = await until(async () => {
    const list = (await events(cluster)).map((e) => e.reason);
    return list.includes("VolumeModifySuccessful") ? list : undefined;
  }, "events");
  assert.ok(reasons.includes("VolumeModify"));
});

test("with the gate turned off no modification happens", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startResizeStub(t, cluster.dir);
  stub.nodeExpansionRequired = false;
  await createVac(cluster, "gold", STUB, { iops: "3000" });
  await boundClaim(cluster, { name: "off", driver: STUB, handle: "vol-off" });
  runResizer(t, cluster, stub.server.path, ["--feature-gates=VolumeAttributesClass=false"]);
  await setClass(cluster, "off", "gold");
  // The resize controller still works: its completion shows the claim was processed.
  await cluster.client.patch(
    GVR.persistentVolumeClaims,
    "off",
    { spec: { resources: { requests: { storage: "2Mi" } } } },
    { namespace: "default" },
  );
  await until(async () => (await claimStatus(cluster, "off")).capacity?.storage === "2Mi", "expanded");
  assert.equal(stub.modifies.length, 0);
  assert.equal((await claimStatus(cluster, "off")).modifyVolumeStatus, undefined);
});

test("a class that does not exist yet: Pending, then applied once it is created", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startResizeStub(t, cluster.dir);
  await boundClaim(cluster, { name: "m2", driver: STUB, handle: "vol-m2" });
  runResizer(t, cluster, stub.server.path, [GATE]);
  await setClass(cluster, "m2", "later");
  await until(
    async () => (await claimStatus(cluster, "m2")).modifyVolumeStatus?.status === "Pending",
    "Pending",
  );
  assert.equal(stub.modifies.length, 0);
  await createVac(cluster, "later", STUB, { tier: "fast" });
  await until(
    async () => (await claimStatus(cluster, "m2")).currentVolumeAttributesClassName === "later",
    "applied",
  );
  assert.deepEqual(stub.modifies[0]?.mutableParameters, { tier: "fast" });
});

test("InvalidArgument: Infeasible with ModifyVolumeError; another class then succeeds", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startResizeStub(t, cluster.dir);
  stub.onModify = async (request) => {
    if (request.mutableParameters.iops === "999999")
      throw new CsiError(GrpcStatus.INVALID_ARGUMENT, "iops too high");
  };
  await createVac(cluster, "absurd", STUB, { iops: "999999" });
  await createVac(cluster, "sane", STUB, { iops: "500" });
  await boundClaim(cluster, { name: "m3", driver: STUB, handle: "vol-m3" });
  runResizer(t, cluster, stub.server.path, [GATE]);
  await setClass(cluster, "m3", "absurd");
  const failed = await until(async () => {
    const s = await claimStatus(cluster, "m3");
    return s.modifyVolumeStatus?.status === "Infeasible" ? s : undefined;
  }, "Infeasible");
  assert.equal(failed.modifyVolumeStatus?.targetVolumeAttributesClassName, "absurd");
  // As upstream: each mark replaces the modify conditions, so Infeasible leaves ModifyingVolume
  // carrying the error (the ModifyVolumeError written just before is replaced).
  assert.deepEqual(
    (failed.conditions ?? []).map((c) => c.type),
    ["ModifyingVolume"],
  );
  assert.match(
    failed.conditions?.[0]?.message ?? "",
    /ModifyVolume failed with erroriops too high\. Waiting for retry\./,
  );
  await until(
    async () => (await events(cluster)).some((e) => e.reason === "VolumeModifyFailed"),
    "VolumeModifyFailed",
  );
  await setClass(cluster, "m3", "sane");
  const done = await until(async () => {
    const s = await claimStatus(cluster, "m3");
    return s.currentVolumeAttributesClassName === "sane" ? s : undefined;
  }, "sane applied");
  assert.equal(done.modifyVolumeStatus, undefined);
  assert.equal((done.conditions ?? []).length, 0);
});

test("uncertain failures (UNAVAILABLE) are retried with the same class until it succeeds", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startResizeStub(t, cluster.dir);
  let failures = 2;
  stub.onModify = async () => {
    if (failures-- > 0) throw new CsiError(GrpcStatus.UNAVAILABLE, "try later");
  };
  await createVac(cluster, "gold", STUB, { iops: "3000" });
  await boundClaim(cluster, { name: "m4", driver: STUB, handle: "vol-m4" });
  runResizer(t, cluster, stub.server.path, [GATE]);
  await setClass(cluster, "m4", "gold");
  const status = await until(async () => {
    const s = await claimStatus(cluster, "m4");
    return s.currentVolumeAttributesClassName === "gold" ? s : undefined;
  }, "applied");
  assert.equal(stub.modifies.length, 3);
  assert.equal(status.modifyVolumeStatus, undefined);
});

test("hostpath: ControllerModifyVolume with accepted parameters", async (t) => {
  const cluster = await startCluster(t);
  const driver = await serveHostpathDriver({
    endpoint: join(cluster.dir, "hp.sock"),
    nodeId: "node-1",
    stateDir: join(cluster.dir, "hp-state"),
    vendorVersion: "0.0.0-test",
    nodeService: false,
    allowedPathRoots: [cluster.dir],
    shutdownGraceMs: 100,
    enableControllerModifyVolume: true,
    acceptedMutableParameterNames: ["tier"],
  });
  defer(t, () => driver.close());
  const csi = CsiClient.connect(driver.path, {});
  defer(t, () => csi.close());
  const created = await csi.controller.createVolume({
    name: "hp-vol",
    capacityRange: { requiredBytes: String(1024 * 1024) },
    volumeCapabilities: [{ mount: {}, accessMode: { mode: "SINGLE_NODE_WRITER" } }],
  });
  await createVac(cluster, "fast", "hostpath.csi.k8s.io", { tier: "fast" });
  await createVac(cluster, "bogus", "hostpath.csi.k8s.io", { color: "red" });
  await boundClaim(cluster, { name: "hp", driver: "hostpath.csi.k8s.io", handle: created.volume!.volumeId });
  runResizer(t, cluster, driver.path, [GATE]);
  await setClass(cluster, "hp", "fast");
  await until(
    async () => (await claimStatus(cluster, "hp")).currentVolumeAttributesClassName === "fast",
    "applied",
  );
  await setClass(cluster, "hp", "bogus");
  const failed = await until(async () => {
    const s = await claimStatus(cluster, "hp");
    return s.modifyVolumeStatus?.status === "Infeasible" ? s : undefined;
  }, "Infeasible");
  assert.equal(failed.currentVolumeAttributesClassName, "fast", "the applied class stays current");
});

test("ModifyVolume secrets: the PV's controller-modify-secret annotations win over controllerExpandSecretRef; no value leaks", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startResizeStub(t, cluster.dir);
  const MODIFY_SECRET = "s3cr3t-modify-value";
  const EXPAND_SECRET = "s3cr3t-expand-value";
  for (const [name, value] of [
    ["modify-secret", MODIFY_SECRET],
    ["expand-secret", EXPAND_SECRET],
  ] as const)
    await cluster.client.create(GVR.secrets, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name, namespace: "default" },
      data: { password: Buffer.from(value).toString("base64") },
    });
  await createVac(cluster, "gold", STUB, { iops: "3000" });
  const expandRef = { controllerExpandSecretRef: { name: "expand-secret", namespace: "default" } };
  await boundClaim(cluster, { name: "annotated", driver: STUB, handle: "vol-annotated", csi: expandRef });
  await boundClaim(cluster, { name: "plain", driver: STUB, handle: "vol-plain", csi: expandRef });
  await cluster.client.patch(GVR.persistentVolumes, "pv-annotated", {
    metadata: {
      annotations: {
        "volume.kubernetes.io/controller-modify-secret-name": "modify-secret",
        "volume.kubernetes.io/controller-modify-secret-namespace": "default",
      },
    },
  });
  const resizer = runResizer(t, cluster, stub.server.path, [GATE]);
  await setClass(cluster, "annotated", "gold");
  await setClass(cluster, "plain", "gold");
  for (const name of ["annotated", "plain"])
    await until(
      async () => (await claimStatus(cluster, name)).currentVolumeAttributesClassName === "gold",
      `${name} modified`,
    );
  assert.deepEqual(stub.modifies.find((r) => r.volumeId === "vol-annotated")?.secrets, {
    password: MODIFY_SECRET,
  });
  assert.deepEqual(stub.modifies.find((r) => r.volumeId === "vol-plain")?.secrets, {
    password: EXPAND_SECRET,
  });
  for (const event of await events(cluster))
    for (const value of [MODIFY_SECRET, EXPAND_SECRET]) assert.ok(!(event.message ?? "").includes(value));
  for (const value of [MODIFY_SECRET, EXPAND_SECRET])
    assert.ok(!resizer.logs.some((line) => line.includes(value)), "no log line carries a secret");
});

test("restart mid-modification: InProgress survives the process and the next one applies the class", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startResizeStub(t, cluster.dir);
  const held: (() => void)[] = [];
  defer(t, () => held.forEach((release) => release()));
  // The first call hangs in the driver (released when the test ends).
  stub.onModify = async () => {
    if (stub.modifies.length === 1) await new Promise<void>((resolve) => held.push(resolve));
  };
  await createVac(cluster, "gold", STUB, { iops: "3000" });
  await boundClaim(cluster, { name: "m5", driver: STUB, handle: "vol-m5" });
  const first = runResizer(t, cluster, stub.server.path, [GATE]);
  await setClass(cluster, "m5", "gold");
  await until(() => stub.modifies.length === 1, "ControllerModifyVolume in flight");
  await first.stop();
  const intent = await claimStatus(cluster, "m5");
  assert.equal(intent.modifyVolumeStatus?.status, "InProgress");
  assert.equal(intent.modifyVolumeStatus?.targetVolumeAttributesClassName, "gold");
  assert.equal(intent.currentVolumeAttributesClassName, undefined);
  runResizer(t, cluster, stub.server.path, [GATE]);
  await until(
    async () => (await claimStatus(cluster, "m5")).currentVolumeAttributesClassName === "gold",
    "applied by the second process",
  );
  assert.ok(stub.modifies.length >= 2);
  assert.ok(stub.modifies.every((r) => r.mutableParameters?.iops === "3000"));
  assert.equal((await getVolume(cluster, "pv-m5"))?.spec?.volumeAttributesClassName, "gold");
});
