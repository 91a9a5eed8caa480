// The replicaset loop against the real API server, running as system:kube-controller-manager
// under deploy/rbac/csikit-controllers.yaml, with the scheduler binding pods and a kubelet
// stand-in (test/harness/workloads.ts) reporting them Running and Ready: scale up and down
// (not-ready pods deleted first), status counts, events, adoption of an orphan and release
// of a pod whose labels no longer match.
import { test } from "node:test";
import assert from "node:assert/strict";
import { GVR, type Pod, type ReplicaSet } from "../../api/index.ts";
import type { CoreEvent } from "../../kube/index.ts";
import { CORE_EVENTS } from "../../kube/index.ts";
import {
  NS,
  node,
  podTemplate,
  podsOwnedBy,
  runKubeletStandIn,
  runWorkloadLoops,
  startWorkloadCluster,
} from "../../../test/harness/workloads.ts";
import { until } from "../../../test/harness/until.ts";

function replicaSet(name: string, replicas: number): ReplicaSet {
  return {
    apiVersion: "apps/v1",
    kind: "ReplicaSet",
    metadata: { name, namespace: NS },
    spec: { replicas, selector: { matchLabels: { app: name } }, template: podTemplate({ app: name }) },
  };
}

test("replicaset: scale up, down (not-ready first), status, events, adoption and release", async (t) => {
  const cluster = await startWorkloadCluster(t);
  const { admin } = cluster;
  for (const name of ["n1", "n2"]) await admin.create(GVR.nodes, node(name));
  // Pods whose name the test marks stay not ready.
  const notReady = new Set<string>();
  const kubelet = runKubeletStandIn(t, admin, { ready: (pod) => !notReady.has(pod.metadata?.name ?? "") });
  runWorkloadLoops(t, cluster, ["replicaset", "scheduler"]);

  // An orphan matching the selector exists before the ReplicaSet: it is adopted, not duplicated.
  await admin.create<Pod>(GVR.pods, {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "orphan", namespace: NS, labels: { app: "web" } },
    spec: { containers: [{ name: "c", image: "busybox" }] },
  });
  const rs = await admin.create<ReplicaSet>(GVR.replicaSets, replicaSet("web", 3));
  const uid = rs.metadata?.uid ?? "";
  const three = await until(async () => {
    const pods = await podsOwnedBy(admin, uid);
    return pods.length === 3 ? pods : undefined;
  }, "3 pods owned by web");
  assert.ok(
    three.some((pod) => pod.metadata?.name === "orphan"),
    "the orphan was adopted",
  );
  for (const pod of three) {
    if (pod.metadata?.name === "orphan") continue;
    assert.match(pod.metadata?.name ?? "", /^web-[a-z0-9]{5}$/);
    const ref = pod.metadata?.ownerReferences?.[0];
    assert.deepEqual(
      {
        kind: ref?.kind,
        name: ref?.name,
        controller: ref?.controller,
        blockOwnerDeletion: ref?.blockOwnerDeletion,
      },
      { kind: "ReplicaSet", name: "web", controller: true, blockOwnerDeletion: true },
    );
  }
  const ready = await until(async () => {
    const current = await admin.get<ReplicaSet>(GVR.replicaSets, "web", { namespace: NS });
    return current.status?.readyReplicas === 3 ? current : undefined;
  }, "web 3 ready");
  assert.deepEqual(ready.status, {
    replicas: 3,
    fullyLabeledReplicas: 3,
    readyReplicas: 3,
    availableReplicas: 3,
    observedGeneration: 1,
  });

  // Scale to 5, mark two pods not ready, scale to 3: those two go.
  await admin.patch(GVR.replicaSets, "web", { spec: { replicas: 5 } }, { namespace: NS });
  const five = await until(async () => {
    const pods = await podsOwnedBy(admin, uid);
    return pods.length === 5 && pods.every((pod) => pod.spec?.nodeName) ? pods : undefined;
  }, "5 scheduled pods");
  const slow = five.filter((pod) => pod.metadata?.name !== "orphan").slice(0, 2);
  for (const pod of slow) notReady.add(pod.metadata?.name ?? "");
  kubelet.resync();
  await until(async () => {
    const current = await admin.get<ReplicaSet>(GVR.replicaSets, "web", { namespace: NS });
    return current.status?.replicas === 5 && current.status.readyReplicas === 3;
  }, "5 replicas, 3 ready");
  await admin.patch(GVR.replicaSets, "web", { spec: { replicas: 3 } }, { namespace: NS });
  const left = await until(async () => {
    const pods = await podsOwnedBy(admin, uid);
    return pods.length === 3 ? pods : undefined;
  }, "3 pods left");
  const leftNames = new Set(left.map((pod) => pod.metadata?.name));
  for (const pod of slow)
    assert.ok(!leftNames.has(pod.metadata?.name), `not-ready ${pod.metadata?.name} deleted first`);
  await until(async () => {
    const current = await admin.get<ReplicaSet>(GVR.replicaSets, "web", { namespace: NS });
    return current.status?.replicas === 3 && current.status.observedGeneration === 3;
  }, "status follows the scale down");

  // A pod relabelled out of the selector is released (no controller ref) and replaced.
  const victim = left.find((pod) => pod.metadata?.name !== "orphan")!;
  await admin.patch(
    GVR.pods,
    victim.metadata?.name ?? "",
    { metadata: { labels: { app: "other" } } },
    { namespace: NS },
  );
  await until(async () => {
    const released = await admin.get<Pod>(GVR.pods, victim.metadata?.name ?? "", { namespace: NS });
    const pods = await podsOwnedBy(admin, uid);
    return (released.metadata?.ownerReferences ?? []).length === 0 && pods.length === 3;
  }, "relabelled pod released and replaced");

  const events = (await admin.list<CoreEvent>(CORE_EVENTS, { namespace: NS })).items.filter(
    (event) => event.involvedObject.name === "web",
  );
  const created = events.filter((event) => event.reason === "SuccessfulCreate");
  assert.ok(
    created.length >= 1 &&
      created.every((event) => /^Created pod: web-[a-z0-9]{5}$/.test(event.message ?? "")),
  );
  assert.ok(
    events.some(
      (event) => event.reason === "SuccessfulDelete" && /^Deleted pod: web-/.test(event.message ?? ""),
    ),
  );
  assert.equal(events[0]?.source?.component, "replicaset-controller");
  assert.deepEqual(cluster.forbidden(), []);
});

test("replicaset: a ready pod counts as available only after minReadySeconds", async (t) => {
  const cluster = await startWorkloadCluster(t);
  const { admin } = cluster;
  await admin.create(GVR.nodes, node("n1"));
  runKubeletStandIn(t, admin);
  runWorkloadLoops(t, cluster, ["replicaset", "scheduler"]);
  const rs = replicaSet("slow", 1);
  rs.spec!.minReadySeconds = 2;
  await admin.create<ReplicaSet>(GVR.replicaSets, rs);
  const readyNotAvailable = await until(async () => {
    const current = await admin.get<ReplicaSet>(GVR.replicaSets, "slow", { namespace: NS });
    return current.status?.readyReplicas === 1 ? current : undefined;
  }, "slow ready");
  // Only asserted when the status was read less than minReadySeconds after the Ready transition.
  const readySince = Date.parse(
    (await podsOwnedBy(admin, readyNotAvailable.metadata?.uid ?? ""))[0]?.status?.conditions?.find(
      (c) => c.type === "Ready",
    )?.lastTransitionTime ?? "",
  );
  if (Date.now() < readySince + 2000) assert.equal(readyNotAvailable.status?.availableReplicas, 0);
  await until(async () => {
    const current = await admin.get<ReplicaSet>(GVR.replicaSets, "slow", { namespace: NS });
    return current.status?.availableReplicas === 1;
  }, "slow available after minReadySeconds (the loop requeues itself)");
  assert.deepEqual(cluster.forbidden(), []);
});
