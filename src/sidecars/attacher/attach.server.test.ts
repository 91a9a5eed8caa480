// Attach and detach end to end: the embedded API server, `csikit hostpath` (controller service,
// attach on) on a real socket, the attacher started from real flags. The test plays the
// kubelet (CSINode) and the attach/detach controller (creates and deletes VolumeAttachments).

import assert from "node:assert/strict";
import { test } from "node:test";
import { ANNOTATIONS, GVR, attacherFinalizer, type Lease } from "../../api/index.ts";
import { CsiClient } from "../../csi/index.ts";
import {
  HOSTPATH,
  createAttachment,
  createCsiNode,
  createVolume,
  getAttachment,
  getVolume,
  runAttacher,
  startCluster,
  startHostpath,
} from "../../../test/harness/attacher.ts";
import { until } from "../../../test/harness/until.ts";

const FINALIZER = attacherFinalizer(HOSTPATH);

/** volume ID → node IDs hostpath says it is published to. */
async function hostpathPublished(socket: string): Promise<Map<string, string[]>> {
  const client = CsiClient.connect(socket);
  try {
    const response = await client.controller.listVolumes({});
    return new Map(
      response.entries.map((e) => [e.volume?.volumeId ?? "", [...(e.status?.publishedNodeIds ?? [])]]),
    );
  } finally {
    client.close();
  }
}

async function hostpathVolume(socket: string, name: string, block = false): Promise<string> {
  const client = CsiClient.connect(socket);
  try {
    const response = await client.controller.createVolume({
      name,
      capacityRange: { requiredBytes: "1048576" },
      volumeCapabilities: [
        { ...(block ? { block: {} } : { mount: {} }), accessMode: { mode: "SINGLE_NODE_WRITER" } },
      ],
    });
    return response.volume!.volumeId;
  } finally {
    client.close();
  }
}

test("attaches and detaches a hostpath volume: finalizers, node-id annotation, PV released", async (t) => {
  const cluster = await startCluster(t);
  const driver = await startHostpath(t, cluster.dir, { nodeId: "hp-node-1" });
  const { client } = cluster;
  const handle = await hostpathVolume(driver.path, "vol-1");
  await createCsiNode(client, "worker-1", { [HOSTPATH]: "hp-node-1" });
  await createVolume(client, "pv-1", HOSTPATH, handle, { mountOptions: ["noatime"] });
  const attacher = runAttacher(t, cluster, driver.path, ["--http-endpoint=127.0.0.1:0"]);
  await createAttachment(client, "va-1", { driver: HOSTPATH, nodeName: "worker-1", pvName: "pv-1" });

  const va = await until(async () => {
    const current = await getAttachment(client, "va-1");
    return current?.status?.attached ? current : undefined;
  }, "va-1 attached");
  assert.ok(va.metadata.finalizers?.includes(FINALIZER), "finalizer on the attachment");
  assert.equal(va.metadata.annotations?.[ANNOTATIONS.attachmentNodeID.key], "hp-node-1");
  assert.equal(va.status?.attachError, undefined);
  const pv = await getVolume(client, "pv-1");
  assert.ok(pv?.metadata.finalizers?.includes(FINALIZER), "finalizer on the PV");
  assert.deepEqual((await hostpathPublished(driver.path)).get(handle), ["hp-node-1"]);

  // Metrics: the CSI call histogram with upstream's labels (no `migrated`: hostpath is no CSI
  // migration target), and the work queues by upstream name.
  const metrics = await (await fetch(`${attacher.url}/metrics`)).text();
  const publishCount = metrics
    .split("\n")
    .find(
      (line) =>
        line.startsWith("csi_sidecar_operations_seconds_count{") && line.includes("ControllerPublishVolume"),
    );
  assert.equal(
    publishCount,
    'csi_sidecar_operations_seconds_count{driver_name="hostpath.csi.k8s.io",method_name="/csi.v1.Controller/ControllerPublishVolume",grpc_status_code="OK"} 1',
  );
  assert.match(metrics, /workqueue_adds_total\{name="csi-attacher-va"\}/);

  // Detach: the attach/detach controller deletes the attachment.
  await client.delete(GVR.volumeAttachments, "va-1");
  await until(async () => (await getAttachment(client, "va-1")) === undefined, "va-1 gone");
  assert.deepEqual((await hostpathPublished(driver.path)).get(handle), []);
  // The PV keeps its finalizer until it is deleted; then the attacher lets it go.
  assert.ok((await getVolume(client, "pv-1"))?.metadata.finalizers?.includes(FINALIZER));
  await client.delete(GVR.persistentVolumes, "pv-1");
  await until(async () => (await getVolume(client, "pv-1")) === undefined, "pv-1 gone");
});

test("a PV stays while an attachment names it; the last detach releases it", async (t) => {
  const cluster = await startCluster(t);
  const driver = await startHostpath(t, cluster.dir, { nodeId: "hp-node-1" });
  const { client } = cluster;
  const handle = await hostpathVolume(driver.path, "vol-2");
  await createCsiNode(client, "worker-1", { [HOSTPATH]: "hp-node-1" });
  await createVolume(client, "pv-2", HOSTPATH, handle);
  runAttacher(t, cluster, driver.path);
  await createAttachment(client, "va-2", { driver: HOSTPATH, nodeName: "worker-1", pvName: "pv-2" });
  await until(async () => (await getAttachment(client, "va-2"))?.status?.attached, "va-2 attached");
  await client.delete(GVR.persistentVolumes, "pv-2");
  const deleting = await getVolume(client, "pv-2");
  assert.ok(deleting?.metadata.deletionTimestamp, "PV is being deleted");
  // Still there: the attachment needs it for ControllerUnpublishVolume.
  await client.delete(GVR.volumeAttachments, "va-2");
  await until(async () => (await getAttachment(client, "va-2")) === undefined, "va-2 gone");
  await until(async () => (await getVolume(client, "pv-2")) === undefined, "pv-2 gone");
  assert.deepEqual((await hostpathPublished(driver.path)).get(handle), []);
});

test("leader election: the Lease is external-attacher-leader-<sanitized driver>, health on /healthz/leader-election", async (t) => {
  const cluster = await startCluster(t);
  const driver = await startHostpath(t, cluster.dir, { nodeId: "hp-node-1" });
  const { client } = cluster;
  const attacher = runAttacher(t, cluster, driver.path, [
    "--leader-election",
    "--leader-election-namespace=default",
    "--http-endpoint=127.0.0.1:0",
  ]);
  const lease = await until(async () => {
    const current = await client
      .get<Lease>(GVR.leases, "external-attacher-leader-hostpath-csi-k8s-io", { namespace: "default" })
      .catch(() => undefined);
    return current?.spec?.holderIdentity ? current : undefined;
  }, "the attacher's Lease");
  assert.ok(lease.spec?.holderIdentity);
  const url = await until(() => attacher.url, "http endpoint");
  const health = await fetch(`${url}/healthz/leader-election`);
  assert.equal(health.status, 200);
  // And it works as the leader.
  const handle = await hostpathVolume(driver.path, "vol-le");
  await createCsiNode(client, "worker-1", { [HOSTPATH]: "hp-node-1" });
  await createVolume(client, "pv-le", HOSTPATH, handle);
  await createAttachment(client, "va-le", { driver: HOSTPATH, nodeName: "worker-1", pvName: "pv-le" });
  await until(async () => (await getAttachment(client, "va-le"))?.status?.attached, "va-le attached");
});

test("CSI migration: an in-tree PV is attached translated, an inline spec as is; calls metered migrated", async (t) => {
  // hostpath as the Cinder CSI driver: a Cinder handle is any string (hostpath's UUIDs).
  const CINDER = "cinder.csi.openstack.org";
  const cluster = await startCluster(t);
  const driver = await startHostpath(t, cluster.dir, { nodeId: "hp-node-1", driverName: CINDER });
  const { client } = cluster;
  const handle = await hostpathVolume(driver.path, "vol-intree");
  const inlineHandle = await hostpathVolume(driver.path, "vol-inline");
  await createCsiNode(client, "worker-1", { [CINDER]: "hp-node-1" });
  // The PV in its in-tree form, as the API keeps it.
  await client.create(GVR.persistentVolumes, {
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: { name: "pv-intree" },
    spec: {
      capacity: { storage: "1Mi" },
      accessModes: ["ReadWriteOnce"],
      persistentVolumeReclaimPolicy: "Retain",
      cinder: { volumeID: handle, fsType: "ext4" },
    },
  });
  const attacher = runAttacher(t, cluster, driver.path, ["--http-endpoint=127.0.0.1:0"]);
  await createAttachment(client, "va-intree", { driver: CINDER, nodeName: "worker-1", pvName: "pv-intree" });
  await createAttachment(client, "va-inline", {
    driver: CINDER,
    nodeName: "worker-1",
    inline: {
      accessModes: ["ReadWriteOnce"],
      csi: { driver: CINDER, volumeHandle: inlineHandle, fsType: "ext4" },
    },
  });
  await until(async () => {
    const [a, b] = [await getAttachment(client, "va-intree"), await getAttachment(client, "va-inline")];
    return a?.status?.attached && b?.status?.attached;
  }, "both attached");
  const published = await hostpathPublished(driver.path);
  assert.deepEqual(published.get(handle), ["hp-node-1"]);
  assert.deepEqual(published.get(inlineHandle), ["hp-node-1"]);
  // The PV keeps its in-tree shape (only the attacher's finalizer was added).
  const pv = await getVolume(client, "pv-intree");
  assert.equal(pv?.spec?.csi, undefined);
  assert.deepEqual(pv?.spec?.cinder, { volumeID: handle, fsType: "ext4" });
  assert.ok(pv?.metadata.finalizers?.includes(attacherFinalizer(CINDER)));

  await client.delete(GVR.volumeAttachments, "va-intree");
  await client.delete(GVR.volumeAttachments, "va-inline");
  await until(async () => {
    const [a, b] = [await getAttachment(client, "va-intree"), await getAttachment(client, "va-inline")];
    return a === undefined && b === undefined;
  }, "both detached");
  const after = await hostpathPublished(driver.path);
  assert.deepEqual([after.get(handle), after.get(inlineHandle)], [[], []]);

  const url = await until(() => attacher.url, "http endpoint");
  const metrics = await (await fetch(`${url}/metrics`)).text();
  for (const method of ["ControllerPublishVolume", "ControllerUnpublishVolume"])
    assert.ok(
      metrics.includes(
        `csi_sidecar_operations_seconds_count{driver_name="${CINDER}",method_name="/csi.v1.Controller/${method}",grpc_status_code="OK",migrated="true"} 2`,
      ),
      `${method} twice with migrated="true"`,
    );
});
