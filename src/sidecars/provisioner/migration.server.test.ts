// CSI migration in the provisioner, end to end (the seed's migration shim): the hostpath driver
// registered under the Cinder CSI driver's name serves a `kubernetes.io/cinder` StorageClass.
// The claim (handed over by the PV controller: storage-provisioner = the driver) is provisioned
// with the translated class, the PV is created in its in-tree form with provisioned-by naming
// the plugin; it is deleted through the driver only once the PV controller marked it
// migrated-to the driver. The test plays the PV controller.

import assert from "node:assert/strict";
import { test } from "node:test";
import { ANNOTATIONS, GVR, type PersistentVolume } from "../../api/index.ts";
import { CsiClient } from "../../csi/index.ts";
import {
  bind,
  createClaim,
  createClass,
  getVolume,
  release,
  runProvisioner,
  startCluster,
  startHostpath,
  waitForVolume,
} from "../../../test/harness/provisioner.ts";
import { until } from "../../../test/harness/until.ts";

// Cinder, because its handle is any string (hostpath's UUIDs) and its reverse translation does not
// derive a region from the topology hostpath reports; GCE PD and AWS EBS need their own handle
// and zone formats, which golden.test.ts covers.
const CINDER_DRIVER = "cinder.csi.openstack.org";
const CINDER_PLUGIN = "kubernetes.io/cinder";

async function volumeIds(socket: string): Promise<string[]> {
  const client = CsiClient.connect(socket);
  try {
    return (await client.controller.listVolumes({})).entries.map((e) => e.volume?.volumeId ?? "");
  } finally {
    client.close();
  }
}

test("an in-tree cinder class is provisioned by the migrated driver; the PV stays in-tree; deletion waits for migrated-to", async (t) => {
  const cluster = await startCluster(t);
  const driver = await startHostpath(t, cluster.dir, { driverName: CINDER_DRIVER });
  await createClass(cluster, "sc", CINDER_PLUGIN, {
    reclaimPolicy: "Delete",
    parameters: { fsType: "ext4" },
  });
  await createClass(cluster, "own", CINDER_DRIVER, { reclaimPolicy: "Delete" });
  const provisioner = runProvisioner(t, cluster, driver.path, [
    "--feature-gates=Topology=false",
    "--http-endpoint=127.0.0.1:0",
  ]);
  const claim = await createClaim(cluster, "legacy", CINDER_DRIVER, {
    resources: { requests: { storage: "1Mi" } },
  });
  const pv = await waitForVolume(cluster, claim);
  const [volumeId] = await volumeIds(driver.path);
  assert.ok(volumeId);
  // In-tree shape, as the plugin would have made it; fstype came from the translated class.
  assert.equal(pv.spec?.csi, undefined);
  assert.deepEqual(pv.spec?.cinder, { volumeID: volumeId, fsType: "ext4" });
  assert.equal(pv.metadata?.annotations?.[ANNOTATIONS.provisionedBy.key], CINDER_PLUGIN);
  assert.equal(pv.spec?.storageClassName, "sc");
  assert.equal(pv.spec?.persistentVolumeReclaimPolicy, "Delete");

  // A volume of the driver's own class, released together with the migrated one: once the
  // provisioner has deleted it, it has also seen the migrated one Released.
  const own = await createClaim(cluster, "own", CINDER_DRIVER, { storageClassName: "own" });
  const ownPv = await waitForVolume(cluster, own);
  await bind(cluster, claim, pv);
  await bind(cluster, own, ownPv);
  await release(cluster, claim, pv.metadata.name!);
  await release(cluster, own, ownPv.metadata.name!);
  await until(async () => (await getVolume(cluster, ownPv.metadata.name!)) === undefined, "own PV deleted");
  // Without migrated-to the in-tree side owns the deletion: the provisioner stood down.
  const fresh = (await getVolume(cluster, pv.metadata.name!))!;
  assert.equal(fresh.status?.phase, "Released");
  assert.deepEqual(await volumeIds(driver.path), [volumeId]);
  fresh.metadata.annotations = { ...fresh.metadata.annotations, [ANNOTATIONS.migratedTo.key]: CINDER_DRIVER };
  await cluster.client.update<PersistentVolume>(GVR.persistentVolumes, fresh);
  await until(async () => (await getVolume(cluster, pv.metadata.name!)) === undefined, "migrated PV deleted");
  assert.deepEqual(await volumeIds(driver.path), []);

  // Metrics as upstream's WithMigration: the in-tree class's and PV's calls migrated="true",
  // the driver's own class's migrated="false".
  const url = await until(() => provisioner.url, "endpoint");
  const metrics = await (await fetch(`${url}/metrics`)).text();
  const count = (method: string, migrated: boolean): string | undefined =>
    metrics
      .split("\n")
      .find((line) =>
        line.startsWith(
          `csi_sidecar_operations_seconds_count{driver_name="${CINDER_DRIVER}",method_name="/csi.v1.Controller/${method}",grpc_status_code="OK",migrated="${migrated}"}`,
        ),
      )
      ?.split(" ")[1];
  assert.equal(count("CreateVolume", true), "1");
  assert.equal(count("CreateVolume", false), "1");
  assert.equal(count("DeleteVolume", true), "1");
  assert.equal(count("DeleteVolume", false), "1");
});

test("a claim of another plugin's in-tree class is left alone", async (t) => {
  const cluster = await startCluster(t);
  const driver = await startHostpath(t, cluster.dir, { driverName: CINDER_DRIVER });
  await createClass(cluster, "sc", "kubernetes.io/gce-pd");
  await createClass(cluster, "own", CINDER_DRIVER);
  runProvisioner(t, cluster, driver.path, ["--feature-gates=Topology=false"]);
  const other = await createClaim(cluster, "other", CINDER_DRIVER);
  // A later claim of the driver's own class is provisioned: by then the first was considered.
  const own = await createClaim(cluster, "own", CINDER_DRIVER, { storageClassName: "own" });
  const ownPv = await waitForVolume(cluster, own);
  assert.equal(ownPv.spec?.csi?.driver, CINDER_DRIVER);
  assert.equal(await getVolume(cluster, `pvc-${other.metadata?.uid}`), undefined);
});
