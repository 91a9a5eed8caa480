// `--enable-capacity` end to end through startProvisioner (flags → options → the capacity
// controller): with the real hostpath driver and the embedded API server, the provisioner
// publishes one CSIStorageCapacity per (node segment × WaitForFirstConsumer class) in
// NAMESPACE, and refuses to start without NAMESPACE, naming it.

import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { GVR, type CSINode, type CSIStorageCapacity, type Node } from "../../api/index.ts";
import { DEFAULT_DRIVER_NAME, TOPOLOGY_KEY_NODE, serveHostpathDriver } from "../../drivers/hostpath/index.ts";
import {
  createClaim,
  createClass,
  runProvisioner,
  startCluster,
  waitForVolume,
} from "../../../test/harness/provisioner.ts";
import { until } from "../../../test/harness/until.ts";
import { defer, tempDir } from "../../../test/harness/cleanup.ts";

const MiB = 1024 * 1024;

async function hostpathWithTopology(t: Parameters<typeof tempDir>[0], dir: string): Promise<string> {
  const socket = join(dir, "csi.sock");
  const driver = await serveHostpathDriver({
    nodeId: "node-1",
    stateDir: join(dir, "state"),
    endpoint: `unix://${socket}`,
    capacity: { fast: 100 * MiB },
    enableTopology: true,
  });
  defer(t, () => driver.close());
  return socket;
}

test("--enable-capacity publishes CSIStorageCapacity objects for the driver's segments and refreshes them after a provision", async (t) => {
  const cluster = await startCluster(t);
  const socket = await hostpathWithTopology(t, await tempDir(t));
  await cluster.client.create<Node>(GVR.nodes, {
    metadata: { name: "node-1", labels: { [TOPOLOGY_KEY_NODE]: "node-1" } },
  });
  await cluster.client.create<CSINode>(GVR.csiNodes, {
    metadata: { name: "node-1" },
    spec: { drivers: [{ name: DEFAULT_DRIVER_NAME, nodeID: "node-1", topologyKeys: [TOPOLOGY_KEY_NODE] }] },
  });
  await createClass(cluster, "late", DEFAULT_DRIVER_NAME, {
    parameters: { kind: "fast" },
    volumeBindingMode: "WaitForFirstConsumer",
  });
  await createClass(cluster, "now", DEFAULT_DRIVER_NAME, { volumeBindingMode: "Immediate" });

  // A poll interval far beyond the test's waits: only the early refresh can update the object.
  runProvisioner(
    t,
    cluster,
    socket,
    ["--enable-capacity", "--capacity-ownerref-level=-1", "--capacity-poll-interval=1h"],
    {
      env: { NAMESPACE: "kube-system" },
    },
  );
  const objects = await until(async () => {
    const list = await cluster.client.list<CSIStorageCapacity>(GVR.csiStorageCapacities, {
      namespace: "kube-system",
    });
    return list.items.length > 0 ? list.items : undefined;
  }, "a CSIStorageCapacity for class late");
  // Immediate classes only with --capacity-for-immediate-binding: exactly one object.
  assert.equal(objects.length, 1);
  const [object] = objects;
  assert.equal(object?.storageClassName, "late");
  assert.deepEqual(object?.nodeTopology?.matchLabels, { [TOPOLOGY_KEY_NODE]: "node-1" });
  assert.equal(object?.metadata?.labels?.["csi.storage.k8s.io/drivername"], DEFAULT_DRIVER_NAME);
  assert.equal(object?.metadata?.labels?.["csi.storage.k8s.io/managed-by"], "external-provisioner");
  assert.equal(object?.capacity, "100Mi");
  // Provisioning 10Mi in that segment: the provisioner asks the capacity controller to re-poll now.
  const claim = await createClaim(
    cluster,
    "data",
    DEFAULT_DRIVER_NAME,
    { storageClassName: "late", resources: { requests: { storage: "10Mi" } } },
    { "volume.kubernetes.io/selected-node": "node-1" },
  );
  await waitForVolume(cluster, claim);
  await until(async () => {
    const list = await cluster.client.list<CSIStorageCapacity>(GVR.csiStorageCapacities, {
      namespace: "kube-system",
    });
    return list.items[0]?.capacity === "90Mi" ? true : undefined;
  }, "capacity refreshed after the provision");
});

test("--enable-capacity without NAMESPACE stops the provisioner, naming the variable", async (t) => {
  const cluster = await startCluster(t);
  const socket = await hostpathWithTopology(t, await tempDir(t));
  const running = runProvisioner(t, cluster, socket, ["--enable-capacity"], { env: {} });
  await assert.rejects(running.done, /NAMESPACE/);
});
