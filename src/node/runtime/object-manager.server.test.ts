// The node's watch of the ConfigMaps and Secrets its pods use, against the embedded API server
// under the node's own identity (the Node authorizer allows a watch of one named object a pod
// on the node references): changes reach the pods that use the object, an immutable object is
// frozen and its watch stopped, a pod that goes takes its watches with it. No sandbox needed.

import assert from "node:assert/strict";
import { test } from "node:test";
import { GVR, type ConfigMap, type Pod, type Secret } from "../../api/index.ts";
import { realClock, silentLogger } from "../../base/index.ts";
import { nodeClient } from "../../../test/harness/kube-server.ts";
import { testServer } from "../../../test/harness/node.ts";
import { defer } from "../../../test/harness/cleanup.ts";
import { until } from "../../../test/harness/until.ts";
import { ObjectManager, referencedObjects } from "./object-manager.ts";

const NS = "default";

function configMap(name: string, data: Record<string, string>, immutable?: boolean): ConfigMap {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace: NS },
    data,
    ...(immutable ? { immutable } : {}),
  };
}

test("referencedObjects: volumes, projections and env name ConfigMaps and Secrets", () => {
  const pod: Pod = {
    metadata: { name: "p", namespace: NS },
    spec: {
      volumes: [
        { name: "a", configMap: { name: "cm-vol" } },
        { name: "b", secret: { secretName: "sec-vol" } },
        {
          name: "c",
          projected: { sources: [{ configMap: { name: "cm-proj" } }, { secret: { name: "sec-proj" } }] },
        },
      ],
      initContainers: [{ name: "i", envFrom: [{ secretRef: { name: "sec-envfrom" } }] }],
      containers: [
        {
          name: "m",
          env: [{ name: "X", valueFrom: { configMapKeyRef: { name: "cm-env", key: "k" } } }],
        },
      ],
    },
  };
  assert.deepEqual([...referencedObjects(pod)].sort(), [
    "configmap/cm-env",
    "configmap/cm-proj",
    "configmap/cm-vol",
    "secret/sec-envfrom",
    "secret/sec-proj",
    "secret/sec-vol",
  ]);
});

test("a change of a watched object reaches the pods using it; immutable ones are frozen; an unregistered pod is told nothing", async (t) => {
  const server = await testServer(t);
  const admin = server.client();
  defer(t, () => admin.close());
  await admin.create<ConfigMap>(GVR.configMaps, configMap("live", { k: "1" }));
  await admin.create<ConfigMap>(GVR.configMaps, configMap("frozen", { k: "f1" }, true));
  await admin.create<Secret>(GVR.secrets, {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "pw", namespace: NS },
    stringData: { p: "one" },
  });
  const pod = await admin.create<Pod>(GVR.pods, {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "user", namespace: NS },
    spec: {
      nodeName: "node-a",
      containers: [{ name: "app", image: "none" }],
      volumes: [
        { name: "a", configMap: { name: "live" } },
        { name: "b", configMap: { name: "frozen" } },
        { name: "c", secret: { secretName: "pw" } },
      ],
    },
  });
  const uid = pod.metadata?.uid ?? "";
  const told: string[] = [];
  const manager = new ObjectManager({
    client: nodeClient(admin, "node-a"),
    clock: realClock,
    logger: silentLogger,
    onChange: (uids) => told.push(...uids),
  });
  defer(t, () => manager.stop());
  manager.register(pod);
  // First reads (before or after the watches sync) see the objects.
  assert.equal((await manager.get<ConfigMap>("configmap", NS, "live"))?.data?.k, "1");
  await until(() => told.length >= 3, "each watch's first list reported");
  assert.deepEqual(new Set(told), new Set([uid]));

  told.length = 0;
  await admin.update<ConfigMap>(GVR.configMaps, configMap("live", { k: "2" }));
  await until(() => told.length > 0, "the change reported");
  await until(
    async () => (await manager.get<ConfigMap>("configmap", NS, "live"))?.data?.k === "2",
    "the new data served",
  );
  await admin.patch(GVR.secrets, "pw", { stringData: { p: "two" } }, { namespace: NS });
  await until(
    async () =>
      Buffer.from((await manager.get<Secret>("secret", NS, "pw"))?.data?.p ?? "", "base64").toString() ===
      "two",
    "the secret's new data served",
  );

  // The immutable one, deleted and made again with other data: still the first, as upstream.
  await admin.delete(GVR.configMaps, "frozen", { namespace: NS });
  await admin.create<ConfigMap>(GVR.configMaps, configMap("frozen", { k: "f2" }, true));
  await admin.update<ConfigMap>(GVR.configMaps, configMap("live", { k: "3" }));
  await until(
    async () => (await manager.get<ConfigMap>("configmap", NS, "live"))?.data?.k === "3",
    "a later change served",
  );
  assert.equal((await manager.get<ConfigMap>("configmap", NS, "frozen"))?.data?.k, "f1");

  // Once the pod is gone from the manager, its objects are not watched for it any more.
  manager.unregister(uid);
  told.length = 0;
  await admin.update<ConfigMap>(GVR.configMaps, configMap("live", { k: "4" }));
  // A read now goes to the API (no watch): it sees the change, and nobody was told of it.
  assert.equal((await manager.get<ConfigMap>("configmap", NS, "live"))?.data?.k, "4");
  assert.deepEqual(told, []);
});
