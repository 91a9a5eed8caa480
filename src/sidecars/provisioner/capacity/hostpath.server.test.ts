// Capacity tracking with the real hostpath driver (csikit's reference driver, over real gRPC)
// and the embedded API server: per-kind capacity of the driver's node becomes one object per
// class, an unknown node's segment reports zero, and a volume created on the node shows up in
// the published capacity after the provisioner's early refresh.

import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { Registry } from "prom-client";
import {
  GVR,
  type CSINode,
  type CSIStorageCapacity,
  type Node,
  type PersistentVolume,
} from "../../../api/index.ts";
import { FakeClock } from "../../../base/index.ts";
import { CsiClient } from "../../../csi/index.ts";
import {
  DEFAULT_DRIVER_NAME,
  TOPOLOGY_KEY_NODE,
  serveHostpathDriver,
} from "../../../drivers/hostpath/index.ts";
import { InformerFactory } from "../../../kube/index.ts";
import { startTestServer } from "../../../../test/harness/kube-server.ts";
import { CapacityRefresh, startCapacityController } from "./index.ts";
import { until } from "../../../../test/harness/until.ts";

const MiB = 1024 * 1024;

test("hostpath driver: capacity per kind on its node, zero elsewhere, refreshed after a volume is created", async (t) => {
  const api = await startTestServer();
  t.after(() => api.stop());
  const client = api.client();
  const dir = await mkdtemp(join(tmpdir(), "csikit-capacity-hostpath-"));
  const driver = await serveHostpathDriver({
    nodeId: "node-1",
    stateDir: join(dir, "state"),
    endpoint: `unix://${join(dir, "csi.sock")}`,
    capacity: { fast: 100 * MiB, slow: 10 * MiB },
    maxVolumeSize: 50 * MiB,
    enableTopology: true,
  });
  t.after(() => driver.close());
  const csi = CsiClient.connect(`unix://${join(dir, "csi.sock")}`);
  t.after(() => csi.close());
  // Registered last because t.after hooks run in registration order: the driver writes its state
  // into dir until it is closed.
  t.after(() => rm(dir, { recursive: true, force: true }));

  for (const node of ["node-1", "node-2"]) {
    await client.create<Node>(GVR.nodes, { metadata: { name: node, labels: { [TOPOLOGY_KEY_NODE]: node } } });
    await client.create<CSINode>(GVR.csiNodes, {
      metadata: { name: node },
      spec: { drivers: [{ name: DEFAULT_DRIVER_NAME, nodeID: node, topologyKeys: [TOPOLOGY_KEY_NODE] }] },
    });
  }
  for (const kind of ["fast", "slow"]) {
    await client.create(GVR.storageClasses, {
      metadata: { name: `hostpath-${kind}` },
      provisioner: DEFAULT_DRIVER_NAME,
      parameters: { kind },
      volumeBindingMode: "WaitForFirstConsumer",
    });
  }

  const informers = new InformerFactory({ client, freeze: true });
  const refresh = new CapacityRefresh();
  const abort = new AbortController();
  const running = startCapacityController(
    {
      client,
      informers,
      csi,
      driverName: DEFAULT_DRIVER_NAME,
      namespace: "default",
      ownerReference: null,
      refresh,
      clock: new FakeClock(),
      registry: new Registry(),
    },
    abort.signal,
  );
  const informing = informers.start(abort.signal);
  t.after(async () => {
    abort.abort();
    await Promise.all([running, informing]);
  });

  const shape = (objects: CSIStorageCapacity[]): string[] =>
    objects
      .map(
        (o) =>
          `${o.storageClassName} ${o.nodeTopology?.matchLabels?.[TOPOLOGY_KEY_NODE]}=${o.capacity}/${o.maximumVolumeSize}`,
      )
      .sort();
  const list = async (): Promise<string[]> =>
    shape((await client.list<CSIStorageCapacity>(GVR.csiStorageCapacities, { namespace: "default" })).items);
  const expect = async (want: string[], what: string): Promise<void> => {
    let last: string[] = [];
    try {
      await until(async () => {
        last = await list();
        return JSON.stringify(last) === JSON.stringify(want);
      }, what);
    } catch (error) {
      assert.deepEqual(last, want, String(error));
    }
  };

  await expect(
    [
      "hostpath-fast node-1=100Mi/50Mi",
      "hostpath-fast node-2=0/0",
      "hostpath-slow node-1=10Mi/10Mi",
      "hostpath-slow node-2=0/0",
    ],
    "the driver's per-kind capacity on its node",
  );

  const created = await csi.controller.createVolume({
    name: "pvc-capacity-1",
    capacityRange: { requiredBytes: String(30 * MiB) },
    volumeCapabilities: [{ mount: {}, accessType: "mount", accessMode: { mode: "SINGLE_NODE_WRITER" } }],
    parameters: { kind: "fast" },
    accessibilityRequirements: { requisite: [{ segments: { [TOPOLOGY_KEY_NODE]: "node-1" } }] },
  });
  assert.deepEqual(created.volume?.accessibleTopology, [{ segments: { [TOPOLOGY_KEY_NODE]: "node-1" } }]);
  const pv: PersistentVolume = {
    metadata: { name: "pvc-capacity-1" },
    spec: {
      nodeAffinity: {
        required: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: TOPOLOGY_KEY_NODE, operator: "In", values: ["node-1"] }] },
          ],
        },
      },
    },
  };
  refresh.provisioned(pv, "hostpath-fast");
  await expect(
    [
      "hostpath-fast node-1=70Mi/50Mi",
      "hostpath-fast node-2=0/0",
      "hostpath-slow node-1=10Mi/10Mi",
      "hostpath-slow node-2=0/0",
    ],
    "the new volume's space is gone from node-1's fast capacity",
  );
});
