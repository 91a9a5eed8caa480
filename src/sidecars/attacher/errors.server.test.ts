// Failures and edge cases against a scripted driver (real gRPC on a Unix socket): attach and
// detach errors surfaced on the VolumeAttachment (status with the gRPC errorCode + Warning Event) and retried with
// backoff; what ControllerPublishVolume carries (capability, readonly, context, secrets — never
// logged); detach after the CSINode is gone; a driver without PUBLISH_UNPUBLISH_VOLUME; inline
// volume specs; a PV being deleted is not attached.

import assert from "node:assert/strict";
import { test } from "node:test";
import {
  EVENT_REASONS,
  GVR,
  attacherFinalizer,
  type CoreEvent,
  type Node,
  type Secret,
} from "../../api/index.ts";
import {
  CsiError,
  GrpcStatus,
  SCRIPTED,
  createAttachment,
  createCsiNode,
  createVolume,
  getAttachment,
  runAttacher,
  startCluster,
  startScripted,
  type Cluster,
} from "../../../test/harness/attacher.ts";
import { until } from "../../../test/harness/until.ts";

const FINALIZER = attacherFinalizer(SCRIPTED);
const SECRET_VALUE = "s3cr3t-attach-value";

async function eventsOf(cluster: Cluster, name: string, reason: string): Promise<CoreEvent[]> {
  const list = await cluster.client.list<CoreEvent>(GVR.events, { namespace: "default" });
  return list.items.filter((e) => e.involvedObject.name === name && e.reason === reason);
}

test("a failing ControllerPublish: attachError and a Warning Event, retried, then attached with the PV's capability", async (t) => {
  const cluster = await startCluster(t);
  const { client } = cluster;
  const driver = await startScripted(t, cluster.dir, { capabilities: ["PUBLISH_UNPUBLISH_VOLUME"] });
  // The driver fails until the test has seen the failure surfaced: a fixed number of failures
  // would race the poll (under load, the retry could succeed and clear attachError first).
  let failing = true;
  driver.onPublish = async () => {
    if (failing) throw new CsiError(GrpcStatus.INTERNAL, "backend down");
  };
  await client.create<Secret>(GVR.secrets, {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "publish-secret", namespace: "default" },
    data: { password: Buffer.from(SECRET_VALUE).toString("base64") },
  });
  await createCsiNode(client, "worker-1", { [SCRIPTED]: "scripted-node-1" });
  await createVolume(client, "pv-a", SCRIPTED, "vol-a", {
    accessModes: ["ReadWriteMany"],
    mountOptions: ["noatime"],
    csi: {
      driver: SCRIPTED,
      volumeHandle: "vol-a",
      readOnly: true,
      volumeAttributes: { tier: "gold" },
      controllerPublishSecretRef: { name: "publish-secret", namespace: "default" },
    },
  });
  const attacher = runAttacher(t, cluster, driver.path, ["--default-fstype=xfs"]);
  await createAttachment(client, "va-a", { driver: SCRIPTED, nodeName: "worker-1", pvName: "pv-a" });

  const failed = await until(
    async () => (await getAttachment(client, "va-a"))?.status?.attachError,
    "attachError on va-a",
  );
  assert.equal(failed.message, "rpc error: code = Internal desc = backend down");
  assert.equal(failed.errorCode, GrpcStatus.INTERNAL, "errorCode is the driver's gRPC code (13)");
  assert.match(failed.time ?? "", /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  const events = await until(async () => {
    const found = await eventsOf(cluster, "va-a", EVENT_REASONS.failedAttachVolume.key);
    return found.length > 0 ? found : undefined;
  }, "FailedAttachVolume event");
  assert.equal(events[0]!.type, "Warning");
  assert.equal(events[0]!.involvedObject.kind, "VolumeAttachment");
  assert.match(events[0]!.message ?? "", /backend down/);
  failing = false;

  const va = await until(async () => {
    const current = await getAttachment(client, "va-a");
    return current?.status?.attached ? current : undefined;
  }, "va-a attached");
  assert.equal(va.status?.attachError, undefined, "attachError cleared");
  assert.deepEqual(va.status?.attachmentMetadata, { device: "/dev/scripted/vol-a" });
  assert.ok(driver.publishes.length >= 2, "failures retried, then one success");
  const request = driver.publishes.at(-1)!;
  assert.equal(request.volumeId, "vol-a");
  assert.equal(request.nodeId, "scripted-node-1");
  assert.equal(request.readonly, false, "no PUBLISH_READONLY: readonly must be false");
  assert.deepEqual(request.volumeContext, { tier: "gold" });
  assert.deepEqual(request.secrets, { password: SECRET_VALUE });
  assert.deepEqual(request.volumeCapability?.mount, {
    fsType: "xfs",
    mountFlags: ["noatime"],
    volumeMountGroup: "",
  });
  assert.equal(request.volumeCapability?.accessMode?.mode, "MULTI_NODE_MULTI_WRITER");
  // Traces at -v 5 log every request, with the secret stripped.
  assert.ok(
    attacher.logs.some((line) => line.includes("ControllerPublishVolume")),
    "requests are traced",
  );
  for (const line of attacher.logs) assert.ok(!line.includes(SECRET_VALUE), `secret in a log line: ${line}`);
  for (const event of await cluster.client
    .list<CoreEvent>(GVR.events, { namespace: "default" })
    .then((l) => l.items))
    assert.ok(!(event.message ?? "").includes(SECRET_VALUE));
});

test("a failing ControllerUnpublish: detachError and an Event; the finalizer stays until it succeeds", async (t) => {
  const cluster = await startCluster(t);
  const { client } = cluster;
  const driver = await startScripted(t, cluster.dir, { capabilities: ["PUBLISH_UNPUBLISH_VOLUME"] });
  await createCsiNode(client, "worker-1", { [SCRIPTED]: "scripted-node-1" });
  await createVolume(client, "pv-b", SCRIPTED, "vol-b");
  runAttacher(t, cluster, driver.path);
  await createAttachment(client, "va-b", { driver: SCRIPTED, nodeName: "worker-1", pvName: "pv-b" });
  await until(async () => (await getAttachment(client, "va-b"))?.status?.attached, "va-b attached");
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  driver.onUnpublish = async () => {
    if (driver.unpublishes.length === 1) throw new CsiError(GrpcStatus.FAILED_PRECONDITION, "volume busy");
    await released;
  };
  // The CSINode goes away (driver unregistered): the node ID recorded at attach still works.
  await client.delete(GVR.csiNodes, "worker-1");
  await client.delete(GVR.volumeAttachments, "va-b");
  const failed = await until(
    async () => (await getAttachment(client, "va-b"))?.status?.detachError,
    "detachError on va-b",
  );
  assert.equal(failed.message, "rpc error: code = FailedPrecondition desc = volume busy");
  assert.equal(failed.errorCode, GrpcStatus.FAILED_PRECONDITION, "detachError.errorCode is 9");
  await until(async () => {
    const found = await eventsOf(cluster, "va-b", EVENT_REASONS.failedDetachVolume.key);
    return found.length > 0;
  }, "FailedDetachVolume event");
  await until(() => driver.unpublishes.length >= 2, "second ControllerUnpublish");
  const holding = await getAttachment(client, "va-b");
  assert.ok(
    holding?.metadata.finalizers?.includes(FINALIZER),
    "finalizer held while ControllerUnpublish runs",
  );
  release();
  await until(async () => (await getAttachment(client, "va-b")) === undefined, "va-b gone");
  assert.ok(
    driver.unpublishes.every((r) => r.nodeId === "scripted-node-1"),
    "node ID from the annotation",
  );
  assert.equal(driver.published.get("vol-b")?.size, 0);
});

test("a driver without PUBLISH_UNPUBLISH_VOLUME: marked attached without a call or a finalizer", async (t) => {
  const cluster = await startCluster(t);
  const { client } = cluster;
  const driver = await startScripted(t, cluster.dir, { capabilities: [] });
  await createVolume(client, "pv-c", SCRIPTED, "vol-c");
  runAttacher(t, cluster, driver.path);
  // No CSINode at all: the trivial handler needs no node ID.
  await createAttachment(client, "va-c", { driver: SCRIPTED, nodeName: "worker-1", pvName: "pv-c" });
  const va = await until(async () => {
    const current = await getAttachment(client, "va-c");
    return current?.status?.attached ? current : undefined;
  }, "va-c attached");
  assert.equal(va.metadata.finalizers, undefined);
  assert.equal(driver.publishes.length, 0);
  await client.delete(GVR.volumeAttachments, "va-c");
  await until(async () => (await getAttachment(client, "va-c")) === undefined, "va-c gone");
  assert.equal(driver.unpublishes.length, 0);
});

test("a driver without a controller service gets the trivial handler too", async (t) => {
  const cluster = await startCluster(t);
  const driver = await startScripted(t, cluster.dir, { controllerService: false });
  await createVolume(cluster.client, "pv-d", SCRIPTED, "vol-d");
  runAttacher(t, cluster, driver.path);
  await createAttachment(cluster.client, "va-d", { driver: SCRIPTED, nodeName: "worker-1", pvName: "pv-d" });
  await until(async () => (await getAttachment(cluster.client, "va-d"))?.status?.attached, "va-d attached");
  assert.equal(driver.publishes.length, 0);
});

test("an inline volume spec is attached and detached without a PV", async (t) => {
  const cluster = await startCluster(t);
  const { client } = cluster;
  const driver = await startScripted(t, cluster.dir, { capabilities: ["PUBLISH_UNPUBLISH_VOLUME"] });
  await createCsiNode(client, "worker-1", { [SCRIPTED]: "scripted-node-1" });
  runAttacher(t, cluster, driver.path);
  await createAttachment(client, "va-e", {
    driver: SCRIPTED,
    nodeName: "worker-1",
    inline: {
      accessModes: ["ReadOnlyMany"],
      volumeMode: "Block",
      csi: { driver: SCRIPTED, volumeHandle: "inline-vol", volumeAttributes: { from: "inline" } },
    },
  });
  await until(async () => (await getAttachment(client, "va-e"))?.status?.attached, "va-e attached");
  const request = driver.publishes.at(-1)!;
  assert.equal(request.volumeId, "inline-vol");
  assert.deepEqual(request.volumeCapability?.block, {});
  assert.equal(request.volumeCapability?.accessMode?.mode, "MULTI_NODE_READER_ONLY");
  assert.deepEqual(request.volumeContext, { from: "inline" });
  await client.delete(GVR.volumeAttachments, "va-e");
  await until(async () => (await getAttachment(client, "va-e")) === undefined, "va-e gone");
  assert.equal(driver.unpublishes.at(-1)?.volumeId, "inline-vol");
});

test("bad sources are attach errors naming the problem; nothing is published", async (t) => {
  const cluster = await startCluster(t);
  const { client } = cluster;
  const driver = await startScripted(t, cluster.dir, { capabilities: ["PUBLISH_UNPUBLISH_VOLUME"] });
  await createCsiNode(client, "worker-1", { [SCRIPTED]: "scripted-node-1" });
  await createVolume(client, "pv-modes", SCRIPTED, "vol-modes", {
    accessModes: ["ReadOnlyMany", "ReadWriteOnce"],
  });
  runAttacher(t, cluster, driver.path);
  await createAttachment(client, "va-missing", { driver: SCRIPTED, nodeName: "worker-1", pvName: "pv-nope" });
  await createAttachment(client, "va-modes", { driver: SCRIPTED, nodeName: "worker-1", pvName: "pv-modes" });
  await createVolume(client, "pv-ok", SCRIPTED, "vol-ok");
  await createAttachment(client, "va-node", { driver: SCRIPTED, nodeName: "worker-9", pvName: "pv-ok" });
  // A PV on its way out (held by someone else's finalizer) is not attached.
  await client.create(GVR.persistentVolumes, {
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: { name: "pv-del", finalizers: ["test.csikit.io/hold"] },
    spec: {
      capacity: { storage: "1Mi" },
      accessModes: ["ReadWriteOnce"],
      csi: { driver: SCRIPTED, volumeHandle: "vol-del" },
    },
  });
  await client.delete(GVR.persistentVolumes, "pv-del");
  await createAttachment(client, "va-del", { driver: SCRIPTED, nodeName: "worker-1", pvName: "pv-del" });
  const missing = await until(
    async () => (await getAttachment(client, "va-missing"))?.status?.attachError,
    "va-missing error",
  );
  assert.match(missing.message ?? "", /persistentvolume "pv-nope" not found/);
  const modes = await until(
    async () => (await getAttachment(client, "va-modes"))?.status?.attachError,
    "va-modes error",
  );
  assert.match(modes.message ?? "", /ReadOnlyMany and ReadWriteOnce/);
  const node = await until(
    async () => (await getAttachment(client, "va-node"))?.status?.attachError,
    "va-node error",
  );
  assert.match(node.message ?? "", /csinode\.storage\.k8s\.io "worker-9" not found/);
  // Failures before any CSI call carry no gRPC code.
  for (const error of [missing, modes, node]) assert.equal(error.errorCode, undefined);
  const deleting = await until(
    async () => (await getAttachment(client, "va-del"))?.status?.attachError,
    "va-del error",
  );
  assert.equal(deleting.message, 'PersistentVolume "pv-del" is marked for deletion');
  // Checked before any finalizer: deleting such an attachment is not blocked.
  assert.equal((await getAttachment(client, "va-modes"))?.metadata.finalizers, undefined);
  assert.equal(driver.publishes.length, 0);
});

test("node ID from the Node's csi.volume.kubernetes.io/nodeid annotation when CSINode lacks the driver", async (t) => {
  const cluster = await startCluster(t);
  const { client } = cluster;
  const driver = await startScripted(t, cluster.dir, { capabilities: ["PUBLISH_UNPUBLISH_VOLUME"] });
  await client.create<Node>(GVR.nodes, {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name: "worker-2",
      annotations: { "csi.volume.kubernetes.io/nodeid": JSON.stringify({ [SCRIPTED]: "legacy-id" }) },
    },
  });
  await createCsiNode(client, "worker-2", { "other.csi.io": "other-id" });
  await createVolume(client, "pv-f", SCRIPTED, "vol-f");
  runAttacher(t, cluster, driver.path);
  await createAttachment(client, "va-f", { driver: SCRIPTED, nodeName: "worker-2", pvName: "pv-f" });
  const va = await until(async () => {
    const current = await getAttachment(client, "va-f");
    return current?.status?.attached ? current : undefined;
  }, "va-f attached");
  assert.equal(driver.publishes.at(-1)?.nodeId, "legacy-id");
  assert.equal(va.metadata.annotations?.["csi.alpha.kubernetes.io/node-id"], "legacy-id");
});
