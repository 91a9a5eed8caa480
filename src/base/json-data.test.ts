import { test } from "node:test";
import assert from "node:assert/strict";
import { jsonEqual } from "./json-data.ts";

test("jsonEqual: equal when the JSON is, key order aside and undefined absent", () => {
  assert.ok(jsonEqual({ a: 1, b: [1, { c: "x" }] }, { b: [1, { c: "x" }], a: 1 }));
  assert.ok(jsonEqual({ a: 1, gone: undefined }, { a: 1 }));
  assert.ok(jsonEqual({ a: 1 }, { a: 1, gone: undefined }));
  assert.ok(jsonEqual(null, null));
  assert.ok(!jsonEqual({ a: 1 }, { a: 1, b: 2 }));
  assert.ok(!jsonEqual({ a: 1, b: 2 }, { a: 1 }));
  assert.ok(!jsonEqual({ a: undefined }, { b: 1 }));
  assert.ok(!jsonEqual([1, 2], [2, 1]));
  assert.ok(!jsonEqual([1], { 0: 1 }));
  assert.ok(!jsonEqual({}, null));
  assert.ok(!jsonEqual("1", 1));
  assert.ok(!jsonEqual({ a: { b: [1] } }, { a: { b: [1, 2] } }));
});
