// Capacity tracking against the real embedded API server and a scripted CSI driver over real
// gRPC: the objects a two-zone cluster with two classes gets, polling, class and topology
// changes, adoption after a restart, immediate binding, node deployment, early refresh and the
// csistoragecapacities_* gauges.

import assert from "node:assert/strict";
import { test } from "node:test";
import {
  GVR,
  type CSINode,
  type CSIStorageCapacity,
  type Node,
  type PersistentVolume,
} from "../../../api/index.ts";
import { CapacityRefresh } from "./index.ts";
import {
  DRIVER,
  GiB,
  NAMESPACE,
  ZONE,
  addClass,
  addNode,
  capacityEnv,
  listCapacities,
  runCapacity,
  setZone,
  summary,
  untilObjects,
} from "../../../../test/harness/capacity.ts";
import { until } from "../../../../test/harness/until.ts";

function metricValue(text: string, name: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

test("two zones × two WaitForFirstConsumer classes: one object each, with labels, selector, capacity and maximum size", async (t) => {
  const env = await capacityEnv(t);
  await addNode(env.client, "n1", "a");
  await addNode(env.client, "n2", "b");
  await addNode(env.client, "n3", "a");
  await addNode(env.client, "other", "z", { driver: false });
  await addClass(env.client, "fast", "fast");
  await addClass(env.client, "slow", "slow");
  await addClass(env.client, "instant", "fast", "Immediate");
  await addClass(env.client, "foreign", "fast", "WaitForFirstConsumer", "other.csikit.test");
  env.table.set("fast/a", { available: 10n * GiB, maximum: 2n * GiB });
  env.table.set("fast/b", { available: 3n * GiB });
  env.table.set("slow/a", { available: 100n * GiB });
  env.table.set("slow/b", { available: 0n });
  const running = runCapacity(t, env);

  const objects = await untilObjects(
    env.client,
    ["fast a=10Gi/2Gi", "fast b=3Gi", "slow a=100Gi", "slow b=0"],
    "one object per zone and WaitForFirstConsumer class of the driver",
  );
  for (const object of objects) {
    assert.equal(object.metadata?.namespace, NAMESPACE);
    assert.match(object.metadata?.name ?? "", /^csisc-[a-z0-9]{5}$/);
    assert.deepEqual(object.metadata?.labels, {
      "csi.storage.k8s.io/drivername": DRIVER,
      "csi.storage.k8s.io/managed-by": "external-provisioner",
    });
    assert.deepEqual(Object.keys(object.nodeTopology ?? {}), ["matchLabels"]);
    assert.deepEqual(Object.keys(object.nodeTopology?.matchLabels ?? {}), [ZONE]);
    assert.equal(object.metadata?.ownerReferences, undefined, "no owner at level -1");
  }
  // What the driver was asked: class parameters, the segment, one mount capability (UNKNOWN).
  const fastA = env.requests.find(
    (r) => r.parameters["kind"] === "fast" && r.accessibleTopology?.segments[ZONE] === "a",
  );
  assert.ok(fastA);
  assert.deepEqual(fastA.parameters, { kind: "fast" });
  assert.deepEqual(fastA.accessibleTopology?.segments, { [ZONE]: "a" });
  assert.equal(fastA.volumeCapabilities.length, 1);
  assert.equal(fastA.volumeCapabilities[0]?.accessType, "mount");
  assert.equal(fastA.volumeCapabilities[0]?.accessMode?.mode, "UNKNOWN");
  assert.ok(
    env.requests.every((r) => r.accessibleTopology?.segments[ZONE] !== "z"),
    "a node without the driver is no segment",
  );

  const metrics = await running.registry.metrics();
  assert.equal(metricValue(metrics, "csistoragecapacities_desired_goal"), 4);
  assert.equal(metricValue(metrics, "csistoragecapacities_desired_current"), 4);
  assert.equal(metricValue(metrics, "csistoragecapacities_obsolete"), 0);
  assert.match(
    metrics,
    /# HELP csistoragecapacities_desired_goal \[ALPHA\] Number of CSIStorageCapacity objects/,
  );
  assert.match(metrics, /workqueue_adds_total\{name="csistoragecapacity"\} \d+/);
  assert.match(metrics, /workqueue_adds_total\{name="csitopology"\} \d+/);
});

test("GetCapacity failures are retried with backoff; other items go on", async (t) => {
  const env = await capacityEnv(t);
  await addNode(env.client, "n1", "a");
  await addNode(env.client, "n2", "b");
  await addClass(env.client, "fast", "fast");
  env.table.set("fast/a", { available: 1n * GiB });
  env.table.set("fast/b", { available: 2n * GiB });
  env.failures.set("fast/b", 2);
  const running = runCapacity(t, env, { retryIntervalStartMs: 1000, retryIntervalMaxMs: 60_000 });
  await untilObjects(env.client, ["fast a=1Gi"], "the healthy item");
  const asked = (): number => env.requests.filter((r) => r.accessibleTopology?.segments[ZONE] === "b").length;
  await until(() => asked() === 1 && running.clock.pendingTimers >= 2, "first failure, retry scheduled");
  await running.clock.advance(999);
  assert.equal(asked(), 1, "no retry before the backoff");
  await running.clock.advance(1);
  await until(() => asked() === 2 && running.clock.pendingTimers >= 2, "second failure, retry scheduled");
  await running.clock.advance(1999);
  assert.equal(asked(), 2, "the backoff doubled");
  await running.clock.advance(1);
  await untilObjects(env.client, ["fast a=1Gi", "fast b=2Gi"], "the item after the driver recovered");
});

test("poll: a changed capacity is written at the next poll interval, an unchanged one is not", async (t) => {
  const env = await capacityEnv(t);
  await addNode(env.client, "n1", "a");
  await addNode(env.client, "n2", "b");
  await addClass(env.client, "fast", "fast");
  env.table.set("fast/a", { available: 10n * GiB });
  env.table.set("fast/b", { available: 5n * GiB });
  const running = runCapacity(t, env, { pollIntervalMs: 60_000 });
  const before = await untilObjects(env.client, ["fast a=10Gi", "fast b=5Gi"], "first objects");
  const versionB = before.find((o) => o.nodeTopology?.matchLabels?.[ZONE] === "b")?.metadata?.resourceVersion;
  const calls = env.requests.length;

  env.table.set("fast/a", { available: 7n * GiB, maximum: 1n * GiB });
  await running.clock.advance(59_000);
  assert.equal(env.requests.length, calls, "no poll before the interval");
  await running.clock.advance(1_000);
  const after = await untilObjects(env.client, ["fast a=7Gi/1Gi", "fast b=5Gi"], "the polled capacity");
  await until(() => env.requests.length >= calls + 2, "both items polled");
  assert.equal(
    after.find((o) => o.nodeTopology?.matchLabels?.[ZONE] === "b")?.metadata?.resourceVersion,
    versionB,
    "an unchanged object is not rewritten",
  );
  assert.deepEqual(
    after.map((o) => o.metadata?.uid).sort(),
    before.map((o) => o.metadata?.uid).sort(),
    "updated in place",
  );
});

test("class deleted → its objects removed; class added → objects created", async (t) => {
  const env = await capacityEnv(t);
  await addNode(env.client, "n1", "a");
  await addNode(env.client, "n2", "b");
  await addClass(env.client, "fast", "fast");
  await addClass(env.client, "slow", "slow");
  env.table.set("fast/a", { available: 1n * GiB });
  env.table.set("fast/b", { available: 2n * GiB });
  env.table.set("slow/a", { available: 3n * GiB });
  env.table.set("slow/b", { available: 4n * GiB });
  runCapacity(t, env, { workers: 3 });
  await untilObjects(env.client, ["fast a=1Gi", "fast b=2Gi", "slow a=3Gi", "slow b=4Gi"], "first objects");
  await env.client.delete(GVR.storageClasses, "slow");
  await untilObjects(env.client, ["fast a=1Gi", "fast b=2Gi"], "the deleted class's objects removed");
  await addClass(env.client, "slow2", "slow");
  await untilObjects(
    env.client,
    ["fast a=1Gi", "fast b=2Gi", "slow2 a=3Gi", "slow2 b=4Gi"],
    "a new class's objects created",
  );
});

test("topology: a node moving zone, a new zone and a node leaving change the segments", async (t) => {
  const env = await capacityEnv(t);
  await addNode(env.client, "n1", "a");
  await addNode(env.client, "n2", "b");
  await addClass(env.client, "fast", "fast");
  for (const zone of ["a", "b", "c", "d"]) env.table.set(`fast/${zone}`, { available: 1n * GiB });
  runCapacity(t, env);
  const first = await untilObjects(env.client, ["fast a=1Gi", "fast b=1Gi"], "two zones");
  const uidA = first.find((o) => o.nodeTopology?.matchLabels?.[ZONE] === "a")?.metadata?.uid;

  await setZone(env.client, "n2", "c");
  const moved = await untilObjects(env.client, ["fast a=1Gi", "fast c=1Gi"], "zone b gone, zone c new");
  assert.equal(
    moved.find((o) => o.nodeTopology?.matchLabels?.[ZONE] === "a")?.metadata?.uid,
    uidA,
    "the unaffected segment keeps its object",
  );

  await addNode(env.client, "n3", "d");
  await untilObjects(env.client, ["fast a=1Gi", "fast c=1Gi", "fast d=1Gi"], "a node in a new zone");
  await env.client.delete(GVR.csiNodes, "n3");
  await untilObjects(env.client, ["fast a=1Gi", "fast c=1Gi"], "the driver left the node");
  await env.client.delete(GVR.nodes, "n2");
  await untilObjects(env.client, ["fast a=1Gi"], "a deleted node is no segment");

  // kubelet wrote the CSINode with the key before the Node got its label: the node counts
  // once the label arrives.
  await env.client.create<Node>(GVR.nodes, { metadata: { name: "late" } });
  await env.client.create<CSINode>(GVR.csiNodes, {
    metadata: { name: "late" },
    spec: { drivers: [{ name: DRIVER, nodeID: "late-id", topologyKeys: [ZONE] }] },
  });
  // A node added after it: once its zone shows, the caches hold "late" too (each watch
  // delivers in order), so the set computed then has judged "late" already.
  await addNode(env.client, "n4", "d");
  await untilObjects(env.client, ["fast a=1Gi", "fast d=1Gi"], "no segment for the label-less node");
  await setZone(env.client, "late", "b");
  await untilObjects(env.client, ["fast a=1Gi", "fast b=1Gi", "fast d=1Gi"], "the label arrived");
});

test("restart: existing objects are adopted, not duplicated; stale ones deleted; foreign ones untouched", async (t) => {
  const env = await capacityEnv(t);
  await addNode(env.client, "n1", "a");
  await addNode(env.client, "n2", "b");
  await addClass(env.client, "fast", "fast");
  env.table.set("fast/a", { available: 1n * GiB });
  env.table.set("fast/b", { available: 2n * GiB });
  const first = runCapacity(t, env);
  const before = await untilObjects(env.client, ["fast a=1Gi", "fast b=2Gi"], "first objects");
  await first.stop();

  // While no instance runs: a stale object of ours (class gone), and objects of someone else.
  const stale = await env.client.create<CSIStorageCapacity>(GVR.csiStorageCapacities, {
    metadata: {
      generateName: "csisc-",
      namespace: NAMESPACE,
      labels: {
        "csi.storage.k8s.io/drivername": DRIVER,
        "csi.storage.k8s.io/managed-by": "external-provisioner",
      },
    },
    storageClassName: "gone",
    nodeTopology: { matchLabels: { [ZONE]: "a" } },
    capacity: "1Gi",
  });
  const foreign = await env.client.create<CSIStorageCapacity>(GVR.csiStorageCapacities, {
    metadata: {
      generateName: "csisc-",
      namespace: NAMESPACE,
      labels: {
        "csi.storage.k8s.io/drivername": DRIVER,
        "csi.storage.k8s.io/managed-by": "external-provisioner-n1",
      },
    },
    storageClassName: "fast",
    nodeTopology: { matchLabels: { [ZONE]: "a" } },
    capacity: "9Gi",
  });
  env.table.set("fast/a", { available: 5n * GiB });
  const calls = env.requests.length;

  runCapacity(t, env);
  await until(() => env.requests.length >= calls + 2, "the restarted instance polled both items");
  const after = await until(async () => {
    const objects = await listCapacities(env.client);
    return objects.some((o) => o.metadata?.uid === stale.metadata?.uid) ||
      !objects.some((o) => o.capacity === "5Gi")
      ? undefined
      : objects;
  }, "stale object deleted and capacity updated");
  const ours = after.filter((o) => o.metadata?.uid !== foreign.metadata?.uid);
  assert.deepEqual(summary(ours), ["fast a=5Gi", "fast b=2Gi"]);
  assert.deepEqual(
    ours.map((o) => o.metadata?.uid).sort(),
    before.map((o) => o.metadata?.uid).sort(),
    "the same objects, adopted",
  );
  assert.ok(
    after.some((o) => o.metadata?.uid === foreign.metadata?.uid && o.capacity === "9Gi"),
    "another instance's object is left alone",
  );
});

test("an object someone deletes is re-created; duplicates are removed", async (t) => {
  const env = await capacityEnv(t);
  await addNode(env.client, "n1", "a");
  await addClass(env.client, "fast", "fast");
  env.table.set("fast/a", { available: 1n * GiB });
  runCapacity(t, env);
  const [first] = await untilObjects(env.client, ["fast a=1Gi"], "first object");
  await env.client.delete(GVR.csiStorageCapacities, first?.metadata?.name ?? "", { namespace: NAMESPACE });
  const [second] = await until(async () => {
    const objects = await listCapacities(env.client);
    return objects.length === 1 && objects[0]?.metadata?.uid !== first?.metadata?.uid ? objects : undefined;
  }, "re-created");
  await env.client.create<CSIStorageCapacity>(GVR.csiStorageCapacities, {
    metadata: {
      generateName: "csisc-",
      namespace: NAMESPACE,
      labels: {
        "csi.storage.k8s.io/drivername": DRIVER,
        "csi.storage.k8s.io/managed-by": "external-provisioner",
      },
    },
    storageClassName: "fast",
    nodeTopology: { matchLabels: { [ZONE]: "a" } },
    capacity: "1Gi",
  });
  await until(async () => {
    const objects = await listCapacities(env.client);
    return objects.length === 1 && objects[0]?.metadata?.uid === second?.metadata?.uid;
  }, "the duplicate removed, the known object kept");
});

test("Immediate classes only with --capacity-for-immediate-binding", async (t) => {
  const env = await capacityEnv(t);
  await addNode(env.client, "n1", "a");
  await addClass(env.client, "late", "fast");
  await addClass(env.client, "instant", "slow", "Immediate");
  env.table.set("fast/a", { available: 1n * GiB });
  env.table.set("slow/a", { available: 2n * GiB });
  const without = runCapacity(t, env);
  await untilObjects(env.client, ["late a=1Gi"], "WaitForFirstConsumer only");
  await without.stop();
  runCapacity(t, env, { immediateBinding: true });
  await untilObjects(env.client, ["late a=1Gi", "instant a=2Gi"], "Immediate too with the flag");
});

test("node deployment: managed-by external-provisioner-<node>, the local segment only", async (t) => {
  const env = await capacityEnv(t);
  // Nodes elsewhere do not matter in node mode: only the local driver's topology counts.
  await addNode(env.client, "n1", "a");
  await addNode(env.client, "n2", "b");
  await addClass(env.client, "fast", "fast");
  env.table.set("fast/b", { available: 4n * GiB });
  const central = await env.client.create<CSIStorageCapacity>(GVR.csiStorageCapacities, {
    metadata: {
      generateName: "csisc-",
      namespace: NAMESPACE,
      labels: {
        "csi.storage.k8s.io/drivername": DRIVER,
        "csi.storage.k8s.io/managed-by": "external-provisioner",
      },
    },
    storageClassName: "fast",
    nodeTopology: { matchLabels: { [ZONE]: "b" } },
    capacity: "1Gi",
  });
  runCapacity(t, env, { nodeDeployment: { nodeName: "n2", accessibleTopology: { [ZONE]: "b" } } });
  const objects = await until(async () => {
    const all = await listCapacities(env.client);
    return all.length === 2 ? all : undefined;
  }, "the node instance's object");
  const mine = objects.find((o) => o.metadata?.uid !== central.metadata?.uid);
  assert.ok(mine);
  assert.equal(mine.metadata?.labels?.["csi.storage.k8s.io/managed-by"], "external-provisioner-n2");
  assert.deepEqual(mine.nodeTopology, { matchLabels: { [ZONE]: "b" } });
  assert.equal(mine.capacity, "4Gi");
  assert.ok(
    objects.some((o) => o.metadata?.uid === central.metadata?.uid),
    "the central instance's object stays",
  );
  assert.ok(
    env.requests.every((r) => r.accessibleTopology?.segments[ZONE] === "b"),
    "only the local segment asked",
  );
});

test("early refresh: a provisioned or deleted volume re-polls its segment before the poll interval", async (t) => {
  const env = await capacityEnv(t);
  await addNode(env.client, "n1", "a");
  await addNode(env.client, "n2", "b");
  await addClass(env.client, "fast", "fast");
  env.table.set("fast/a", { available: 10n * GiB });
  env.table.set("fast/b", { available: 10n * GiB });
  const refresh = new CapacityRefresh();
  runCapacity(t, env, { refresh });
  await untilObjects(env.client, ["fast a=10Gi", "fast b=10Gi"], "first objects");
  const pv: PersistentVolume = {
    metadata: { name: "pv-1" },
    spec: {
      nodeAffinity: {
        required: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: ZONE, operator: "In", values: ["a"] }] }],
        },
      },
    },
  };
  env.table.set("fast/a", { available: 9n * GiB });
  env.table.set("fast/b", { available: 1n * GiB });
  refresh.provisioned(pv, "fast");
  await untilObjects(env.client, ["fast a=9Gi", "fast b=10Gi"], "only zone a refreshed");
  env.table.set("fast/a", { available: 10n * GiB });
  refresh.deleted(pv);
  await untilObjects(env.client, ["fast a=10Gi", "fast b=10Gi"], "zone a refreshed after the delete");
  refresh.provisionFailed("fast");
  await untilObjects(env.client, ["fast a=10Gi", "fast b=1Gi"], "a failure refreshes the whole class");
});
