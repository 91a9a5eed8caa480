import { test } from "node:test";
import assert from "node:assert/strict";
import type { JSONSchemaProps } from "../../api/index.ts";
import { checkCelRule, compileCelRule, escapeCelName, newCostBudget, PER_CALL_COST_LIMIT } from "./cel.ts";

function run(rule: string, self: unknown, oldSelf?: unknown, schema?: JSONSchemaProps): boolean | string {
  const compiled = compileCelRule(rule);
  assert.ok(compiled.ok, `${rule}: ${compiled.ok ? "" : compiled.error}`);
  const outcome = checkCelRule(compiled.rule, self, oldSelf, schema);
  return outcome.ok ? true : (outcome.error ?? false);
}

test("CEL evaluates the rules CRDs use", () => {
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
  const ref: JSONSchemaProps = {
    type: "object",
    properties: { name: { type: "string" }, namespace: { type: "string" } },
  };
  assert.equal(
    run("has(self.name) && has(self.__namespace__)", { name: "a", namespace: "b" }, undefined, ref),
    true,
  );
  assert.equal(run("self.x in ['a', 'b'] ? self.n * 2 == 4 : false", { x: "b", n: 2 }), true);
  assert.equal(run("!has(oldSelf.v) || has(self.v)", {}, { v: 1 }), false);
});

test("macros are evaluated, never skipped: all, exists, exists_one, filter, map", () => {
  const list = [
    { name: "a", size: 1 },
    { name: "b", size: 3 },
  ];
  assert.equal(run("self.all(x, x.size > 0)", list), true);
  assert.equal(run("self.all(x, x.size > 1)", list), false);
  assert.equal(run("self.exists(x, x.name == 'b')", list), true);
  assert.equal(run("self.exists_one(x, x.size >= 1)", list), false);
  assert.equal(run("self.filter(x, x.size > 2).size() == 1", list), true);
  assert.equal(run("self.map(x, x.name) == ['a', 'b']", list), true);
  assert.equal(run("self.map(k, self[k] > 0).all(b, b)", { a: 1, b: 2 }), true);
});

test("numbers follow the schema: integer is int, number is double", () => {
  assert.equal(
    run("self.replicas > 0 && self.ratio < 0.5", { replicas: 2, ratio: 0.25 }, undefined, {
      type: "object",
      properties: { replicas: { type: "integer" }, ratio: { type: "number" } },
    }),
    true,
  );
});

test("errors fail the rule (|| absorbs them); unknown functions and bad syntax do not compile", () => {
  assert.equal(run("self.missing == 1 || true", {}), true);
  assert.match(String(run("self.missing == 1", {})), /no such key: missing/);
  const unknown = compileCelRule("frobnicate(self)");
  assert.ok(!unknown.ok);
  assert.match(unknown.error, /frobnicate/);
  assert.ok(!compileCelRule("self ===").ok);
});

test("property names are escaped as upstream", () => {
  assert.equal(escapeCelName("namespace"), "__namespace__");
  assert.equal(escapeCelName("a-b.c/d__e"), "a__dash__b__dot__c__slash__d__underscores__e");
  assert.equal(escapeCelName("plain"), "plain");
});

test("matches() is RE2: a catastrophic pattern answers at once", () => {
  assert.equal(run("self.matches('^(a+)+$')", "a".repeat(64) + "!"), false);
  assert.equal(run("self.matches('^a+$')", "aaa"), true);
});

test("cost is bounded per call and per object", () => {
  const items = Array.from({ length: 2000 }, (_, i) => i);
  // 2,000 × 2,000 predicate evaluations: far past the per-call limit.
  const nested = run("self.all(x, self.all(y, x + y >= 0))", items);
  assert.equal(nested, "operation cancelled: actual cost limit exceeded");
  assert.equal(run("self.all(x, x >= 0)", items), true, "a linear pass is within the limit");
  const compiled = compileCelRule("self.all(x, x >= 0)");
  assert.ok(compiled.ok);
  // The rules of one object share the runtime budget: once spent, later rules fail.
  const budget = newCostBudget();
  assert.equal(budget.remaining, 10_000_000);
  budget.remaining = 15_000;
  assert.ok(checkCelRule(compiled.rule, items, undefined, undefined, budget).ok);
  const spent = checkCelRule(compiled.rule, items, undefined, undefined, budget);
  assert.deepEqual(spent, { ok: false, error: "operation cancelled: actual cost limit exceeded" });
  assert.ok(PER_CALL_COST_LIMIT === 1_000_000);
});

test("Kubernetes' lists and regex libraries", () => {
  assert.equal(run("self.isSorted() && !['b', 'a'].isSorted()", [1, 2, 3]), true);
  assert.equal(run("self.sum() == 6 && self.min() == 1 && self.max() == 3", [1, 2, 3]), true);
  assert.equal(
    run("self.indexOf(2) == 1 && [1, 2, 1].lastIndexOf(1) == 2 && self.indexOf(9) == -1", [1, 2, 3]),
    true,
  );
  assert.equal(
    run(
      "self.find('[0-9]+') == '123' && self.findAll('[a-z]') == ['a', 'b'] && self.findAll('[a-z]', 1) == ['a']",
      "a123b",
    ),
    true,
  );
});
