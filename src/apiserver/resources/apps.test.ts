// The apps kinds' validation as kube-apiserver's: a StatefulSet's pod template is not validated
// as a pod (its containers mount the volumeClaimTemplates), the other kinds' templates are.

import { test } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject, ResourceDef } from "../rest/resource.ts";
import { deployments, statefulSets } from "./apps.ts";

function workload(kind: string, extra: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: "apps/v1",
    kind,
    metadata: { name: "web", namespace: "default" },
    spec: {
      selector: { matchLabels: { app: "web" } },
      template: {
        metadata: { labels: { app: "web" } },
        spec: {
          containers: [{ name: "app", image: "nginx", volumeMounts: [{ name: "data", mountPath: "/data" }] }],
        },
      },
      ...extra,
    },
  };
}

function errors(def: ResourceDef, object: KubeObject): string[] {
  def.applyDefaults(object);
  return def.validateCreate(object).map((cause) => `${cause.field}: ${cause.message}`);
}

test("a StatefulSet's container mounts its volumeClaimTemplate", () => {
  const claim = { metadata: { name: "data" }, spec: { accessModes: ["ReadWriteOnce"] } };
  assert.deepEqual(errors(statefulSets, workload("StatefulSet", { volumeClaimTemplates: [claim] })), []);
});

test("a Deployment's template is validated as a pod: an unknown volume is not found", () => {
  assert.deepEqual(errors(deployments, workload("Deployment")), [
    'spec.template.spec.containers[0].volumeMounts[0].name: Not found: "data"',
  ]);
});

test("a StatefulSet refuses activeDeadlineSeconds and an unknown podManagementPolicy as upstream", () => {
  const object = workload("StatefulSet", { podManagementPolicy: "Random" });
  (object.spec as { template: { spec: Record<string, unknown> } }).template.spec.activeDeadlineSeconds = 5;
  assert.deepEqual(errors(statefulSets, object), [
    "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in StatefulSet is not Supported",
    "spec.podManagementPolicy: Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'",
  ]);
});
