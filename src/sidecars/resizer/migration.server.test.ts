// CSI migration in the resizer, as upstream's CanSupport/Resize: an in-tree PV (Cinder here) of
// the driver's plugin is expanded through the driver when its claim's
// `volume.kubernetes.io/storage-resizer` names the driver — the PV translated for the call
// only, the API keeping the in-tree shape with the new capacity — and not without it. The test
// plays the expand controller (the annotation).

import assert from "node:assert/strict";
import { test } from "node:test";
import { GVR, type PersistentVolume, type PersistentVolumeClaim } from "../../api/index.ts";
import type { Cluster } from "../../../test/harness/resizer.ts";
import {
  MI,
  claimStatus,
  getVolume,
  runResizer,
  setRequest,
  startCluster,
  startResizeStub,
} from "../../../test/harness/resizer.ts";
import { until } from "../../../test/harness/until.ts";

const CINDER = "cinder.csi.openstack.org";

async function inTreeClaim(cluster: Cluster, name: string, resizer: string | undefined): Promise<void> {
  const { client } = cluster;
  const created = await client.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: {
      name,
      namespace: "default",
      ...(resizer ? { annotations: { "volume.kubernetes.io/storage-resizer": resizer } } : {}),
    },
    spec: {
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage: "1Mi" } },
      storageClassName: "sc",
      volumeName: `pv-${name}`,
    },
  });
  const pv = await client.create<PersistentVolume>(GVR.persistentVolumes, {
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: { name: `pv-${name}` },
    spec: {
      capacity: { storage: "1Mi" },
      accessModes: ["ReadWriteOnce"],
      persistentVolumeReclaimPolicy: "Delete",
      storageClassName: "sc",
      claimRef: { kind: "PersistentVolumeClaim", namespace: "default", name, uid: created.metadata.uid! },
      cinder: { volumeID: `vol-${name}`, fsType: "ext4" },
    },
  });
  await client.updateStatus(GVR.persistentVolumes, { ...pv, status: { phase: "Bound" } });
  await client.updateStatus(GVR.persistentVolumeClaims, {
    ...created,
    status: { phase: "Bound", accessModes: ["ReadWriteOnce"], capacity: { storage: "1Mi" } },
  });
}

test("a migrated in-tree PV resizes through the driver named by storage-resizer; the PV stays in-tree", async (t) => {
  const cluster = await startCluster(t);
  const stub = await startResizeStub(t, cluster.dir, { driverName: CINDER });
  stub.nodeExpansionRequired = false;
  // Handed to the CSI driver by the expand controller, and one still the in-tree resizer's.
  await inTreeClaim(cluster, "migrated", CINDER);
  await inTreeClaim(cluster, "in-tree", "kubernetes.io/cinder");
  const resizer = runResizer(t, cluster, stub.server.path, ["--http-endpoint=127.0.0.1:0"]);
  await setRequest(cluster, "in-tree", "2Mi");
  await setRequest(cluster, "migrated", "2Mi");
  await until(
    async () => (await claimStatus(cluster, "migrated")).capacity?.storage === "2Mi",
    "claim capacity 2Mi",
  );
  assert.deepEqual(
    stub.expands.map((r) => [r.volumeId, r.volumeCapability?.mount?.fsType]),
    [["vol-migrated", "ext4"]],
    "only the claim naming the driver, translated",
  );
  assert.equal(stub.sizes.get("vol-migrated"), 2 * MI);
  const pv = await getVolume(cluster, "pv-migrated");
  assert.equal(pv?.spec?.csi, undefined);
  assert.deepEqual(pv?.spec?.cinder, { volumeID: "vol-migrated", fsType: "ext4" });
  assert.equal(pv?.spec?.capacity?.storage, "2Mi");
  assert.equal((await getVolume(cluster, "pv-in-tree"))?.spec?.capacity?.storage, "1Mi");
  const url = await until(() => resizer.url, "http endpoint");
  const metrics = await (await fetch(`${url}/metrics`)).text();
  assert.ok(
    metrics.includes(
      `csi_sidecar_operations_seconds_count{driver_name="${CINDER}",method_name="/csi.v1.Controller/ControllerExpandVolume",grpc_status_code="OK",migrated="true"} 1`,
    ),
    "ControllerExpandVolume metered migrated",
  );
});
