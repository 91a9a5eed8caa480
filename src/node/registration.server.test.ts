// Node registration and CSI plugin registration against the real API server: the Node
// (labels, annotation, Ready), its Lease and CSINode at start-up; the real hostpath node
// plugin registered through a registration socket served as csi-node-driver-registrar serves
// it → CSINode entry, topology label, node-ID annotation, NotifyRegistrationStatus(true);
// the socket removed → entries gone; a bad type / a failing NodeGetInfo → status false.

import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { GVR, type CSINode, type Lease, type Node } from "../api/index.ts";
import { GrpcStatus } from "../csi/index.ts";
import { serveHostpathDriver, TOPOLOGY_KEY_NODE } from "../drivers/index.ts";
import { runNode, serveRegistration, serveScriptedNode, testServer } from "../../test/harness/node.ts";
import { NODE_LEASE_NAMESPACE } from "./index.ts";
import { until } from "../../test/harness/until.ts";
import { defer, tempDir } from "../../test/harness/cleanup.ts";

const NODE_ID_ANNOTATION = "csi.volume.kubernetes.io/nodeid";

test("start-up: Node with kubelet labels and annotation, Ready, Lease, CSINode owned by the Node", async (t) => {
  const api = await testServer(t);
  const client = api.client();
  const root = await tempDir(t);
  await runNode(t, client, { nodeName: "node-a", rootDir: root, labels: { zone: "z1" } });
  const node = await client.get<Node>(GVR.nodes, "node-a");
  const labels = node.metadata?.labels ?? {};
  assert.equal(labels["kubernetes.io/hostname"], "node-a");
  assert.equal(labels["kubernetes.io/os"], "linux");
  assert.equal(labels["beta.kubernetes.io/os"], "linux");
  assert.ok(labels["kubernetes.io/arch"]);
  assert.equal(labels.zone, "z1");
  assert.equal(
    node.metadata?.annotations?.["volumes.kubernetes.io/controller-managed-attach-detach"],
    "true",
  );
  const ready = node.status?.conditions?.find((c) => c.type === "Ready");
  assert.equal(ready?.status, "True");
  assert.equal(ready?.reason, "KubeletReady");
  const csiNode = await client.get<CSINode>(GVR.csiNodes, "node-a");
  assert.deepEqual(csiNode.spec.drivers, []);
  assert.deepEqual(
    csiNode.metadata?.ownerReferences?.map((o) => [o.kind, o.name, o.uid]),
    [["Node", "node-a", node.metadata?.uid]],
  );
  const lease = await until(
    () => client.get<Lease>(GVR.leases, "node-a", { namespace: NODE_LEASE_NAMESPACE }),
    "node lease",
  );
  assert.equal(lease.spec?.holderIdentity, "node-a");
  assert.equal(lease.spec?.leaseDurationSeconds, 40);
  const first = lease.spec?.renewTime;
  await until(async () => {
    const again = await client.get<Lease>(GVR.leases, "node-a", { namespace: NODE_LEASE_NAMESPACE });
    return again.spec?.renewTime !== first;
  }, "lease renewal");
});

test("hostpath registers through its registration socket and deregisters when the socket goes", async (t) => {
  const api = await testServer(t);
  const client = api.client();
  const root = await tempDir(t);
  const dir = await tempDir(t, "csikit-node-driver-");
  const driver = await serveHostpathDriver({
    endpoint: join(dir, "csi.sock"),
    nodeId: "hp-node-a",
    stateDir: join(dir, "state"),
    maxVolumesPerNode: 5,
    allowedPathRoots: [root],
  });
  defer(t, () => driver.close());
  await runNode(t, client, { nodeName: "node-a", rootDir: root });
  const registration = await serveRegistration(t, {
    rootDir: root,
    driverName: "hostpath.csi.k8s.io",
    endpoint: driver.path,
  });
  const entry = await until(async () => {
    const csiNode = await client.get<CSINode>(GVR.csiNodes, "node-a");
    return csiNode.spec.drivers.find((d) => d.name === "hostpath.csi.k8s.io");
  }, "CSINode driver entry");
  assert.deepEqual(entry, {
    name: "hostpath.csi.k8s.io",
    nodeID: "hp-node-a",
    topologyKeys: [TOPOLOGY_KEY_NODE],
    allocatable: { count: 5 },
  });
  const node = await client.get<Node>(GVR.nodes, "node-a");
  assert.equal(node.metadata?.labels?.[TOPOLOGY_KEY_NODE], "hp-node-a");
  assert.deepEqual(JSON.parse(node.metadata?.annotations?.[NODE_ID_ANNOTATION] ?? "{}"), {
    "hostpath.csi.k8s.io": "hp-node-a",
  });
  await until(() => registration.statuses.length > 0, "NotifyRegistrationStatus");
  assert.deepEqual(registration.statuses, [{ pluginRegistered: true, error: "" }]);

  await registration.server.close();
  await until(async () => {
    const csiNode = await client.get<CSINode>(GVR.csiNodes, "node-a");
    return csiNode.spec.drivers.length === 0;
  }, "CSINode entry removed");
  // The CSINode entry and the Node annotation are two writes: wait for the second too.
  const after = await until(async () => {
    const node = await client.get<Node>(GVR.nodes, "node-a");
    return node.metadata?.annotations?.[NODE_ID_ANNOTATION] === undefined && node;
  }, "node-ID annotation key removed");
  assert.equal(
    after.metadata?.labels?.[TOPOLOGY_KEY_NODE],
    "hp-node-a",
    "topology labels stay, as with the kubelet",
  );
});

test("a plugin of another type or an unsupported version is refused with NotifyRegistrationStatus(false)", async (t) => {
  const api = await testServer(t);
  const client = api.client();
  const root = await tempDir(t);
  await runNode(t, client, { nodeName: "node-a", rootDir: root });
  const wrongType = await serveRegistration(t, {
    rootDir: root,
    driverName: "device.example.com",
    endpoint: "/nonexistent.sock",
    type: "DevicePlugin",
  });
  const wrongVersion = await serveRegistration(t, {
    rootDir: root,
    driverName: "future.csi.example.com",
    endpoint: "/nonexistent.sock",
    versions: ["2.0.0"],
  });
  await until(() => wrongType.statuses.length > 0 && wrongVersion.statuses.length > 0, "both refused");
  assert.equal(wrongType.statuses[0]?.pluginRegistered, false);
  assert.match(wrongType.statuses[0]?.error ?? "", /no handler registered for plugin type: DevicePlugin/);
  assert.equal(wrongVersion.statuses[0]?.pluginRegistered, false);
  assert.match(wrongVersion.statuses[0]?.error ?? "", /must be v1\.x/);
  const csiNode = await client.get<CSINode>(GVR.csiNodes, "node-a");
  assert.deepEqual(csiNode.spec.drivers, []);
});

test("NodeGetInfo failing removes the driver's entries and answers false with the error", async (t) => {
  const api = await testServer(t);
  const client = api.client();
  const root = await tempDir(t);
  const dir = await tempDir(t, "csikit-node-driver-");
  const scripted = await serveScriptedNode(t, {
    endpoint: join(dir, "csi.sock"),
    nodeId: "scripted-a",
    capabilities: ["STAGE_UNSTAGE_VOLUME"],
    topology: { "topology.scripted/zone": "a" },
  });
  await runNode(t, client, { nodeName: "node-a", rootDir: root });
  const first = await serveRegistration(t, {
    rootDir: root,
    driverName: "scripted.csi.k8s.io",
    endpoint: scripted.server.path,
  });
  await until(
    async () => (await client.get<CSINode>(GVR.csiNodes, "node-a")).spec.drivers.length === 1,
    "registered",
  );
  await first.server.close();
  await until(
    async () => (await client.get<CSINode>(GVR.csiNodes, "node-a")).spec.drivers.length === 0,
    "deregistered",
  );

  scripted.failWith("NodeGetInfo", GrpcStatus.INTERNAL);
  const second = await serveRegistration(t, {
    rootDir: root,
    driverName: "scripted.csi.k8s.io",
    endpoint: scripted.server.path,
  });
  await until(() => second.statuses.length > 0, "refused");
  assert.equal(second.statuses[0]?.pluginRegistered, false);
  assert.match(
    second.statuses[0]?.error ?? "",
    /error updating CSI node info: .*scripted NodeGetInfo failure/,
  );
  const csiNode = await client.get<CSINode>(GVR.csiNodes, "node-a");
  assert.deepEqual(csiNode.spec.drivers, []);
  const node = await client.get<Node>(GVR.nodes, "node-a");
  assert.equal(node.metadata?.annotations?.[NODE_ID_ANNOTATION], undefined);
});

test("a registrar gone before NotifyRegistrationStatus: the driver stays registered and its socket going away deregisters it", async (t) => {
  const api = await testServer(t);
  const client = api.client();
  const root = await tempDir(t);
  const dir = await tempDir(t, "csikit-node-driver-");
  const scripted = await serveScriptedNode(t, {
    endpoint: join(dir, "csi.sock"),
    nodeId: "scripted-a",
    capabilities: ["STAGE_UNSTAGE_VOLUME"],
    topology: { "topology.scripted/zone": "a" },
  });
  await runNode(t, client, { nodeName: "node-a", rootDir: root });
  const registration = await serveRegistration(t, {
    rootDir: root,
    driverName: "scripted.csi.k8s.io",
    endpoint: scripted.server.path,
    notifyFails: true,
  });
  await until(() => registration.statuses.length > 0, "status sent");
  assert.equal(registration.statuses[0]?.pluginRegistered, true);
  await until(
    async () => (await client.get<CSINode>(GVR.csiNodes, "node-a")).spec.drivers.length === 1,
    "registered",
  );
  await registration.server.close();
  await until(
    async () => (await client.get<CSINode>(GVR.csiNodes, "node-a")).spec.drivers.length === 0,
    "deregistered",
  );
});
