// Provisioning and deletion end to end: the embedded API server, `csikit hostpath` (controller
// service) on a real socket, the provisioner started from real flags. The test plays the PV
// controller (annotates claims, binds, releases).

import assert from "node:assert/strict";
import { test } from "node:test";
import { GVR, type PersistentVolume, type VolumeAttributesClass } from "../../api/index.ts";
import { CsiClient } from "../../csi/index.ts";
import {
  HOSTPATH,
  STUB,
  bind,
  createClaim,
  createClass,
  events,
  getClaim,
  getVolume,
  pvNameOf,
  release,
  runProvisioner,
  startCluster,
  startHostpath,
  startStub,
  waitForVolume,
} from "../../../test/harness/provisioner.ts";
import { IN_FLIGHT_FINALIZER } from "./index.ts";
import { until } from "../../../test/harness/until.ts";

async function hostpathVolumeIds(socket: string): Promise<string[]> {
  const client = CsiClient.connect(socket);
  try {
    const response = await client.controller.listVolumes({});
    return response.entries.map((e) => e.volume?.volumeId ?? "");
  } finally {
    client.close();
  }
}

test("provisions a claim with hostpath: PV shape, events, no in-flight mark left", async (t) => {
  const cluster = await startCluster(t);
  const driver = await startHostpath(t, cluster.dir);
  await createClass(cluster, "sc", HOSTPATH, {
    reclaimPolicy: "Delete",
    mountOptions: ["noatime"],
    parameters: { "csi.storage.k8s.io/fstype": "ext4" },
  });
  runProvisioner(t, cluster, driver.path, ["--feature-gates=Topology=false"]);
  const claim = await createClaim(cluster, "data", HOSTPATH, { resources: { requests: { storage: "2Mi" } } });
  const pv = await waitForVolume(cluster, claim);
  assert.equal(pv.metadata?.name, pvNameOf(claim));
  assert.equal(pv.metadata?.annotations?.["pv.kubernetes.io/provisioned-by"], HOSTPATH);
  assert.equal(pv.metadata?.annotations?.["volume.kubernetes.io/provisioner-deletion-secret-name"], "");
  assert.ok(pv.metadata?.finalizers?.includes("external-provisioner.volume.kubernetes.io/finalizer"));
  assert.equal(pv.spec?.csi?.driver, HOSTPATH);
  assert.equal(pv.spec?.csi?.fsType, "ext4");
  assert.match(
    pv.spec?.csi?.volumeAttributes?.["storage.kubernetes.io/csiProvisionerIdentity"] ?? "",
    /^\d+-\d+-hostpath\.csi\.k8s\.io$/,
  );
  assert.equal(pv.spec?.capacity?.storage, "2Mi");
  assert.deepEqual(pv.spec?.accessModes, ["ReadWriteOnce"]);
  assert.deepEqual(pv.spec?.mountOptions, ["noatime"]);
  assert.equal(pv.spec?.persistentVolumeReclaimPolicy, "Delete");
  assert.equal(pv.spec?.storageClassName, "sc");
  assert.equal(pv.spec?.volumeMode, "Filesystem");
  assert.equal(pv.spec?.claimRef?.uid, claim.metadata?.uid);
  assert.equal(pv.spec?.claimRef?.name, "data");
  assert.deepEqual(await hostpathVolumeIds(driver.path), [pv.spec?.csi?.volumeHandle]);
  await until(
    async () => !(await getClaim(cluster, "data"))?.metadata?.finalizers?.includes(IN_FLIGHT_FINALIZER),
    "in-flight mark removed",
  );
  const reasons = await until(async () => {
    const list = (await events(cluster)).filter((e) => e.involvedObject.name === "data").map((e) => e.reason);
    return list.includes("ProvisioningSucceeded") ? list : undefined;
  }, "events");
  assert.ok(reasons.includes("Provisioning"));
});

test("Delete: released volume deleted in the driver, PV removed; Retain: left alone", async (t) => {
  const cluster = await startCluster(t);
  const driver = await startHostpath(t, cluster.dir);
  await createClass(cluster, "sc", HOSTPATH, { reclaimPolicy: "Delete" });
  await createClass(cluster, "keep", HOSTPATH, { reclaimPolicy: "Retain" });
  runProvisioner(t, cluster, driver.path, ["--feature-gates=Topology=false"]);
  const gone = await createClaim(cluster, "gone", HOSTPATH);
  const kept = await createClaim(cluster, "kept", HOSTPATH, { storageClassName: "keep" });
  const gonePv = await waitForVolume(cluster, gone);
  const keptPv = await waitForVolume(cluster, kept);
  assert.equal(keptPv.spec?.persistentVolumeReclaimPolicy, "Retain");
  assert.equal(
    keptPv.metadata?.finalizers?.includes("external-provisioner.volume.kubernetes.io/finalizer") ?? false,
    false,
  );
  await bind(cluster, gone, gonePv);
  await bind(cluster, kept, keptPv);
  assert.equal((await hostpathVolumeIds(driver.path)).length, 2);
  await release(cluster, gone, gonePv.metadata.name!);
  await release(cluster, kept, keptPv.metadata.name!);
  await until(async () => (await getVolume(cluster, gonePv.metadata.name!)) === undefined, "deleted PV gone");
  assert.deepEqual(await hostpathVolumeIds(driver.path), [keptPv.spec?.csi?.volumeHandle]);
  const stillKept = await getVolume(cluster, keptPv.metadata.name!);
  assert.equal(stillKept?.status?.phase, "Released");
  assert.equal(stillKept?.metadata?.deletionTimestamp, undefined);
});

test("Delete waits while a VolumeAttachment still references the PV (VolumeFailedDelete), then deletes", async (t) => {
  const cluster = await startCluster(t);
  const driver = await startHostpath(t, cluster.dir);
  await createClass(cluster, "sc", HOSTPATH, { reclaimPolicy: "Delete" });
  runProvisioner(t, cluster, driver.path, ["--feature-gates=Topology=false"]);
  const claim = await createClaim(cluster, "attached", HOSTPATH);
  // The attachment exists before the PV does (its name is pvc-<claim uid>): the provisioner
  // watches VolumeAttachments and PVs separately, so an attachment created just before the
  // release could still be missing from its cache when the release arrives.
  const pvName = `pvc-${claim.metadata.uid}`;
  await cluster.client.create(GVR.volumeAttachments, {
    metadata: { name: "csi-still-attached" },
    spec: { attacher: HOSTPATH, nodeName: "node-7", source: { persistentVolumeName: pvName } },
  });
  const pv = await waitForVolume(cluster, claim);
  assert.equal(pv.metadata.name, pvName);
  await bind(cluster, claim, pv);
  await release(cluster, claim, pvName);
  const refusal = await until(
    async () =>
      (await events(cluster)).find(
        (event) =>
          event.reason === "VolumeFailedDelete" &&
          event.message === `persistentvolume ${pvName} is still attached to node node-7`,
      ),
    "VolumeFailedDelete naming the node",
  );
  assert.equal(refusal.involvedObject?.name, pvName);
  assert.equal((await hostpathVolumeIds(driver.path)).length, 1, "DeleteVolume not called while attached");
  assert.ok(await getVolume(cluster, pvName));
  await cluster.client.delete(GVR.volumeAttachments, "csi-still-attached");
  await until(async () => (await getVolume(cluster, pvName)) === undefined, "PV deleted once detached");
  assert.deepEqual(await hostpathVolumeIds(driver.path), []);
});

test("HonorPVReclaimPolicy: deleting a PV first still deletes the volume, then the finalizer goes", async (t) => {
  const cluster = await startCluster(t);
  const driver = await startHostpath(t, cluster.dir);
  await createClass(cluster, "sc", HOSTPATH, { reclaimPolicy: "Delete" });
  runProvisioner(t, cluster, driver.path, ["--feature-gates=Topology=false"]);
  const claim = await createClaim(cluster, "c", HOSTPATH);
  const pv = await waitForVolume(cluster, claim);
  // Provisioning has fully finished (its last claim write done), and the claim names the PV
  // (as a binder's first step does; the PV stays Available), so a claim event after the PV
  // vanished cannot rightly provision the claim again.
  await until(
    async () => !(await getClaim(cluster, "c"))?.metadata?.finalizers?.includes(IN_FLIGHT_FINALIZER),
    "in-flight mark removed",
  );
  await cluster.client.patch(
    GVR.persistentVolumeClaims,
    "c",
    { spec: { volumeName: pv.metadata.name! } },
    { namespace: "default", type: "merge" },
  );
  // The PV is deleted while Available (never bound): the finalizer keeps it until DeleteVolume.
  await cluster.client.delete(GVR.persistentVolumes, pv.metadata.name!);
  await until(async () => (await getVolume(cluster, pv.metadata.name!)) === undefined, "PV gone");
  assert.deepEqual(await hostpathVolumeIds(driver.path), []);
});

test("HonorPVReclaimPolicy off: no finalizer on the PV", async (t) => {
  const cluster = await startCluster(t);
  const driver = await startHostpath(t, cluster.dir);
  await createClass(cluster, "sc", HOSTPATH, { reclaimPolicy: "Delete" });
  runProvisioner(t, cluster, driver.path, ["--feature-gates=Topology=false,HonorPVReclaimPolicy=false"]);
  const claim = await createClaim(cluster, "c", HOSTPATH);
  const pv: PersistentVolume = await waitForVolume(cluster, claim);
  assert.deepEqual(pv.metadata?.finalizers ?? [], []);
});

test("VolumeAttributesClass (GA, on by default as in v6): the class gives CreateVolume its mutable_parameters and the PV its class", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startStub(t, cluster.dir);
  await createClass(cluster, "sc", STUB);
  await cluster.client.create<VolumeAttributesClass>(GVR.volumeAttributesClasses, {
    apiVersion: `${GVR.volumeAttributesClasses.group}/${GVR.volumeAttributesClasses.version}`,
    kind: "VolumeAttributesClass",
    metadata: { name: "gold" },
    driverName: STUB,
    parameters: { iops: "3000" },
  });
  runProvisioner(t, cluster, stub.server.path, ["--feature-gates=Topology=false"]);
  const claim = await createClaim(cluster, "vac", STUB, { volumeAttributesClassName: "gold" });
  const pv = await waitForVolume(cluster, claim);
  assert.deepEqual(stub.creates[0]?.mutableParameters, { iops: "3000" });
  assert.equal(pv.spec?.volumeAttributesClassName, "gold");
});
