// The garbage collector against the real API server, with ConfigMaps as owners and dependents
// (any served kind works the same: the collector watches what discovery lists): Background,
// Foreground (blockOwnerDeletion holds the owner), Orphan, dangling references found at
// start-up, and a dependent kept by a remaining owner.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { GVR, type CSINode, type ConfigMap, type Node, type OwnerReference } from "../../api/index.ts";
import { isNotFound, type KubeClient } from "../../kube/index.ts";
import {
  NS,
  getOrUndefined,
  runLoops,
  startTestServer,
  type TestServer,
} from "../../../test/harness/controllers.ts";
import { until } from "../../../test/harness/until.ts";

let env: TestServer;
let client: KubeClient;
let loops: { stop: () => Promise<void> } | undefined;

before(async () => {
  env = await startTestServer();
  client = env.client();
});
after(async () => {
  await loops?.stop();
  await env?.stop();
});

async function configMap(
  name: string,
  owners: ConfigMap[] = [],
  extra: { block?: boolean; finalizers?: string[] } = {},
): Promise<ConfigMap> {
  const ownerReferences: OwnerReference[] = owners.map((owner) => ({
    apiVersion: "v1",
    kind: "ConfigMap",
    name: owner.metadata.name!,
    uid: owner.metadata.uid!,
    ...(extra.block !== undefined ? { blockOwnerDeletion: extra.block } : {}),
  }));
  return client.create<ConfigMap>(GVR.configMaps, {
    metadata: {
      name,
      namespace: NS,
      ...(ownerReferences.length > 0 ? { ownerReferences } : {}),
      ...(extra.finalizers ? { finalizers: extra.finalizers } : {}),
    },
  });
}

const get = (name: string): Promise<ConfigMap | undefined> =>
  getOrUndefined<ConfigMap>(client, GVR.configMaps, name, NS);
const gone = (name: string): Promise<void> =>
  until(async () => (await get(name)) === undefined, `${name} gone`).then(() => {});

test("a dependent whose owner vanished while no collector ran is deleted at start-up", async () => {
  const owner = await configMap("gc-early-owner");
  await configMap("gc-early-dep", [owner]);
  await client.delete(GVR.configMaps, "gc-early-owner", { namespace: NS });
  assert.ok(await get("gc-early-dep"), "nothing collects before the collector runs");
  loops = runLoops(env.client(), { controllers: ["garbage-collector-controller"] });
  await gone("gc-early-dep");
});

test("Background: dependents are deleted after the owner", async () => {
  const owner = await configMap("gc-bg-owner");
  await configMap("gc-bg-dep1", [owner]);
  await configMap("gc-bg-dep2", [owner]);
  await client.delete(GVR.configMaps, "gc-bg-owner", { namespace: NS, propagationPolicy: "Background" });
  await gone("gc-bg-owner");
  await gone("gc-bg-dep1");
  await gone("gc-bg-dep2");
});

test("Foreground: the owner waits with foregroundDeletion until blocking dependents are gone", async () => {
  const owner = await configMap("gc-fg-owner");
  await configMap("gc-fg-dep", [owner], { block: true, finalizers: ["example.com/hold"] });
  await client.delete(GVR.configMaps, "gc-fg-owner", { namespace: NS, propagationPolicy: "Foreground" });
  // The dependent is deleted by the collector (its own finalizer holds it), the owner waits.
  const dependent = await until(async () => {
    const object = await get("gc-fg-dep");
    return object?.metadata?.deletionTimestamp ? object : undefined;
  }, "dependent deleted");
  assert.ok(dependent);
  const waiting = await get("gc-fg-owner");
  assert.deepEqual(waiting?.metadata?.finalizers, ["foregroundDeletion"]);
  await client.patch(GVR.configMaps, "gc-fg-dep", { metadata: { finalizers: null } }, { namespace: NS });
  await gone("gc-fg-dep");
  await gone("gc-fg-owner");
});

test("Foreground: a dependent without blockOwnerDeletion does not hold the owner", async () => {
  const owner = await configMap("gc-fg2-owner");
  await configMap("gc-fg2-dep", [owner], { block: false, finalizers: ["example.com/hold"] });
  await client.delete(GVR.configMaps, "gc-fg2-owner", { namespace: NS, propagationPolicy: "Foreground" });
  await gone("gc-fg2-owner");
  await until(async () => (await get("gc-fg2-dep"))?.metadata?.deletionTimestamp, "dependent deleted too");
  await client.patch(GVR.configMaps, "gc-fg2-dep", { metadata: { finalizers: null } }, { namespace: NS });
  await gone("gc-fg2-dep");
});

test("Orphan: dependents lose the owner reference and stay", async () => {
  const owner = await configMap("gc-or-owner");
  const other = await configMap("gc-or-other");
  await configMap("gc-or-dep", [owner, other]);
  await client.delete(GVR.configMaps, "gc-or-owner", { namespace: NS, propagationPolicy: "Orphan" });
  await gone("gc-or-owner");
  const dependent = await get("gc-or-dep");
  assert.deepEqual(
    dependent?.metadata?.ownerReferences?.map((ref) => ref.name),
    ["gc-or-other"],
  );
});

test("a dependent with one owner left keeps living and loses the reference to the gone one", async () => {
  const first = await configMap("gc-two-a");
  const second = await configMap("gc-two-b");
  await configMap("gc-two-dep", [first, second]);
  await client.delete(GVR.configMaps, "gc-two-a", { namespace: NS });
  await until(
    async () => (await get("gc-two-dep"))?.metadata?.ownerReferences?.length === 1,
    "reference dropped",
  );
  assert.equal((await get("gc-two-dep"))?.metadata?.ownerReferences?.[0]?.name, "gc-two-b");
  await client.delete(GVR.configMaps, "gc-two-b", { namespace: NS });
  await gone("gc-two-dep");
});

test("cluster-scoped owners: a CSINode owned by its Node goes with the Node", async () => {
  const owner = await client.create<Node>(GVR.nodes, { metadata: { name: "gc-node" } });
  await client.create<CSINode>(GVR.csiNodes, {
    metadata: {
      name: "gc-node",
      ownerReferences: [{ apiVersion: "v1", kind: "Node", name: "gc-node", uid: owner.metadata.uid! }],
    },
    spec: { drivers: [] },
  });
  await client.delete(GVR.nodes, "gc-node");
  await until(async () => {
    try {
      await client.get(GVR.csiNodes, "gc-node");
      return false;
    } catch (error) {
      return isNotFound(error);
    }
  }, "CSINode gone");
});

test("Orphan requested while the collector was down is finished when it starts again", async () => {
  await loops?.stop();
  loops = undefined;
  const owner = await configMap("gc-down-owner");
  await configMap("gc-down-dep", [owner]);
  await client.delete(GVR.configMaps, "gc-down-owner", { namespace: NS, propagationPolicy: "Orphan" });
  assert.deepEqual((await get("gc-down-owner"))?.metadata?.finalizers, ["orphan"]);
  loops = runLoops(env.client(), { controllers: ["garbage-collector-controller"] });
  await gone("gc-down-owner");
  assert.equal((await get("gc-down-dep"))?.metadata?.ownerReferences, undefined);
});
