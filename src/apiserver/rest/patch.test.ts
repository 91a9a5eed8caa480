import { test } from "node:test";
import assert from "node:assert/strict";
import { applyJsonPatch, applyMergePatch, applyStrategicMergePatch } from "./patch.ts";
import { ApiError } from "../transport/status.ts";

const strategies = {
  "spec.containers": { mergeKey: "name" },
  "spec.containers[].env": { mergeKey: "name" },
} as const;

const pod = {
  metadata: { name: "p", finalizers: ["a"], labels: { x: "1", y: "2" } },
  spec: {
    containers: [
      { name: "a", image: "busybox", env: [{ name: "E1", value: "1" }] },
      { name: "b", image: "busybox" },
    ],
    tolerations: [{ key: "k" }],
  },
};

test("merge patch: null deletes, maps merge, lists replace", () => {
  const out = applyMergePatch(pod, { metadata: { labels: { x: null, z: "3" } }, spec: { tolerations: [] } });
  assert.deepEqual((out as typeof pod).metadata.labels, { y: "2", z: "3" });
  assert.deepEqual((out as typeof pod).spec.tolerations, []);
  assert.equal(pod.metadata.labels.x, "1", "input not mutated");
});

test("json patch: add/remove work, an operation that does not apply is 422, a non-array body is 400", () => {
  const out = applyJsonPatch(pod, [{ op: "add", path: "/metadata/labels/z", value: "3" }]) as typeof pod;
  assert.equal(out.metadata.labels.x, "1");
  assert.equal((out.metadata.labels as Record<string, string>).z, "3");
  assert.throws(
    () => applyJsonPatch(pod, [{ op: "test", path: "/metadata/name", value: "other" }]),
    (e: unknown) => e instanceof ApiError && e.code === 422,
  );
  assert.throws(
    () => applyJsonPatch(pod, [{ op: "frobnicate", path: "/x" }]),
    (e: unknown) => e instanceof ApiError && e.code === 422,
  );
  assert.throws(
    () => applyJsonPatch(pod, { op: "add" }),
    (e: unknown) => e instanceof ApiError && e.code === 400,
  );
});

test("json patch failures carry upstream's message and the reason as a cause", () => {
  assert.throws(
    () => applyJsonPatch(pod, [{ op: "test", path: "/metadata/name", value: "other" }]),
    (e: unknown) =>
      e instanceof ApiError &&
      e.reason === "Invalid" &&
      e.message === "the server rejected our request due to an error in our request" &&
      e.details?.causes?.[0]?.message === "testing value /metadata/name failed: test failed",
  );
  assert.throws(
    () => applyJsonPatch(pod, [{ op: "replace", path: "/metadata/nothing/here", value: 1 }]),
    (e: unknown) =>
      e instanceof ApiError &&
      e.code === 422 &&
      e.details?.causes?.[0]?.message ===
        "replace operation does not apply: doc is missing path: /metadata/nothing/here: missing value",
  );
  assert.throws(
    () => applyJsonPatch(pod, [{ op: "add", path: "/metadata/__proto__/polluted", value: "yes" }]),
    (e: unknown) => e instanceof ApiError && e.code === 422,
  );
  assert.equal(({} as Record<string, unknown>).polluted, undefined, "Object.prototype untouched");
});

test('merge and strategic patches keep "__proto__" and "constructor" as plain keys', () => {
  const patch = JSON.parse(
    '{"metadata":{"labels":{"__proto__":{"polluted":"yes"},"constructor":"c"}}}',
  ) as unknown;
  for (const out of [applyMergePatch(pod, patch), applyStrategicMergePatch(pod, patch, {})]) {
    const labels = (out as typeof pod).metadata.labels as Record<string, unknown>;
    assert.ok(Object.hasOwn(labels, "__proto__"), "__proto__ is an own key");
    assert.deepEqual(Object.getOwnPropertyDescriptor(labels, "__proto__")?.value, { polluted: "yes" });
    assert.equal(Object.getPrototypeOf(labels), Object.prototype, "prototype unchanged");
    assert.equal(labels.constructor, "c");
    assert.equal(labels.x, "1");
    assert.deepEqual(
      Object.keys(labels).sort(),
      ["__proto__", "constructor", ...Object.keys(pod.metadata.labels)].sort(),
    );
  }
  assert.equal(({} as Record<string, unknown>).polluted, undefined, "Object.prototype untouched");
});

test("strategic merge: lists merge by key, nested keys, finalizers as a set", () => {
  const out = applyStrategicMergePatch(
    pod,
    {
      metadata: { finalizers: ["b", "a"] },
      spec: {
        containers: [
          { name: "a", image: "nginx", env: [{ name: "E2", value: "2" }] },
          { name: "c", image: "x" },
        ],
      },
    },
    strategies,
  ) as typeof pod;
  assert.deepEqual(out.metadata.finalizers, ["a", "b"]);
  assert.deepEqual(
    out.spec.containers.map((c) => [c.name, c.image]),
    [
      ["a", "nginx"],
      ["b", "busybox"],
      ["c", "x"],
    ],
  );
  assert.deepEqual(out.spec.containers[0]!.env, [
    { name: "E1", value: "1" },
    { name: "E2", value: "2" },
  ]);
});

test("strategic merge directives: $patch delete/replace, $setElementOrder, $deleteFromPrimitiveList, $retainKeys", () => {
  const deleted = applyStrategicMergePatch(
    pod,
    { spec: { containers: [{ name: "b", $patch: "delete" }] } },
    strategies,
  ) as typeof pod;
  assert.deepEqual(
    deleted.spec.containers.map((c) => c.name),
    ["a"],
  );
  const replaced = applyStrategicMergePatch(
    pod,
    { spec: { containers: [{ name: "z", image: "z" }, { $patch: "replace" }] } },
    strategies,
  ) as typeof pod;
  assert.deepEqual(replaced.spec.containers, [{ name: "z", image: "z" }]);
  const ordered = applyStrategicMergePatch(
    pod,
    {
      spec: {
        "$setElementOrder/containers": [{ name: "b" }, { name: "a" }],
        containers: [{ name: "a", image: "q" }],
      },
    },
    strategies,
  ) as typeof pod;
  assert.deepEqual(
    ordered.spec.containers.map((c) => c.name),
    ["b", "a"],
  );
  const fewer = applyStrategicMergePatch(
    pod,
    { metadata: { "$deleteFromPrimitiveList/finalizers": ["a"] } },
    strategies,
  ) as typeof pod;
  assert.deepEqual(fewer.metadata.finalizers, []);
  const retained = applyStrategicMergePatch(
    pod,
    { spec: { $retainKeys: ["containers"], containers: [] } },
    {},
  ) as Record<string, Record<string, unknown>>;
  assert.deepEqual(Object.keys(retained.spec!), ["containers"]);
  const mapReplaced = applyStrategicMergePatch(
    pod,
    { metadata: { labels: { $patch: "replace", q: "1" } } },
    {},
  ) as typeof pod;
  assert.deepEqual(mapReplaced.metadata.labels, { q: "1" });
});

test("strategic merge: unknown $patch directives are refused with kube-apiserver's text (a 500 without a reason, as upstream)", () => {
  const refused = (patch: unknown, message: string): void =>
    assert.throws(
      () => applyStrategicMergePatch(pod, patch, strategies),
      (e: unknown) => e instanceof ApiError && e.code === 500 && e.reason === "" && e.message === message,
    );
  refused(
    { metadata: { labels: { $patch: "bogus", z: "1" } } },
    "unknown patch type: bogus in map: map[$patch:bogus z:1]",
  );
  // A map knows replace and delete only; merge is a list directive.
  refused({ spec: { $patch: "merge" } }, "unknown patch type: merge in map: map[$patch:merge]");
  refused(
    { spec: { containers: [{ name: "a", $patch: "bogus", ports: [1, 2] }] } },
    "unknown patch type: bogus in map: map[$patch:bogus name:a ports:[1 2]]",
  );
  refused(
    { spec: { containers: [{ name: "a", $patch: "merge" }] } },
    "merging lists cannot yet be specified in the patch",
  );
  refused(
    { spec: { containers: [{ name: "a", $patch: 5 }] } },
    "unknown patch type: %!s(int64=5) in map: map[$patch:5 name:a]",
  );
});

test("strategic merge: $patch delete removes every item with the key; later items merge into the remaining order", () => {
  const twice = {
    ...pod,
    spec: { ...pod.spec, containers: [...pod.spec.containers, { name: "a", image: "again" }] },
  };
  const out = applyStrategicMergePatch(
    twice,
    { spec: { containers: [{ name: "a", $patch: "delete" }, { name: "b", image: "new" }, { name: "d" }] } },
    strategies,
  ) as typeof pod;
  assert.deepEqual(out.spec.containers, [{ name: "b", image: "new" }, { name: "d" }]);
});

test("strategic merge of keyed lists is linear: each stored item's merge key is read a bounded number of times", () => {
  // The stored items count reads of their merge key: a scan per patch item (quadratic: 40,000
  // items held the event loop for 20 s) reads each one once per patch item.
  const n = 2_000;
  let reads = 0;
  const stored = Array.from({ length: n }, (_, i) => {
    const item: Record<string, unknown> = { image: "a" };
    Object.defineProperty(item, "name", {
      enumerable: true,
      get: () => {
        reads++;
        return `c${i}`;
      },
    });
    return item;
  });
  const big = { metadata: { name: "p" }, spec: { containers: stored } };
  const patch = {
    spec: { containers: Array.from({ length: n }, (_, i) => ({ name: `c${n - 1 - i}`, image: "b" })) },
  };
  const out = applyStrategicMergePatch(big, patch, strategies) as {
    spec: { containers: { name: string }[] };
  };
  assert.ok(reads <= 4 * n, `${reads} reads of merge keys for ${n} items`);
  assert.equal(out.spec.containers.length, n);
  assert.deepEqual({ ...out.spec.containers[0] }, { name: "c0", image: "b" });
  assert.deepEqual({ ...out.spec.containers[n - 1] }, { name: `c${n - 1}`, image: "b" });
});
