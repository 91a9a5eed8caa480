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
