// End to end with real commands: the job, replicaset and deployment loops and the scheduler
// with the real node agent running pods' containers as sandboxed host processes (no kubelet
// stand-in): a Job whose command exits 0 completes, one whose command exits 3 is retried up
// to its backoffLimit and fails with the container's exit code in its pods' status, and a
// Deployment whose command keeps running becomes available. The sandbox needs root and
// bubblewrap (`npm run setup`); without them the test skips, saying why. The loops run as the
// admin here (the node harness's server has no controllers identity); their RBAC is proven by
// the other tests of these folders.
import { test } from "node:test";
import assert from "node:assert/strict";
import { GVR, type Deployment, type Job, type Pod } from "../../api/index.ts";
import { sandboxUnavailable } from "../../node/index.ts";
import { runNode, testServer } from "../../../test/harness/node.ts";
import { runLoops } from "../../../test/harness/controllers.ts";
import { tempDir, defer } from "../../../test/harness/cleanup.ts";
import { until } from "../../../test/harness/until.ts";

const NS = "default";
const unavailable = await sandboxUnavailable();

function job(name: string, script: string, spec: Record<string, unknown> = {}): Job {
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name, namespace: NS },
    spec: {
      template: {
        spec: {
          containers: [{ name: "c", image: "busybox", command: ["/bin/sh", "-c", script] }],
          restartPolicy: "Never",
        },
      },
      ...spec,
    },
  };
}

test(
  "real commands: a Job completes, a failing Job fails at its backoffLimit, a Deployment becomes available",
  { skip: unavailable ? `no sandbox on this machine: ${unavailable}` : false },
  async (t) => {
    const api = await testServer(t);
    const client = api.client();
    await runNode(t, client, { nodeName: "node-a", rootDir: await tempDir(t), podProcesses: true });
    const loops = runLoops(client, {
      controllers: ["job", "replicaset", "deployment", "scheduler"],
      knobs: { jobPodFailureBackoffMs: 200 },
    });
    defer(t, () => loops.stop());

    await client.create<Job>(GVR.jobs, job("ok", "echo done", { completions: 2 }));
    await client.create<Job>(GVR.jobs, job("exit3", "exit 3", { backoffLimit: 1 }));
    await client.create<Deployment>(GVR.deployments, {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "sleeper", namespace: NS },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: "sleeper" } },
        template: {
          metadata: { labels: { app: "sleeper" } },
          spec: {
            terminationGracePeriodSeconds: 1,
            containers: [{ name: "c", image: "busybox", command: ["/bin/sh", "-c", "sleep 3600"] }],
          },
        },
      },
    });

    const conditionOf = async (name: string, type: string): Promise<Job | undefined> => {
      const current = await client.get<Job>(GVR.jobs, name, { namespace: NS });
      return current.status?.conditions?.some((c) => c.type === type && c.status === "True")
        ? current
        : undefined;
    };
    const ok = await until(() => conditionOf("ok", "Complete"), "job ok Complete", { timeoutMs: 60_000 });
    assert.deepEqual([ok.status?.succeeded, ok.status?.failed], [2, 0]);
    const failed = await until(() => conditionOf("exit3", "Failed"), "job exit3 Failed", {
      timeoutMs: 60_000,
    });
    assert.deepEqual([failed.status?.failed, failed.status?.succeeded], [2, 0]);
    const pods = (
      await client.list<Pod>(GVR.pods, { namespace: NS, labelSelector: "batch.kubernetes.io/job-name=exit3" })
    ).items;
    assert.equal(pods.length, 2);
    for (const pod of pods) {
      assert.equal(pod.status?.phase, "Failed");
      const terminated = pod.status?.containerStatuses?.[0]?.state?.terminated as
        { exitCode?: number } | undefined;
      assert.equal(terminated?.exitCode, 3);
    }
    await until(
      async () =>
        (await client.get<Deployment>(GVR.deployments, "sleeper", { namespace: NS })).status
          ?.availableReplicas === 2,
      "deployment sleeper available",
      { timeoutMs: 60_000 },
    );
    // Scaled to zero before the test ends, so the node agent stops the processes (grace 1 s).
    await client.patch(GVR.deployments, "sleeper", { spec: { replicas: 0 } }, { namespace: NS });
    await until(
      async () =>
        (await client.list<Pod>(GVR.pods, { namespace: NS, labelSelector: "app=sleeper" })).items.length ===
        0,
      "sleeper pods gone",
      { timeoutMs: 60_000 },
    );
  },
);
