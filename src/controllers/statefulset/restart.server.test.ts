// kill -9 of `csikit controllers` (its own process, the controllers' identity and Role) in the
// middle of a StatefulSet's scale-up and again in the middle of its scale-down: the restarted
// process converges on the same pods and claims, and the API server's audit shows each pod and
// each claim created exactly once (names are deterministic, claims go before pods, and every
// decision is re-read from the caches after the restart), and nothing deleted that the policy
// keeps.

import assert from "node:assert/strict";
import { test } from "node:test";
import { GVR, type PersistentVolumeClaim, type Pod, type StatefulSet } from "../../api/index.ts";
import type { KubeClient } from "../../kube/index.ts";
import { NS, CONTROLLERS_USER, startControllersCluster } from "../../../test/harness/controllers.ts";
import { describeEvent, forbidden, spawnComponent } from "../../../test/harness/rbac.ts";
import { until } from "../../../test/harness/until.ts";

const REPLICAS = 40;
const SCALED = 10;
const WAIT = { timeoutMs: 120_000 };

function statefulSet(): StatefulSet {
  return {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: { name: "crash", namespace: NS },
    spec: {
      replicas: REPLICAS,
      podManagementPolicy: "Parallel",
      persistentVolumeClaimRetentionPolicy: { whenScaled: "Delete", whenDeleted: "Retain" },
      selector: { matchLabels: { app: "crash" } },
      template: {
        metadata: { labels: { app: "crash" } },
        spec: { containers: [{ name: "app", image: "busybox" }] },
      },
      volumeClaimTemplates: [
        {
          metadata: { name: "data" },
          spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Mi" } } },
        },
      ],
    },
  };
}

async function names(client: KubeClient, resource: typeof GVR.pods): Promise<string[]> {
  const list = await client.list<Pod | PersistentVolumeClaim>(resource, {
    namespace: NS,
    labelSelector: "app=crash",
  });
  return list.items
    .filter((item) => !item.metadata.deletionTimestamp)
    .map((item) => item.metadata.name ?? "")
    .sort();
}

const expected = (prefix: string, count: number): string[] =>
  Array.from({ length: count }, (_, i) => `${prefix}crash-${i}`).sort();

test(
  "kill -9 of the controllers mid scale-up and mid scale-down: no pod or claim made twice, the end state converges",
  { timeout: 300_000 },
  async (t) => {
    const { rbac, admin, controllersKubeconfig } = await startControllersCluster(t);
    const run = () =>
      spawnComponent(t, {
        name: "controllers",
        subcommand: "controllers",
        args: [
          `--kubeconfig=${controllersKubeconfig}`,
          "--controllers=statefulset,garbage-collector-controller,pvc-protection",
          "--leader-elect=false",
          "--secure-port=0",
          "--kube-api-qps=1000",
          "--kube-api-burst=1000",
        ],
      });
    let controllers = run();
    await admin.create(GVR.statefulSets, statefulSet());
    // Killed as soon as the first claim exists: the burst of creates is under way.
    await until(
      async () => (await names(admin, GVR.persistentVolumeClaims)).length > 0 || undefined,
      "first claim",
      WAIT,
    );
    controllers.child.kill("SIGKILL");
    await controllers.stop();
    const atKill = {
      pods: (await names(admin, GVR.pods)).length,
      claims: (await names(admin, GVR.persistentVolumeClaims)).length,
    };
    t.diagnostic(`scale-up killed with ${atKill.claims} claims and ${atKill.pods} pods`);
    controllers = run();
    await until(
      async () => (await names(admin, GVR.pods)).length === REPLICAS || undefined,
      `${REPLICAS} pods`,
      WAIT,
    );
    assert.deepEqual(await names(admin, GVR.pods), expected("", REPLICAS));
    assert.deepEqual(await names(admin, GVR.persistentVolumeClaims), expected("data-", REPLICAS));

    await admin.patch(GVR.statefulSets, "crash", { spec: { replicas: SCALED } }, { namespace: NS });
    await until(
      async () => (await names(admin, GVR.pods)).length < REPLICAS || undefined,
      "first pod deleted",
      WAIT,
    );
    controllers.child.kill("SIGKILL");
    await controllers.stop();
    controllers = run();
    await until(
      async () =>
        ((await names(admin, GVR.pods)).length === SCALED &&
          (await names(admin, GVR.persistentVolumeClaims)).length === SCALED) ||
        undefined,
      `scaled to ${SCALED}, claims of removed ordinals collected`,
      WAIT,
    );
    assert.deepEqual(await names(admin, GVR.pods), expected("", SCALED));
    assert.deepEqual(await names(admin, GVR.persistentVolumeClaims), expected("data-", SCALED));
    const status = await until(
      async () => {
        const set = await admin.get<StatefulSet>(GVR.statefulSets, "crash", { namespace: NS });
        return set.status?.replicas === SCALED ? set.status : undefined;
      },
      "status.replicas follows",
      WAIT,
    );
    assert.equal(status.updatedReplicas, SCALED);
    await controllers.stop();

    const ours = rbac.audit.filter((e) => e.user.username === CONTROLLERS_USER);
    const creates = (resource: string, code: number): number =>
      ours.filter(
        (e) => e.verb === "create" && e.objectRef?.resource === resource && e.responseStatus.code === code,
      ).length;
    const created = (resource: string): number => creates(resource, 201);
    // A create in flight when the process was killed is audited when its connection closes,
    // before any answer (code 200, never a create's own): it may or may not have been stored,
    // so it counts as at most one of the objects. Made twice would show as more 201s.
    const cut = (resource: string): number => creates(resource, 200);
    for (const resource of ["pods", "persistentvolumeclaims"]) {
      assert.ok(cut(resource) <= 1, `at most the one ${resource} create cut by the kill`);
      assert.ok(created(resource) <= REPLICAS, `no ${resource} created twice: ${created(resource)} creates`);
      assert.ok(created(resource) + cut(resource) >= REPLICAS, `every ${resource} created once`);
    }
    assert.equal(created("controllerrevisions"), 1, "one revision");
    const podDeletes = ours.filter(
      (e) => e.verb === "delete" && e.objectRef?.resource === "pods" && e.responseStatus.code === 200,
    );
    assert.equal(podDeletes.length, REPLICAS - SCALED, "each removed ordinal's pod deleted once");
    assert.deepEqual(forbidden(rbac.audit, CONTROLLERS_USER).map(describeEvent), []);
  },
);
