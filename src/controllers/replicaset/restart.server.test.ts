// kill -9 of `csikit controllers` in the middle of a ReplicaSet's scale-up (the real process, as
// `csikit up` runs it: its own identity, the RBAC of deploy/rbac/, a client throttled so the
// scale takes seconds): the restarted process lists what exists and creates only what is
// missing — exactly spec.replicas pods in the end, none created in excess and deleted again.
import { test } from "node:test";
import assert from "node:assert/strict";
import { GVR, type Pod, type ReplicaSet } from "../../api/index.ts";
import { CORE_EVENTS, type CoreEvent } from "../../kube/index.ts";
import { spawnComponent } from "../../../test/harness/rbac.ts";
import { NS, podTemplate, startWorkloadCluster } from "../../../test/harness/workloads.ts";
import { until } from "../../../test/harness/until.ts";

const REPLICAS = 30;

test("kill -9 of the controllers mid-scale: no duplicate pods after the restart", async (t) => {
  const cluster = await startWorkloadCluster(t);
  const { admin } = cluster;
  const args = [
    `--kubeconfig=${cluster.controllersKubeconfig}`,
    "--controllers=replicaset",
    "--leader-elect=false",
    "--secure-port=0",
    // 5 creates a second: the scale-up of 30 takes about 6 s, time to kill it half-way.
    "--kube-api-qps=5",
    "--kube-api-burst=1",
  ];
  const pods = async (): Promise<Pod[]> =>
    (await admin.list<Pod>(GVR.pods, { namespace: NS, labelSelector: "app=crash" })).items;

  const first = spawnComponent(t, { name: "controllers", subcommand: "controllers", args });
  await admin.create<ReplicaSet>(GVR.replicaSets, {
    apiVersion: "apps/v1",
    kind: "ReplicaSet",
    metadata: { name: "crash", namespace: NS },
    spec: {
      replicas: REPLICAS,
      selector: { matchLabels: { app: "crash" } },
      template: podTemplate({ app: "crash" }),
    },
  });
  await until(async () => (await pods()).length >= 3, "the scale-up under way", { timeoutMs: 60_000 });
  first.child.kill("SIGKILL");
  await new Promise<void>((resolve) =>
    first.child.exitCode !== null || first.child.signalCode !== null
      ? resolve()
      : first.child.once("exit", () => resolve()),
  );
  const atKill = (await pods()).length;
  assert.ok(atKill < REPLICAS, `killed mid-scale (${atKill} of ${REPLICAS} pods existed)`);

  spawnComponent(t, { name: "controllers-restarted", subcommand: "controllers", args });
  await until(
    async () => {
      const rs = await admin.get<ReplicaSet>(GVR.replicaSets, "crash", { namespace: NS });
      return rs.status?.replicas === REPLICAS && (await pods()).length === REPLICAS;
    },
    `${REPLICAS} pods after the restart`,
    { timeoutMs: 60_000 },
  );
  const all = await pods();
  assert.equal(all.length, REPLICAS);
  assert.equal(new Set(all.map((pod) => pod.metadata?.name)).size, REPLICAS);
  const events = (await admin.list<CoreEvent>(CORE_EVENTS, { namespace: NS })).items.filter(
    (event) => event.involvedObject.name === "crash",
  );
  assert.ok(
    !events.some((event) => event.reason === "SuccessfulDelete"),
    "no pod created in excess and deleted",
  );
  assert.deepEqual(cluster.forbidden(), []);
});
