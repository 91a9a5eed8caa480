// The API server driven over real HTTPS with @kubernetes/client-node and raw requests: auth,
// discovery, CRUD semantics, conflicts, status split, finalizers, selectors, pagination, watch
// (initial state, replay, bookmarks, 410 after compaction, resume after restart), Table
// output, fault injection and a corpus of bad requests. One server for the whole file.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { stat } from "node:fs/promises";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { FaultInjector } from "./transport/faults.ts";
import { raw, startTestServer, type TestServer } from "../../test/harness/apiserver.ts";
import { until } from "../../test/harness/until.ts";
import { seededRandom } from "../../test/harness/random.ts";

let server: TestServer;
const faults = new FaultInjector();
let kc: k8s.KubeConfig;
let core: k8s.CoreV1Api;
let storage: k8s.StorageV1Api;

before(async () => {
  server = await startTestServer({ faults, bookmarkIntervalMs: 50 });
  kc = new k8s.KubeConfig();
  kc.loadFromFile(server.handle.kubeconfigPath);
  core = kc.makeApiClient(k8s.CoreV1Api);
  storage = kc.makeApiClient(k8s.StorageV1Api);
});
after(async () => {
  await server.dispose();
});

/** The HTTP code and Status body of a failed client-node call. */
async function failure(call: Promise<unknown>): Promise<{ code: number; status: Record<string, unknown> }> {
  try {
    await call;
  } catch (error) {
    if (error instanceof k8s.ApiException) {
      const body: unknown = typeof error.body === "string" ? JSON.parse(error.body) : error.body;
      return { code: error.code, status: body as Record<string, unknown> };
    }
    throw error;
  }
  assert.fail("expected the call to fail");
}

const merge = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch);

function pvc(name: string, extra: Record<string, unknown> = {}): k8s.V1PersistentVolumeClaim {
  return {
    metadata: { name, ...extra },
    spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
  };
}

describe("transport, auth and discovery", () => {
  test("state files: pki, token and kubeconfig are private", async () => {
    for (const file of ["pki/admin.token", "pki/apiserver.key", "pki/ca.key", "kubeconfig"]) {
      const info = await stat(join(server.stateDir, file));
      assert.equal(info.mode & 0o077, 0, `${file} is 0600`);
    }
  });

  test("no or wrong token: 401 Status; health and version need none", async () => {
    for (const token of [null, "wrong"]) {
      const res = await raw(server.handle, { path: "/api/v1/namespaces", token });
      assert.equal(res.status, 401);
      assert.deepEqual(res.json(), {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: "Unauthorized",
        reason: "Unauthorized",
        code: 401,
      });
    }
    for (const path of ["/healthz", "/livez", "/readyz"]) {
      const res = await raw(server.handle, { path, token: null });
      assert.equal(res.status, 200);
      assert.equal(res.text, "ok");
    }
    const version = await raw(server.handle, { path: "/version", token: null });
    assert.equal(version.json().major, "1");
  });

  test("idle keep-alive connections are kept 90 s as kube-apiserver's, and clients are told so", async () => {
    // The hint is what lets a client retire a pooled connection before the server closes it.
    const res = await raw(server.handle, {
      path: "/version",
      token: null,
      headers: { Connection: "keep-alive" },
    });
    assert.equal(res.headers["keep-alive"], "timeout=90");
  });

  test("discovery lists core and storage resources with short names and scope", async () => {
    const core1 = (await raw(server.handle, { path: "/api/v1" })).json() as {
      resources: Record<string, unknown>[];
    };
    const pvs = core1.resources.find((r) => r.name === "persistentvolumes");
    assert.deepEqual(pvs?.shortNames, ["pv"]);
    assert.equal(pvs?.namespaced, false);
    assert.ok(core1.resources.some((r) => r.name === "pods/status"));
    assert.ok(core1.resources.some((r) => r.name === "pods/binding" && r.kind === "Binding"));
    const groups = (await raw(server.handle, { path: "/apis" })).json() as { groups: { name: string }[] };
    for (const group of ["storage.k8s.io", "coordination.k8s.io", "apiextensions.k8s.io"]) {
      assert.ok(
        groups.groups.some((g) => g.name === group),
        group,
      );
    }
    const sv1 = (await raw(server.handle, { path: "/apis/storage.k8s.io/v1" })).json() as {
      resources: Record<string, unknown>[];
    };
    assert.deepEqual(sv1.resources.find((r) => r.name === "storageclasses")?.shortNames, ["sc"]);
    assert.equal((await raw(server.handle, { path: "/apis/nope.example.com/v1" })).status, 404);
  });

  test("aggregated discovery when asked for it, legacy otherwise", async () => {
    const accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
    const aggregated = await raw(server.handle, { path: "/apis", headers: { Accept: accept } });
    assert.equal(
      aggregated.headers["content-type"],
      "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
    );
    assert.equal(aggregated.json().kind, "APIGroupDiscoveryList");
    const legacy = await raw(server.handle, { path: "/api" });
    assert.equal(legacy.headers["content-type"], "application/json");
    assert.equal(legacy.json().kind, "APIVersions");
  });

  test("system namespaces exist from the start", async () => {
    const list = await core.listNamespace();
    const names = list.items.map((n) => n.metadata?.name).sort();
    assert.deepEqual(names, ["default", "kube-node-lease", "kube-public", "kube-system"]);
  });
});

describe("create, update, conflicts", () => {
  test("create sets server metadata; generateName; duplicate is 409 AlreadyExists; missing namespace is 404", async () => {
    const created = await core.createNamespacedConfigMap({
      namespace: "default",
      body: { metadata: { generateName: "gen-" }, data: { a: "1" } },
    });
    const meta = created.metadata!;
    assert.match(meta.name!, /^gen-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    assert.match(meta.uid!, /^[0-9a-f-]{36}$/);
    assert.match(String(meta.resourceVersion), /^\d+$/);
    assert.ok(meta.creationTimestamp instanceof Date);
    const dup = await failure(
      core.createNamespacedConfigMap({ namespace: "default", body: { metadata: { name: meta.name! } } }),
    );
    assert.equal(dup.code, 409);
    assert.equal(dup.status.reason, "AlreadyExists");
    assert.equal(dup.status.message, `configmaps "${meta.name}" already exists`);
    const missing = await failure(
      core.createNamespacedConfigMap({ namespace: "nope", body: { metadata: { name: "x" } } }),
    );
    assert.equal(missing.code, 404);
    assert.equal(missing.status.message, 'namespaces "nope" not found');
  });

  test("stale resourceVersion is 409 Conflict with upstream's message; empty resourceVersion is unconditional", async () => {
    const cm = await core.createNamespacedConfigMap({
      namespace: "default",
      body: { metadata: { name: "occ" }, data: { v: "1" } },
    });
    const staleVersion = cm.metadata!.resourceVersion!;
    await core.replaceNamespacedConfigMap({
      namespace: "default",
      name: "occ",
      body: { ...cm, data: { v: "2" } },
    });
    const stale = await failure(
      core.replaceNamespacedConfigMap({
        namespace: "default",
        name: "occ",
        body: { metadata: { name: "occ", resourceVersion: staleVersion }, data: { v: "3" } },
      }),
    );
    assert.equal(stale.code, 409);
    assert.equal(stale.status.reason, "Conflict");
    assert.equal(
      stale.status.message,
      'Operation cannot be fulfilled on configmaps "occ": the object has been modified; please apply your changes to the latest version and try again',
    );
    const forced = await core.replaceNamespacedConfigMap({
      namespace: "default",
      name: "occ",
      body: { metadata: { name: "occ" }, data: { v: "4" } },
    });
    assert.equal(forced.data?.v, "4");
    assert.equal(forced.metadata?.uid, cm.metadata?.uid, "uid kept");
  });

  test("an update that changes nothing does not bump resourceVersion", async () => {
    const cm = await core.readNamespacedConfigMap({ namespace: "default", name: "occ" });
    const again = await core.replaceNamespacedConfigMap({ namespace: "default", name: "occ", body: cm });
    assert.equal(again.metadata?.resourceVersion, cm.metadata?.resourceVersion);
  });

  test("dryRun=All validates but stores nothing", async () => {
    const dry = await core.createNamespacedConfigMap({
      namespace: "default",
      body: { metadata: { name: "dry" } },
      dryRun: "All",
    });
    assert.equal(dry.metadata?.name, "dry");
    assert.equal(
      (await failure(core.readNamespacedConfigMap({ namespace: "default", name: "dry" }))).code,
      404,
    );
  });

  test("invalid objects are 422 with causes naming each field", async () => {
    const bad = await failure(
      core.createNamespacedPersistentVolumeClaim({
        namespace: "default",
        body: { metadata: { name: "Bad_Name" }, spec: {} },
      }),
    );
    assert.equal(bad.code, 422);
    assert.equal(bad.status.reason, "Invalid");
    assert.match(String(bad.status.message), /^PersistentVolumeClaim "Bad_Name" is invalid: /);
    const causes = (bad.status.details as { causes: { field: string }[] }).causes.map((c) => c.field);
    assert.ok(causes.includes("metadata.name"), JSON.stringify(causes));
  });
});

test('create with metadata.resourceVersion set is refused as upstream\'s storage does; "0" passes', async () => {
  const refused = await raw(server.handle, {
    method: "POST",
    path: "/api/v1/namespaces/default/configmaps",
    body: '{"metadata":{"name":"with-rv","resourceVersion":"5"}}',
  });
  assert.equal(refused.status, 500, refused.text);
  const status = refused.json();
  assert.equal(status.message, "resourceVersion should not be set on objects to be created");
  assert.equal(status.reason, undefined, "StatusReasonUnknown is omitted");
  const zero = await raw(server.handle, {
    method: "POST",
    path: "/api/v1/namespaces/default/configmaps",
    body: '{"metadata":{"name":"with-rv","resourceVersion":"0"}}',
  });
  assert.equal(zero.status, 201, zero.text);
  assert.notEqual((zero.json().metadata as { resourceVersion: string }).resourceVersion, "0");
});

describe("status subresource, generation, finalizers", () => {
  test("main writes keep status; /status writes keep spec; no generation on kinds that do not track it", async () => {
    // Growing a claim needs a class that allows expansion (PersistentVolumeClaimResize).
    await storage.createStorageClass({
      body: { metadata: { name: "expandable" }, provisioner: "example.com/csi", allowVolumeExpansion: true },
    });
    const created = await core.createNamespacedPersistentVolumeClaim({
      namespace: "default",
      body: { ...pvc("split"), spec: { ...pvc("split").spec, storageClassName: "expandable" } },
    });
    assert.equal(created.metadata?.generation, undefined, "PVCs carry no generation, as upstream");
    const withStatus = await core.patchNamespacedPersistentVolumeClaimStatus(
      {
        namespace: "default",
        name: "split",
        body: { status: { phase: "Bound" }, spec: { volumeName: "ignored" } },
      },
      merge,
    );
    assert.equal(withStatus.status?.phase, "Bound");
    assert.equal(withStatus.spec?.volumeName, undefined, "a /status write does not change spec");
    assert.equal(withStatus.metadata?.generation, undefined);
    const main = await core.patchNamespacedPersistentVolumeClaim(
      {
        namespace: "default",
        name: "split",
        body: { status: { phase: "Lost" }, metadata: { labels: { a: "b" } } },
      },
      merge,
    );
    assert.equal(main.status?.phase, "Bound", "a main write does not change status");
    assert.equal(main.metadata?.labels?.a, "b");
    assert.equal(main.metadata?.generation, undefined, "labels are not spec");
    const grown = await core.patchNamespacedPersistentVolumeClaim(
      {
        namespace: "default",
        name: "split",
        body: { spec: { resources: { requests: { storage: "2Gi" } } } },
      },
      merge,
    );
    assert.equal(grown.spec?.resources?.requests?.storage, "2Gi");
    assert.equal(grown.status?.phase, "Bound");
  });

  test("a Node registers with its status (kept on create); a Pod's status starts empty", async () => {
    const node = await core.createNode({
      body: {
        metadata: { name: "status-on-create" },
        status: { capacity: { cpu: "2" }, conditions: [{ type: "Ready", status: "True" }] },
      },
    });
    assert.equal(node.status?.capacity?.cpu, "2");
    assert.equal(node.status?.conditions?.[0]?.type, "Ready");
    const pod = await core.createNamespacedPod({
      namespace: "default",
      body: {
        metadata: { name: "status-dropped" },
        spec: { containers: [{ name: "c", image: "busybox" }] },
        status: { phase: "Running" },
      },
    });
    assert.notEqual(pod.status?.phase, "Running", "the kubelet, not the creator, sets a pod's phase");
  });

  test("delete with finalizers marks; removing the last finalizer removes", async () => {
    await core.createNamespacedConfigMap({
      namespace: "default",
      body: { metadata: { name: "held", finalizers: ["example.com/hold"] } },
    });
    await core.deleteNamespacedConfigMap({ namespace: "default", name: "held" });
    const marked = await core.readNamespacedConfigMap({ namespace: "default", name: "held" });
    assert.ok(marked.metadata?.deletionTimestamp instanceof Date);
    assert.equal(marked.metadata?.deletionGracePeriodSeconds, 0);
    const stillThere = await core.patchNamespacedConfigMap(
      { namespace: "default", name: "held", body: { data: { x: "y" } } },
      merge,
    );
    assert.ok(stillThere.metadata?.deletionTimestamp, "an update cannot clear deletionTimestamp");
    await core.patchNamespacedConfigMap(
      { namespace: "default", name: "held", body: { metadata: { finalizers: null } } },
      merge,
    );
    assert.equal(
      (await failure(core.readNamespacedConfigMap({ namespace: "default", name: "held" }))).code,
      404,
    );
  });

  test("delete preconditions: wrong uid is 409", async () => {
    await core.createNamespacedConfigMap({ namespace: "default", body: { metadata: { name: "pre" } } });
    const res = await failure(
      core.deleteNamespacedConfigMap({
        namespace: "default",
        name: "pre",
        body: { preconditions: { uid: "not-it" } },
      }),
    );
    assert.equal(res.code, 409);
    assert.match(String(res.status.message), /Precondition failed: UID in precondition: not-it/);
    await core.deleteNamespacedConfigMap({
      namespace: "default",
      name: "pre",
      propagationPolicy: "Foreground",
    });
  });

  test("graceful pod deletion: a scheduled pod stays until deleted with grace 0, status updates do not remove it", async () => {
    await core.createNamespacedPod({
      namespace: "default",
      body: {
        metadata: { name: "graceful" },
        spec: { nodeName: "node-1", containers: [{ name: "c", image: "busybox" }] },
      },
    });
    await core.deleteNamespacedPod({ namespace: "default", name: "graceful" });
    const terminating = await core.readNamespacedPod({ namespace: "default", name: "graceful" });
    assert.ok(terminating.metadata?.deletionTimestamp);
    assert.equal(terminating.metadata?.deletionGracePeriodSeconds, 30);
    await core.patchNamespacedPodStatus(
      { namespace: "default", name: "graceful", body: { status: { phase: "Running" } } },
      merge,
    );
    assert.equal(
      (await core.readNamespacedPod({ namespace: "default", name: "graceful" })).status?.phase,
      "Running",
    );
    await core.deleteNamespacedPod({ namespace: "default", name: "graceful", gracePeriodSeconds: 0 });
    assert.equal(
      (await failure(core.readNamespacedPod({ namespace: "default", name: "graceful" }))).code,
      404,
    );
  });

  test("pods/binding sets spec.nodeName once and the PodScheduled=True condition", async () => {
    await core.createNamespacedPod({
      namespace: "default",
      body: { metadata: { name: "bindme" }, spec: { containers: [{ name: "c", image: "busybox" }] } },
    });
    await core.createNamespacedPodBinding({
      namespace: "default",
      name: "bindme",
      body: { metadata: { name: "bindme" }, target: { kind: "Node", name: "node-1" } },
    });
    const pod = await core.readNamespacedPod({ namespace: "default", name: "bindme" });
    assert.equal(pod.spec?.nodeName, "node-1");
    const scheduled = pod.status?.conditions?.filter((c) => c.type === "PodScheduled");
    assert.equal(scheduled?.length, 1);
    assert.equal(scheduled[0]!.status, "True");
    assert.ok(scheduled[0]!.lastTransitionTime instanceof Date);
    const again = await failure(
      core.createNamespacedPodBinding({
        namespace: "default",
        name: "bindme",
        body: { metadata: { name: "bindme" }, target: { kind: "Node", name: "node-2" } },
      }),
    );
    assert.equal(again.code, 409);
  });
});

describe("list: selectors and pagination", () => {
  before(async () => {
    await core.createNamespace({ body: { metadata: { name: "lists" } } });
    for (let i = 0; i < 7; i++) {
      await core.createNamespacedConfigMap({
        namespace: "lists",
        body: {
          metadata: {
            name: `item-${i}`,
            labels: { parity: i % 2 === 0 ? "even" : "odd", ...(i === 3 ? { special: "" } : {}) },
          },
        },
      });
    }
  });

  test("label selectors", async () => {
    const names = async (labelSelector: string): Promise<string[]> =>
      (await core.listNamespacedConfigMap({ namespace: "lists", labelSelector })).items.map(
        (i) => i.metadata!.name!,
      );
    assert.deepEqual(await names("parity=odd"), ["item-1", "item-3", "item-5"]);
    assert.deepEqual(await names("parity!=odd"), ["item-0", "item-2", "item-4", "item-6"]);
    assert.deepEqual(await names("parity in (odd),!special"), ["item-1", "item-5"]);
    assert.deepEqual(await names("special"), ["item-3"]);
    assert.deepEqual(await names("parity notin (even,odd)"), []);
  });

  test("field selectors: metadata.name everywhere, pod fields, unknown field is 400", async () => {
    const byName = await core.listConfigMapForAllNamespaces({ fieldSelector: "metadata.name=item-2" });
    assert.deepEqual(
      byName.items.map((i) => `${i.metadata?.namespace}/${i.metadata?.name}`),
      ["lists/item-2"],
    );
    const onNode = await core.listPodForAllNamespaces({ fieldSelector: "spec.nodeName=node-1" });
    assert.deepEqual(
      onNode.items.map((p) => p.metadata?.name),
      ["bindme"],
    );
    const bad = await failure(
      core.listNamespacedConfigMap({ namespace: "lists", fieldSelector: "spec.foo=1" }),
    );
    assert.equal(bad.code, 400);
  });

  test("limit/continue pages a consistent snapshot", async () => {
    const first = await core.listNamespacedConfigMap({ namespace: "lists", limit: 3 });
    assert.deepEqual(
      first.items.map((i) => i.metadata?.name),
      ["item-0", "item-1", "item-2"],
    );
    assert.equal(first.metadata?.remainingItemCount, 4);
    await core.createNamespacedConfigMap({ namespace: "lists", body: { metadata: { name: "item-9" } } });
    const seen: string[] = [];
    let token = first.metadata?._continue;
    while (token) {
      const page = await core.listNamespacedConfigMap({ namespace: "lists", limit: 3, _continue: token });
      assert.equal(
        page.metadata?.resourceVersion,
        first.metadata?.resourceVersion,
        "pages pin the first page's revision",
      );
      seen.push(...page.items.map((i) => i.metadata!.name!));
      token = page.metadata?._continue;
    }
    assert.deepEqual(
      seen,
      ["item-3", "item-4", "item-5", "item-6"],
      "the object created after page 1 is not in the snapshot",
    );
    const withSelector = await core.listNamespacedConfigMap({
      namespace: "lists",
      limit: 2,
      labelSelector: "parity=odd",
    });
    assert.equal(withSelector.items.length, 2);
    assert.ok(withSelector.metadata?._continue);
  });

  test("Table output with kubectl's Accept header", async () => {
    const res = await raw(server.handle, {
      path: "/apis/storage.k8s.io/v1/storageclasses?includeObject=Object",
      headers: { Accept: "application/json;as=Table;v=v1;g=meta.k8s.io,application/json" },
    });
    const table = res.json() as { kind: string; columnDefinitions: { name: string }[]; rows: unknown[] };
    assert.equal(table.kind, "Table");
    assert.deepEqual(table.columnDefinitions.map((c) => c.name).slice(0, 3), [
      "Name",
      "Provisioner",
      "ReclaimPolicy",
    ]);
  });

  test("deletecollection with a selector", async () => {
    await core.deleteCollectionNamespacedConfigMap({ namespace: "lists", labelSelector: "parity=even" });
    const left = await core.listNamespacedConfigMap({ namespace: "lists" });
    assert.deepEqual(
      left.items.map((i) => i.metadata?.name),
      ["item-1", "item-3", "item-5", "item-9"],
    );
  });
});

/** Collects watch events until `until` returns true for the list so far. */
async function collectWatch(
  path: string,
  query: Record<string, string | number | boolean | undefined>,
  act: () => Promise<void>,
  until: (events: { type: string; object: Record<string, unknown> }[]) => boolean,
): Promise<{ type: string; object: Record<string, unknown> }[]> {
  const events: { type: string; object: Record<string, unknown> }[] = [];
  let resolveDone!: () => void;
  let rejectDone!: (error: unknown) => void;
  const done = new Promise<void>((resolve, reject) => {
    resolveDone = resolve;
    rejectDone = reject;
  });
  const watch = new k8s.Watch(kc);
  const request = await watch.watch(
    path,
    query,
    (type, object: Record<string, unknown>) => {
      events.push({ type, object });
      if (until(events)) resolveDone();
    },
    (error: unknown) => {
      if (until(events)) resolveDone();
      else
        rejectDone(
          error ?? new Error(`watch ended early after ${JSON.stringify(events.map((e) => e.type))}`),
        );
    },
  );
  try {
    await act();
    await done;
  } finally {
    request.abort();
  }
  return events;
}

const nameOf = (object: Record<string, unknown>): string =>
  String((object.metadata as { name?: string } | undefined)?.name);

describe("watch", () => {
  test("unset resourceVersion: initial ADDED, then live changes; selector transitions become ADDED/DELETED", async () => {
    await core.createNamespace({ body: { metadata: { name: "watched" } } });
    await core.createNamespacedConfigMap({
      namespace: "watched",
      body: { metadata: { name: "a", labels: { w: "1" } } },
    });
    const events = await collectWatch(
      "/api/v1/namespaces/watched/configmaps",
      { labelSelector: "w=1" },
      async () => {
        await core.createNamespacedConfigMap({
          namespace: "watched",
          body: { metadata: { name: "b", labels: { w: "0" } } },
        });
        await core.patchNamespacedConfigMap(
          { namespace: "watched", name: "b", body: { metadata: { labels: { w: "1" } } } },
          merge,
        );
        await core.patchNamespacedConfigMap(
          { namespace: "watched", name: "a", body: { data: { k: "v" } } },
          merge,
        );
        await core.patchNamespacedConfigMap(
          { namespace: "watched", name: "a", body: { metadata: { labels: { w: "2" } } } },
          merge,
        );
        await core.deleteNamespacedConfigMap({ namespace: "watched", name: "b" });
      },
      (e) => e.length >= 5,
    );
    assert.deepEqual(
      events.map((e) => `${e.type} ${nameOf(e.object)}`),
      ["ADDED a", "ADDED b", "MODIFIED a", "DELETED a", "DELETED b"],
    );
  });

  test("from a resourceVersion: replays exactly the later changes", async () => {
    const start = await core.createNamespacedConfigMap({
      namespace: "watched",
      body: { metadata: { name: "r1" } },
    });
    await core.createNamespacedConfigMap({ namespace: "watched", body: { metadata: { name: "r2" } } });
    await core.deleteNamespacedConfigMap({ namespace: "watched", name: "r1" });
    const events = await collectWatch(
      "/api/v1/namespaces/watched/configmaps",
      { resourceVersion: start.metadata!.resourceVersion },
      async () => {},
      (e) => e.length >= 2,
    );
    assert.deepEqual(
      events.map((e) => `${e.type} ${nameOf(e.object)}`),
      ["ADDED r2", "DELETED r1"],
    );
  });

  test("allowWatchBookmarks delivers BOOKMARK events with a resourceVersion", async () => {
    const list = await core.listNamespacedConfigMap({ namespace: "watched" });
    const events = await collectWatch(
      "/api/v1/namespaces/watched/configmaps",
      { resourceVersion: list.metadata!.resourceVersion, allowWatchBookmarks: true },
      async () => {},
      (e) => e.some((x) => x.type === "BOOKMARK"),
    );
    const bookmark = events.find((e) => e.type === "BOOKMARK")!;
    assert.match(String((bookmark.object.metadata as { resourceVersion: string }).resourceVersion), /^\d+$/);
  });

  test("sendInitialEvents: current state, then a BOOKMARK marking the end of the initial events", async () => {
    const res = await raw(server.handle, {
      path:
        "/api/v1/namespaces/watched/configmaps?watch=1&timeoutSeconds=1&sendInitialEvents=true" +
        "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
    });
    const events = res.text
      .trim()
      .split("\n")
      .map(
        (l) =>
          JSON.parse(l) as { type: string; object: { metadata: { annotations?: Record<string, string> } } },
      );
    const end = events.findIndex((e) => e.type === "BOOKMARK");
    assert.ok(end > 0, "ADDED events come first");
    assert.ok(events.slice(0, end).every((e) => e.type === "ADDED"));
    assert.equal(events[end]!.object.metadata.annotations?.["k8s.io/initial-events-end"], "true");
    const refused = await raw(server.handle, {
      path: "/api/v1/namespaces/watched/configmaps?watch=1&sendInitialEvents=true",
    });
    assert.equal(refused.status, 422);
  });

  test("watch as Table (kubectl get -w): one row per event, column definitions only on the first", async () => {
    const res = await raw(server.handle, {
      path: "/api/v1/namespaces/watched/configmaps?watch=1&timeoutSeconds=1&includeObject=None",
      headers: { Accept: "application/json;as=Table;v=v1;g=meta.k8s.io,application/json" },
    });
    const events = res.text
      .trim()
      .split("\n")
      .map(
        (l) =>
          JSON.parse(l) as {
            type: string;
            object: {
              kind: string;
              columnDefinitions: unknown[];
              rows: { cells: unknown[]; object?: unknown }[];
            };
          },
      );
    assert.ok(events.length >= 2);
    assert.ok(events.every((e) => e.object.kind === "Table" && e.object.rows.length === 1));
    assert.ok(events[0]!.object.columnDefinitions.length > 0);
    assert.equal(events[1]!.object.columnDefinitions.length, 0);
    assert.equal(events[0]!.object.rows[0]!.object, undefined, "includeObject=None");
  });

  test("legacy /watch/ paths and single-object watches", async () => {
    const all = await raw(server.handle, {
      path: "/api/v1/watch/namespaces/watched/configmaps?timeoutSeconds=1",
    });
    assert.equal(all.status, 200);
    const names = all.text
      .trim()
      .split("\n")
      .map((l) => (JSON.parse(l) as { object: { metadata: { name: string } } }).object.metadata.name);
    assert.ok(names.length >= 2);
    const one = await raw(server.handle, {
      path: `/api/v1/watch/namespaces/watched/configmaps/${names[0]}?timeoutSeconds=1`,
    });
    const only = one.text
      .trim()
      .split("\n")
      .map((l) => (JSON.parse(l) as { object: { metadata: { name: string } } }).object.metadata.name);
    assert.deepEqual(only, [names[0]]);
  });

  test("timeoutSeconds ends the stream", async () => {
    const res = await raw(server.handle, {
      path: "/api/v1/namespaces/watched/configmaps?watch=1&timeoutSeconds=1&resourceVersion=0",
    });
    assert.equal(res.status, 200);
    const lines = res.text
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string });
    assert.ok(lines.every((l) => l.type === "ADDED"));
  });
});

describe("fault injection", () => {
  test("fails the next N matching requests with the given code, then serves normally", async () => {
    faults.failNext({ verb: "update", resource: "configmaps", code: 409, count: 2 });
    const body = { metadata: { name: "occ" }, data: { v: "5" } };
    for (let i = 0; i < 2; i++) {
      const res = await failure(core.replaceNamespacedConfigMap({ namespace: "default", name: "occ", body }));
      assert.equal(res.code, 409);
      assert.equal(res.status.reason, "Conflict");
    }
    const ok = await core.replaceNamespacedConfigMap({ namespace: "default", name: "occ", body });
    assert.equal(ok.data?.v, "5");
    faults.failNext({ verb: "list", resource: "persistentvolumes", code: 500 });
    assert.equal((await failure(core.listPersistentVolume())).code, 500);
    assert.equal((await core.listPersistentVolume()).kind, "PersistentVolumeList");
  });

  test("holds the next matching request until released; others are served meanwhile", async () => {
    const held = faults.holdNext({ verb: "create", resource: "configmaps" });
    let answered = false;
    const create = core
      .createNamespacedConfigMap({ namespace: "default", body: { metadata: { name: "held" } } })
      .then(() => (answered = true));
    await held.reached;
    // Held before it is served: nothing stored yet, and other requests go on.
    assert.equal(
      (await failure(core.readNamespacedConfigMap({ namespace: "default", name: "held" }))).code,
      404,
    );
    assert.equal(answered, false);
    held.release();
    await create;
    assert.equal(
      (await core.readNamespacedConfigMap({ namespace: "default", name: "held" })).metadata?.name,
      "held",
    );
  });
});

const WIDGET_CRD = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "widgets.example.com" },
  spec: {
    group: "example.com",
    scope: "Namespaced",
    names: { plural: "widgets", singular: "widget", kind: "Widget", shortNames: ["wd"] },
    versions: [
      {
        name: "v1",
        served: true,
        storage: true,
        subresources: { status: {} },
        additionalPrinterColumns: [{ name: "Size", type: "integer", jsonPath: ".spec.size" }],
        schema: {
          openAPIV3Schema: {
            type: "object",
            properties: {
              spec: { type: "object", properties: { size: { type: "integer" } } },
              status: { type: "object", properties: { ready: { type: "boolean" } } },
            },
          },
        },
      },
    ],
  },
};

describe("custom resources", () => {
  let custom: k8s.CustomObjectsApi;
  const widget = { group: "example.com", version: "v1", namespace: "default", plural: "widgets" };
  before(async () => {
    custom = kc.makeApiClient(k8s.CustomObjectsApi);
    const extensions = kc.makeApiClient(k8s.ApiextensionsV1Api);
    await extensions.createCustomResourceDefinition({ body: WIDGET_CRD });
  });

  test("an installed CRD is served: discovery, CRUD, status split, generation, printer columns", async () => {
    const crd = await kc
      .makeApiClient(k8s.ApiextensionsV1Api)
      .readCustomResourceDefinition({ name: "widgets.example.com" });
    assert.ok(crd.status?.conditions?.some((c) => c.type === "Established" && c.status === "True"));
    const discovery = (await raw(server.handle, { path: "/apis/example.com/v1" })).json() as {
      resources: { name: string }[];
    };
    assert.deepEqual(
      discovery.resources.map((r) => r.name),
      ["widgets", "widgets/status"],
    );
    const created = (await custom.createNamespacedCustomObject({
      ...widget,
      body: {
        apiVersion: "example.com/v1",
        kind: "Widget",
        metadata: { name: "w1" },
        spec: { size: 3 },
        status: { ready: true },
      },
    })) as { metadata: { generation: number }; status?: unknown };
    assert.equal(created.metadata.generation, 1);
    assert.equal(created.status, undefined, "status is not set on create with a status subresource");
    const status = (await custom.patchNamespacedCustomObjectStatus(
      { ...widget, name: "w1", body: { status: { ready: true }, spec: { size: 99 } } },
      merge,
    )) as { spec: { size: number }; status: { ready: boolean } };
    assert.equal(status.status.ready, true);
    assert.equal(status.spec.size, 3);
    const resized = (await custom.patchNamespacedCustomObject(
      { ...widget, name: "w1", body: { spec: { size: 5 } } },
      merge,
    )) as {
      metadata: { generation: number };
      status: { ready: boolean };
    };
    assert.equal(resized.metadata.generation, 2);
    assert.equal(resized.status.ready, true);
    const table = (
      await raw(server.handle, {
        path: "/apis/example.com/v1/namespaces/default/widgets",
        headers: { Accept: "application/json;as=Table;v=v1;g=meta.k8s.io" },
      })
    ).json() as { columnDefinitions: { name: string }[]; rows: { cells: unknown[] }[] };
    assert.deepEqual(
      table.columnDefinitions.map((c) => c.name),
      ["Name", "Size"],
    );
    assert.deepEqual(table.rows[0]?.cells, ["w1", 5]);
    const smp = await raw(server.handle, {
      method: "PATCH",
      path: "/apis/example.com/v1/namespaces/default/widgets/w1",
      body: "{}",
      headers: { "Content-Type": "application/strategic-merge-patch+json" },
    });
    assert.equal(smp.status, 415, "custom resources do not take strategic merge patches");
  });

  test("fieldValidation: Strict refuses unknown fields, Warn (the default) answers Warning headers", async () => {
    const body = JSON.stringify({
      apiVersion: "example.com/v1",
      kind: "Widget",
      metadata: { name: "w2" },
      spec: { size: 1, colour: "red" },
    });
    const path = "/apis/example.com/v1/namespaces/default/widgets";
    const strict = await raw(server.handle, { method: "POST", path: `${path}?fieldValidation=Strict`, body });
    assert.equal(strict.status, 400);
    assert.equal(
      strict.json().message,
      'Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.colour"',
    );
    const warned = await raw(server.handle, { method: "POST", path, body });
    assert.equal(warned.status, 201);
    assert.equal(warned.headers.warning, '299 - "unknown field \\"spec.colour\\""');
    assert.equal(
      (warned.json().spec as Record<string, unknown>).colour,
      undefined,
      "unknown fields are pruned",
    );
    const bad = await raw(server.handle, { method: "POST", path: `${path}?fieldValidation=Loose`, body });
    assert.equal(bad.status, 400);
  });

  test("deleting a CRD: Terminating with the cleanup finalizer, objects removed (finalizers waited for), then gone", async () => {
    const extensions = kc.makeApiClient(k8s.ApiextensionsV1Api);
    const path = "/apis/example.com/v1/namespaces/default/widgets";
    const held = await raw(server.handle, {
      method: "POST",
      path,
      body: JSON.stringify({
        apiVersion: "example.com/v1",
        kind: "Widget",
        metadata: { name: "held", finalizers: ["example.com/hold"] },
        spec: { size: 1 },
      }),
    });
    assert.equal(held.status, 201, held.text);
    const deleted = await raw(server.handle, {
      method: "DELETE",
      path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
    });
    assert.equal(deleted.status, 200, deleted.text);
    const marked = deleted.json() as {
      kind: string;
      metadata: { deletionTimestamp?: string; finalizers?: string[] };
      status: { conditions: { type: string; status: string; reason: string }[] };
    };
    assert.equal(marked.kind, "CustomResourceDefinition");
    assert.ok(marked.metadata.deletionTimestamp);
    assert.deepEqual(marked.metadata.finalizers, ["customresourcecleanup.apiextensions.k8s.io"]);
    assert.ok(
      marked.status.conditions.some(
        (c) => c.type === "Terminating" && c.status === "True" && c.reason === "InstanceDeletionPending",
      ),
    );
    const refused = await raw(server.handle, {
      method: "POST",
      path,
      body: '{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"late"}}',
    });
    assert.equal(refused.status, 405, refused.text);
    assert.equal(
      refused.json().message,
      'create is not supported on resources of kind "widgets.example.com"',
    );
    // The held object is marked and waited for; releasing it lets the CRD go.
    await until(async () => {
      const res = await raw(server.handle, { path: `${path}/held` });
      return (
        res.status === 200 &&
        Boolean((res.json().metadata as { deletionTimestamp?: string }).deletionTimestamp)
      );
    }, "the held widget to be marked for deletion");
    assert.equal(
      (
        await raw(server.handle, {
          path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
        })
      ).status,
      200,
      "still there while an object is held",
    );
    const released = await raw(server.handle, {
      method: "PATCH",
      path: `${path}/held`,
      body: '{"metadata":{"finalizers":null}}',
      headers: { "Content-Type": "application/merge-patch+json" },
    });
    assert.equal(released.status, 200, released.text);
    await until(
      async () =>
        (
          await raw(server.handle, {
            path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
          })
        ).status === 404,
      "the CRD to be gone",
    );
    assert.equal((await raw(server.handle, { path })).status, 404, "no longer served");
    await extensions.createCustomResourceDefinition({ body: WIDGET_CRD });
    const list = (await custom.listNamespacedCustomObject(widget)) as { items: unknown[] };
    assert.deepEqual(list.items, [], "objects of the old CRD are gone");
  });
});

describe("namespace deletion", () => {
  test("a deleted namespace terminates, its objects go, then it goes; creates in it are refused", async () => {
    await core.createNamespace({ body: { metadata: { name: "doomed" } } });
    await core.createNamespacedConfigMap({ namespace: "doomed", body: { metadata: { name: "x" } } });
    await core.createNamespacedConfigMap({
      namespace: "doomed",
      body: { metadata: { name: "held", finalizers: ["example.com/f"] } },
    });
    await core.deleteNamespace({ name: "doomed" });
    const ns = await core.readNamespace({ name: "doomed" });
    assert.equal(ns.status?.phase, "Terminating");
    const refused = await failure(
      core.createNamespacedConfigMap({ namespace: "doomed", body: { metadata: { name: "y" } } }),
    );
    assert.equal(refused.code, 403);
    assert.equal(
      refused.status.message,
      'configmaps "y" is forbidden: unable to create new content in namespace doomed because it is being terminated',
    );
    await until(
      async () => (await core.listNamespacedConfigMap({ namespace: "doomed" })).items.length === 1,
      "the configmap in the terminating namespace",
    );
    await core.patchNamespacedConfigMap(
      { namespace: "doomed", name: "held", body: { metadata: { finalizers: null } } },
      merge,
    );
    await until(async () => {
      try {
        await core.readNamespace({ name: "doomed" });
        return false;
      } catch (error) {
        if (error instanceof k8s.ApiException && error.code === 404) return true;
        throw error;
      }
    }, "namespace doomed to be gone");
  });
});

describe("bad requests never crash the server", () => {
  const cases: { name: string; request: Parameters<typeof raw>[1]; status: number; reason?: string }[] = [
    {
      name: "malformed JSON",
      request: { method: "POST", path: "/api/v1/namespaces/default/configmaps", body: "{nope" },
      status: 400,
      reason: "BadRequest",
    },
    {
      name: "JSON array body",
      request: { method: "POST", path: "/api/v1/namespaces/default/configmaps", body: "[]" },
      status: 400,
    },
    {
      name: "empty body",
      request: { method: "POST", path: "/api/v1/namespaces/default/configmaps", body: "" },
      status: 400,
    },
    {
      name: "wrong kind",
      request: {
        method: "POST",
        path: "/api/v1/namespaces/default/configmaps",
        body: JSON.stringify({ kind: "Secret", apiVersion: "v1", metadata: { name: "k" } }),
      },
      status: 400,
    },
    {
      name: "wrong apiVersion",
      request: {
        method: "POST",
        path: "/api/v1/namespaces/default/configmaps",
        body: JSON.stringify({ kind: "ConfigMap", apiVersion: "storage.k8s.io/v1", metadata: { name: "k" } }),
      },
      status: 400,
    },
    {
      name: "metadata not an object",
      request: {
        method: "POST",
        path: "/api/v1/namespaces/default/configmaps",
        body: JSON.stringify({ metadata: "x" }),
      },
      status: 400,
    },
    {
      name: "name with a slash",
      request: {
        method: "POST",
        path: "/api/v1/namespaces/default/configmaps",
        body: JSON.stringify({ metadata: { name: "a/b" } }),
      },
      status: 422,
      reason: "Invalid",
    },
    {
      name: "no name",
      request: { method: "POST", path: "/api/v1/namespaces/default/configmaps", body: "{}" },
      status: 422,
    },
    {
      name: "body too large",
      request: {
        method: "POST",
        path: "/api/v1/namespaces/default/configmaps",
        body: Buffer.alloc(3 * 1024 * 1024 + 10, 0x20),
      },
      status: 413,
      reason: "RequestEntityTooLarge",
    },
    {
      name: "unsupported media type",
      request: {
        method: "POST",
        path: "/api/v1/namespaces/default/configmaps",
        body: "x",
        headers: { "Content-Type": "application/cbor" },
      },
      status: 415,
      reason: "UnsupportedMediaType",
    },
    {
      name: "unknown patch type",
      request: {
        method: "PATCH",
        path: "/api/v1/namespaces/default/configmaps/occ",
        body: "{}",
        headers: { "Content-Type": "text/plain" },
      },
      status: 415,
    },
    {
      name: "bad json patch",
      request: {
        method: "PATCH",
        path: "/api/v1/namespaces/default/configmaps/occ",
        body: '{"op":"add"}',
        headers: { "Content-Type": "application/json-patch+json" },
      },
      status: 400,
    },
    {
      name: "json patch with failing test",
      request: {
        method: "PATCH",
        path: "/api/v1/namespaces/default/configmaps/occ",
        body: '[{"op":"test","path":"/data/v","value":"nope"}]',
        headers: { "Content-Type": "application/json-patch+json" },
      },
      status: 422,
    },
    {
      name: "patch changing the name",
      request: {
        method: "PATCH",
        path: "/api/v1/namespaces/default/configmaps/occ",
        body: '{"metadata":{"name":"other"}}',
        headers: { "Content-Type": "application/merge-patch+json" },
      },
      status: 400,
    },
    {
      name: "PUT with a name other than the URL's",
      request: {
        method: "PUT",
        path: "/api/v1/namespaces/default/configmaps/occ",
        body: JSON.stringify({ metadata: { name: "zzz" } }),
      },
      status: 400,
    },
    {
      name: "PUT changing the uid",
      request: {
        method: "PUT",
        path: "/api/v1/namespaces/default/configmaps/occ",
        body: JSON.stringify({ metadata: { name: "occ", uid: "00000000-0000-0000-0000-000000000000" } }),
      },
      status: 422,
      reason: "Invalid",
    },
    {
      name: "list from a resourceVersion the server never reached",
      request: { path: "/api/v1/configmaps?resourceVersion=999999999" },
      status: 504,
      reason: "Timeout",
    },
    {
      name: "watch from a resourceVersion the server never reached",
      request: { path: "/api/v1/configmaps?watch=1&resourceVersion=999999999" },
      status: 504,
      reason: "Timeout",
    },
    {
      name: "bad label selector",
      request: { path: "/api/v1/configmaps?labelSelector=a%20in%20(" },
      status: 400,
    },
    {
      name: "bad field selector",
      request: { path: "/api/v1/configmaps?fieldSelector=nonsense" },
      status: 400,
    },
    {
      name: "bad continue token",
      request: { path: "/api/v1/namespaces/default/configmaps?limit=1&continue=garbage!!" },
      status: 400,
    },
    { name: "non-numeric limit", request: { path: "/api/v1/configmaps?limit=three" }, status: 400 },
    {
      name: "limit beyond int64",
      request: { path: "/api/v1/configmaps?limit=99999999999999999999" },
      status: 400,
      reason: "BadRequest",
    },
    {
      name: "JSON body nested 100k deep (create)",
      request: {
        method: "POST",
        path: "/api/v1/namespaces/default/configmaps",
        body: `{"metadata":{"name":"deep"},"data":${'{"a":'.repeat(100_000)}1${"}".repeat(100_000)}}`,
      },
      status: 400,
      reason: "BadRequest",
    },
    {
      name: "JSON array nested 100k deep (merge patch)",
      request: {
        method: "PATCH",
        path: "/api/v1/namespaces/default/configmaps/occ",
        body: `{"data":${"[".repeat(100_000)}${"]".repeat(100_000)}}`,
        headers: { "Content-Type": "application/merge-patch+json" },
      },
      status: 400,
      reason: "BadRequest",
    },
    {
      name: "YAML flow nested 100k deep",
      request: {
        method: "POST",
        path: "/api/v1/namespaces/default/configmaps",
        body: `metadata: {name: deep}\ndata: ${"[".repeat(100_000)}${"]".repeat(100_000)}\n`,
        headers: { "Content-Type": "application/yaml" },
      },
      status: 400,
      reason: "BadRequest",
    },
    {
      name: "JSON patch through __proto__",
      request: {
        method: "PATCH",
        path: "/api/v1/namespaces/default/configmaps/occ",
        body: '[{"op":"add","path":"/metadata/__proto__/polluted","value":"yes"}]',
        headers: { "Content-Type": "application/json-patch+json" },
      },
      status: 422,
      reason: "Invalid",
    },
    {
      name: "JSON patch replacing a missing path",
      request: {
        method: "PATCH",
        path: "/api/v1/namespaces/default/configmaps/occ",
        body: '[{"op":"replace","path":"/spec/nothing","value":1}]',
        headers: { "Content-Type": "application/json-patch+json" },
      },
      status: 422,
      reason: "Invalid",
    },
    {
      name: "merge patch with a __proto__ label key (invalid label)",
      request: {
        method: "PATCH",
        path: "/api/v1/namespaces/default/configmaps/occ",
        body: '{"metadata":{"labels":{"__proto__":"x"}}}',
        headers: { "Content-Type": "application/merge-patch+json" },
      },
      status: 422,
      reason: "Invalid",
    },
    {
      name: "strategic merge patch with a __proto__ annotation key (invalid key)",
      request: {
        method: "PATCH",
        path: "/api/v1/namespaces/default/configmaps/occ",
        body: '{"metadata":{"annotations":{"__proto__":"x"}}}',
        headers: { "Content-Type": "application/strategic-merge-patch+json" },
      },
      status: 422,
      reason: "Invalid",
    },
    { name: "bad resourceVersion", request: { path: "/api/v1/configmaps?resourceVersion=abc" }, status: 400 },
    {
      name: "bad watch resourceVersion",
      request: { path: "/api/v1/configmaps?watch=1&resourceVersion=abc" },
      status: 400,
    },
    { name: "unknown path", request: { path: "/nothing/here" }, status: 404, reason: "NotFound" },
    { name: "unknown resource", request: { path: "/api/v1/widgets" }, status: 404 },
    {
      name: "namespaced resource without namespace",
      request: { path: "/api/v1/configmaps/occ" },
      status: 404,
    },
    {
      name: "cluster resource under a namespace",
      request: { path: "/api/v1/namespaces/default/persistentvolumes" },
      status: 404,
    },
    {
      name: "unknown subresource",
      request: { path: "/api/v1/namespaces/default/configmaps/occ/frob" },
      status: 404,
    },
    { name: "method not allowed", request: { method: "OPTIONS", path: "/api/v1/configmaps" }, status: 404 },
    {
      name: "bad dryRun",
      request: { method: "POST", path: "/api/v1/namespaces/default/configmaps?dryRun=Some", body: "{}" },
      status: 400,
    },
    {
      name: "bad propagationPolicy",
      request: {
        method: "DELETE",
        path: "/api/v1/namespaces/default/configmaps/occ",
        body: '{"propagationPolicy":"Sideways"}',
      },
      status: 422,
    },
    {
      name: "invalid DeleteOptions body",
      request: { method: "DELETE", path: "/api/v1/namespaces/default/configmaps/occ", body: "{" },
      status: 400,
    },
    { name: "undecodable path", request: { path: "/api/v1/namespaces/%ZZ/configmaps" }, status: 404 },
    {
      name: "resourceVersionMatch without resourceVersion",
      request: { path: "/api/v1/configmaps?resourceVersionMatch=NotOlderThan" },
      status: 422,
      reason: "Invalid",
    },
    {
      name: "resourceVersionMatch of an unknown value",
      request: { path: "/api/v1/configmaps?resourceVersion=1&resourceVersionMatch=Newest" },
      status: 422,
      reason: "Invalid",
    },
    {
      name: 'resourceVersionMatch=Exact with resourceVersion "0"',
      request: { path: "/api/v1/configmaps?resourceVersion=0&resourceVersionMatch=Exact" },
      status: 422,
      reason: "Invalid",
    },
    {
      name: "sendInitialEvents on a list",
      request: { path: "/api/v1/configmaps?sendInitialEvents=true" },
      status: 422,
      reason: "Invalid",
    },
    {
      name: "an unknown field nested 1,600 levels",
      request: {
        method: "POST",
        path: "/api/v1/namespaces/default/configmaps",
        body: `{"metadata":{"name":"deep"},"unknown":${'{"x":'.repeat(1600)}1${"}".repeat(1600)}}`,
      },
      status: 400,
      reason: "BadRequest",
    },
    {
      name: "a body nested 10,001 levels",
      request: {
        method: "POST",
        path: "/api/v1/namespaces/default/configmaps",
        body: `{"metadata":{"name":"deep"},"data":${"[".repeat(10_001)}${"]".repeat(10_001)}}`,
      },
      status: 400,
    },
    {
      name: "a YAML body nested 1,600 block levels",
      request: {
        method: "POST",
        path: "/api/v1/namespaces/default/configmaps",
        body: `metadata:\n  name: deep\nunknown:\n${Array.from({ length: 1600 }, (_, i) => `${" ".repeat(i + 1)}x:`).join("\n")} 1\n`,
        headers: { "Content-Type": "application/yaml" },
      },
      status: 400,
    },
    {
      name: "JSON patch moving a member into its own child",
      request: {
        method: "PATCH",
        path: "/api/v1/namespaces/default/configmaps/occ",
        body: '[{"op":"move","from":"/data","path":"/data/x"}]',
        headers: { "Content-Type": "application/json-patch+json" },
      },
      status: 422,
      reason: "Invalid",
    },
    {
      name: "JSON patch copying a subtree into itself past the nesting limit",
      request: {
        method: "PATCH",
        path: "/api/v1/namespaces/default/configmaps/occ",
        body: JSON.stringify([
          {
            op: "add",
            path: "/zz",
            value: JSON.parse(`${'{"x":'.repeat(600)}1${"}".repeat(600)}`) as unknown,
          },
          { op: "copy", from: "/zz", path: `/zz${"/x".repeat(599)}` },
        ]),
        headers: { "Content-Type": "application/json-patch+json" },
      },
      status: 422,
      reason: "Invalid",
    },
  ];
  for (const c of cases) {
    test(`${c.name} → ${c.status}`, async () => {
      const res = await raw(server.handle, c.request);
      assert.equal(res.status, c.status, res.text);
      const status = res.json();
      assert.equal(status.kind, "Status");
      assert.equal(status.code, c.status);
      if (c.reason) assert.equal(status.reason, c.reason);
      assert.ok(!res.text.includes("    at "), "no stack traces");
    });
  }
  test("list options are validated with upstream's messages", async () => {
    const res = await raw(server.handle, {
      path: "/api/v1/configmaps?resourceVersionMatch=NotOlderThan&sendInitialEvents=false",
    });
    assert.equal(
      res.json().message,
      'ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided, sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list]',
    );
  });
  test("a label selector of ~200 KiB (many values) is served, not refused with 431", async () => {
    const values = Array.from({ length: 3000 }, (_, i) => `value-${String(i).padStart(56, "0")}`);
    const selector = encodeURIComponent(`app in (${values.join(",")})`);
    assert.ok(selector.length > 150_000);
    const res = await raw(server.handle, {
      path: `/api/v1/namespaces/default/configmaps?labelSelector=${selector}`,
    });
    assert.equal(res.status, 200, res.text.slice(0, 300));
  });
  test("a negative limit lists everything, as upstream's storage treats limit <= 0", async () => {
    const res = await raw(server.handle, { path: "/api/v1/namespaces/default/configmaps?limit=-3" });
    assert.equal(res.status, 200, res.text);
    const list = res.json() as { items: unknown[]; metadata: Record<string, unknown> };
    assert.ok(list.items.length >= 1);
    assert.equal(list.metadata.continue, undefined);
  });
  test('a "__proto__" data key patched in is stored as a key (strategic and merge)', async () => {
    for (const type of ["application/strategic-merge-patch+json", "application/merge-patch+json"]) {
      const res = await raw(server.handle, {
        method: "PATCH",
        path: "/api/v1/namespaces/default/configmaps/occ",
        body: `{"data":{"__proto__":"${type}"}}`,
        headers: { "Content-Type": type },
      });
      assert.equal(res.status, 200, res.text);
      const read = await raw(server.handle, { path: "/api/v1/namespaces/default/configmaps/occ" });
      const data = (JSON.parse(read.text) as { data: Record<string, unknown> }).data;
      assert.ok(Object.hasOwn(data, "__proto__"), read.text);
      assert.equal(Object.getOwnPropertyDescriptor(data, "__proto__")?.value, type);
    }
    const cleanup = await raw(server.handle, {
      method: "PATCH",
      path: "/api/v1/namespaces/default/configmaps/occ",
      body: '{"data":{"__proto__":null}}',
      headers: { "Content-Type": "application/merge-patch+json" },
    });
    assert.equal(cleanup.status, 200, cleanup.text);
    assert.equal(({} as Record<string, unknown>).polluted, undefined, "Object.prototype untouched");
  });
  test("the failed JSON patch answers upstream's message with the reason as a cause", async () => {
    const res = await raw(server.handle, {
      method: "PATCH",
      path: "/api/v1/namespaces/default/configmaps/occ",
      body: '[{"op":"test","path":"/metadata/name","value":"other"}]',
      headers: { "Content-Type": "application/json-patch+json" },
    });
    assert.equal(res.status, 422, res.text);
    const status = res.json() as {
      message: string;
      details: { causes: { reason: string; message: string }[] };
    };
    assert.equal(status.message, "the server rejected our request due to an error in our request");
    assert.deepEqual(status.details.causes, [
      {
        reason: "UnexpectedServerResponse",
        message: "testing value /metadata/name failed: test failed",
        field: "",
      },
    ]);
    assert.equal(({} as Record<string, unknown>).polluted, undefined, "Object.prototype untouched");
  });
  test("fuzzing: random patches and body shapes never get a 5xx", async () => {
    const random = seededRandom(0x5eed);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
    const segments = [
      "data",
      "metadata",
      "labels",
      "annotations",
      "v",
      "0",
      "-",
      "-1",
      "99",
      "__proto__",
      "constructor",
      "a~1b",
      "~",
      "",
    ];
    const value = (depth: number): unknown => {
      switch (Math.floor(random() * (depth > 3 ? 4 : 7))) {
        case 0:
          return null;
        case 1:
          return random() < 0.5;
        case 2:
          return Math.floor(random() * 1e6) - 5e5;
        case 3:
          return pick(["", "x", "__proto__", "~1", "a".repeat(300)]);
        case 4:
          return Array.from({ length: Math.floor(random() * 3) }, () => value(depth + 1));
        default: {
          const map: Record<string, unknown> = {};
          for (let i = Math.floor(random() * 3); i > 0; i--) {
            Object.defineProperty(map, pick(segments), {
              value: value(depth + 1),
              enumerable: true,
              writable: true,
              configurable: true,
            });
          }
          return map;
        }
      }
    };
    const path = (): string =>
      pick(["", "/"]) + Array.from({ length: Math.floor(random() * 4) }, () => pick(segments)).join("/");
    const requests: Parameters<typeof raw>[1][] = [];
    for (let i = 0; i < 150; i++) {
      const operations = Array.from({ length: 1 + Math.floor(random() * 3) }, () => {
        const operation: Record<string, unknown> = {
          op: pick(["add", "remove", "replace", "move", "copy", "test", "frob"]),
          path: path(),
        };
        if (random() < 0.7) operation.value = value(0);
        if (random() < 0.5) operation.from = path();
        return operation;
      });
      requests.push({
        method: "PATCH",
        path: "/api/v1/namespaces/default/configmaps/occ",
        body: JSON.stringify(random() < 0.9 ? operations : value(0)),
        headers: { "Content-Type": "application/json-patch+json" },
      });
      requests.push({
        method: "PATCH",
        path: "/api/v1/namespaces/default/configmaps/occ",
        body: JSON.stringify(value(0)),
        headers: {
          "Content-Type": pick(["application/merge-patch+json", "application/strategic-merge-patch+json"]),
        },
      });
      const body = { metadata: { name: `fuzz-${i}` }, ...(value(0) as object) } as Record<string, unknown>;
      if (random() < 0.5) body[pick(["data", "metadata", "spec", "binaryData", "immutable"])] = value(0);
      requests.push({
        method: pick(["POST", "POST", "PUT"]),
        path:
          pick([
            "/api/v1/namespaces/default/configmaps",
            "/api/v1/namespaces/default/pods",
            "/api/v1/persistentvolumes",
          ]) + (random() < 0.3 ? "?fieldValidation=Strict" : ""),
        body: JSON.stringify(body),
      });
    }
    for (const request of requests) {
      const res = await raw(server.handle, request);
      assert.ok(
        res.status < 500,
        `${request.method} ${request.path} ${String(request.body)} → ${res.status} ${res.text}`,
      );
    }
    assert.equal(({} as Record<string, unknown>).polluted, undefined, "Object.prototype untouched");
  });
  test("the server still answers after the corpus", async () => {
    assert.equal(
      (await core.readNamespacedConfigMap({ namespace: "default", name: "occ" })).metadata?.name,
      "occ",
    );
  });
});

describe("compaction and restart (last: restarts the server)", () => {
  test("a watch from a compacted resourceVersion gets an ERROR event with 410 Expired", async () => {
    const first = await core.createNamespacedConfigMap({
      namespace: "default",
      body: { metadata: { name: "old" } },
    });
    const firstPage = await core.listNamespacedConfigMap({ namespace: "default", limit: 1 });
    const continueBeforeCompaction = firstPage.metadata?._continue;
    for (let i = 0; i < 3; i++) {
      await core.patchNamespacedConfigMap(
        { namespace: "default", name: "old", body: { data: { i: String(i) } } },
        merge,
      );
    }
    server.handle.compact(1);
    const res = await raw(server.handle, {
      path: `/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${first.metadata!.resourceVersion}`,
    });
    assert.equal(res.status, 200);
    const event = JSON.parse(res.text.trim().split("\n")[0]!) as {
      type: string;
      object: Record<string, unknown>;
    };
    assert.equal(event.type, "ERROR");
    assert.equal(event.object.code, 410);
    assert.equal(event.object.reason, "Expired");
    assert.match(String(event.object.message), /^too old resource version: \d+ \(\d+\)$/);
    const list = await raw(server.handle, {
      path: `/api/v1/namespaces/default/configmaps?resourceVersion=${first.metadata!.resourceVersion}&resourceVersionMatch=Exact`,
    });
    assert.equal(list.status, 410);
    assert.ok(continueBeforeCompaction);
    const stalePage = await raw(server.handle, {
      path: `/api/v1/namespaces/default/configmaps?limit=1&continue=${continueBeforeCompaction}`,
    });
    assert.equal(stalePage.status, 410, stalePage.text);
    assert.equal(stalePage.json().reason, "Expired");
  });

  test("a watch resumes after a restart on the same state directory", async () => {
    const before = await core.createNamespacedConfigMap({
      namespace: "default",
      body: { metadata: { name: "survivor" } },
    });
    const rv = before.metadata!.resourceVersion!;
    await core.patchNamespacedConfigMap(
      { namespace: "default", name: "survivor", body: { data: { a: "1" } } },
      merge,
    );
    const oldUrl = server.handle.url;
    // An open watch neither keeps the server from stopping nor outlives it.
    let watchEnded!: () => void;
    const ended = new Promise<void>((resolve) => (watchEnded = resolve));
    await new k8s.Watch(kc).watch(
      "/api/v1/namespaces/default/configmaps",
      { resourceVersion: rv },
      () => {},
      () => watchEnded(),
    );
    await server.stop();
    await ended;
    server = await server.restart();
    assert.notEqual(server.handle.url, "", "restarted");
    kc = new k8s.KubeConfig();
    kc.loadFromFile(server.handle.kubeconfigPath);
    core = kc.makeApiClient(k8s.CoreV1Api);
    storage = kc.makeApiClient(k8s.StorageV1Api);
    assert.equal(
      (await core.readNamespacedConfigMap({ namespace: "default", name: "survivor" })).data?.a,
      "1",
    );
    const events = await collectWatch(
      "/api/v1/namespaces/default/configmaps",
      { resourceVersion: rv },
      async () => {
        await core.deleteNamespacedConfigMap({ namespace: "default", name: "survivor" });
      },
      (e) => e.length >= 2,
    );
    assert.deepEqual(
      events.map((e) => `${e.type} ${nameOf(e.object)}`),
      ["MODIFIED survivor", "DELETED survivor"],
    );
    assert.ok(oldUrl.startsWith("https://127.0.0.1:"));
    assert.ok((await storage.listStorageClass()).items);
  });
});
