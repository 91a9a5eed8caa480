// The static cost estimate of CRD validation rules: unbounded rules are refused when the CRD is
// written, with upstream's messages; bounded ones pass. Reference points are upstream's own
// estimates (worked from cel-go's estimator and measured on kube-apiserver).

import { test } from "node:test";
import assert from "node:assert/strict";
import type { JSONSchemaProps } from "../../api/index.ts";
import type { KubeObject } from "../rest/resource.ts";
import { compileCelRule } from "./cel.ts";
import { costErrorMessage, estimateRuleCost } from "./cel-cost.ts";
import { customResourceDefinitions } from "./apiextensions.ts";

function cost(rule: string, schema: JSONSchemaProps): number {
  const compiled = compileCelRule(rule);
  assert.ok(compiled.ok, rule);
  return estimateRuleCost(compiled.rule.ast, schema);
}

const strings = (
  bounds: Partial<JSONSchemaProps> = {},
  item: Partial<JSONSchemaProps> = {},
): JSONSchemaProps => ({
  type: "array",
  ...bounds,
  items: { type: "string", ...item },
});

test("estimates agree with upstream's for bounded and unbounded rules", () => {
  // kube-apiserver prices `all(x, x.contains('gpu'))` at about 0.4 × maxLength + 4.6 per item.
  assert.equal(cost("self.all(x, x.contains('gpu'))", strings({ maxItems: 25 }, { maxLength: 63 })), 752);
  // An unbounded list of objects: 1,048,575 items (one 3 MiB request) × 8 per item, under 10M.
  const disks: JSONSchemaProps = {
    type: "object",
    properties: {
      disks: { type: "array", items: { type: "object", properties: { size: { type: "integer" } } } },
    },
  };
  assert.equal(cost("self.disks.all(d, has(d.size) && d.size > 0)", disks), 8_388_603);
  // Unbounded strings under a macro over an unbounded list: far beyond the limit.
  assert.ok(cost("self.all(x, x.contains('gpu'))", strings()) > 1e11);
  assert.ok(cost("self.all(x, self.exists(y, x == y))", strings({}, { maxLength: 10 })) > 1e11);
  // Scalars cost next to nothing.
  assert.equal(
    cost("self.replicas >= 0", { type: "object", properties: { replicas: { type: "integer" } } }),
    3,
  );
});

test("the factor in the message is printed as upstream prints it", () => {
  const hint =
    "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";
  assert.equal(
    costErrorMessage("estimated rule cost", 5e9, 1e7),
    `estimated rule cost exceeds budget by factor of more than 100x ${hint}`,
  );
  assert.equal(
    costErrorMessage("estimated rule cost", 2.5e7, 1e7),
    `estimated rule cost exceeds budget by factor of 2.5x ${hint}`,
  );
  assert.equal(
    costErrorMessage("estimated rule cost", 1.2e7, 1e7),
    `estimated rule cost exceeds budget by factor of 1.200000x ${hint}`,
  );
});

function crd(tags: JSONSchemaProps, rules: string[]): KubeObject {
  const object: KubeObject = {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: "widgets.example.com" },
    spec: {
      group: "example.com",
      scope: "Namespaced",
      names: { plural: "widgets", singular: "widget", kind: "Widget", listKind: "WidgetList" },
      versions: [
        {
          name: "v1",
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: {
              type: "object",
              properties: {
                spec: {
                  type: "object",
                  properties: { tags: tags },
                  "x-kubernetes-validations": rules.map((rule) => ({ rule })),
                },
              },
            },
          },
        },
      ],
    },
  };
  customResourceDefinitions.applyDefaults(object);
  return object;
}

const RULE = "self.tags.all(t, self.tags.exists_one(u, u == t))";

test("a CRD whose rule is unbounded is refused at create, with the rule's path and upstream's message", () => {
  const causes = customResourceDefinitions.validateCreate(crd(strings(), [RULE]));
  assert.deepEqual(
    causes.map((cause) => `${cause.field}: ${cause.message}`),
    [
      "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)",
      "spec.versions[0].schema.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)",
    ],
  );
});

test("the same rule with maxItems and maxLength is accepted", () => {
  assert.deepEqual(
    customResourceDefinitions.validateCreate(crd(strings({ maxItems: 16 }, { maxLength: 64 }), [RULE])),
    [],
  );
});

test("rules that pass one by one can still exceed the schema's total", () => {
  // Each rule costs ~9.6M (under 10M); eleven of them total over 100M.
  const rule = "self.tags.all(t, t.size() > 0)";
  const tags = strings({ maxItems: 1_600_000 });
  const single = cost(rule, { type: "object", properties: { tags } });
  assert.ok(single < 10_000_000 && single * 11 > 100_000_000, String(single));
  const causes = customResourceDefinitions.validateCreate(
    crd(
      tags,
      Array.from({ length: 11 }, () => rule),
    ),
  );
  assert.deepEqual(
    causes.map((cause) => cause.field),
    ["spec.versions[0].schema.openAPIV3Schema"],
  );
  assert.match(causes[0]!.message, /total for entire OpenAPIv3 schema exceeds budget by factor of 1\.\d{6}x/);
});

test("on update, rules the stored CRD already had are exempt; a new one is not", () => {
  const stored = crd(strings(), [RULE]);
  const relabelled = structuredClone(stored);
  (relabelled.metadata as Record<string, unknown>).labels = { team: "a" };
  assert.deepEqual(customResourceDefinitions.validateUpdate(relabelled, stored), []);
  const grown = crd(strings(), [RULE, "self.tags.all(t, t.contains('x'))"]);
  assert.deepEqual(
    customResourceDefinitions.validateUpdate(grown, stored).map((cause) => cause.field),
    [
      "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].rule",
      "spec.versions[0].schema.openAPIV3Schema",
    ],
  );
});
