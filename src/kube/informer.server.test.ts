// Shared informers against the real embedded API server: list then watch, update with old and
// new, delete with the final state, resume after a watch ends, relist on 410 with tombstones,
// bookmarks, resync, indexers, selectors, and one informer per key from the factory.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { FakeClock } from "../base/index.ts";
import { InformerFactory, SharedInformer, deletedObject, isTombstone } from "./informer.ts";
import { clientListerWatcher } from "./reflector.ts";
import { CONFIGMAPS, startTestServer, type TestServer } from "../../test/harness/kube-server.ts";
import type { KubeClient } from "./client.ts";
import type { KubeObject } from "./types.ts";
import { until } from "../../test/harness/until.ts";

interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

let env: TestServer;
let client: KubeClient;
before(async () => {
  env = await startTestServer({ bookmarkIntervalMs: 100 });
  client = env.client();
});
after(async () => {
  await env.stop();
});

const cm = (name: string, group: string, data: Record<string, string> = {}): ConfigMap => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, namespace: "default", labels: { group } },
  data,
});

function recorder(informer: SharedInformer<ConfigMap>): string[] {
  const log: string[] = [];
  informer.addEventHandler({
    onAdd: (o) => log.push(`add ${o.metadata?.name}`),
    onUpdate: (a, b) => log.push(`update ${a.metadata?.name} ${a.data?.v ?? "-"}->${b.data?.v ?? "-"}`),
    onDelete: (o) =>
      log.push(
        `${isTombstone(o) ? "tombstone" : "delete"} ${deletedObject(o).metadata?.name} ${deletedObject(o).data?.v ?? "-"}`,
      ),
  });
  return log;
}

function run(informer: SharedInformer<ConfigMap>, t: { after: (fn: () => Promise<void>) => void }): void {
  const controller = new AbortController();
  const running = informer.run(controller.signal);
  t.after(async () => {
    controller.abort();
    await running;
  });
}

test("list, then watch: add, update with old and new, delete with final state; cache is frozen", async (t) => {
  await client.create(CONFIGMAPS, cm("basic-1", "basic", { v: "1" }));
  const informer = new SharedInformer<ConfigMap>({
    name: "basic",
    listerWatcher: clientListerWatcher(client, CONFIGMAPS, {
      namespace: "default",
      labelSelector: "group=basic",
    }),
    freeze: true,
  });
  const log = recorder(informer);
  run(informer, t);
  await informer.waitForSync();
  assert.deepEqual(log, ["add basic-1"]);
  await client.create(CONFIGMAPS, cm("basic-2", "basic"));
  await client.patch(CONFIGMAPS, "basic-1", { data: { v: "2" } }, { namespace: "default" });
  await client.patch(CONFIGMAPS, "basic-1", { data: { v: "3" } }, { namespace: "default" });
  await client.create(CONFIGMAPS, cm("other-1", "other"));
  await client.delete(CONFIGMAPS, "basic-1", { namespace: "default" });
  await until(() => log.length === 5, "five events");
  assert.deepEqual(log, [
    "add basic-1",
    "add basic-2",
    "update basic-1 1->2",
    "update basic-1 2->3",
    "delete basic-1 3",
  ]);
  assert.deepEqual(informer.store.keys(), ["default/basic-2"]);
  assert.throws(() => {
    informer.store.get("default/basic-2")!.data = {};
  }, TypeError);
});

test("a watch the server ends is resumed from the last resourceVersion, without relisting", async (t) => {
  const informer = new SharedInformer<ConfigMap>({
    name: "resume",
    listerWatcher: clientListerWatcher(client, CONFIGMAPS, { labelSelector: "group=resume" }),
    watchTimeoutSeconds: 1,
  });
  const log = recorder(informer);
  run(informer, t);
  await informer.waitForSync();
  await client.create(CONFIGMAPS, cm("resume-1", "resume", { v: "1" }));
  await until(() => log.length === 1, "the add");
  await until(() => informer.reflector.stats.watches >= 2, "the server to end the first watch");
  await client.patch(CONFIGMAPS, "resume-1", { data: { v: "2" } }, { namespace: "default" });
  await until(() => log.length === 2, "the update after the re-watch");
  assert.deepEqual(log, ["add resume-1", "update resume-1 1->2"]);
  assert.equal(informer.reflector.stats.lists, 1);
});

test("410 Gone after compaction relists; a delete missed meanwhile arrives as a tombstone", async (t) => {
  const clock = new FakeClock();
  await client.create(CONFIGMAPS, cm("gone-a", "gone", { v: "a" }));
  await client.create(CONFIGMAPS, cm("gone-b", "gone", { v: "b" }));
  const informer = new SharedInformer<ConfigMap>({
    name: "gone",
    listerWatcher: clientListerWatcher(client, CONFIGMAPS, { labelSelector: "group=gone" }),
    watchTimeoutSeconds: 1,
    clock,
  });
  const log = recorder(informer);
  run(informer, t);
  await informer.waitForSync();
  // The next watch fails, so the reflector backs off on the fake clock with a stale resourceVersion.
  env.faults.failNext({ verb: "watch", resource: "configmaps", code: 500 });
  await until(() => informer.reflector.stats.errors === 1, "the failed re-watch");
  await client.delete(CONFIGMAPS, "gone-b", { namespace: "default" });
  await client.create(CONFIGMAPS, cm("gone-c", "gone", { v: "c" }));
  env.server.compact(1);
  await clock.advance(60_000);
  await until(() => informer.reflector.stats.lists === 2, "the relist");
  await until(() => log.length === 5, "relist events");
  assert.deepEqual(log, [
    "add gone-a",
    "add gone-b",
    "update gone-a a->a",
    "add gone-c",
    "tombstone gone-b b",
  ]);
  assert.deepEqual(informer.store.keys().sort(), ["default/gone-a", "default/gone-c"]);
});

test("bookmarks move the resourceVersion forward without any handler call", async (t) => {
  const informer = new SharedInformer<ConfigMap>({
    name: "bookmarks",
    listerWatcher: clientListerWatcher(client, CONFIGMAPS, { labelSelector: "group=quiet" }),
  });
  const log = recorder(informer);
  run(informer, t);
  await informer.waitForSync();
  const listed = Number(informer.lastSyncResourceVersion);
  const noise = await client.create(CONFIGMAPS, cm("noise", "loud"));
  const noiseRv = Number(noise.metadata?.resourceVersion);
  await until(() => Number(informer.lastSyncResourceVersion) >= noiseRv, "a bookmark past the noise");
  assert.ok(noiseRv > listed);
  assert.deepEqual(log, []);
});

test("periodic resync replays every cached object as an update", async (t) => {
  const clock = new FakeClock();
  await client.create(CONFIGMAPS, cm("resync-1", "resync", { v: "1" }));
  const informer = new SharedInformer<ConfigMap>({
    name: "resync",
    listerWatcher: clientListerWatcher(client, CONFIGMAPS, { labelSelector: "group=resync" }),
    resyncPeriodMs: 60_000,
    clock,
  });
  const log = recorder(informer);
  run(informer, t);
  await informer.waitForSync();
  await clock.advance(60_000);
  assert.deepEqual(log, ["add resync-1", "update resync-1 1->1"]);
});

test("factory: one informer per key, selectors filter, custom indexers answer", async (t) => {
  const factory = new InformerFactory({ client, freeze: true });
  const a = factory.informer<ConfigMap>(CONFIGMAPS, { labelSelector: "group=idx" });
  const b = factory.informer<ConfigMap>(CONFIGMAPS, { labelSelector: "group=idx" });
  const c = factory.informer<ConfigMap>(CONFIGMAPS, { labelSelector: "group=idx", namespace: "default" });
  assert.equal(a, b);
  assert.notEqual(a, c);
  a.addIndexer("byValue", (o) => (o.data?.v ? [o.data.v] : []));
  await client.create(CONFIGMAPS, cm("idx-1", "idx", { v: "red" }));
  await client.create(CONFIGMAPS, cm("idx-2", "idx", { v: "blue" }));
  await client.create(CONFIGMAPS, cm("idx-3", "not-idx", { v: "red" }));
  const controller = new AbortController();
  const running = factory.start(controller.signal);
  t.after(async () => {
    controller.abort();
    await running;
  });
  await factory.waitForCacheSync();
  assert.deepEqual(
    a.store.byIndex("byValue", "red").map((o) => o.metadata?.name),
    ["idx-1"],
  );
  await client.patch(CONFIGMAPS, "idx-2", { data: { v: "red" } }, { namespace: "default" });
  await until(() => a.store.indexKeys("byValue", "red").length === 2, "the index to follow the update");
  assert.deepEqual(a.store.indexKeys("byValue", "blue"), []);
  assert.deepEqual(
    c.store
      .listByNamespace("default")
      .map((o) => o.metadata?.name)
      .sort(),
    ["idx-1", "idx-2"],
  );
});
