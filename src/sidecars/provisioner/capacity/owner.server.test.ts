// --capacity-ownerref-level against the real embedded API server: a Pod → ReplicaSet →
// Deployment chain and the owner each level yields; missing links fail with a clear error; the
// owner lands on the objects, also on objects adopted from an instance without an owner.
// The embedded server does not serve apps/v1, and (as a real API server) refuses custom
// resources in group "apps" (a CRD group needs a dot), so the test installs ReplicaSet and
// Deployment as custom resources in group "apps.csikit.test": the lookup is generic — API
// discovery for the kind's resource, then a plain GET — so it walks them exactly as it walks a
// real cluster's apps/v1 objects.

import assert from "node:assert/strict";
import { test } from "node:test";
import { GVR, type OwnerReference } from "../../../api/index.ts";
import type { KubeClient, KubeObject } from "../../../kube/index.ts";
import { resolveCapacityOwner } from "./index.ts";
import {
  GiB,
  NAMESPACE,
  addClass,
  addNode,
  capacityEnv,
  listCapacities,
  runCapacity,
  untilObjects,
} from "../../../../test/harness/capacity.ts";
import { until } from "../../../../test/harness/until.ts";

const CRDS = { group: "apiextensions.k8s.io", version: "v1", resource: "customresourcedefinitions" };
const APPS = "apps.csikit.test";
const APPS_V1 = `${APPS}/v1`;
const REPLICASETS = { group: APPS, version: "v1", resource: "replicasets" };
const DEPLOYMENTS = { group: APPS, version: "v1", resource: "deployments" };

async function installAppsKinds(client: KubeClient): Promise<void> {
  for (const [plural, kind] of [
    ["replicasets", "ReplicaSet"],
    ["deployments", "Deployment"],
  ] as const) {
    await client.create<KubeObject & { spec: unknown }>(CRDS, {
      apiVersion: "apiextensions.k8s.io/v1",
      kind: "CustomResourceDefinition",
      metadata: { name: `${plural}.${APPS}` },
      spec: {
        group: APPS,
        scope: "Namespaced",
        names: { plural, singular: kind.toLowerCase(), kind },
        versions: [
          {
            name: "v1",
            served: true,
            storage: true,
            schema: { openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true } },
          },
        ],
      },
    });
  }
  await until(async () => {
    try {
      const list = await client.request<{ resources?: { name: string }[] }>({
        method: "GET",
        path: `/apis/${APPS_V1}`,
      });
      const names = (list.resources ?? []).map((r) => r.name);
      return names.includes("replicasets") && names.includes("deployments");
    } catch {
      return false;
    }
  }, "the stand-in apps kinds served");
}

interface Chain {
  deployment: KubeObject;
  replicaSet: KubeObject;
  pod: KubeObject;
}

function controllerRef(apiVersion: string, kind: string, object: KubeObject): OwnerReference {
  return {
    apiVersion,
    kind,
    name: object.metadata?.name ?? "",
    uid: object.metadata?.uid ?? "",
    controller: true,
  };
}

async function createChain(client: KubeClient): Promise<Chain> {
  const deployment = await client.create<KubeObject>(DEPLOYMENTS, {
    apiVersion: APPS_V1,
    kind: "Deployment",
    metadata: { name: "csi-provisioner", namespace: NAMESPACE },
  });
  const replicaSet = await client.create<KubeObject>(REPLICASETS, {
    apiVersion: APPS_V1,
    kind: "ReplicaSet",
    metadata: {
      name: "csi-provisioner-6f7d9",
      namespace: NAMESPACE,
      ownerReferences: [controllerRef(APPS_V1, "Deployment", deployment)],
    },
  });
  const pod = await client.create<KubeObject>(GVR.pods, {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: "csi-provisioner-6f7d9-x2k4q",
      namespace: NAMESPACE,
      ownerReferences: [
        // A non-controller owner first: only the controller reference is followed.
        { apiVersion: "v1", kind: "ConfigMap", name: "unrelated", uid: "0000", controller: false },
        controllerRef(APPS_V1, "ReplicaSet", replicaSet),
      ],
    },
    spec: { containers: [{ name: "csi-provisioner", image: "csikit" }] },
  } as KubeObject);
  return { deployment, replicaSet, pod };
}

test("ownerref levels: -1 none, 0 the pod, 1 its ReplicaSet, 2 the Deployment, 3 an error", async (t) => {
  const env = await capacityEnv(t);
  await installAppsKinds(env.client);
  const chain = await createChain(env.client);
  const resolve = (level: number) =>
    resolveCapacityOwner(env.client, {
      namespace: NAMESPACE,
      podName: chain.pod.metadata?.name ?? "",
      level,
    });

  assert.equal(await resolve(-1), null);
  assert.deepEqual(await resolve(0), controllerRef("v1", "Pod", chain.pod));
  assert.deepEqual(await resolve(1), controllerRef(APPS_V1, "ReplicaSet", chain.replicaSet));
  assert.deepEqual(await resolve(2), controllerRef(APPS_V1, "Deployment", chain.deployment));
  await assert.rejects(
    resolve(3),
    /apps\.csikit\.test\/v1\/Deployment "csi-provisioner" in namespace "csi-driver" has no controlling owner/,
  );
  await assert.rejects(
    resolveCapacityOwner(env.client, { namespace: NAMESPACE, podName: "no-such-pod", level: 1 }),
    /get v1\/Pod "no-such-pod" in namespace "csi-driver"/,
  );
  await assert.rejects(
    resolveCapacityOwner(env.client, { namespace: NAMESPACE, podName: "", level: 1 }),
    /need POD_NAME env variable/,
  );
});

test("level 1 takes the pod's controller reference without reading the controller (RBAC: get pods only)", async (t) => {
  const env = await capacityEnv(t);
  const ghost = {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    name: "csi-provisioner",
    uid: "1234-5678",
    controller: true,
  };
  await env.client.create<KubeObject>(GVR.pods, {
    metadata: { name: "csi-provisioner-0", namespace: NAMESPACE, ownerReferences: [ghost] },
    spec: { containers: [{ name: "csi-provisioner", image: "csikit" }] },
  } as KubeObject);
  assert.deepEqual(
    await resolveCapacityOwner(env.client, { namespace: NAMESPACE, podName: "csi-provisioner-0", level: 1 }),
    ghost,
  );
  await assert.rejects(
    resolveCapacityOwner(env.client, { namespace: NAMESPACE, podName: "csi-provisioner-0", level: 2 }),
    // apps/v1 is served; level 2 has to read the StatefulSet, which does not exist.
    /statefulsets\.apps "csi-provisioner" not found/,
  );
});

test("the owner is set on created objects and added to objects adopted from an instance without one", async (t) => {
  const env = await capacityEnv(t);
  await installAppsKinds(env.client);
  const chain = await createChain(env.client);
  await addNode(env.client, "n1", "a");
  await addClass(env.client, "fast", "fast");
  env.table.set("fast/a", { available: 2n * GiB });

  const ownerless = runCapacity(t, env, { ownerReference: null });
  const [before] = await untilObjects(env.client, ["fast a=2Gi"], "an object without owner");
  assert.equal(before?.metadata?.ownerReferences, undefined);
  await ownerless.stop();

  const owner = await resolveCapacityOwner(env.client, {
    namespace: NAMESPACE,
    podName: chain.pod.metadata?.name ?? "",
    level: 2,
  });
  runCapacity(t, env, { ownerReference: owner });
  const after = await until(async () => {
    const objects = await listCapacities(env.client);
    return objects.length === 1 && objects[0]?.metadata?.ownerReferences !== undefined
      ? objects[0]
      : undefined;
  }, "the owner added");
  assert.equal(after.metadata?.uid, before?.metadata?.uid, "the same object, updated");
  assert.deepEqual(after.metadata?.ownerReferences, [controllerRef(APPS_V1, "Deployment", chain.deployment)]);
});
