import assert from "node:assert/strict";
import { test } from "node:test";
import { compareKeys, keyRange, prefixEnd } from "./key-range.ts";

test("prefixEnd is the first string after every string with the prefix", () => {
  assert.equal(prefixEnd("/core/pods/"), "/core/pods0");
  assert.equal(prefixEnd("a"), "b");
  assert.equal(prefixEnd(""), undefined);
  assert.equal(prefixEnd("a\u{10ffff}"), "b");
  assert.equal(prefixEnd("\u{10ffff}"), undefined);
  assert.equal(prefixEnd("x\ud7ff"), "x\ue000");
  for (const key of ["/core/pods/", "/core/pods/a", "/core/pods/\u{10ffff}\u{10ffff}", "/core/pods/é"]) {
    assert.ok(compareKeys(key, prefixEnd("/core/pods/")!) < 0, key);
  }
  assert.ok(compareKeys("/core/pods0", prefixEnd("/core/pods/")!) >= 0);
});

test("compareKeys orders as UTF-8 bytes do, without encoding", () => {
  const keys = [
    "/a",
    "/a/b",
    "/b",
    "/\ue000",
    "/\uffff",
    "/\u{10000}",
    "/\u{10ffff}",
    "/é",
    "/z",
    "/\u{1f600}x",
    "/\u{1f601}",
  ];
  const byBytes = [...keys].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  assert.deepEqual([...keys].sort(compareKeys), byBytes);
  assert.equal(compareKeys("/x", "/x"), 0);
});

test("keyRange starts after startAfter only when it lies at or past the prefix", () => {
  assert.deepEqual(keyRange("/a/"), { lo: "/a/", loInclusive: true, hi: "/a0" });
  assert.deepEqual(keyRange("/a/", "/a/x"), { lo: "/a/x", loInclusive: false, hi: "/a0" });
  assert.deepEqual(keyRange("/a/", "/0"), { lo: "/a/", loInclusive: true, hi: "/a0" });
});
