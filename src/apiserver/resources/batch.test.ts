// batch/v1 Job and CronJob defaulting and validation as kube-apiserver's: completions and
// parallelism default to 1 together, backoffLimit to 6, the selector and the controller-uid /
// job-name labels come from the new Job's uid unless manualSelector is set, a chosen selector
// without manualSelector is refused, the template is immutable; the printer's STATUS cell.

import { test } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../rest/resource.ts";
import { cronJobs, jobStatusCell, jobs } from "./batch.ts";

function job(spec: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name: "pi", namespace: "default", uid: "u-1" },
    spec: {
      template: { spec: { containers: [{ name: "c", image: "perl" }], restartPolicy: "Never" } },
      ...spec,
    },
  };
}

test("a Job is defaulted as upstream: counts, policies, the generated selector and labels", () => {
  const object = job();
  jobs.applyDefaults(object);
  const spec = object.spec as Record<string, unknown>;
  assert.deepEqual(
    [
      spec.completions,
      spec.parallelism,
      spec.backoffLimit,
      spec.completionMode,
      spec.suspend,
      spec.podReplacementPolicy,
    ],
    [1, 1, 6, "NonIndexed", false, "TerminatingOrFailed"],
  );
  assert.deepEqual(spec.selector, { matchLabels: { "batch.kubernetes.io/controller-uid": "u-1" } });
  assert.deepEqual((spec.template as { metadata: { labels: unknown } }).metadata.labels, {
    "batch.kubernetes.io/controller-uid": "u-1",
    "batch.kubernetes.io/job-name": "pi",
    "controller-uid": "u-1",
    "job-name": "pi",
  });
  assert.deepEqual(jobs.validateCreate(object), []);

  const parallel = job({ parallelism: 3 });
  jobs.applyDefaults(parallel);
  assert.equal(
    (parallel.spec as Record<string, unknown>).completions,
    undefined,
    "only parallelism set: no completions",
  );
});

test("a Job refuses a chosen selector without manualSelector, negative counts and restartPolicy Always", () => {
  const chosen = job({ selector: { matchLabels: { app: "x" } } });
  (chosen.spec as { template: { metadata?: unknown } }).template.metadata = { labels: { app: "x" } };
  jobs.applyDefaults(chosen);
  assert.deepEqual(
    jobs.validateCreate(chosen).map((c) => `${c.field}: ${c.message}`),
    ['spec.selector: Invalid value: {"matchLabels":{"app":"x"}}: `selector` will be auto-generated'],
  );
  const manual = job({ selector: { matchLabels: { app: "x" } }, manualSelector: true });
  (manual.spec as { template: { metadata?: unknown } }).template.metadata = { labels: { app: "x" } };
  jobs.applyDefaults(manual);
  assert.deepEqual(jobs.validateCreate(manual), []);

  const bad = job({ backoffLimit: -1 });
  (bad.spec as { template: { spec: Record<string, unknown> } }).template.spec.restartPolicy = "Always";
  jobs.applyDefaults(bad);
  assert.deepEqual(
    jobs.validateCreate(bad).map((c) => c.field),
    ["spec.backoffLimit", "spec.template.spec.restartPolicy"],
  );
});

test("a Job's template and selector are immutable", () => {
  const old = job();
  jobs.applyDefaults(old);
  const changed = structuredClone(old);
  (
    changed.spec as { template: { spec: { containers: { image: string }[] } } }
  ).template.spec.containers[0]!.image = "other";
  assert.deepEqual(
    jobs.validateUpdate(changed, old).map((c) => c.field),
    ["spec.template"],
  );
});

test("the STATUS column follows printJob's order of conditions", () => {
  const withConditions = (...types: string[]): Record<string, unknown> => ({
    status: { conditions: types.map((type) => ({ type, status: "True" })) },
  });
  assert.equal(jobStatusCell(withConditions()), "Running");
  assert.equal(jobStatusCell(withConditions("SuccessCriteriaMet")), "SuccessCriteriaMet");
  assert.equal(jobStatusCell(withConditions("SuccessCriteriaMet", "Complete")), "Complete");
  assert.equal(jobStatusCell(withConditions("FailureTarget", "Failed")), "Failed");
  assert.equal(jobStatusCell(withConditions("FailureTarget")), "FailureTarget");
});

test("a CronJob is defaulted and its job template validated", () => {
  const object: KubeObject = {
    apiVersion: "batch/v1",
    kind: "CronJob",
    metadata: { name: "tick", namespace: "default" },
    spec: { schedule: "*/5 * * * *", jobTemplate: { spec: job().spec } },
  };
  cronJobs.applyDefaults(object);
  const spec = object.spec as Record<string, unknown>;
  assert.deepEqual(
    [spec.concurrencyPolicy, spec.suspend, spec.successfulJobsHistoryLimit, spec.failedJobsHistoryLimit],
    ["Allow", false, 3, 1],
  );
  assert.deepEqual(cronJobs.validateCreate(object), []);
  delete spec.schedule;
  assert.deepEqual(
    cronJobs.validateCreate(object).map((c) => c.field),
    ["spec.schedule"],
  );
});
