import { test } from "node:test";
import assert from "node:assert/strict";
import { NAMESPACE_INDEX, Store } from "./store.ts";
import type { KubeObject } from "./types.ts";

interface Pvc extends KubeObject {
  spec: { storageClassName?: string; volumeName?: string };
}

const pvc = (namespace: string, name: string, sc: string, rv = "1"): Pvc => ({
  metadata: { namespace, name, resourceVersion: rv },
  spec: { storageClassName: sc },
});

test("keys, namespace index and custom index stay in step through upsert, delete, replace", () => {
  const store = new Store<Pvc>();
  store.addIndexer("class", (o) => (o.spec.storageClassName ? [o.spec.storageClassName] : []));
  store.upsert(pvc("a", "one", "fast"));
  store.upsert(pvc("b", "two", "fast"));
  store.upsert(pvc("a", "three", "slow"));
  assert.deepEqual(store.keys().sort(), ["a/one", "a/three", "b/two"]);
  assert.deepEqual(
    store
      .listByNamespace("a")
      .map((o) => o.metadata?.name)
      .sort(),
    ["one", "three"],
  );
  assert.deepEqual(store.indexKeys("class", "fast").sort(), ["a/one", "b/two"]);

  // Changing the indexed value moves the key between index buckets.
  store.upsert(pvc("a", "one", "slow", "2"));
  assert.deepEqual(store.indexKeys("class", "fast"), ["b/two"]);
  assert.deepEqual(store.indexKeys("class", "slow").sort(), ["a/one", "a/three"]);

  assert.equal(store.delete("b/two")?.metadata?.name, "two");
  assert.equal(store.delete("b/two"), undefined);
  assert.deepEqual(store.indexKeys("class", "fast"), []);
  assert.deepEqual(store.indexKeys(NAMESPACE_INDEX, "b"), []);

  const { removed } = store.replace([pvc("c", "four", "fast")]);
  assert.deepEqual(removed.map((o) => o.metadata?.name).sort(), ["one", "three"]);
  assert.deepEqual(store.keys(), ["c/four"]);
  assert.deepEqual(store.indexKeys("class", "slow"), []);
  assert.throws(() => store.byIndex("nope", "x"), /no indexer/);
});

test("an indexer added late indexes existing objects; duplicate names are refused", () => {
  const store = new Store<Pvc>();
  store.upsert(pvc("a", "one", "fast"));
  store.upsert({ metadata: { name: "cluster-scoped" }, spec: {} });
  store.addIndexer("class", (o) => (o.spec.storageClassName ? [o.spec.storageClassName] : []));
  assert.deepEqual(store.indexKeys("class", "fast"), ["a/one"]);
  assert.equal(store.get("cluster-scoped")?.metadata?.name, "cluster-scoped");
  assert.deepEqual(store.indexKeys(NAMESPACE_INDEX, ""), ["cluster-scoped"]);
  assert.throws(() => store.addIndexer("class", () => []), /already exists/);
});

test("freeze: stored objects are deep-frozen, so a mutation throws", () => {
  const store = new Store<Pvc>({ freeze: true });
  store.upsert(pvc("a", "one", "fast"));
  const cached = store.get("a/one")!;
  assert.throws(() => {
    cached.spec.volumeName = "pv-1";
  }, TypeError);
  assert.throws(() => {
    cached.metadata!.labels = {};
  }, TypeError);
  const copy = structuredClone(cached);
  copy.spec.volumeName = "pv-1";
  assert.equal(copy.spec.volumeName, "pv-1");
});
