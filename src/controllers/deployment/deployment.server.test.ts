// The deployment loop (with the replicaset loop and the scheduler) against the real API
// server, as system:kube-controller-manager, pods reported by the kubelet stand-in, driven with
// the REAL kubectl: apply, `rollout status` returns, `set image` rolls with maxSurge 1 /
// maxUnavailable 1 and the bounds hold at every observed step (ReplicaSet replicas within
// replicas + maxSurge, ready pods never below replicas − maxUnavailable), `rollout history`
// lists the revisions, `rollout undo` goes back; Recreate scales the old ReplicaSet to 0
// before the new one gets pods; revisionHistoryLimit deletes the oldest idle ReplicaSets.
import { test } from "node:test";
import assert from "node:assert/strict";
import { GVR, type Deployment, type Pod, type ReplicaSet } from "../../api/index.ts";
import { silentLogger } from "../../base/index.ts";
import { CORE_EVENTS, InformerFactory, type CoreEvent } from "../../kube/index.ts";
import { kubectl, kubectlMissing } from "../../../test/harness/kubectl.ts";
import {
  NS,
  node,
  runKubeletStandIn,
  runWorkloadLoops,
  startWorkloadCluster,
} from "../../../test/harness/workloads.ts";
import { until } from "../../../test/harness/until.ts";
import { defer } from "../../../test/harness/cleanup.ts";

function manifest(name: string, image: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: NS },
    spec: {
      replicas: 4,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: "c", image }] } },
      ...extra,
    },
  });
}

test(
  "deployment: rolling update within surge/unavailable, rollout status/history/undo with real kubectl, Recreate, history limit",
  { skip: kubectlMissing() },
  async (t) => {
    const cluster = await startWorkloadCluster(t);
    const { admin } = cluster;
    const kubeconfig = cluster.rbac.kubeconfig;
    const run = async (args: string[], stdin?: string) => {
      const result = await kubectl(args, { kubeconfig, stdin, timeoutMs: 90_000 });
      assert.equal(result.code, 0, `kubectl ${args.join(" ")}: ${result.stderr}${result.stdout}`);
      return result.stdout;
    };
    for (const name of ["n1", "n2"]) await admin.create(GVR.nodes, node(name));
    runKubeletStandIn(t, admin);
    runWorkloadLoops(t, cluster, ["replicaset", "deployment", "scheduler"]);

    // Observe every ReplicaSet and pod change of "web" and check the bounds on each.
    const violations: string[] = [];
    let watching = false;
    const informers = new InformerFactory({ client: admin, logger: silentLogger });
    const rsInformer = informers.informer<ReplicaSet>(GVR.replicaSets, { labelSelector: "app=web" });
    const podInformer = informers.informer<Pod>(GVR.pods, { labelSelector: "app=web" });
    const check = (): void => {
      if (!watching) return;
      const specTotal = rsInformer.store.list().reduce((sum, rs) => sum + (rs.spec?.replicas ?? 0), 0);
      if (specTotal > 5) violations.push(`ReplicaSets want ${specTotal} pods > 4 + maxSurge 1`);
      const ready = podInformer.store
        .list()
        .filter(
          (pod) =>
            !pod.metadata?.deletionTimestamp &&
            pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
        ).length;
      if (ready < 3) violations.push(`${ready} ready pods < 4 − maxUnavailable 1`);
    };
    for (const informer of [rsInformer, podInformer])
      (informer as { addEventHandler(h: object): unknown }).addEventHandler({
        onAdd: check,
        onUpdate: check,
        onDelete: check,
      });
    const stopInformers = new AbortController();
    const informersDone = informers.start(stopInformers.signal);
    defer(t, async () => {
      stopInformers.abort();
      await informersDone;
    });

    const rolling = {
      strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 1, maxUnavailable: 1 } },
    };
    await run(["apply", "-f", "-"], manifest("web", "busybox:1", rolling));
    assert.match(
      await run(["rollout", "status", "deployment/web", "--timeout=60s"]),
      /deployment "web" successfully rolled out/,
    );
    await informers.waitForCacheSync();
    watching = true;
    check();

    const first = await admin.get<Deployment>(GVR.deployments, "web", { namespace: NS });
    assert.equal(first.metadata?.annotations?.["deployment.kubernetes.io/revision"], "1");
    const conditions = Object.fromEntries(
      (first.status?.conditions ?? []).map((c) => [c.type, `${c.status}/${c.reason}`]),
    );
    assert.deepEqual(conditions, {
      Available: "True/MinimumReplicasAvailable",
      Progressing: "True/NewReplicaSetAvailable",
    });
    assert.deepEqual(
      [
        first.status?.replicas,
        first.status?.updatedReplicas,
        first.status?.readyReplicas,
        first.status?.availableReplicas,
      ],
      [4, 4, 4, 4],
    );
    const [rs1] = rsInformer.store.list();
    const hash1 = rs1?.metadata?.labels?.["pod-template-hash"] ?? "";
    assert.equal(rs1?.metadata?.name, `web-${hash1}`);
    assert.equal(rs1?.spec?.selector?.matchLabels?.["pod-template-hash"], hash1);

    await run(["set", "image", "deployment/web", "c=busybox:2"]);
    await run(["annotate", "deployment/web", "kubernetes.io/change-cause=image busybox:2"]);
    assert.match(
      await run(["rollout", "status", "deployment/web", "--timeout=60s"]),
      /successfully rolled out/,
    );
    await until(
      () =>
        rsInformer.store.list().length === 2 &&
        rsInformer.store.list().every((rs) => rs.status?.replicas === rs.spec?.replicas),
      "two ReplicaSets settled",
    );
    const revisions = Object.fromEntries(
      rsInformer.store
        .list()
        .map((rs) => [rs.metadata?.annotations?.["deployment.kubernetes.io/revision"], rs.spec?.replicas]),
    );
    assert.deepEqual(revisions, { "1": 0, "2": 4 });
    const history = await run(["rollout", "history", "deployment/web"]);
    assert.match(history, /^1\s+<none>$/m);
    assert.match(history, /^2\s+image busybox:2$/m);

    await run(["rollout", "undo", "deployment/web"]);
    assert.match(
      await run(["rollout", "status", "deployment/web", "--timeout=60s"]),
      /successfully rolled out/,
    );
    const undone = await admin.get<Deployment>(GVR.deployments, "web", { namespace: NS });
    assert.equal(undone.spec?.template?.spec?.containers[0]?.image, "busybox:1");
    await until(
      async () =>
        (await admin.get<Deployment>(GVR.deployments, "web", { namespace: NS })).metadata?.annotations?.[
          "deployment.kubernetes.io/revision"
        ] === "3",
      "deployment at revision 3",
    );
    const back = await admin.get<ReplicaSet>(GVR.replicaSets, `web-${hash1}`, { namespace: NS });
    assert.equal(back.metadata?.annotations?.["deployment.kubernetes.io/revision"], "3");
    assert.equal(back.metadata?.annotations?.["deployment.kubernetes.io/revision-history"], "1");
    await until(
      async () =>
        (await admin.get<ReplicaSet>(GVR.replicaSets, `web-${hash1}`, { namespace: NS })).status
          ?.readyReplicas === 4,
      "undone ReplicaSet ready",
    );
    watching = false;
    assert.deepEqual(violations, [], "rollout bounds");

    const events = (await admin.list<CoreEvent>(CORE_EVENTS, { namespace: NS })).items.filter(
      (event) => event.involvedObject.kind === "Deployment" && event.involvedObject.name === "web",
    );
    const messages = events.filter((e) => e.reason === "ScalingReplicaSet").map((e) => e.message ?? "");
    assert.ok(messages.includes(`Scaled up replica set web-${hash1} from 0 to 4`), messages.join("\n"));
    assert.ok(
      messages.some((m) => /^Scaled up replica set web-\w+ from 0 to 1$/.test(m)),
      messages.join("\n"),
    );
    assert.ok(
      messages.some((m) => /^Scaled down replica set web-\w+ from \d to \d$/.test(m)),
      messages.join("\n"),
    );
    assert.equal(events[0]?.source?.component, "deployment-controller");

    // Recreate: the old ReplicaSet reaches 0 and its pods are gone before the new one has any.
    await run(
      ["apply", "-f", "-"],
      manifest("rec", "busybox:1", { strategy: { type: "Recreate" }, replicas: 2 }),
    );
    await run(["rollout", "status", "deployment/rec", "--timeout=60s"]);
    const oldRec = (
      await admin.list<ReplicaSet>(GVR.replicaSets, { namespace: NS, labelSelector: "app=rec" })
    ).items[0]!;
    await run(["set", "image", "deployment/rec", "c=busybox:2"]);
    await run(["rollout", "status", "deployment/rec", "--timeout=60s"]);
    const recSets = (
      await admin.list<ReplicaSet>(GVR.replicaSets, { namespace: NS, labelSelector: "app=rec" })
    ).items;
    const newRec = recSets.find((rs) => rs.metadata?.uid !== oldRec.metadata?.uid)!;
    const scaleEvents = (await admin.list<CoreEvent>(CORE_EVENTS, { namespace: NS })).items
      .filter((e) => e.involvedObject.name === "rec" && e.reason === "ScalingReplicaSet")
      .map((e) => e.message);
    assert.deepEqual(scaleEvents.slice(1), [
      `Scaled down replica set ${oldRec.metadata?.name} from 2 to 0`,
      `Scaled up replica set ${newRec.metadata?.name} from 0 to 2`,
    ]);

    // revisionHistoryLimit 1: after three templates only the current and one old ReplicaSet stay.
    await run(["apply", "-f", "-"], manifest("hist", "busybox:1", { replicas: 1, revisionHistoryLimit: 1 }));
    await run(["rollout", "status", "deployment/hist", "--timeout=60s"]);
    for (const image of ["busybox:2", "busybox:3"]) {
      await run(["set", "image", "deployment/hist", `c=${image}`]);
      await run(["rollout", "status", "deployment/hist", "--timeout=60s"]);
    }
    await until(
      async () =>
        (await admin.list<ReplicaSet>(GVR.replicaSets, { namespace: NS, labelSelector: "app=hist" })).items
          .length === 2,
      "history trimmed to 2 ReplicaSets",
    );
    assert.deepEqual(cluster.forbidden(), []);
  },
);

test(
  "deployment: pods that never get ready end the rollout with ProgressDeadlineExceeded, and kubectl rollout status says so",
  { skip: kubectlMissing() },
  async (t) => {
    const cluster = await startWorkloadCluster(t);
    const { admin } = cluster;
    await admin.create(GVR.nodes, node("n1"));
    runKubeletStandIn(t, admin, { ready: () => false });
    runWorkloadLoops(t, cluster, ["replicaset", "deployment", "scheduler"]);
    await kubectl(["apply", "-f", "-"], {
      kubeconfig: cluster.rbac.kubeconfig,
      stdin: manifest("stuck", "busybox:1", { replicas: 1, progressDeadlineSeconds: 2 }),
    });
    const stuck = await until(async () => {
      const d = await admin.get<Deployment>(GVR.deployments, "stuck", { namespace: NS });
      const progressing = d.status?.conditions?.find((c) => c.type === "Progressing");
      return progressing?.reason === "ProgressDeadlineExceeded" ? d : undefined;
    }, "Progressing False/ProgressDeadlineExceeded (the loop looks again at the deadline)");
    const progressing = stuck.status?.conditions?.find((c) => c.type === "Progressing");
    assert.equal(progressing?.status, "False");
    assert.match(progressing?.message ?? "", /^ReplicaSet "stuck-\w+" has timed out progressing\.$/);
    const available = stuck.status?.conditions?.find((c) => c.type === "Available");
    assert.deepEqual([available?.status, available?.reason], ["False", "MinimumReplicasUnavailable"]);
    const status = await kubectl(["rollout", "status", "deployment/stuck", "--timeout=30s"], {
      kubeconfig: cluster.rbac.kubeconfig,
    });
    assert.notEqual(status.code, 0);
    assert.match(status.stderr, /deployment "stuck" exceeded its progress deadline/);
    assert.deepEqual(cluster.forbidden(), []);
  },
);
