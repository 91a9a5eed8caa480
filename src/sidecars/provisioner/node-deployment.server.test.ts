// Distributed provisioning: three nodes, each with its own `csikit hostpath` (node ID = node
// name, topology key topology.hostpath.csi/node) and its own provisioner with --node-deployment
// and NODE_NAME. Immediate claims are raced for: each ends up with exactly one owner
// (selected-node), exactly one volume in exactly that node's driver, and a PV pinned there.
// Late-binding claims go to the selected node only; deletion happens on the owning node.

import assert from "node:assert/strict";
import { test } from "node:test";
import { CsiClient } from "../../csi/index.ts";
import type { HostpathServer } from "../../drivers/index.ts";
import {
  HOSTPATH,
  bind,
  createClaim,
  createClass,
  getClaim,
  getVolume,
  release,
  runProvisioner,
  startCluster,
  startHostpath,
  waitForVolume,
} from "../../../test/harness/provisioner.ts";
import { until } from "../../../test/harness/until.ts";

const NODES = ["n1", "n2", "n3"];
const KEY = "topology.hostpath.csi/node";

async function volumeCount(driver: HostpathServer): Promise<number> {
  const client = CsiClient.connect(driver.path);
  try {
    return (await client.controller.listVolumes({})).entries.length;
  } finally {
    client.close();
  }
}

test(
  "three node-deployed provisioners race for immediate claims: each provisioned exactly once",
  { timeout: 120_000 },
  async (t) => {
    const cluster = await startCluster(t);
    await createClass(cluster, "sc", HOSTPATH, { reclaimPolicy: "Delete" });
    await createClass(cluster, "late", HOSTPATH, { volumeBindingMode: "WaitForFirstConsumer" });
    const drivers = new Map<string, HostpathServer>();
    for (const node of NODES) {
      const driver = await startHostpath(t, cluster.dir, { nodeId: node, node: true, name: node });
      drivers.set(node, driver);
      runProvisioner(
        t,
        cluster,
        driver.path,
        [
          "--node-deployment",
          "--node-deployment-base-delay=200ms",
          "--node-deployment-max-delay=1s",
          "--strict-topology",
          "--immediate-topology=false",
        ],
        { env: { NODE_NAME: node } },
      );
    }
    // Every instance up and syncing before the race: each provisions a late claim for its node.
    for (const node of NODES) {
      const warm = await createClaim(
        cluster,
        `warm-${node}`,
        HOSTPATH,
        { storageClassName: "late" },
        { "volume.kubernetes.io/selected-node": node },
      );
      await waitForVolume(cluster, warm);
    }
    const claims = await Promise.all(
      Array.from({ length: 12 }, (_, i) => createClaim(cluster, `c${i}`, HOSTPATH)),
    );
    const owners = new Map<string, number>(NODES.map((n) => [n, 0]));
    for (const claim of claims) {
      const pv = await waitForVolume(cluster, claim, 60_000);
      const owner = (await getClaim(cluster, claim.metadata.name!))?.metadata?.annotations?.[
        "volume.kubernetes.io/selected-node"
      ];
      assert.ok(owner && NODES.includes(owner), `claim ${claim.metadata?.name} has an owner`);
      owners.set(owner, owners.get(owner)! + 1);
      const term = pv.spec?.nodeAffinity?.required?.nodeSelectorTerms?.[0]?.matchExpressions?.[0];
      assert.deepEqual(term, { key: KEY, operator: "In", values: [owner] }, "PV pinned to its owner");
    }
    for (const node of NODES)
      assert.equal(
        await volumeCount(drivers.get(node)!),
        owners.get(node)! + 1,
        `volumes in ${node}'s driver = claims it owns (+ its warm-up)`,
      );
    t.diagnostic(`owners: ${JSON.stringify(Object.fromEntries(owners))}`);

    // Late binding: only the selected node provisions.
    const late = await createClaim(
      cluster,
      "late",
      HOSTPATH,
      { storageClassName: "late" },
      { "volume.kubernetes.io/selected-node": "n2" },
    );
    const latePv = await waitForVolume(cluster, late);
    assert.equal(
      latePv.spec?.nodeAffinity?.required?.nodeSelectorTerms?.[0]?.matchExpressions?.[0]?.values?.[0],
      "n2",
    );
    assert.equal(await volumeCount(drivers.get("n2")!), owners.get("n2")! + 2);

    // Deletion happens on the owning node.
    const first = claims[0]!;
    const pv = await waitForVolume(cluster, first);
    const owner = (await getClaim(cluster, first.metadata.name!))!.metadata.annotations![
      "volume.kubernetes.io/selected-node"
    ]!;
    const before = await volumeCount(drivers.get(owner)!);
    await bind(cluster, first, pv);
    await release(cluster, first, pv.metadata.name!);
    await until(
      async () => (await getVolume(cluster, pv.metadata.name!)) === undefined,
      "released PV deleted",
    );
    assert.equal(await volumeCount(drivers.get(owner)!), before - 1);
  },
);
