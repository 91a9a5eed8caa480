// The node graph's edges as upstream's VisitPodSecretNames / VisitPodConfigmapNames /
// VisitPVSecretNames find them, and NodeRestriction's label rule, as tables.

import { test } from "node:test";
import assert from "node:assert/strict";
import { podReferences, pvSecrets } from "./node-graph.ts";
import { selectsField } from "./node-authz.ts";
import { forbiddenLabels } from "../admission/node-restriction.ts";

test("a pod refers to the secrets, configmaps, claims and ServiceAccount of every source", () => {
  const refs = podReferences({
    metadata: { name: "web", namespace: "default" },
    spec: {
      serviceAccountName: "runner",
      imagePullSecrets: [{ name: "pull" }],
      initContainers: [{ env: [{ name: "A", valueFrom: { secretKeyRef: { name: "init-env", key: "k" } } }] }],
      containers: [
        {
          envFrom: [{ secretRef: { name: "env-from" } }, { configMapRef: { name: "cm-from" } }],
          env: [{ name: "B", valueFrom: { configMapKeyRef: { name: "cm-key", key: "k" } } }],
        },
      ],
      ephemeralContainers: [{ envFrom: [{ secretRef: { name: "debug" } }] }],
      volumes: [
        { name: "s", secret: { secretName: "vol" } },
        { name: "c", configMap: { name: "cm-vol" } },
        {
          name: "p",
          projected: { sources: [{ secret: { name: "proj" } }, { configMap: { name: "cm-proj" } }] },
        },
        { name: "i", csi: { driver: "d", nodePublishSecretRef: { name: "inline" } } },
        { name: "r", rbd: { monitors: [], image: "x", secretRef: { name: "rbd" } } },
        { name: "a", azureFile: { secretName: "azure", shareName: "s" } },
        { name: "d", persistentVolumeClaim: { claimName: "data" } },
        { name: "scratch", ephemeral: { volumeClaimTemplate: { spec: {} } } },
      ],
    },
  });
  assert.deepEqual([...refs.secrets].sort(), [
    "azure",
    "debug",
    "env-from",
    "init-env",
    "inline",
    "proj",
    "pull",
    "rbd",
    "vol",
  ]);
  assert.deepEqual([...refs.configmaps].sort(), ["cm-from", "cm-key", "cm-proj", "cm-vol"]);
  assert.deepEqual([...refs.pvcs].sort(), ["data", "web-scratch"]);
  assert.equal(refs.serviceAccount, "runner");
});

test("a PV leads to its CSI secrets (own namespaces) and in-tree ones (the claim's by default)", () => {
  const pv = (spec: Record<string, unknown>) => ({ metadata: { name: "pv" }, spec });
  assert.deepEqual(
    pvSecrets(
      pv({
        csi: {
          driver: "d",
          volumeHandle: "h",
          nodeStageSecretRef: { namespace: "ops", name: "stage" },
          nodePublishSecretRef: { namespace: "ops", name: "publish" },
          controllerExpandSecretRef: { namespace: "kube-system", name: "expand" },
        },
      }),
      "default",
    ).sort(),
    ["kube-system/expand", "ops/publish", "ops/stage"],
  );
  assert.deepEqual(pvSecrets(pv({ cephfs: { monitors: [], secretRef: { name: "ceph" } } }), "apps"), [
    "apps/ceph",
  ]);
  assert.deepEqual(pvSecrets(pv({ azureFile: { secretName: "az", secretNamespace: "store" } }), "apps"), [
    "store/az",
  ]);
});

test("NodeRestriction's labels: node-restriction and unknown kubernetes.io/k8s.io keys, changed either way", () => {
  const cases: [Record<string, string>, Record<string, string>, string[]][] = [
    [{ "node-restriction.kubernetes.io/a": "x" }, {}, ["node-restriction.kubernetes.io/a"]],
    [{}, { "example.node-restriction.kubernetes.io/a": "x" }, ["example.node-restriction.kubernetes.io/a"]],
    [{ "kubernetes.io/role": "m" }, {}, ["kubernetes.io/role"]],
    [{ "k8s.io/x": "1", "sub.k8s.io/y": "2" }, {}, ["k8s.io/x", "sub.k8s.io/y"]],
    [{ "topology.kubernetes.io/zone": "z2" }, { "topology.kubernetes.io/zone": "z1" }, []],
    [{ "node.kubernetes.io/pool": "a", "x.kubelet.kubernetes.io/b": "c", "example.com/free": "v" }, {}, []],
    [{ "node-restriction.kubernetes.io/a": "same" }, { "node-restriction.kubernetes.io/a": "same" }, []],
  ];
  for (const [labels, old, expected] of cases)
    assert.deepEqual(forbiddenLabels(labels, old), expected, JSON.stringify({ labels, old }));
});

test("a fieldSelector selects a field by = or ==, among comma-separated terms", () => {
  assert.equal(selectsField("spec.nodeName=node-1", "spec.nodeName", "node-1"), true);
  assert.equal(selectsField("status.phase!=Failed,spec.nodeName==node-1", "spec.nodeName", "node-1"), true);
  assert.equal(selectsField("spec.nodeName!=node-1", "spec.nodeName", "node-1"), false);
  assert.equal(selectsField("spec.nodeName=node-10", "spec.nodeName", "node-1"), false);
  assert.equal(selectsField(undefined, "spec.nodeName", "node-1"), false);
});
