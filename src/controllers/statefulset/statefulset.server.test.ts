// The statefulset-controller against the real API server, under the controllers' own identity
// and Role (deploy/rbac/csikit-controllers.yaml) with the garbage collector beside it, as
// `csikit up` runs them; the test plays the user (admin) and the kubelet (marks pods Ready).
// OrderedReady vs Parallel ordering, scale up/down, claims before pods with upstream's labels
// and events, the retention policy both ways, rolling update by partition with kubectl's rollout
// status/history/undo.

import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import {
  GVR,
  type ControllerRevision,
  type PersistentVolumeClaim,
  type Pod,
  type StatefulSet,
} from "../../api/index.ts";
import type { KubeClient } from "../../kube/index.ts";
import {
  NS,
  eventsFor,
  markPodReady,
  runLoops,
  startControllersCluster,
  type ControllersCluster,
} from "../../../test/harness/controllers.ts";
import { forbidden, describeEvent } from "../../../test/harness/rbac.ts";
import { defer } from "../../../test/harness/cleanup.ts";
import { kubectl, kubectlMissing } from "../../../test/harness/kubectl.ts";
import { until } from "../../../test/harness/until.ts";
import { STATEFULSET_LABELS } from "./identity.ts";

// pvc-protection: the admission plugin puts its finalizer on every claim; the loop lets a claim go.
const LOOPS = ["statefulset", "garbage-collector-controller", "pvc-protection"];
const WAIT = { timeoutMs: 60_000 };

function statefulSet(
  name: string,
  options: {
    replicas: number;
    parallel?: boolean;
    whenScaled?: "Retain" | "Delete";
    whenDeleted?: "Retain" | "Delete";
    partition?: number;
  },
): StatefulSet {
  return {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: { name, namespace: NS },
    spec: {
      replicas: options.replicas,
      serviceName: name,
      selector: { matchLabels: { app: name } },
      podManagementPolicy: options.parallel ? "Parallel" : "OrderedReady",
      updateStrategy: { type: "RollingUpdate", rollingUpdate: { partition: options.partition ?? 0 } },
      persistentVolumeClaimRetentionPolicy: {
        whenScaled: options.whenScaled ?? "Retain",
        whenDeleted: options.whenDeleted ?? "Retain",
      },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          containers: [
            { name: "app", image: "busybox", volumeMounts: [{ name: "data", mountPath: "/data" }] },
          ],
        },
      },
      volumeClaimTemplates: [
        {
          metadata: { name: "data", labels: { tier: "storage" } },
          spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Mi" } } },
        },
      ],
    },
  };
}

async function podNames(client: KubeClient, set: string): Promise<string[]> {
  const list = await client.list<Pod>(GVR.pods, { namespace: NS, labelSelector: `app=${set}` });
  return list.items
    .filter((pod) => !pod.metadata.deletionTimestamp)
    .map((pod) => pod.metadata.name ?? "")
    .sort();
}

async function claimNames(client: KubeClient, set: string): Promise<string[]> {
  const list = await client.list<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
    namespace: NS,
    labelSelector: `app=${set}`,
  });
  return list.items.map((claim) => claim.metadata.name ?? "").sort();
}

const getSet = (client: KubeClient, name: string): Promise<StatefulSet> =>
  client.get<StatefulSet>(GVR.statefulSets, name, { namespace: NS });

async function scale(client: KubeClient, name: string, replicas: number): Promise<void> {
  await client.patch(GVR.statefulSets, name, { spec: { replicas } }, { namespace: NS });
}

/** The kubelet's part for every pod of the set: Running and Ready as soon as it exists. */
function readyAllPods(t: TestContext, client: KubeClient, set: string): void {
  const controller = new AbortController();
  const loop = (async () => {
    while (!controller.signal.aborted) {
      const list = await client
        .list<Pod>(GVR.pods, { namespace: NS, labelSelector: `app=${set}` })
        .catch(() => undefined);
      for (const pod of list?.items ?? [])
        if (pod.status?.phase !== "Running" && !pod.metadata.deletionTimestamp)
          await markPodReady(client, pod.metadata.name ?? "").catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  defer(t, async () => {
    controller.abort();
    await loop;
  });
}

async function start(t: TestContext): Promise<ControllersCluster> {
  const cluster = await startControllersCluster(t);
  const loops = runLoops(cluster.controllers, { controllers: LOOPS });
  defer(t, () => loops.stop());
  defer(t, () => {
    const refused = forbidden(cluster.rbac.audit, "system:kube-controller-manager").map(describeEvent);
    assert.deepEqual(refused, [], "requests the controllers' Role refuses");
  });
  return cluster;
}

test("OrderedReady: one ordinal at a time, each claim before its pod; scale down from the highest ordinal; Retain keeps claims", async (t) => {
  const { admin } = await start(t);
  await admin.create(GVR.statefulSets, statefulSet("ord", { replicas: 3 }));
  await until(async () => (await podNames(admin, "ord")).length === 1 || undefined, "ord-0 created", WAIT);
  const claim = await admin.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "data-ord-0", {
    namespace: NS,
  });
  const pod = await admin.get<Pod>(GVR.pods, "ord-0", { namespace: NS });
  assert.ok(
    BigInt(claim.metadata.resourceVersion ?? "0") < BigInt(pod.metadata.resourceVersion ?? "0"),
    "the claim is written before its pod",
  );
  assert.deepEqual(
    claim.metadata.labels,
    { tier: "storage", app: "ord" },
    "template labels plus the selector's",
  );
  assert.equal(claim.metadata.ownerReferences, undefined, "Retain/Retain: no owner");
  assert.equal(pod.metadata.labels?.[STATEFULSET_LABELS.podName], "ord-0");
  assert.equal(pod.metadata.labels?.[STATEFULSET_LABELS.podIndex], "0");
  assert.match(
    pod.metadata.labels?.[STATEFULSET_LABELS.revision] ?? "",
    /^ord-[bcdfghjklmnpqrstvwxz2456789]+$/,
  );
  assert.deepEqual(pod.spec?.volumes?.[0], {
    name: "data",
    persistentVolumeClaim: { claimName: "data-ord-0" },
  });
  assert.equal(pod.spec?.hostname, "ord-0");
  assert.equal(pod.spec?.subdomain, "ord");
  const owner = pod.metadata.ownerReferences?.[0];
  assert.equal(owner?.kind, "StatefulSet");
  assert.equal(owner?.controller, true);
  // Not Ready: nothing more is created.
  await until(
    async () => (await getSet(admin, "ord")).status?.replicas === 1 || undefined,
    "status.replicas 1",
    WAIT,
  );
  assert.deepEqual(await podNames(admin, "ord"), ["ord-0"], "ord-1 waits for ord-0 to be Ready");
  await markPodReady(admin, "ord-0");
  await until(
    async () => (await podNames(admin, "ord")).includes("ord-1") || undefined,
    "ord-1 created",
    WAIT,
  );
  assert.deepEqual(await podNames(admin, "ord"), ["ord-0", "ord-1"]);
  await markPodReady(admin, "ord-1");
  await until(
    async () => (await podNames(admin, "ord")).includes("ord-2") || undefined,
    "ord-2 created",
    WAIT,
  );
  await markPodReady(admin, "ord-2");
  const ready = await until(
    async () => {
      const set = await getSet(admin, "ord");
      return set.status?.readyReplicas === 3 ? set : undefined;
    },
    "3 ready",
    WAIT,
  );
  assert.equal(ready.status?.replicas, 3);
  assert.equal(ready.status?.availableReplicas, 3);
  assert.equal(ready.status?.currentReplicas, 3);
  assert.equal(ready.status?.updatedReplicas, 3);
  assert.equal(ready.status?.currentRevision, ready.status?.updateRevision);
  assert.equal(ready.status?.observedGeneration, ready.metadata.generation);
  const messages = (await eventsFor(admin, "ord")).map((event) => `${event.reason}: ${event.message}`);
  assert.ok(
    messages.includes("SuccessfulCreate: create Claim data-ord-0 Pod ord-0 in StatefulSet ord success"),
    messages.join("\n"),
  );
  assert.ok(
    messages.includes("SuccessfulCreate: create Pod ord-2 in StatefulSet ord successful"),
    messages.join("\n"),
  );

  await scale(admin, "ord", 1);
  await until(async () => (await podNames(admin, "ord")).length === 1 || undefined, "scaled down to 1", WAIT);
  const deletions = (await eventsFor(admin, "ord"))
    .filter((event) => event.reason === "SuccessfulDelete")
    .sort(
      (a, b) =>
        (a.firstTimestamp ?? "").localeCompare(b.firstTimestamp ?? "") ||
        Number(a.metadata?.resourceVersion) - Number(b.metadata?.resourceVersion),
    )
    .map((event) => event.message);
  assert.deepEqual(deletions, [
    "delete Pod ord-2 in StatefulSet ord successful",
    "delete Pod ord-1 in StatefulSet ord successful",
  ]);
  assert.deepEqual(
    await claimNames(admin, "ord"),
    ["data-ord-0", "data-ord-1", "data-ord-2"],
    "Retain keeps every claim",
  );
  await until(
    async () => (await getSet(admin, "ord")).status?.replicas === 1 || undefined,
    "status follows",
    WAIT,
  );
});

test("Parallel: every pod at once, without waiting for readiness; whenScaled Delete deletes the claims of removed ordinals; whenDeleted Retain keeps the rest", async (t) => {
  const { admin } = await start(t);
  await admin.create(
    GVR.statefulSets,
    statefulSet("par", { replicas: 4, parallel: true, whenScaled: "Delete" }),
  );
  await until(
    async () => (await podNames(admin, "par")).length === 4 || undefined,
    "4 pods, none ready",
    WAIT,
  );
  assert.deepEqual(await claimNames(admin, "par"), ["data-par-0", "data-par-1", "data-par-2", "data-par-3"]);
  const inRange = await admin.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "data-par-3", {
    namespace: NS,
  });
  assert.equal(
    inRange.metadata.ownerReferences,
    undefined,
    "a kept ordinal's claim has no owner under whenDeleted Retain",
  );
  await scale(admin, "par", 2);
  await until(
    async () => (await claimNames(admin, "par")).length === 2 || undefined,
    "claims of ordinals 2 and 3 deleted",
    WAIT,
  );
  assert.deepEqual(await claimNames(admin, "par"), ["data-par-0", "data-par-1"]);
  assert.deepEqual(await podNames(admin, "par"), ["par-0", "par-1"]);
  await admin.delete(GVR.statefulSets, "par", { namespace: NS });
  await until(
    async () => (await podNames(admin, "par")).length === 0 || undefined,
    "pods collected with the set",
    WAIT,
  );
  assert.deepEqual(
    await claimNames(admin, "par"),
    ["data-par-0", "data-par-1"],
    "whenDeleted Retain keeps claims",
  );
});

test("whenDeleted Delete: the set controls its claims, deleting the set deletes them; whenScaled Retain keeps a removed ordinal's claim", async (t) => {
  const { admin } = await start(t);
  await admin.create(
    GVR.statefulSets,
    statefulSet("gone", { replicas: 3, parallel: true, whenDeleted: "Delete" }),
  );
  await until(async () => (await claimNames(admin, "gone")).length === 3 || undefined, "3 claims", WAIT);
  const set = await getSet(admin, "gone");
  const claim = await admin.get<PersistentVolumeClaim>(GVR.persistentVolumeClaims, "data-gone-0", {
    namespace: NS,
  });
  assert.deepEqual(claim.metadata.ownerReferences, [
    {
      apiVersion: "apps/v1",
      kind: "StatefulSet",
      name: "gone",
      uid: set.metadata.uid,
      controller: true,
      blockOwnerDeletion: true,
    },
  ]);
  await scale(admin, "gone", 2);
  await until(async () => (await podNames(admin, "gone")).length === 2 || undefined, "gone-2 deleted", WAIT);
  assert.equal((await claimNames(admin, "gone")).length, 3, "whenScaled Retain keeps data-gone-2");
  await admin.delete(GVR.statefulSets, "gone", { namespace: NS });
  await until(
    async () => (await claimNames(admin, "gone")).length === 0 || undefined,
    "every claim the set controlled deleted",
    WAIT,
  );
});

test(
  "rolling update by partition: ordinals >= partition get the new revision, highest first; kubectl rollout status, history and undo",
  { skip: kubectlMissing() },
  async (t) => {
    const { admin, rbac } = await start(t);
    readyAllPods(t, admin, "roll");
    await admin.create(GVR.statefulSets, statefulSet("roll", { replicas: 3, parallel: true, partition: 2 }));
    const first = await until(
      async () => {
        const set = await getSet(admin, "roll");
        return set.status?.readyReplicas === 3 ? set : undefined;
      },
      "3 ready",
      WAIT,
    );
    const status = await kubectl(["rollout", "status", "statefulset/roll", "-n", NS, "--timeout=60s"], {
      kubeconfig: rbac.kubeconfig,
    });
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /partitioned roll out complete: 3 new pods have been updated/);
    await admin.patch(
      GVR.statefulSets,
      "roll",
      { spec: { template: { metadata: { annotations: { release: "2" } } } } },
      { namespace: NS },
    );
    const partitioned = await until(
      async () => {
        const set = await getSet(admin, "roll");
        return set.status?.updatedReplicas === 1 && set.status.readyReplicas === 3 ? set : undefined;
      },
      "roll-2 updated",
      WAIT,
    );
    const update = partitioned.status?.updateRevision ?? "";
    assert.notEqual(update, first.status?.currentRevision);
    assert.equal(partitioned.status?.currentRevision, first.status?.currentRevision);
    const revisionOf = async (name: string): Promise<string> =>
      (await admin.get<Pod>(GVR.pods, name, { namespace: NS })).metadata.labels?.[
        STATEFULSET_LABELS.revision
      ] ?? "";
    assert.equal(await revisionOf("roll-2"), update);
    assert.equal(await revisionOf("roll-1"), first.status?.currentRevision, "below the partition: untouched");
    const partial = await kubectl(["rollout", "status", "statefulset/roll", "-n", NS, "--timeout=60s"], {
      kubeconfig: rbac.kubeconfig,
    });
    assert.match(partial.stdout, /partitioned roll out complete: 1 new pods have been updated/);

    await admin.patch(
      GVR.statefulSets,
      "roll",
      { spec: { updateStrategy: { rollingUpdate: { partition: 0 } } } },
      { namespace: NS },
    );
    const done = await kubectl(["rollout", "status", "statefulset/roll", "-n", NS, "--timeout=60s"], {
      kubeconfig: rbac.kubeconfig,
    });
    assert.equal(done.code, 0, done.stderr);
    // kubectl reads any set with rollingUpdate (defaulted, partition 0) as partitioned.
    assert.match(done.stdout, /partitioned roll out complete: 3 new pods have been updated/);
    const complete = await getSet(admin, "roll");
    assert.equal(complete.status?.currentRevision, update);
    assert.equal(complete.status?.currentReplicas, 3);
    assert.deepEqual(await Promise.all(["roll-0", "roll-1", "roll-2"].map(revisionOf)), [
      update,
      update,
      update,
    ]);

    const revisions = await admin.list<ControllerRevision>(GVR.controllerRevisions, {
      namespace: NS,
      labelSelector: "app=roll",
    });
    assert.deepEqual(revisions.items.map((r) => r.revision).sort(), [1, 2]);
    const history = await kubectl(["rollout", "history", "statefulset/roll", "-n", NS], {
      kubeconfig: rbac.kubeconfig,
    });
    assert.equal(history.code, 0, history.stderr);
    assert.match(history.stdout, /REVISION\s+CHANGE-CAUSE\n1\s+<none>\n2\s+<none>/);
    const undo = await kubectl(["rollout", "undo", "statefulset/roll", "-n", NS], {
      kubeconfig: rbac.kubeconfig,
    });
    assert.equal(undo.code, 0, undo.stderr);
    const back = await until(
      async () => {
        const set = await getSet(admin, "roll");
        return set.status?.updateRevision === first.status?.currentRevision &&
          set.status?.currentRevision === set.status?.updateRevision &&
          set.status?.readyReplicas === 3
          ? set
          : undefined;
      },
      "rolled back to revision 1's template",
      WAIT,
    );
    assert.equal(back.spec?.template.metadata?.annotations?.release, undefined);
    const renumbered = await admin.get<ControllerRevision>(
      GVR.controllerRevisions,
      back.status?.updateRevision ?? "",
      { namespace: NS },
    );
    assert.equal(renumbered.revision, 3, "the restored revision becomes the newest");
  },
);

test(
  "kubectl scale (the /scale subresource): the controller reaches the count up and down, and the Scale shows it",
  { skip: kubectlMissing() },
  async (t) => {
    const { admin, rbac } = await start(t);
    readyAllPods(t, admin, "sc");
    await admin.create(GVR.statefulSets, statefulSet("sc", { replicas: 1 }));
    await until(
      async () => (await getSet(admin, "sc")).status?.readyReplicas === 1 || undefined,
      "1 ready",
      WAIT,
    );
    const run = (args: string[]) => kubectl(args, { kubeconfig: rbac.kubeconfig });
    const up = await run(["scale", "statefulset", "sc", "-n", NS, "--replicas=3"]);
    assert.equal(up.code, 0, up.stderr);
    const scaled = await until(
      async () => {
        const set = await getSet(admin, "sc");
        return set.status?.readyReplicas === 3 && set.status.observedGeneration === set.metadata.generation
          ? set
          : undefined;
      },
      "3 ready after kubectl scale",
      WAIT,
    );
    assert.equal(scaled.spec?.replicas, 3);
    assert.deepEqual(await podNames(admin, "sc"), ["sc-0", "sc-1", "sc-2"]);
    assert.deepEqual(await claimNames(admin, "sc"), ["data-sc-0", "data-sc-1", "data-sc-2"]);
    const scale = await run(["get", "--raw", `/apis/apps/v1/namespaces/${NS}/statefulsets/sc/scale`]);
    assert.equal(scale.code, 0, scale.stderr);
    const shown = JSON.parse(scale.stdout) as { spec: unknown; status: unknown };
    assert.deepEqual(shown.spec, { replicas: 3 });
    assert.deepEqual(shown.status, { replicas: 3, selector: "app=sc" });
    const down = await run(["scale", "statefulset", "sc", "-n", NS, "--replicas=1"]);
    assert.equal(down.code, 0, down.stderr);
    await until(
      async () => (await podNames(admin, "sc")).length === 1 || undefined,
      "scaled down to 1",
      WAIT,
    );
    assert.deepEqual(await podNames(admin, "sc"), ["sc-0"]);
    await until(
      async () => (await getSet(admin, "sc")).status?.replicas === 1 || undefined,
      "status follows",
      WAIT,
    );
  },
);
