// The scheduler against the real embedded API server: every placement rule, the failure Event
// and condition, event-driven retries, WaitForFirstConsumer (static and dynamic, rescheduling
// after selected-node removal), storage capacity and attach limits. The test plays the PV
// controller and the provisioner by writing objects.

import { test } from "node:test";
import assert from "node:assert/strict";
import { GVR, type PersistentVolumeClaim, type PersistentVolume } from "../../api/index.ts";
import {
  DRIVER,
  bindClaim,
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
  startCluster,
} from "../../../test/harness/scheduler.ts";
import { until } from "../../../test/harness/until.ts";

const SELECTED_NODE = "volume.kubernetes.io/selected-node";

test("node selector, required affinity (In, NotIn, Gt, matchFields) and even spreading", async (t) => {
  const cluster = await startCluster();
  t.after(() => cluster.stop());
  const { client } = cluster;
  await create(client, GVR.nodes, [
    node("node-a", { zone: "a", cores: "2" }),
    node("node-b", { zone: "b", cores: "8" }),
    node("node-c", { zone: "c", cores: "4" }),
  ]);
  const affinity = (terms: unknown[]) => ({
    nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } },
  });
  await create(client, GVR.pods, [
    pod("by-selector", { nodeSelector: { zone: "c" } }),
    pod("by-notin", {
      affinity: affinity([{ matchExpressions: [{ key: "zone", operator: "NotIn", values: ["a", "c"] }] }]),
    }),
    pod("by-gt", {
      affinity: affinity([
        {
          matchExpressions: [
            { key: "cores", operator: "Gt", values: ["3"] },
            { key: "cores", operator: "Lt", values: ["5"] },
          ],
        },
      ]),
    }),
    pod("by-field", {
      affinity: affinity([{ matchFields: [{ key: "metadata.name", operator: "In", values: ["node-a"] }] }]),
    }),
  ]);
  assert.equal(await scheduledNode(client, "by-selector"), "node-c");
  assert.equal(await scheduledNode(client, "by-notin"), "node-b");
  assert.equal(await scheduledNode(client, "by-gt"), "node-c");
  assert.equal(await scheduledNode(client, "by-field"), "node-a");
  const scheduled = await podEvent(client, "by-field", "Scheduled");
  assert.equal(scheduled.message, "Successfully assigned default/by-field to node-a");
  assert.equal(scheduled.source?.component, "default-scheduler");
  // Loads are now a=1, b=1, c=2: free pods go to the least loaded, ties by name.
  await create(client, GVR.pods, [pod("free-1")]);
  assert.equal(await scheduledNode(client, "free-1"), "node-a");
  await create(client, GVR.pods, [pod("free-2")]);
  assert.equal(await scheduledNode(client, "free-2"), "node-b");
  await create(client, GVR.pods, [pod("free-3")]);
  assert.equal(await scheduledNode(client, "free-3"), "node-a");
  // Another scheduler's pod is left alone.
  await create(client, GVR.pods, [pod("other", { schedulerName: "other-scheduler" }), pod("mine")]);
  await scheduledNode(client, "mine");
  assert.equal((await getPod(client, "other")).spec?.nodeName, undefined);
});

test("unschedulable: FailedScheduling event and PodScheduled=False, retried when a node changes", async (t) => {
  // Backoff far beyond the test: only the node change can make the retry happen.
  const cluster = await startCluster({ podInitialBackoffMs: 600_000, podMaxBackoffMs: 600_000 });
  t.after(() => cluster.stop());
  const { client } = cluster;
  await create(client, GVR.nodes, [
    node("node-a", { zone: "a" }, { unschedulable: true }),
    node("node-b", { zone: "b" }, { taints: [{ key: "dedicated", value: "db", effect: "NoSchedule" }] }),
    node("node-c", { zone: "c" }),
  ]);
  await create(client, GVR.pods, [
    pod("picky", { nodeSelector: { zone: "b" }, tolerations: [{ key: "other", operator: "Exists" }] }),
    pod("nowhere", { nodeSelector: { zone: "z" } }),
  ]);
  const expected =
    "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, " +
    "1 node(s) had untolerated taint {dedicated: db}, 1 node(s) were unschedulable.";
  const event = await podEvent(client, "picky", "FailedScheduling");
  assert.equal(event.message, expected);
  assert.equal(event.type, "Warning");
  const condition = await until(async () => {
    const found = (await getPod(client, "picky")).status?.conditions?.find((c) => c.type === "PodScheduled");
    return found?.status === "False" ? found : undefined;
  }, "PodScheduled=False");
  assert.equal(condition.reason, "Unschedulable");
  assert.equal(condition.message, expected);
  // Removing the taint makes node-b fit: the node update triggers the retry.
  const nodeB = await client.get<ReturnType<typeof node>>(GVR.nodes, "node-b");
  await client.update(GVR.nodes, { ...nodeB, spec: { ...nodeB.spec, taints: [] } });
  assert.equal(await scheduledNode(client, "picky"), "node-b");
  const after = (await getPod(client, "picky")).status?.conditions?.find((c) => c.type === "PodScheduled");
  assert.equal(after?.status, "True", "the binding turns the condition True");
  assert.equal((await getPod(client, "nowhere")).spec?.nodeName, undefined);
  // A toleration of the taint and of unschedulable lets a pod through too.
  await create(client, GVR.pods, [
    pod("tolerant", {
      nodeSelector: { zone: "a" },
      tolerations: [{ key: "node.kubernetes.io/unschedulable", operator: "Exists", effect: "NoSchedule" }],
    }),
  ]);
  assert.equal(await scheduledNode(client, "tolerant"), "node-a");
});

test("bound PV node affinity, and unbound immediate claims make the pod wait", async (t) => {
  const cluster = await startCluster({ podInitialBackoffMs: 600_000, podMaxBackoffMs: 600_000 });
  t.after(() => cluster.stop());
  const { client } = cluster;
  await create(client, GVR.nodes, [node("node-a", { zone: "a" }), node("node-b", { zone: "b" })]);
  const zoneB = {
    required: {
      nodeSelectorTerms: [{ matchExpressions: [{ key: "zone", operator: "In" as const, values: ["b"] }] }],
    },
  };
  await create(client, GVR.persistentVolumes, [
    csiVolume("pv-b", "vol-b", { nodeAffinity: zoneB }),
    csiVolume("pv-late", "vol-late", { nodeAffinity: zoneB }),
  ]);
  await create(client, GVR.persistentVolumeClaims, [boundClaim("data-b", "pv-b"), claim("late")]);
  await create(client, GVR.pods, [
    pod("uses-b", { volumes: claimVolume("data-b") }),
    pod("waits", { volumes: claimVolume("late") }),
  ]);
  assert.equal(await scheduledNode(client, "uses-b"), "node-b");
  const unbound = "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims.";
  const event = await podEvent(client, "waits", "FailedScheduling", (message) => message === unbound);
  assert.equal(event.message, unbound);
  // Pod conflicting with its PV's affinity.
  await create(client, GVR.persistentVolumeClaims, [boundClaim("data-b2", "pv-late")]);
  await create(client, GVR.pods, [
    pod("conflict", { volumes: claimVolume("data-b2"), nodeSelector: { zone: "a" } }),
  ]);
  // The scheduler may see the pod before its claim ("persistentvolumeclaim … not found"); the
  // claim's arrival re-queues the pod, so wait for the verdict that names the conflict.
  const expected =
    "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had volume node affinity conflict.";
  const conflict = await podEvent(client, "conflict", "FailedScheduling", (message) => message === expected);
  assert.equal(conflict.message, expected);
  // The claim binding (the PV controller's job) lets the waiting pod go, event driven.
  await create(client, GVR.persistentVolumes, [csiVolume("pv-free", "vol-free")]);
  await bindClaim(client, "late", "pv-free");
  await scheduledNode(client, "waits");
});

test("WaitForFirstConsumer: allowedTopologies, selected-node, wait for binding, re-pick after reset", async (t) => {
  const cluster = await startCluster({ podInitialBackoffMs: 50, podMaxBackoffMs: 200 });
  t.after(() => cluster.stop());
  const { client } = cluster;
  await create(client, GVR.nodes, [
    node("node-a", { zone: "a" }),
    node("node-b", { zone: "b" }),
    node("node-c", { zone: "c" }),
  ]);
  await create(client, GVR.storageClasses, [
    {
      metadata: { name: "wffc" },
      provisioner: DRIVER,
      volumeBindingMode: "WaitForFirstConsumer",
      allowedTopologies: [{ matchLabelExpressions: [{ key: "zone", values: ["b", "c"] }] }],
    },
  ]);
  await create(client, GVR.persistentVolumeClaims, [claim("topo", { storageClassName: "wffc" })]);
  await create(client, GVR.pods, [pod("topo-pod", { volumes: claimVolume("topo") })]);
  const selected = await until(async () => {
    const current = await client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "topo", {
      namespace: "default",
    });
    return current.metadata?.annotations?.[SELECTED_NODE];
  }, "selected-node on the claim");
  assert.equal(selected, "node-b", "zone a is not allowed; b is first by name");
  // A pod scheduled after it (one worker, in order) proves the scheduler is past topo-pod's
  // decision: topo-pod waits for its claim, without any failure.
  await create(client, GVR.pods, [pod("marker")]);
  assert.equal(await scheduledNode(client, "marker"), "node-a");
  const waiting = await getPod(client, "topo-pod");
  assert.equal(waiting.spec?.nodeName, undefined, "not bound before the claim is");
  assert.equal(
    waiting.status?.conditions?.find((c) => c.type === "PodScheduled"),
    undefined,
  );

  // The provisioner fails on node-b and removes the annotation; node-b is now tainted, so the
  // scheduler picks again: node-c.
  const nodeB = await client.get<ReturnType<typeof node>>(GVR.nodes, "node-b");
  await client.update(GVR.nodes, { ...nodeB, spec: { taints: [{ key: "full", effect: "NoSchedule" }] } });
  await client.patch(
    GVR.persistentVolumeClaims,
    "topo",
    { metadata: { annotations: { [SELECTED_NODE]: null } } },
    { namespace: "default" },
  );
  await podEvent(client, "topo-pod", "FailedScheduling", (m) =>
    m.includes('selectedNode annotation reset for PVC "topo"'),
  );
  const reselected = await until(async () => {
    const current = await client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "topo", {
      namespace: "default",
    });
    return current.metadata?.annotations?.[SELECTED_NODE];
  }, "a new selected-node");
  assert.equal(reselected, "node-c");
  // The provisioner succeeds: a PV with node-c topology, bound by the PV controller.
  await create(client, GVR.persistentVolumes, [
    csiVolume("pvc-topo", "vol-topo", {
      storageClassName: "wffc",
      nodeAffinity: {
        required: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: "zone", operator: "In", values: ["c"] }] }],
        },
      },
    }),
  ]);
  await bindClaim(client, "topo", "pvc-topo");
  assert.equal(await scheduledNode(client, "topo-pod"), "node-c");
});

test("WaitForFirstConsumer with static PVs: the matching PV's node affinity decides, claimRef set", async (t) => {
  const cluster = await startCluster({ podInitialBackoffMs: 600_000, podMaxBackoffMs: 600_000 });
  t.after(() => cluster.stop());
  const { client } = cluster;
  await create(client, GVR.nodes, [node("node-a"), node("node-b")]);
  await create(client, GVR.storageClasses, [
    {
      metadata: { name: "local" },
      provisioner: "kubernetes.io/no-provisioner",
      volumeBindingMode: "WaitForFirstConsumer",
    },
  ]);
  const onNode = (name: string) => ({
    required: {
      nodeSelectorTerms: [
        { matchExpressions: [{ key: "kubernetes.io/hostname", operator: "In" as const, values: [name] }] },
      ],
    },
  });
  const available = async (volume: PersistentVolume): Promise<void> => {
    const created = await client.create(GVR.persistentVolumes, volume);
    await client.updateStatus(GVR.persistentVolumes, { ...created, status: { phase: "Available" } });
  };
  // The 50Mi PV on node-a is too big a fit compared to... it is the only one big enough.
  await available(
    csiVolume("local-a", "la", {
      storageClassName: "local",
      capacity: { storage: "50Mi" },
      nodeAffinity: onNode("node-a"),
    }),
  );
  await available(
    csiVolume("local-b", "lb", {
      storageClassName: "local",
      capacity: { storage: "1Mi" },
      nodeAffinity: onNode("node-b"),
    }),
  );
  await create(client, GVR.persistentVolumeClaims, [
    claim("local-claim", { storageClassName: "local", resources: { requests: { storage: "20Mi" } } }),
    claim("too-big", { storageClassName: "local", resources: { requests: { storage: "1Gi" } } }),
  ]);
  await create(client, GVR.pods, [
    pod("local-pod", { volumes: claimVolume("local-claim") }),
    pod("big-pod", { volumes: claimVolume("too-big") }),
  ]);
  const claimRef = await until(
    async () => (await client.get<PersistentVolume>(GVR.persistentVolumes, "local-a")).spec?.claimRef,
    "claimRef on local-a",
  );
  assert.equal(claimRef.name, "local-claim");
  assert.equal(claimRef.namespace, "default");
  const boundBy = (await client.get<PersistentVolume>(GVR.persistentVolumes, "local-a")).metadata
    ?.annotations;
  assert.equal(boundBy?.["pv.kubernetes.io/bound-by-controller"], "yes");
  await bindClaim(client, "local-claim", "local-a");
  assert.equal(await scheduledNode(client, "local-pod"), "node-a");
  const event = await podEvent(client, "big-pod", "FailedScheduling");
  assert.equal(
    event.message,
    "0/2 nodes are available: 2 node(s) didn't find available persistent volumes to bind.",
  );
});

test("CSIStorageCapacity: capacity and maximumVolumeSize per topology and class", async (t) => {
  const cluster = await startCluster({ podInitialBackoffMs: 600_000, podMaxBackoffMs: 600_000 });
  t.after(() => cluster.stop());
  const { client } = cluster;
  await create(client, GVR.nodes, [node("node-a", { zone: "a" }), node("node-b", { zone: "b" })]);
  await create(client, GVR.csiDrivers, [{ metadata: { name: DRIVER }, spec: { storageCapacity: true } }]);
  await create(client, GVR.storageClasses, [
    { metadata: { name: "cap" }, provisioner: DRIVER, volumeBindingMode: "WaitForFirstConsumer" },
  ]);
  await create(client, GVR.csiStorageCapacities, [
    {
      metadata: { name: "cap-a", namespace: "default" },
      storageClassName: "cap",
      capacity: "1Mi",
      nodeTopology: { matchLabels: { zone: "a" } },
    },
    // Plenty of capacity but a small largest volume: maximumVolumeSize wins.
    {
      metadata: { name: "cap-b", namespace: "default" },
      storageClassName: "cap",
      capacity: "1Gi",
      maximumVolumeSize: "100Mi",
      nodeTopology: { matchLabels: { zone: "b" } },
    },
  ]);
  await create(client, GVR.persistentVolumeClaims, [
    claim("fits-b", { storageClassName: "cap", resources: { requests: { storage: "10Mi" } } }),
    claim("fits-none", { storageClassName: "cap", resources: { requests: { storage: "200Mi" } } }),
  ]);
  await create(client, GVR.pods, [
    pod("cap-pod", { volumes: claimVolume("fits-b") }),
    pod("cap-none", { volumes: claimVolume("fits-none") }),
  ]);
  const selected = await until(async () => {
    const current = await client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "fits-b", {
      namespace: "default",
    });
    return current.metadata?.annotations?.[SELECTED_NODE];
  }, "selected-node");
  assert.equal(selected, "node-b");
  const event = await podEvent(client, "cap-none", "FailedScheduling");
  assert.equal(event.message, "0/2 nodes are available: 2 node(s) did not have enough free storage.");
  // New capacity reported for zone a: the waiting pod's claim gets node-a, event driven.
  await create(client, GVR.csiStorageCapacities, [
    {
      metadata: { name: "cap-a2", namespace: "default" },
      storageClassName: "cap",
      capacity: "1Gi",
      nodeTopology: { matchLabels: { zone: "a" } },
    },
  ]);
  const later = await until(async () => {
    const current = await client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "fits-none", {
      namespace: "default",
    });
    return current.metadata?.annotations?.[SELECTED_NODE];
  }, "selected-node after new capacity");
  assert.equal(later, "node-a");
});

test("attach limits: CSINode allocatable count caps unique CSI volumes per node", async (t) => {
  const cluster = await startCluster({ podInitialBackoffMs: 600_000, podMaxBackoffMs: 600_000 });
  t.after(() => cluster.stop());
  const { client } = cluster;
  await create(client, GVR.nodes, [node("node-a")]);
  await create(client, GVR.csiNodes, [
    {
      metadata: { name: "node-a" },
      spec: { drivers: [{ name: DRIVER, nodeID: "node-a", allocatable: { count: 1 } }] },
    },
  ]);
  await create(client, GVR.persistentVolumes, [csiVolume("pv-1", "h1"), csiVolume("pv-2", "h2")]);
  await create(client, GVR.persistentVolumeClaims, [boundClaim("c1", "pv-1"), boundClaim("c2", "pv-2")]);
  await create(client, GVR.pods, [pod("first", { volumes: claimVolume("c1") })]);
  await scheduledNode(client, "first");
  await create(client, GVR.pods, [
    pod("second", { volumes: claimVolume("c2") }),
    pod("shares", { volumes: claimVolume("c1") }),
  ]);
  // The same volume counts once.
  assert.equal(await scheduledNode(client, "shares"), "node-a");
  const event = await podEvent(client, "second", "FailedScheduling");
  assert.equal(event.message, "0/1 nodes are available: 1 node(s) exceed max volume count.");
  // A new limit (the node agent re-creating its CSINode) lets it in, event driven.
  await client.delete(GVR.csiNodes, "node-a");
  await create(client, GVR.csiNodes, [
    {
      metadata: { name: "node-a" },
      spec: { drivers: [{ name: DRIVER, nodeID: "node-a", allocatable: { count: 2 } }] },
    },
  ]);
  assert.equal(await scheduledNode(client, "second"), "node-a");
});

test("after a restart: a claim's selected-node pins its pod, which is bound once the claim is", async (t) => {
  const cluster = await startCluster();
  t.after(() => cluster.stop());
  const { client } = cluster;
  await create(client, GVR.nodes, [node("node-a"), node("node-b")]);
  await create(client, GVR.storageClasses, [
    { metadata: { name: "wffc" }, provisioner: DRIVER, volumeBindingMode: "WaitForFirstConsumer" },
  ]);
  await create(client, GVR.persistentVolumeClaims, [claim("pinned", { storageClassName: "wffc" })]);
  await create(client, GVR.pods, [pod("pinned-pod", { volumes: claimVolume("pinned") })]);
  const selectedNode = async (): Promise<string | undefined> =>
    (await client.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "pinned", { namespace: "default" }))
      .metadata?.annotations?.[SELECTED_NODE];
  assert.equal(await until(selectedNode, "selected-node"), "node-a");
  // Restarted mid-operation; meanwhile node-a got busier, so a fresh pick would be node-b.
  await cluster.restartScheduler();
  await create(client, GVR.pods, [
    pod("busy-1", { nodeName: "node-a" }),
    pod("busy-2", { nodeName: "node-a" }),
  ]);
  await create(client, GVR.pods, [pod("marker")]);
  assert.equal(await scheduledNode(client, "marker"), "node-b");
  assert.equal(await selectedNode(), "node-a", "the selection survives the restart");
  assert.equal((await getPod(client, "pinned-pod")).spec?.nodeName, undefined);
  await create(client, GVR.persistentVolumes, [
    csiVolume("pvc-pinned", "h-pinned", { storageClassName: "wffc" }),
  ]);
  await bindClaim(client, "pinned", "pvc-pinned");
  assert.equal(await scheduledNode(client, "pinned-pod"), "node-a");
});
