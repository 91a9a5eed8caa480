// Exactly-once counting of finished pods across a crash: while every removal of the
// batch.kubernetes.io/job-tracking finalizer fails (an injected 500 on pod patches), the Job
// records its finished pods in status.uncountedTerminatedPods and counts nothing yet; the loops
// are then stopped (their memory lost, as in a crash) and started afresh with the API server
// healed: each pod is counted once — succeeded equals completions, no pod is created again.
import { test } from "node:test";
import assert from "node:assert/strict";
import { GVR, type Job, type Pod } from "../../api/index.ts";
import {
  NS,
  node,
  runKubeletStandIn,
  runWorkloadLoops,
  startWorkloadCluster,
} from "../../../test/harness/workloads.ts";
import { until } from "../../../test/harness/until.ts";

test("job tracking: finished pods recorded as uncounted survive a crash and are counted once", async (t) => {
  const cluster = await startWorkloadCluster(t);
  const { admin } = cluster;
  await admin.create(GVR.nodes, node("n1"));
  runKubeletStandIn(t, admin, { exitCode: () => 0 });
  cluster.rbac.faults.failNext({ verb: "patch", resource: "pods", code: 500, count: 1_000_000 });
  const first = runWorkloadLoops(t, cluster, ["job", "scheduler"]);
  await admin.create<Job>(GVR.jobs, {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name: "exact", namespace: NS },
    spec: {
      completions: 3,
      parallelism: 3,
      template: { spec: { containers: [{ name: "c", image: "busybox" }], restartPolicy: "Never" } },
    },
  });
  const stuck = await until(async () => {
    const job = await admin.get<Job>(GVR.jobs, "exact", { namespace: NS });
    return job.status?.uncountedTerminatedPods?.succeeded?.length === 3 ? job : undefined;
  }, "three finished pods recorded as uncounted");
  assert.equal(stuck.status?.succeeded ?? 0, 0, "nothing counted while the finalizers are still on");
  await first.stop();
  cluster.rbac.faults.clear();

  runWorkloadLoops(t, cluster, ["job", "scheduler"]);
  const done = await until(async () => {
    const job = await admin.get<Job>(GVR.jobs, "exact", { namespace: NS });
    return job.status?.conditions?.some((c) => c.type === "Complete" && c.status === "True")
      ? job
      : undefined;
  }, "job complete after the restart");
  assert.deepEqual([done.status?.succeeded, done.status?.failed], [3, 0]);
  assert.deepEqual(done.status?.uncountedTerminatedPods, {});
  const pods = (await admin.list<Pod>(GVR.pods, { namespace: NS })).items;
  assert.equal(pods.length, 3, "no pod created again");
  assert.ok(pods.every((pod) => (pod.metadata?.finalizers ?? []).length === 0));
  assert.deepEqual(cluster.forbidden(), []);
});
