import { test } from "node:test";
import assert from "node:assert/strict";
import { parseFieldSelector, parseLabelSelector } from "./selectors.ts";
import type { ResourceDef } from "./resource.ts";
import { ApiError } from "../transport/status.ts";

const object = (labels: Record<string, string>) => ({ metadata: { name: "n", namespace: "ns", labels } });

test("label selectors: every operator", () => {
  const cases: [string, Record<string, string>, boolean][] = [
    ["a=1", { a: "1" }, true],
    ["a==1", { a: "2" }, false],
    ["a!=1", {}, true],
    ["a in (1, 2)", { a: "2" }, true],
    ["a notin (1,2)", { a: "2" }, false],
    ["a notin (1,2)", {}, true],
    ["a", { a: "" }, true],
    ["!a", { a: "x" }, false],
    ["a,b=2", { a: "1", b: "2" }, true],
    ["a in (1,2),!c", { a: "1", c: "3" }, false],
    ["n>5", { n: "7" }, true],
    ["n<5", { n: "7" }, false],
    ["", { a: "1" }, true],
  ];
  for (const [selector, labels, expected] of cases) {
    assert.equal(parseLabelSelector(selector)(object(labels)), expected, selector);
  }
});

test("bad label selectors are 400", () => {
  for (const selector of [
    "a=(",
    "a in 1",
    "=x",
    "a==b==c",
    "a=b c",
    "a notin",
    "-a=b",
    "a=" + "x".repeat(64),
  ]) {
    assert.throws(
      () => parseLabelSelector(selector),
      (e: unknown) => e instanceof ApiError && e.code === 400,
      selector,
    );
  }
});

test("field selectors: metadata fields always, kind fields from the def, unknown is 400", () => {
  const def: Pick<ResourceDef, "fieldSelectors"> = {
    fieldSelectors: {
      "spec.nodeName": (o) => {
        const spec = o.spec as { nodeName?: string } | undefined;
        return spec?.nodeName ?? "";
      },
    },
  };
  assert.equal(parseFieldSelector("metadata.name=n,metadata.namespace!=x", def)(object({})), true);
  assert.equal(parseFieldSelector("spec.nodeName=", def)(object({})), true);
  assert.equal(parseFieldSelector("spec.nodeName==n1", def)({ spec: { nodeName: "n1" } }), true);
  assert.throws(
    () => parseFieldSelector("spec.foo=1", def),
    (e: unknown) =>
      e instanceof ApiError && e.code === 400 && e.message === "field label not supported: spec.foo",
  );
  assert.throws(
    () => parseFieldSelector("nonsense", def),
    (e: unknown) => e instanceof ApiError && e.code === 400,
  );
});
