// JSON patch where evanphx/json-patch v4 (kube-apiserver's) and RFC 6902 differ: each case is
// what the library does, with its error text where it fails.

import { test } from "node:test";
import assert from "node:assert/strict";
import { applyJsonPatchV4, JsonPatchError } from "./json-patch.ts";

const doc = { metadata: { name: "c" }, list: ["a", "b", "c"], data: { k: "v" } };

function fails(operations: Record<string, unknown>[], message: string): void {
  assert.throws(
    () => applyJsonPatchV4(doc, operations),
    (e: unknown) => e instanceof JsonPatchError && e.message === message,
  );
}

test("replace of a missing member of an existing object sets it (the csi-snapshotter's first write)", () => {
  const out = applyJsonPatchV4(doc, [
    { op: "replace", path: "/metadata/annotations", value: { a: "1" } },
  ]) as { metadata: Record<string, unknown> };
  assert.deepEqual(out.metadata.annotations, { a: "1" });
  fails(
    [{ op: "replace", path: "/spec/x", value: 1 }],
    "replace operation does not apply: doc is missing path: /spec/x: missing value",
  );
  fails(
    [{ op: "replace", path: "/list/3", value: 1 }],
    "replace operation does not apply: doc is missing key: /list/3: missing value",
  );
});

test("negative array indices count from the end", () => {
  const out = applyJsonPatchV4(doc, [
    { op: "replace", path: "/list/-1", value: "z" },
    { op: "remove", path: "/list/-3" },
    { op: "add", path: "/list/-1", value: "y" },
  ]) as { list: string[] };
  // add at -1 inserts at len+1-1: after the last element.
  assert.deepEqual(out.list, ["b", "z", "y"]);
  fails(
    [{ op: "remove", path: "/list/-4" }],
    "error in remove for path: '/list/-4': Unable to access invalid index: -4: invalid index referenced",
  );
});

test("array indices parse as strconv.Atoi: sign and leading zeros accepted, words refused", () => {
  const out = applyJsonPatchV4(doc, [{ op: "replace", path: "/list/+01", value: "B" }]) as { list: string[] };
  assert.deepEqual(out.list, ["a", "B", "c"]);
  fails(
    [{ op: "add", path: "/list/x", value: 1 }],
    `error in add for path: '/list/x': value was not a proper array index: 'x': strconv.Atoi: parsing "x": invalid syntax`,
  );
});

test("test of a missing or null member passes for a null or absent value; objects compare one-sidedly", () => {
  applyJsonPatchV4(doc, [{ op: "test", path: "/metadata/missing", value: null }]);
  applyJsonPatchV4(doc, [{ op: "test", path: "/metadata/missing" }]);
  applyJsonPatchV4(doc, [{ op: "test", path: "/data", value: { k: "v", extra: 1 } }]);
  fails([{ op: "test", path: "/data", value: {} }], "testing value /data failed: test failed");
  fails(
    [{ op: "test", path: "/metadata/missing", value: 1 }],
    "testing value /metadata/missing failed: test failed",
  );
});

test("copy from a missing member copies null; add without a value sets null", () => {
  const out = applyJsonPatchV4(doc, [
    { op: "copy", from: "/metadata/missing", path: "/metadata/copied" },
    { op: "add", path: "/metadata/empty" },
  ]) as { metadata: Record<string, unknown> };
  assert.equal(out.metadata.copied, null);
  assert.equal(out.metadata.empty, null);
});

test("move into its own child finds no destination; move of a missing member fails on the remove", () => {
  fails(
    [{ op: "move", from: "/data", path: "/data/x" }],
    "move operation does not apply: doc is missing destination path: /data/x: missing value",
  );
  fails(
    [{ op: "move", from: "/data/nope", path: "/data/x" }],
    "error in move for path: 'nope': Unable to remove nonexistent key: nope: missing value",
  );
});

test('the path "" replaces or tests the whole document; other operations cannot reach it', () => {
  assert.deepEqual(applyJsonPatchV4(doc, [{ op: "replace", path: "", value: { a: 1 } }]), { a: 1 });
  fails(
    [{ op: "replace", path: "", value: 1 }],
    "replace operation value must be object or array: %!w(<nil>)",
  );
  fails(
    [{ op: "add", path: "", value: {} }],
    'add operation does not apply: doc is missing path: "": missing value',
  );
  fails([{ op: "frob", path: "/x" }], "Unexpected kind: frob");
  fails([{ path: "/x" }], "Unexpected kind: unknown");
});

test('"__proto__" is a plain key: reachable only when present, never the prototype', () => {
  fails(
    [{ op: "add", path: "/metadata/__proto__/polluted", value: "yes" }],
    'add operation does not apply: doc is missing path: "/metadata/__proto__/polluted": missing value',
  );
  const out = applyJsonPatchV4(doc, [{ op: "add", path: "/data/__proto__", value: "x" }]) as {
    data: Record<string, unknown>;
  };
  assert.equal(Object.getOwnPropertyDescriptor(out.data, "__proto__")?.value, "x");
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.equal(doc.data.k, "v", "input untouched");
  assert.ok(!Object.hasOwn(doc.data, "__proto__"));
});

// ---- limits: a patch's growth and work are bounded while it applies ----

const limits = { maxCopyBytes: 30, maxShiftedElements: 10, maxDepth: 8 };

test("copies count the compact JSON size of each copied value; past the limit the copy fails with the library's text", () => {
  const base = { list: [{ name: "x" }] }; // {"name":"x"} is 12 bytes
  const copy = { op: "copy", from: "/list/0", path: "/list/-" };
  const out = applyJsonPatchV4(base, [copy, copy], limits) as typeof base;
  assert.equal(out.list.length, 3);
  assert.throws(
    () => applyJsonPatchV4(base, [copy, copy, copy], limits),
    (e: unknown) =>
      e instanceof JsonPatchError &&
      e.message ===
        "Unable to complete the copy, the accumulated size increase of copy is 36, exceeding the limit 30",
  );
  // A copy from a missing member adds nothing to the count (it copies null).
  applyJsonPatchV4(base, [{ op: "copy", from: "/missing", path: "/n" }, copy, copy], limits);
});

test("40 self-doubling copies stop at kube-apiserver's 3 MiB copy limit, quickly and without growing further", () => {
  const base = { data: { a: "x".repeat(1000) } };
  const operations = Array.from({ length: 40 }, (_, i) => ({
    op: "copy",
    from: "/data",
    path: `/data/c${i}`,
  }));
  const started = Date.now();
  assert.throws(
    () => applyJsonPatchV4(base, operations),
    (e: unknown) =>
      e instanceof JsonPatchError &&
      /^Unable to complete the copy, the accumulated size increase of copy is \d+, exceeding the limit 3145728$/.test(
        e.message,
      ),
  );
  // Unbounded, the 40th copy alone would be 2^39 KB; stopped, it is a few megabytes of work.
  assert.ok(Date.now() - started < 20_000, `took ${Date.now() - started} ms`);
});

test("insertions and removals before an array's end share a budget of shifted elements; appends are free", () => {
  const base = { list: [1, 2, 3, 4, 5] };
  const front = { op: "add", path: "/list/0", value: 0 }; // shifts every element: 5, 6, …
  applyJsonPatchV4(base, [front], limits);
  assert.throws(
    () => applyJsonPatchV4(base, [front, front], limits),
    (e: unknown) =>
      e instanceof JsonPatchError &&
      e.message ===
        "error in add for path: '/list/0': the patch shifts more than 10 array elements (an insertion or removal before the end of an array moves every later element)",
  );
  const removeFirst = { op: "remove", path: "/list/0" }; // shifts 7, then 6
  assert.throws(
    () => applyJsonPatchV4({ list: [1, 2, 3, 4, 5, 6, 7, 8] }, [removeFirst, removeFirst], limits),
    (e: unknown) => e instanceof JsonPatchError && /shifts more than 10 array elements/.test(e.message),
  );
  const append = { op: "add", path: "/list/-", value: 9 };
  const removeLast = { op: "remove", path: "/list/-1" };
  const out = applyJsonPatchV4(base, Array(20).fill(append).concat(Array(20).fill(removeLast)), limits);
  assert.deepEqual(out, base);
});

test("a copy never nests the document deeper than the server stores", () => {
  const base = { a: { b: { c: { d: {} } } } }; // /a holds 4 levels
  applyJsonPatchV4(base, [{ op: "copy", from: "/a", path: "/x" }], limits);
  assert.throws(
    () => applyJsonPatchV4(base, [{ op: "copy", from: "/a", path: "/a/b/c/d/e" }], limits),
    (e: unknown) =>
      e instanceof JsonPatchError &&
      e.message === "Unable to complete the copy, the copy would nest the document deeper than 8 levels",
  );
});

test("test compares a large string of the document without encoding it", () => {
  const base = { s: "x".repeat(1_000_000) };
  const operations = Array.from({ length: 10_000 }, () => ({ op: "test", path: "/s", value: "y" }));
  assert.throws(() => applyJsonPatchV4(base, operations), JsonPatchError);
  applyJsonPatchV4(base, [{ op: "test", path: "/s", value: "x".repeat(1_000_000) }]);
});
