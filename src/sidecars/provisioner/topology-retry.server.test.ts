// Topology across retries, with a zoned scripted driver (WaitForFirstConsumer, two nodes in
// zones a and b): a retried CreateVolume asks for exactly what the first call asked, and so do
// later claims (external-provisioner#1465/#1466: a cached topology slice mutated by one request
// sent retries to the wrong zone); a selected node that disappears while a CreateVolume is in
// flight (#1437/#1438) neither strands the claim nor sends the retry elsewhere: the retry repeats
// the request it was made with, and once the outcome is known the claim is provisioned or
// rescheduled; after a restart, with no request left in memory, the claim is rescheduled as
// upstream does (the retry keeps the volume's name, so the driver makes no second volume).

import assert from "node:assert/strict";
import { test } from "node:test";
import { GVR } from "../../api/index.ts";
import type { CreateVolumeRequest } from "../../csi/index.ts";
import {
  STUB,
  createClaim,
  createClass,
  getClaim,
  runProvisioner,
  startCluster,
  startStub,
  untilCancelled,
  waitForVolume,
  type Cluster,
} from "../../../test/harness/provisioner.ts";
import { until } from "../../../test/harness/until.ts";

const SELECTED_NODE = "volume.kubernetes.io/selected-node";

/** A registered node of the zoned stub: its CSINode (topology key "zone") and Node (that zone). */
async function createZonedNode(cluster: Cluster, name: string, zone: string): Promise<void> {
  await cluster.client.create(GVR.csiNodes, {
    metadata: { name },
    spec: { drivers: [{ name: STUB, nodeID: name, topologyKeys: ["zone"] }] },
  });
  await cluster.client.create(GVR.nodes, { metadata: { name, labels: { zone } } });
}

async function deleteNode(cluster: Cluster, name: string): Promise<void> {
  await cluster.client.delete(GVR.nodes, name);
  await cluster.client.delete(GVR.csiNodes, name);
}

function zones(request: CreateVolumeRequest | undefined) {
  return {
    requisite: request?.accessibilityRequirements?.requisite?.map((t) => t.segments.zone),
    preferred: request?.accessibilityRequirements?.preferred?.map((t) => t.segments.zone),
  };
}

async function zonedCluster(t: Parameters<typeof startCluster>[0]) {
  const cluster = await startCluster(t);
  const stub = await startStub(t, cluster.dir, { topology: true });
  await createClass(cluster, "sc", STUB, { volumeBindingMode: "WaitForFirstConsumer" });
  await createZonedNode(cluster, "n1", "a");
  await createZonedNode(cluster, "n2", "b");
  return { cluster, stub };
}

test("a retried CreateVolume and later claims ask for the same zones, the selected one first (#1466)", async (t) => {
  const { cluster, stub } = await zonedCluster(t);
  let calls = 0;
  stub.onCreate = async (_request, context) => {
    // The first two calls outlive --timeout: retried, in the background.
    if (++calls <= 2) await untilCancelled(context);
  };
  runProvisioner(t, cluster, stub.server.path, ["--timeout=300ms"]);
  const first = await createClaim(cluster, "first", STUB, {}, { [SELECTED_NODE]: "n1" });
  await waitForVolume(cluster, first);
  const second = await createClaim(cluster, "second", STUB, {}, { [SELECTED_NODE]: "n2" });
  await waitForVolume(cluster, second);
  const third = await createClaim(cluster, "third", STUB, {}, { [SELECTED_NODE]: "n1" });
  await waitForVolume(cluster, third);
  const byClaim = new Map<string, ReturnType<typeof zones>[]>();
  for (const request of stub.creates) {
    const name = request.name.startsWith(`pvc-${second.metadata.uid}`)
      ? "second"
      : request.name.startsWith(`pvc-${third.metadata.uid}`)
        ? "third"
        : "first";
    byClaim.set(name, [...(byClaim.get(name) ?? []), zones(request)]);
  }
  assert.equal(byClaim.get("first")?.length, 3, "the first claim's CreateVolume was retried twice");
  for (const [claim, zone] of [
    ["first", "a"],
    ["second", "b"],
    ["third", "a"],
  ] as const)
    for (const asked of byClaim.get(claim) ?? [])
      assert.deepEqual(
        asked,
        { requisite: ["a", "b"], preferred: zone === "a" ? ["a", "b"] : ["b", "a"] },
        claim,
      );
});

test("selected node deleted while CreateVolume is in flight: the retry repeats the request and provisions (#1437)", async (t) => {
  const { cluster, stub } = await zonedCluster(t);
  let calls = 0;
  stub.onCreate = async (_request, context) => {
    if (++calls === 1) {
      await deleteNode(cluster, "n1");
      await untilCancelled(context);
    }
  };
  runProvisioner(t, cluster, stub.server.path, ["--timeout=300ms"]);
  const claim = await createClaim(cluster, "w", STUB, {}, { [SELECTED_NODE]: "n1" });
  const pv = await waitForVolume(cluster, claim);
  assert.ok(stub.creates.length >= 2);
  for (const request of stub.creates) assert.deepEqual(zones(request), zones(stub.creates[0]));
  assert.equal(stub.volumes.size, 1, "one volume, no second one elsewhere");
  assert.equal(pv.spec?.csi?.volumeHandle, `stub-pvc-${claim.metadata.uid}`);
});

test("selected node deleted while in flight, provisioner restarted: the claim is rescheduled, then provisioned once (#1437)", async (t) => {
  const { cluster, stub } = await zonedCluster(t);
  stub.onCreate = async (_request, context) => untilCancelled(context);
  const before = runProvisioner(t, cluster, stub.server.path, ["--timeout=300ms"]);
  const claim = await createClaim(cluster, "w", STUB, {}, { [SELECTED_NODE]: "n1" });
  await until(() => stub.creates.length >= 1, "first CreateVolume");
  await before.stop();
  await deleteNode(cluster, "n1");
  stub.onCreate = undefined;
  runProvisioner(t, cluster, stub.server.path, ["--timeout=300ms"]);
  await until(
    async () => (await getClaim(cluster, "w"))?.metadata?.annotations?.[SELECTED_NODE] === undefined,
    "selected-node removed",
  );
  // The scheduler picks n2: the retry has the volume's name, so the driver returns the volume
  // it made in the first call; no second volume.
  await cluster.client.patch(
    GVR.persistentVolumeClaims,
    "w",
    { metadata: { annotations: { [SELECTED_NODE]: "n2" } } },
    { namespace: "default" },
  );
  await waitForVolume(cluster, claim);
  assert.equal(stub.volumes.size, 1);
  assert.deepEqual(zones(stub.creates.at(-1)).preferred?.[0], "b");
});
