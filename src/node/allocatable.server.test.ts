// KEP-4876 MutableCSINodeAllocatableCount on the node, against the real API server under the
// node's own identity, with a scripted CSI node plugin whose max_volumes_per_node the test
// changes: the CSINode count follows at the CSIDriver's nodeAllocatableUpdatePeriodSeconds
// (and is not rewritten when unchanged), and at once when a VolumeAttachment of this node
// fails with errorCode ResourceExhausted; with the gate off, never.

import assert from "node:assert/strict";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { GVR, kubeRelease, type CSIDriver, type CSINode } from "../api/index.ts";
import type { CoreEvent } from "../kube/index.ts";
import {
  boundClaim,
  csiDriver,
  persistentVolume,
  pod,
  runNode,
  runRealRegistrar,
  serveScriptedNode,
  testServer,
} from "../../test/harness/node.ts";
import { attachmentName } from "./index.ts";
import { until } from "../../test/harness/until.ts";
import { tempDir } from "../../test/harness/cleanup.ts";

const DRIVER = "scripted.csi.k8s.io";
const NODE = "node-a";
const NS = "default";

async function setup(
  t: TestContext,
  options: { driverSpec: CSIDriver["spec"]; featureGates?: Record<string, boolean> },
) {
  const api = await testServer(t);
  const client = api.client();
  const root = await tempDir(t);
  const dir = await tempDir(t, "csikit-node-driver-");
  const endpoint = join(dir, "csi.sock");
  const limit = { value: 7 };
  const scripted = await serveScriptedNode(t, {
    endpoint,
    nodeId: "scripted-a",
    capabilities: [],
    maxVolumesPerNode: () => limit.value,
  });
  await client.create(GVR.csiDrivers, csiDriver(DRIVER, options.driverSpec));
  await runNode(t, client, {
    nodeName: NODE,
    rootDir: root,
    ...(options.featureGates ? { featureGates: options.featureGates } : {}),
  });
  await runRealRegistrar(t, client, { rootDir: root, nodeName: NODE, csiAddress: endpoint });
  const count = async () => {
    const csiNode = await client.get<CSINode>(GVR.csiNodes, NODE);
    return csiNode.spec.drivers.find((d) => d.name === DRIVER)?.allocatable?.count;
  };
  assert.equal(await count(), 7);
  return { client, scripted, limit, count };
}

test("nodeAllocatableUpdatePeriodSeconds: NodeGetInfo every period; allocatable.count written only when max_volumes_per_node changed", async (t) => {
  const { client, scripted, limit, count } = await setup(t, {
    driverSpec: { attachRequired: false, nodeAllocatableUpdatePeriodSeconds: 10 },
  });
  const calls = () => scripted.callsOf("NodeGetInfo").length;
  const before = calls();
  const version = (await client.get<CSINode>(GVR.csiNodes, NODE)).metadata?.resourceVersion;
  // One period with nothing changed: asked again, nothing written.
  await until(() => calls() > before, "NodeGetInfo again after a period", { timeoutMs: 30_000 });
  // An absence needs a window: a write would follow the answer within milliseconds.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  assert.equal((await client.get<CSINode>(GVR.csiNodes, NODE)).metadata?.resourceVersion, version);
  limit.value = 3;
  const asked = calls();
  await until(async () => (await count()) === 3, "count follows max_volumes_per_node", { timeoutMs: 30_000 });
  assert.ok(calls() > asked);
  const entry = (await client.get<CSINode>(GVR.csiNodes, NODE)).spec.drivers.find((d) => d.name === DRIVER);
  assert.equal(entry?.nodeID, "scripted-a", "the entry is updated in place, the rest unchanged");
});

for (const gate of [true, false]) {
  test(`ResourceExhausted attach with MutableCSINodeAllocatableCount=${gate}: ${gate ? "count refreshed at once" : "nothing refreshed"}`, async (t) => {
    // 1.35: the gate is beta there and may be turned off (GA and locked from 1.36).
    const featureGates = kubeRelease("1.35", { MutableCSINodeAllocatableCount: String(gate) }).gates;
    const { client, scripted, limit, count } = await setup(t, {
      featureGates,
      // A period far longer than the test: only the ResourceExhausted path can refresh.
      driverSpec: { attachRequired: true, nodeAllocatableUpdatePeriodSeconds: 3600 },
    });
    const asked = scripted.callsOf("NodeGetInfo").length;
    limit.value = 2;
    await boundClaim(client, NS, "data", persistentVolume("pv-x", { driver: DRIVER, handle: "vol-x" }));
    await client.create(
      GVR.pods,
      pod(NS, "app", {
        nodeName: NODE,
        volumes: [{ name: "data", persistentVolumeClaim: { claimName: "data" } }],
      }),
    );
    const name = attachmentName("vol-x", DRIVER, NODE);
    await client.create(GVR.volumeAttachments, {
      apiVersion: "storage.k8s.io/v1",
      kind: "VolumeAttachment",
      metadata: { name },
      spec: { attacher: DRIVER, nodeName: NODE, source: { persistentVolumeName: "pv-x" } },
    });
    await client.patch(
      GVR.volumeAttachments,
      name,
      {
        status: {
          attached: false,
          attachError: { message: "too many volumes", time: new Date().toISOString(), errorCode: 8 },
        },
      },
      { subresource: "status" },
    );
    // The node saw the failed attachment once it events it on the pod.
    await until(async () => {
      const events = await client.list<CoreEvent>(GVR.events, { namespace: NS });
      return events.items.some((e) => e.reason === "FailedAttachVolume");
    }, "FailedAttachVolume event");
    if (gate) {
      await until(async () => (await count()) === 2, "count refreshed at once");
    } else {
      // Give a refresh every chance to happen (it starts in the same pass as the event).
      await new Promise((resolve) => setTimeout(resolve, 1500));
      assert.equal(scripted.callsOf("NodeGetInfo").length, asked, "no NodeGetInfo with the gate off");
      assert.equal(await count(), 7);
    }
  });
}

test("a driver registering again with another max_volumes_per_node (node restart): the count is updated, the entry kept", async (t) => {
  const api = await testServer(t);
  const client = api.client();
  const root = await tempDir(t);
  const dir = await tempDir(t, "csikit-node-driver-");
  const endpoint = join(dir, "csi.sock");
  const limit = { value: 7 };
  await serveScriptedNode(t, {
    endpoint,
    nodeId: "scripted-a",
    capabilities: [],
    maxVolumesPerNode: () => limit.value,
  });
  const first = await runNode(t, client, { nodeName: NODE, rootDir: root });
  await runRealRegistrar(t, client, { rootDir: root, nodeName: NODE, csiAddress: endpoint });
  await first.stop();
  limit.value = 4;
  await runNode(t, client, { nodeName: NODE, rootDir: root });
  const entry = await until(async () => {
    const csiNode = await client.get<CSINode>(GVR.csiNodes, NODE);
    const found = csiNode.spec.drivers.find((d) => d.name === DRIVER);
    return found?.allocatable?.count === 4 && found;
  }, "count updated on registration");
  assert.equal(entry.nodeID, "scripted-a");
});
