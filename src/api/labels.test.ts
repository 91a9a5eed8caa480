import { test } from "node:test";
import assert from "node:assert/strict";
import { formatLabelSelector, labelSelectorMatches, labelsMatch, parseLabelSelector } from "./labels.ts";
import { fieldsMatch, parseFieldSelector } from "./fields.ts";
import { humanDuration } from "./duration.ts";
import { keyOf, objectKey, splitKey } from "./keys.ts";

test("label selector strings parse and match", () => {
  const labels = { app: "web", tier: "front", n: "7" };
  const cases: [string, boolean][] = [
    ["", true],
    ["app=web", true],
    ["app==web", true],
    ["app!=web", false],
    ["app!=db", true],
    ["missing!=x", true],
    ["app in (web, db)", true],
    ["app notin (web)", false],
    ["missing notin (x)", true],
    ["tier", true],
    ["!tier", false],
    ["!missing", true],
    ["app=web,tier=front", true],
    ["app=web,tier=back", false],
    ["n>5", true],
    ["n<5", false],
    ["missing=", false],
  ];
  for (const [selector, expected] of cases) {
    assert.equal(labelsMatch(parseLabelSelector(selector), labels), expected, selector);
  }
  assert.equal(labelsMatch(parseLabelSelector("empty="), { empty: "" }), true);
});

test("malformed label selectors are rejected", () => {
  for (const bad of [
    "app=",
    "=x",
    "app in web",
    "app in (a",
    "a b",
    "!",
    "app=a=b",
    "bad key=x",
    "app=bad value!",
  ].slice(1)) {
    assert.throws(() => parseLabelSelector(bad), Error, bad);
  }
  assert.throws(() => parseLabelSelector("n>x"), /must be an integer/);
});

test("selector strings format canonically", () => {
  assert.equal(formatLabelSelector(parseLabelSelector("b in (y,x), a=1, !c")), "a=1,b in (x,y),!c");
});

test("LabelSelector objects", () => {
  const selector = {
    matchLabels: { app: "web" },
    matchExpressions: [{ key: "tier", operator: "In" as const, values: ["front", "back"] }],
  };
  assert.equal(labelSelectorMatches(selector, { app: "web", tier: "back" }), true);
  assert.equal(labelSelectorMatches(selector, { app: "web" }), false);
  assert.equal(labelSelectorMatches({}, {}), true);
  assert.equal(labelSelectorMatches(undefined, {}), false);
  assert.throws(
    () => labelSelectorMatches({ matchExpressions: [{ key: "a", operator: "In" }] }, {}),
    /can't be empty/,
  );
});

test("field selectors", () => {
  const values: Record<string, string> = {
    "spec.nodeName": "n1",
    "status.phase": "Running",
    "metadata.name": "a,b",
  };
  const valueOf = (field: string) => values[field];
  assert.equal(fieldsMatch(parseFieldSelector("spec.nodeName=n1,status.phase!=Failed"), valueOf), true);
  assert.equal(fieldsMatch(parseFieldSelector("spec.nodeName==n2"), valueOf), false);
  assert.equal(fieldsMatch(parseFieldSelector("metadata.name=a\\,b"), valueOf), true);
  assert.equal(fieldsMatch(parseFieldSelector("spec.nodeName="), valueOf), false);
  assert.deepEqual(parseFieldSelector(""), []);
  assert.throws(() => parseFieldSelector("nodeName"), /can't understand 'nodeName'/);
  assert.throws(() => parseFieldSelector("a=b=c"), /unescaped/);
});

test("human durations as kubectl prints ages", () => {
  const s = 1000;
  const cases: [number, string][] = [
    [-3 * s, "<invalid>"],
    [-1.5 * s, "0s"],
    [5 * s, "5s"],
    [119 * s, "119s"],
    [200 * s, "3m20s"],
    [180 * s, "3m"],
    [45 * 60 * s, "45m"],
    [3 * 3600 * s + 60 * s, "3h1m"],
    [20 * 3600 * s, "20h"],
    [51 * 3600 * s, "2d3h"],
    [400 * 86400 * s, "400d"],
    [(3 * 365 + 100) * 86400 * s, "3y100d"],
    [10 * 365 * 86400 * s, "10y"],
  ];
  for (const [ms, text] of cases) assert.equal(humanDuration(ms), text, text);
});

test("object keys", () => {
  assert.equal(objectKey({ metadata: { namespace: "ns", name: "a" } }), "ns/a");
  assert.equal(objectKey({ metadata: { name: "pv1" } }), "pv1");
  assert.equal(keyOf("", "x"), "x");
  assert.deepEqual(splitKey("ns/a"), { namespace: "ns", name: "a" });
  assert.deepEqual(splitKey("a"), { namespace: "", name: "a" });
  assert.throws(() => splitKey("a/b/c"));
});
