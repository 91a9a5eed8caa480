// The daemonset loop (with the scheduler) against the real API server, as
// system:kube-controller-manager, pods reported by the kubelet stand-in: one pod per node the
// nodeSelector and taints allow, pinned by node affinity on metadata.name and bound there by
// the scheduler; nodes added and removed; NoExecute taints evict, NoSchedule ones only keep new
// pods away; a template change rolls node by node within maxUnavailable 1; the status columns;
// a ControllerRevision per template, kubectl rollout history/undo, revisionHistoryLimit.
import { test } from "node:test";
import assert from "node:assert/strict";
import { GVR, type ControllerRevision, type DaemonSet, type Node, type Pod } from "../../api/index.ts";
import { kubectl, kubectlMissing } from "../../../test/harness/kubectl.ts";
import {
  NS,
  node,
  podsOwnedBy,
  runKubeletStandIn,
  runWorkloadLoops,
  startWorkloadCluster,
} from "../../../test/harness/workloads.ts";
import { until } from "../../../test/harness/until.ts";

function daemonSet(name: string, spec: Record<string, unknown> = {}): DaemonSet {
  return {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { name, namespace: NS },
    spec: {
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: "c", image: "busybox:1" }], ...spec },
      },
    },
  };
}

async function podNodes(admin: Parameters<typeof podsOwnedBy>[0], uid: string): Promise<string[]> {
  const pods = await podsOwnedBy(admin, uid);
  return pods.map((pod) => pod.spec?.nodeName ?? "-").sort();
}

async function waitNodes(
  admin: Parameters<typeof podsOwnedBy>[0],
  uid: string,
  want: string[],
  what: string,
): Promise<void> {
  await until(async () => JSON.stringify(await podNodes(admin, uid)) === JSON.stringify(want), what);
}

test(
  "daemonset: a pod per matching node, following node add/remove and taints; rolling update; status",
  { skip: kubectlMissing() },
  async (t) => {
    const cluster = await startWorkloadCluster(t);
    const { admin } = cluster;
    await admin.create(GVR.nodes, node("n1", { disk: "ssd" }));
    await admin.create(GVR.nodes, node("n2", { disk: "ssd" }));
    await admin.create(GVR.nodes, node("n3"));
    await admin.create(
      GVR.nodes,
      node("n4", { disk: "ssd" }, [{ key: "dedicated", value: "db", effect: "NoSchedule" }]),
    );
    runKubeletStandIn(t, admin);
    runWorkloadLoops(t, cluster, ["daemonset", "scheduler"]);

    const agent = await admin.create<DaemonSet>(
      GVR.daemonSets,
      daemonSet("agent", { nodeSelector: { disk: "ssd" } }),
    );
    const tolerant = await admin.create<DaemonSet>(
      GVR.daemonSets,
      daemonSet("tolerant", {
        tolerations: [{ key: "dedicated", operator: "Exists", effect: "NoSchedule" }],
      }),
    );
    const agentUid = agent.metadata?.uid ?? "";
    const tolerantUid = tolerant.metadata?.uid ?? "";
    await waitNodes(admin, agentUid, ["n1", "n2"], "agent on the ssd nodes without the untolerated taint");
    await waitNodes(admin, tolerantUid, ["n1", "n2", "n3", "n4"], "tolerant on every node");

    // Each pod is pinned as upstream pins it, and carries the daemon tolerations and labels.
    const [pinned] = await podsOwnedBy(admin, agentUid);
    const terms = (pinned?.spec?.affinity?.nodeAffinity as Record<string, { nodeSelectorTerms: unknown }>)
      .requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
    assert.deepEqual(terms, [
      { matchFields: [{ key: "metadata.name", operator: "In", values: [pinned?.spec?.nodeName] }] },
    ]);
    assert.ok(
      pinned?.spec?.tolerations?.some(
        (tol) => tol.key === "node.kubernetes.io/unreachable" && tol.effect === "NoExecute",
      ),
    );
    assert.match(
      pinned?.metadata?.labels?.["controller-revision-hash"] ?? "",
      /^[bcdfghjklmnpqrstvwxz2456789]+$/,
    );
    assert.equal(pinned?.metadata?.labels?.["pod-template-generation"], "1");
    assert.match(pinned?.metadata?.name ?? "", /^agent-[a-z0-9]{5}$/);

    const status = await until(async () => {
      const ds = await admin.get<DaemonSet>(GVR.daemonSets, "agent", { namespace: NS });
      return ds.status?.numberAvailable === 2 ? ds.status : undefined;
    }, "agent status");
    assert.deepEqual(status, {
      currentNumberScheduled: 2,
      numberMisscheduled: 0,
      desiredNumberScheduled: 2,
      numberReady: 2,
      observedGeneration: 1,
      updatedNumberScheduled: 2,
      numberAvailable: 2,
      numberUnavailable: 0,
    });
    const table = await kubectl(["get", "ds", "agent", "-n", NS], { kubeconfig: cluster.rbac.kubeconfig });
    assert.match(
      table.stdout,
      /^NAME\s+DESIRED\s+CURRENT\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+NODE SELECTOR\s+AGE$/m,
    );
    assert.match(table.stdout, /^agent\s+2\s+2\s+2\s+2\s+2\s+disk=ssd\s+/m);

    // A node joins, another leaves.
    await admin.create(GVR.nodes, node("n5", { disk: "ssd" }));
    await waitNodes(admin, agentUid, ["n1", "n2", "n5"], "agent follows the new node");
    await admin.delete(GVR.nodes, "n1");
    await waitNodes(admin, agentUid, ["n2", "n5"], "agent leaves the removed node");
    await waitNodes(admin, tolerantUid, ["n2", "n3", "n4", "n5"], "tolerant leaves the removed node");

    // NoSchedule keeps new pods away but lets the running one stay; NoExecute evicts it.
    await admin.patch<Node>(GVR.nodes, "n5", { spec: { taints: [{ key: "maint", effect: "NoSchedule" }] } });
    await until(async () => {
      const ds = await admin.get<DaemonSet>(GVR.daemonSets, "agent", { namespace: NS });
      return ds.status?.desiredNumberScheduled === 1 && ds.status.numberMisscheduled === 1;
    }, "n5's pod counted misscheduled, not removed");
    assert.deepEqual(await podNodes(admin, agentUid), ["n2", "n5"]);
    await admin.patch<Node>(GVR.nodes, "n5", { spec: { taints: [{ key: "maint", effect: "NoExecute" }] } });
    await waitNodes(admin, agentUid, ["n2"], "NoExecute evicts the daemon pod");
    await admin.patch<Node>(GVR.nodes, "n5", { spec: { taints: null } });
    await waitNodes(admin, agentUid, ["n2", "n5"], "the pod comes back once the taint is gone");

    // Rolling update of "tolerant" (4 nodes, maxUnavailable 1): never two nodes without a ready pod.
    const before = new Set((await podsOwnedBy(admin, tolerantUid)).map((pod) => pod.metadata?.uid));
    let worst = 4;
    const sample = async (): Promise<boolean> => {
      const pods = (await admin.list<Pod>(GVR.pods, { namespace: NS, labelSelector: "app=tolerant" })).items;
      const readyNodes = new Set(
        pods
          .filter(
            (pod) =>
              !pod.metadata?.deletionTimestamp &&
              pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
          )
          .map((pod) => pod.spec?.nodeName),
      );
      worst = Math.min(worst, readyNodes.size);
      const ds = await admin.get<DaemonSet>(GVR.daemonSets, "tolerant", { namespace: NS });
      return (
        ds.status?.updatedNumberScheduled === 4 &&
        ds.status.numberAvailable === 4 &&
        ds.status.observedGeneration === 2
      );
    };
    await admin.patch(
      GVR.daemonSets,
      "tolerant",
      { spec: { template: { spec: { containers: [{ name: "c", image: "busybox:2" }] } } } },
      { namespace: NS, type: "strategic" },
    );
    await until(sample, "tolerant rolled to the new template", { timeoutMs: 60_000 });
    const after = await podsOwnedBy(admin, tolerantUid);
    assert.equal(after.length, 4);
    assert.ok(
      after.every((pod) => !before.has(pod.metadata?.uid) && pod.spec?.containers[0]?.image === "busybox:2"),
    );
    assert.ok(worst >= 3, `at most one node without a ready pod during the update (saw ${worst} ready)`);
    assert.deepEqual(cluster.forbidden(), []);
  },
);

test(
  "daemonset history: a ControllerRevision per template, its hash on the pods; kubectl rollout history and undo; revisionHistoryLimit",
  { skip: kubectlMissing() },
  async (t) => {
    const cluster = await startWorkloadCluster(t);
    const { admin } = cluster;
    await admin.create(GVR.nodes, node("n1"));
    await admin.create(GVR.nodes, node("n2"));
    runKubeletStandIn(t, admin);
    runWorkloadLoops(t, cluster, ["daemonset", "scheduler"]);
    const run = (args: string[]) => kubectl([...args, "-n", NS], { kubeconfig: cluster.rbac.kubeconfig });
    const created = daemonSet("hist");
    created.spec!.revisionHistoryLimit = 1;
    const ds = await admin.create<DaemonSet>(GVR.daemonSets, created);
    const uid = ds.metadata?.uid ?? "";
    const revisions = async (): Promise<ControllerRevision[]> =>
      (
        await admin.list<ControllerRevision>(GVR.controllerRevisions, {
          namespace: NS,
          labelSelector: "app=hist",
        })
      ).items.sort((a, b) => a.revision - b.revision);
    /** Waits until both nodes run an available pod of `image` at generation `generation`. */
    const rolledTo = async (image: string, generation: number): Promise<void> => {
      await until(
        async () => {
          const current = await admin.get<DaemonSet>(GVR.daemonSets, "hist", { namespace: NS });
          const pods = await podsOwnedBy(admin, uid);
          return (
            current.status?.observedGeneration === generation &&
            current.status.updatedNumberScheduled === 2 &&
            current.status.numberAvailable === 2 &&
            pods.length === 2 &&
            pods.every((pod) => pod.spec?.containers[0]?.image === image)
          );
        },
        `both nodes run ${image}`,
        { timeoutMs: 60_000 },
      );
    };
    const podHashes = async (): Promise<string[]> =>
      [
        ...new Set(
          (await podsOwnedBy(admin, uid)).map((pod) => pod.metadata?.labels?.["controller-revision-hash"]),
        ),
      ] as string[];

    await rolledTo("busybox:1", 1);
    const [first] = await revisions();
    assert.equal((await revisions()).length, 1);
    const hash1 = first?.metadata.labels?.["controller-revision-hash"] ?? "";
    assert.equal(first?.metadata.name, `hist-${hash1}`);
    assert.equal(first?.revision, 1);
    assert.deepEqual(
      first?.metadata.ownerReferences?.map((ref) => [ref.kind, ref.uid, ref.controller]),
      [["DaemonSet", uid, true]],
    );
    assert.equal(
      (first?.data as { spec: { template: Record<string, unknown> } }).spec.template.$patch,
      "replace",
    );
    assert.deepEqual(await podHashes(), [hash1], "the pods carry their revision's hash");

    await admin.patch(
      GVR.daemonSets,
      "hist",
      { spec: { template: { spec: { containers: [{ name: "c", image: "busybox:2" }] } } } },
      { namespace: NS, type: "strategic" },
    );
    await rolledTo("busybox:2", 2);
    const two = await revisions();
    assert.deepEqual(
      two.map((r) => r.revision),
      [1, 2],
    );
    const hash2 = two[1]?.metadata.labels?.["controller-revision-hash"] ?? "";
    assert.notEqual(hash2, hash1);
    assert.deepEqual(await podHashes(), [hash2]);
    const history = await run(["rollout", "history", "daemonset/hist"]);
    assert.equal(history.code, 0, history.stderr);
    assert.match(history.stdout, /REVISION\s+CHANGE-CAUSE\n1\s+<none>\n2\s+<none>/);

    const undo = await run(["rollout", "undo", "daemonset/hist"]);
    assert.equal(undo.code, 0, undo.stderr);
    await rolledTo("busybox:1", 3);
    assert.deepEqual(await podHashes(), [hash1], "back on revision 1's template and hash");
    await until(
      async () =>
        JSON.stringify((await revisions()).map((r) => [r.metadata.name, r.revision])) ===
        JSON.stringify([
          [`hist-${hash2}`, 2],
          [`hist-${hash1}`, 3],
        ]),
      "the restored revision renumbered as the newest",
    );

    // A third template: two old revisions, limit 1: the oldest one no pod runs goes.
    await admin.patch(
      GVR.daemonSets,
      "hist",
      { spec: { template: { spec: { containers: [{ name: "c", image: "busybox:3" }] } } } },
      { namespace: NS, type: "strategic" },
    );
    await rolledTo("busybox:3", 4);
    await until(
      async () => JSON.stringify((await revisions()).map((r) => r.revision)) === JSON.stringify([3, 4]),
      "revision 2 cleaned up beyond revisionHistoryLimit 1",
    );
    assert.deepEqual(cluster.forbidden(), []);
  },
);
