// The ephemeral-volume-controller against the real API server, under the controllers' own
// identity and Role, with the garbage collector and pvc-protection beside it: the claim
// "<pod>-<volume>" from the volume's template, controlled by the pod, deleted with it; a claim
// of that name the pod does not control is refused with upstream's FailedBinding event, and the
// scheduler refuses to place the pod on it.

import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import { GVR, type PersistentVolumeClaim, type Pod } from "../../api/index.ts";
import type { KubeClient } from "../../kube/index.ts";
import {
  NS,
  eventsFor,
  getOrUndefined,
  runLoops,
  startControllersCluster,
  type ControllersCluster,
} from "../../../test/harness/controllers.ts";
import { forbidden, describeEvent } from "../../../test/harness/rbac.ts";
import { defer } from "../../../test/harness/cleanup.ts";
import { until } from "../../../test/harness/until.ts";
import { EPHEMERAL_VOLUME_COMPONENT } from "./controller.ts";

const WAIT = { timeoutMs: 60_000 };

function podWithEphemeralVolume(name: string): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: NS },
    spec: {
      containers: [
        { name: "app", image: "busybox", volumeMounts: [{ name: "scratch", mountPath: "/scratch" }] },
      ],
      volumes: [
        {
          name: "scratch",
          ephemeral: {
            volumeClaimTemplate: {
              metadata: { labels: { kind: "scratch" }, annotations: { note: "from the template" } },
              spec: {
                accessModes: ["ReadWriteOnce"],
                resources: { requests: { storage: "1Mi" } },
                storageClassName: "scratch",
              },
            },
          },
        },
      ],
    },
  };
}

async function start(t: TestContext, loops: string[]): Promise<ControllersCluster> {
  const cluster = await startControllersCluster(t);
  const running = runLoops(cluster.controllers, { controllers: loops });
  defer(t, () => running.stop());
  defer(t, () => {
    const refused = forbidden(cluster.rbac.audit, "system:kube-controller-manager").map(describeEvent);
    assert.deepEqual(refused, [], "requests the controllers' Role refuses");
  });
  return cluster;
}

const claimOf = (client: KubeClient, name: string): Promise<PersistentVolumeClaim | undefined> =>
  getOrUndefined<PersistentVolumeClaim>(client, GVR.persistentVolumeClaims, name, NS);

test("the claim <pod>-<volume> is created from the template, controlled by the pod, made again if deleted under it, and collected with the pod", async (t) => {
  const { admin } = await start(t, ["ephemeral-volume", "garbage-collector-controller", "pvc-protection"]);
  const pod = await admin.create<Pod>(GVR.pods, podWithEphemeralVolume("eph"));
  const claim = await until(() => claimOf(admin, "eph-scratch"), "claim eph-scratch created", WAIT);
  assert.deepEqual(claim.metadata.ownerReferences, [
    {
      apiVersion: "v1",
      kind: "Pod",
      name: "eph",
      uid: pod.metadata.uid,
      controller: true,
      blockOwnerDeletion: true,
    },
  ]);
  assert.deepEqual(claim.metadata.labels, { kind: "scratch" });
  assert.equal(claim.metadata.annotations?.note, "from the template");
  assert.equal(claim.spec?.storageClassName, "scratch");
  assert.deepEqual(claim.spec?.resources?.requests, { storage: "1Mi" });

  // Deleted under the pod (pvc-protection lets it go: the pod is not scheduled): made again.
  await admin.delete(GVR.persistentVolumeClaims, "eph-scratch", { namespace: NS });
  await until(
    async () => {
      const again = await claimOf(admin, "eph-scratch");
      return again !== undefined && again.metadata.uid !== claim.metadata.uid ? again : undefined;
    },
    "claim made again",
    WAIT,
  );

  await admin.delete(GVR.pods, "eph", { namespace: NS });
  await until(
    async () => (await claimOf(admin, "eph-scratch")) === undefined,
    "claim collected with its pod",
    WAIT,
  );
});

test("a claim of that name the pod does not control is refused: FailedBinding on the pod, the scheduler does not place it", async (t) => {
  const { admin } = await start(t, ["ephemeral-volume", "scheduler"]);
  await admin.create(GVR.nodes, { apiVersion: "v1", kind: "Node", metadata: { name: "node-1" } });
  await admin.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name: "taken-scratch", namespace: NS },
    spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Mi" } } },
  });
  await admin.create(GVR.pods, podWithEphemeralVolume("taken"));
  const expected = `PVC ${NS}/taken-scratch was not created for pod ${NS}/taken (pod is not owner)`;
  const event = await until(
    async () => (await eventsFor(admin, "taken")).find((e) => e.reason === "FailedBinding"),
    "FailedBinding on the pod",
    WAIT,
  );
  assert.equal(event.type, "Warning");
  assert.equal(event.source?.component, EPHEMERAL_VOLUME_COMPONENT);
  assert.equal(event.message, `ephemeral volume scratch: ${expected}`);
  const scheduling = await until(
    async () => {
      const current = await admin.get<Pod>(GVR.pods, "taken", { namespace: NS });
      return current.status?.conditions?.find((c) => c.type === "PodScheduled" && c.status === "False");
    },
    "PodScheduled False",
    WAIT,
  );
  assert.ok(scheduling.message?.includes(expected), scheduling.message);
  const current = await admin.get<Pod>(GVR.pods, "taken", { namespace: NS });
  assert.equal(current.spec?.nodeName, undefined, "not placed on a claim it does not own");
  const claim = await claimOf(admin, "taken-scratch");
  assert.equal(claim?.metadata.ownerReferences, undefined, "the other claim is left as it was");
});
