// The scheduler's release-gated storage features against the real embedded API server, run as
// `csikit up` runs it: the scheduler loop of `csikit controllers` under the controllers' own
// identity and RBAC (deploy/rbac), given the resolved feature gates of a --kubernetes-version.
// StorageCapacityScoring (beta, on in 1.37; alpha, off in 1.36), VolumeLimitScaling (beta, on in
// 1.37; alpha, off in 1.36) and attach limits that follow CSINode allocatable.count as it changes.
// The test plays the users, the node agent (CSINode) and the PV controller with the admin client.

import { test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import {
  GVR,
  resolveKubeFeatureGates,
  type CSINode,
  type KubernetesMinor,
  type PersistentVolumeClaim,
} from "../../api/index.ts";
import { resolveFeatureGates, type FeatureGates } from "../../migration/index.ts";
import { InformerFactory, type KubeClient } from "../../kube/index.ts";
import { startScheduler as startSchedulerLoop } from "./index.ts";
import { runLoops, startControllersCluster } from "../../../test/harness/controllers.ts";
import { forbidden, describeEvent } from "../../../test/harness/rbac.ts";
import { defer } from "../../../test/harness/cleanup.ts";
import { until } from "../../../test/harness/until.ts";
import {
  DRIVER,
  boundClaim,
  claim,
  claimVolume,
  create,
  csiVolume,
  getPod,
  node,
  pod,
  podEvent,
  scheduledNode,
} from "../../../test/harness/scheduler.ts";

const SELECTED_NODE = "volume.kubernetes.io/selected-node";

/** What `csikit controllers --kubernetes-version=<minor> --feature-gates=<requested>` resolves. */
function gatesOf(minor: KubernetesMinor, requested: Record<string, string> = {}): FeatureGates {
  return Object.freeze({ ...resolveFeatureGates({}), ...resolveKubeFeatureGates(minor, requested) });
}

/**
 * The API server (RBAC on) and the scheduler under the controllers' identity; returns the admin.
 * By default the scheduler runs as a loop of `csikit controllers` (the registry hands it the
 * gates); `retryAfterMs` starts it alone with that pod backoff instead, so a test can show a
 * retry came from an event and not from the backoff.
 */
async function startScheduler(
  t: TestContext,
  featureGates: FeatureGates,
  options: { retryAfterMs?: number } = {},
): Promise<KubeClient> {
  const cluster = await startControllersCluster(t);
  if (options.retryAfterMs === undefined) {
    const loops = runLoops(cluster.controllers, { controllers: ["scheduler"], knobs: { featureGates } });
    defer(t, () => loops.stop());
  } else {
    const informers = new InformerFactory({ client: cluster.controllers, freeze: true });
    const controller = new AbortController();
    const running = startSchedulerLoop(
      {
        client: cluster.controllers,
        informers,
        featureGates,
        podInitialBackoffMs: options.retryAfterMs,
        podMaxBackoffMs: options.retryAfterMs,
      },
      controller.signal,
    );
    const informersRunning = informers.start(controller.signal);
    defer(t, async () => {
      controller.abort();
      await Promise.all([running, informersRunning]);
    });
  }
  defer(t, () => {
    const refused = forbidden(cluster.rbac.audit, "system:kube-controller-manager").map(describeEvent);
    assert.deepEqual(refused, [], "requests the controllers' Role refuses");
  });
  return cluster.admin;
}

async function selectedNode(client: KubeClient, claimName: string): Promise<string | undefined> {
  const current = await client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, claimName, {
    namespace: "default",
  });
  return current.metadata?.annotations?.[SELECTED_NODE];
}

const CLAIMS = 6;

/**
 * Two topologies (zone a: 100Mi free, zone b: 1Gi free) for a driver that tracks capacity, and
 * CLAIMS pods each with a 10Mi WaitForFirstConsumer claim; resolves with each claim's node.
 */
async function placeClaims(client: KubeClient): Promise<string[]> {
  await create(client, GVR.nodes, [node("node-a", { zone: "a" }), node("node-b", { zone: "b" })]);
  await create(client, GVR.csiDrivers, [{ metadata: { name: DRIVER }, spec: { storageCapacity: true } }]);
  await create(client, GVR.storageClasses, [
    { metadata: { name: "cap" }, provisioner: DRIVER, volumeBindingMode: "WaitForFirstConsumer" },
  ]);
  await create(client, GVR.csiStorageCapacities, [
    {
      metadata: { name: "cap-a", namespace: "default" },
      storageClassName: "cap",
      capacity: "100Mi",
      nodeTopology: { matchLabels: { zone: "a" } },
    },
    {
      metadata: { name: "cap-b", namespace: "default" },
      storageClassName: "cap",
      capacity: "1Gi",
      nodeTopology: { matchLabels: { zone: "b" } },
    },
  ]);
  const names = Array.from({ length: CLAIMS }, (_, i) => `data-${i}`);
  for (const name of names) {
    await create(client, GVR.persistentVolumeClaims, [
      claim(name, { storageClassName: "cap", resources: { requests: { storage: "10Mi" } } }),
    ]);
    await create(client, GVR.pods, [pod(`pod-${name}`, { volumes: claimVolume(name) })]);
  }
  return until(async () => {
    const nodes = await Promise.all(names.map((name) => selectedNode(client, name)));
    return nodes.every((n): n is string => n !== undefined) ? nodes : undefined;
  }, "selected-node on every claim");
}

test("StorageCapacityScoring (1.37, on): every claim goes to the topology with the most free capacity", async (t) => {
  const client = await startScheduler(t, gatesOf("1.37"));
  const nodes = await placeClaims(client);
  // Without scoring, spreading alternates a, b, a, … (node-a first by name).
  assert.deepEqual(nodes, Array<string>(CLAIMS).fill("node-b"));
});

test("StorageCapacityScoring (1.36, alpha off): placement only spreads, capacity is a filter", async (t) => {
  const client = await startScheduler(t, gatesOf("1.36"));
  const nodes = await placeClaims(client);
  assert.deepEqual(
    nodes.toSorted(),
    [...Array<string>(CLAIMS / 2).fill("node-a"), ...Array<string>(CLAIMS / 2).fill("node-b")],
    "even spreading over both zones",
  );
});

test("StorageCapacityScoring turned off by --feature-gates at 1.37 spreads too", async (t) => {
  const client = await startScheduler(t, gatesOf("1.37", { StorageCapacityScoring: "false" }));
  const nodes = await placeClaims(client);
  assert.equal(new Set(nodes).size, 2);
});

/**
 * node-a has a CSINode without the driver, node-b none at all, node-c the driver; the CSIDriver
 * asks for preventPodSchedulingIfMissing; c1 and c2 are claims bound to CSI PVs of the driver.
 */
async function driverTopology(client: KubeClient): Promise<void> {
  await create(client, GVR.nodes, [node("node-a"), node("node-b"), node("node-c")]);
  await create<CSINode>(client, GVR.csiNodes, [
    { metadata: { name: "node-a" }, spec: { drivers: [] } },
    { metadata: { name: "node-c" }, spec: { drivers: [{ name: DRIVER, nodeID: "node-c" }] } },
  ]);
  await create(client, GVR.csiDrivers, [
    { metadata: { name: DRIVER }, spec: { preventPodSchedulingIfMissing: true } },
  ]);
  await create(client, GVR.persistentVolumes, [csiVolume("pv-1", "h1"), csiVolume("pv-2", "h2")]);
  await create(client, GVR.persistentVolumeClaims, [boundClaim("c1", "pv-1"), boundClaim("c2", "pv-2")]);
}

const NOT_NODE_C = {
  nodeAffinity: {
    requiredDuringSchedulingIgnoredDuringExecution: {
      nodeSelectorTerms: [
        {
          matchExpressions: [
            { key: "kubernetes.io/hostname", operator: "NotIn" as const, values: ["node-c"] },
          ],
        },
      ],
    },
  },
};

test("VolumeLimitScaling (1.37, on): an opted-in driver missing on a node, or its CSINode missing, keeps the driver's pods off it", async (t) => {
  const client = await startScheduler(t, gatesOf("1.37"), { retryAfterMs: 600_000 });
  await driverTopology(client);
  await create(client, GVR.pods, [
    pod("anywhere", { volumes: claimVolume("c1") }),
    pod("elsewhere", { volumes: claimVolume("c2"), affinity: NOT_NODE_C }),
    // Pods without the driver's volumes are not concerned.
    pod("no-volumes", { affinity: NOT_NODE_C }),
  ]);
  assert.equal(await scheduledNode(client, "anywhere"), "node-c");
  assert.equal(await scheduledNode(client, "no-volumes"), "node-a");
  const expected =
    "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, " +
    `2 ${DRIVER} CSI driver is not installed on the node.`;
  const event = await podEvent(client, "elsewhere", "FailedScheduling", (m) => m === expected);
  assert.equal(event.message, expected);
  assert.equal((await getPod(client, "elsewhere")).spec?.nodeName, undefined);
  // The node agent registers the driver on node-b (its CSINode appears): the pod goes there.
  await create<CSINode>(client, GVR.csiNodes, [
    { metadata: { name: "node-b" }, spec: { drivers: [{ name: DRIVER, nodeID: "node-b" }] } },
  ]);
  assert.equal(await scheduledNode(client, "elsewhere"), "node-b");
});

test("VolumeLimitScaling (1.36, alpha off): the same pod goes to a node without the driver", async (t) => {
  // The API server (1.37) keeps preventPodSchedulingIfMissing; the 1.36 scheduler ignores it.
  const client = await startScheduler(t, gatesOf("1.36"));
  await driverTopology(client);
  await create(client, GVR.pods, [pod("elsewhere", { volumes: claimVolume("c2"), affinity: NOT_NODE_C })]);
  assert.equal(await scheduledNode(client, "elsewhere"), "node-a");
});

test("attach limits follow CSINode allocatable.count updated in place, both ways", async (t) => {
  // Retries far beyond the test: only the CSINode update can let a waiting pod in.
  const client = await startScheduler(t, gatesOf("1.37"), { retryAfterMs: 600_000 });
  await create(client, GVR.nodes, [node("node-a")]);
  await create<CSINode>(client, GVR.csiNodes, [
    {
      metadata: { name: "node-a" },
      spec: { drivers: [{ name: DRIVER, nodeID: "node-a", allocatable: { count: 1 } }] },
    },
  ]);
  await create(client, GVR.persistentVolumes, [
    csiVolume("pv-1", "h1"),
    csiVolume("pv-2", "h2"),
    csiVolume("pv-3", "h3"),
  ]);
  await create(client, GVR.persistentVolumeClaims, [
    boundClaim("c1", "pv-1"),
    boundClaim("c2", "pv-2"),
    boundClaim("c3", "pv-3"),
  ]);
  await create(client, GVR.pods, [pod("first", { volumes: claimVolume("c1") })]);
  assert.equal(await scheduledNode(client, "first"), "node-a");
  await create(client, GVR.pods, [pod("second", { volumes: claimVolume("c2") })]);
  const full = "0/1 nodes are available: 1 node(s) exceed max volume count.";
  await podEvent(client, "second", "FailedScheduling", (m) => m === full);
  // MutableCSINodeAllocatableCount: the node agent raises the count on the same object.
  const setCount = async (count: number): Promise<void> => {
    const current = await client.get<CSINode>(GVR.csiNodes, "node-a");
    await client.update(GVR.csiNodes, {
      ...current,
      spec: { drivers: [{ name: DRIVER, nodeID: "node-a", allocatable: { count } }] },
    });
  };
  await setCount(2);
  assert.equal(await scheduledNode(client, "second"), "node-a");
  // Lowered again (volumes attached outside Kubernetes): the third pod waits.
  await setCount(1);
  await create(client, GVR.pods, [pod("third", { volumes: claimVolume("c3") })]);
  await podEvent(client, "third", "FailedScheduling", (m) => m === full);
  await setCount(3);
  assert.equal(await scheduledNode(client, "third"), "node-a");
});
