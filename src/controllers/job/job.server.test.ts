// The job loop (with the scheduler) against the real API server, as
// system:kube-controller-manager. The kubelet stand-in (test/harness/workloads.ts) ends each
// pod's container with the exit code the test chooses, as the kubelet would report it:
// completions with parallelism (never more pods running than parallelism), `kubectl wait
// --for=condition=complete` with the real kubectl, pod failures retried until backoffLimit
// then FailureTarget and Failed, tracking finalizers removed once counted, labels, events,
// the printer columns, and the API server's Job defaulting and validation.
import { test } from "node:test";
import assert from "node:assert/strict";
import { GVR, type Job, type Pod } from "../../api/index.ts";
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
import { defer } from "../../../test/harness/cleanup.ts";

function job(name: string, spec: Record<string, unknown>, restartPolicy: "Never" | "unset" = "Never"): Job {
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name, namespace: NS },
    spec: {
      template: {
        spec: {
          containers: [{ name: "c", image: "busybox", command: ["true"] }],
          ...(restartPolicy === "Never" ? { restartPolicy } : {}),
        },
      },
      ...spec,
    },
  };
}

test(
  "job: completions with parallelism, kubectl wait, retries up to backoffLimit then Failed",
  { skip: kubectlMissing() },
  async (t) => {
    const cluster = await startWorkloadCluster(t);
    const { admin } = cluster;
    const kubeconfig = cluster.rbac.kubeconfig;
    await admin.create(GVR.nodes, node("n1"));
    // Pods of "ok" exit 0, pods of "bad" exit 1 (the kubelet stand-in's report of the container's end).
    runKubeletStandIn(t, admin, {
      exitCode: (pod) => {
        const jobName = pod.metadata?.labels?.["batch.kubernetes.io/job-name"];
        return jobName === "ok" ? 0 : jobName === "bad" ? 1 : undefined;
      },
    });
    runWorkloadLoops(t, cluster, ["job", "scheduler"], { jobPodFailureBackoffMs: 100 });

    // The API server's Job rules.
    const refused = await kubectl(["create", "-f", "-"], {
      kubeconfig,
      stdin: JSON.stringify(job("norestart", {}, "unset")),
    });
    assert.notEqual(refused.code, 0);
    assert.match(
      refused.stderr,
      /spec\.template\.spec\.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"/,
    );

    // Never more than `parallelism` pods running at once.
    let maxRunning = 0;
    const informers = new InformerFactory({ client: admin, logger: silentLogger });
    const pods = informers.informer<Pod>(GVR.pods, { labelSelector: "batch.kubernetes.io/job-name=ok" });
    const count = (): void => {
      const running = pods.store
        .list()
        .filter(
          (pod) =>
            !pod.metadata?.deletionTimestamp &&
            pod.status?.phase !== "Succeeded" &&
            pod.status?.phase !== "Failed",
        );
      maxRunning = Math.max(maxRunning, running.length);
    };
    pods.addEventHandler({ onAdd: count, onUpdate: count });
    const stop = new AbortController();
    const informersDone = informers.start(stop.signal);
    defer(t, async () => {
      stop.abort();
      await informersDone;
    });
    await informers.waitForCacheSync();

    const created = await admin.create<Job>(GVR.jobs, job("ok", { completions: 5, parallelism: 2 }));
    const uid = created.metadata?.uid ?? "";
    assert.deepEqual(created.spec?.selector, { matchLabels: { "batch.kubernetes.io/controller-uid": uid } });
    assert.equal(created.spec?.backoffLimit, 6);
    const wait = await kubectl(["wait", "--for=condition=complete", "job/ok", "--timeout=60s"], {
      kubeconfig,
      timeoutMs: 90_000,
    });
    assert.equal(wait.code, 0, wait.stderr);
    assert.match(wait.stdout, /job.batch\/ok condition met/);
    const done = await admin.get<Job>(GVR.jobs, "ok", { namespace: NS });
    assert.deepEqual(
      [done.status?.succeeded, done.status?.failed, done.status?.active, done.status?.ready],
      [5, 0, 0, 0],
    );
    assert.ok(done.status?.startTime && done.status.completionTime);
    assert.deepEqual(
      done.status?.conditions?.map((c) => [c.type, c.status, c.reason, c.message]),
      [
        ["SuccessCriteriaMet", "True", "CompletionsReached", "Reached expected number of succeeded pods"],
        ["Complete", "True", "CompletionsReached", "Reached expected number of succeeded pods"],
      ],
    );
    assert.ok(maxRunning <= 2 && maxRunning >= 1, `at most parallelism pods ran at once (saw ${maxRunning})`);
    const okPods = (
      await admin.list<Pod>(GVR.pods, { namespace: NS, labelSelector: "batch.kubernetes.io/job-name=ok" })
    ).items;
    assert.equal(okPods.length, 5);
    for (const pod of okPods) {
      assert.deepEqual(pod.metadata?.finalizers ?? [], [], "tracking finalizer removed once counted");
      assert.equal(pod.metadata?.labels?.["batch.kubernetes.io/controller-uid"], uid);
      assert.equal(pod.metadata?.labels?.["controller-uid"], uid);
      assert.equal(pod.metadata?.labels?.["job-name"], "ok");
      assert.match(pod.metadata?.name ?? "", /^ok-[a-z0-9]{5}$/);
    }
    const table = await kubectl(["get", "jobs", "ok"], { kubeconfig });
    assert.match(table.stdout, /^NAME\s+STATUS\s+COMPLETIONS\s+DURATION\s+AGE$/m);
    assert.match(table.stdout, /^ok\s+Complete\s+5\/5\s+\d+s\s+\d+s$/m);

    // A command that always fails: 1 + backoffLimit pods, then Failed.
    await admin.create<Job>(GVR.jobs, job("bad", { backoffLimit: 2 }));
    const failedWait = await kubectl(["wait", "--for=condition=failed", "job/bad", "--timeout=60s"], {
      kubeconfig,
      timeoutMs: 90_000,
    });
    assert.equal(failedWait.code, 0, failedWait.stderr);
    const bad = await admin.get<Job>(GVR.jobs, "bad", { namespace: NS });
    assert.deepEqual([bad.status?.failed, bad.status?.succeeded, bad.status?.active], [3, 0, 0]);
    assert.deepEqual(
      bad.status?.conditions?.map((c) => [c.type, c.reason, c.message]),
      [
        ["FailureTarget", "BackoffLimitExceeded", "Job has reached the specified backoff limit"],
        ["Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit"],
      ],
    );
    assert.equal(bad.status?.completionTime, undefined);
    const badPods = (
      await admin.list<Pod>(GVR.pods, { namespace: NS, labelSelector: "batch.kubernetes.io/job-name=bad" })
    ).items;
    assert.equal(badPods.length, 3, "one pod per try, no more");
    assert.ok(
      badPods.every((pod) => pod.status?.phase === "Failed" && (pod.metadata?.finalizers ?? []).length === 0),
    );

    const events = (await admin.list<CoreEvent>(CORE_EVENTS, { namespace: NS })).items;
    const about = (name: string) =>
      events.filter((e) => e.involvedObject.kind === "Job" && e.involvedObject.name === name);
    assert.ok(about("ok").some((e) => e.reason === "Completed" && e.message === "Job completed"));
    assert.equal(about("ok").filter((e) => e.reason === "SuccessfulCreate").length, 5);
    assert.ok(about("bad").some((e) => e.type === "Warning" && e.reason === "BackoffLimitExceeded"));
    assert.equal(about("ok")[0]?.source?.component, "job-controller");
    assert.deepEqual(cluster.forbidden(), []);
  },
);
