import { test } from "node:test";
import assert from "node:assert/strict";
import { checkCelRule, compileCelRule, evaluateCel, parseCel } from "./cel.ts";

function run(rule: string, self: unknown, oldSelf?: unknown): unknown {
  return evaluateCel(parseCel(rule), oldSelf === undefined ? { self } : { self, oldSelf });
}

test("CEL subset evaluates the rules CRDs use", () => {
  const source = { persistentVolumeClaimName: "pvc-1" };
  const exactlyOne =
    "(has(self.volumeSnapshotContentName) && !has(self.persistentVolumeClaimName)) || (!has(self.volumeSnapshotContentName) && has(self.persistentVolumeClaimName))";
  assert.equal(run(exactlyOne, source), true);
  assert.equal(run(exactlyOne, { ...source, volumeSnapshotContentName: "c" }), false);
  assert.equal(run(exactlyOne, {}), false);
  assert.equal(run("self == oldSelf", "a", "a"), true);
  assert.equal(run("self == oldSelf", { a: [1, 2] }, { a: [1, 2] }), true);
  assert.equal(run("self == oldSelf", "a", "b"), false);
  assert.equal(run("size(self) > 0", ""), false);
  assert.equal(run("self.size() <= 3 && self.startsWith('ab')", "abc"), true);
  assert.equal(run("has(self.name) && has(self.__namespace__)", { name: "a", namespace: "b" }), true);
  assert.equal(run("self.x in ['a', 'b'] ? self.n * 2 == 4 : false", { x: "b", n: 2 }), true);
  assert.equal(run("self.a + '-' + self.b", { a: "x", b: "y" }), "x-y");
  assert.equal(run("!has(oldSelf.v) || has(self.v)", {}, { v: 1 }), false);
});

test("errors: commutative || absorbs them, otherwise the rule fails with the error", () => {
  assert.equal(run("self.missing == 1 || true", {}), true);
  const rule = compileCelRule("self.missing == 1");
  assert.ok(rule);
  const outcome = checkCelRule(rule, {});
  assert.equal(outcome.ok, false);
  assert.match((!outcome.ok && outcome.error) || "", /no such key: missing/);
  // Macros and functions outside the subset are skipped, never enforced.
  assert.equal(compileCelRule("self.all(x, x > 0)"), undefined);
  assert.equal(compileCelRule("quantity(self).isGreaterThan(quantity('1Gi'))"), undefined);
  assert.equal(compileCelRule("self ==="), undefined, "unparsable rules are skipped");
});
