// Node selection rules and failure messages as tables (upstream's semantics).
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Node, NodeSelectorRequirement } from "../../api/index.ts";
import { fitErrorMessage, preFilterErrorMessage } from "./fit-error.ts";
import {
  firstUntoleratedTaint,
  nodeSelectorTermMatches,
  requirementMatches,
  topologyTermsMatch,
} from "./node-selector.ts";

test("requirement operators", () => {
  const cases: [NodeSelectorRequirement, string | undefined, boolean][] = [
    [{ key: "k", operator: "In", values: ["a", "b"] }, "b", true],
    [{ key: "k", operator: "In", values: ["a"] }, undefined, false],
    [{ key: "k", operator: "In", values: [] }, "a", false],
    [{ key: "k", operator: "NotIn", values: ["a"] }, undefined, true],
    [{ key: "k", operator: "NotIn", values: ["a"] }, "a", false],
    [{ key: "k", operator: "Exists" }, "", true],
    [{ key: "k", operator: "Exists" }, undefined, false],
    [{ key: "k", operator: "DoesNotExist" }, undefined, true],
    [{ key: "k", operator: "Gt", values: ["3"] }, "4", true],
    [{ key: "k", operator: "Gt", values: ["3"] }, "3", false],
    [{ key: "k", operator: "Lt", values: ["3"] }, "-1", true],
    [{ key: "k", operator: "Gt", values: ["x"] }, "4", false],
    [{ key: "k", operator: "Gt", values: ["1", "2"] }, "4", false],
  ];
  for (const [requirement, value, expected] of cases) {
    assert.equal(requirementMatches(requirement, value), expected, JSON.stringify([requirement, value]));
  }
});

test("terms: empty matches nothing; matchFields only metadata.name", () => {
  const node: Node = { metadata: { name: "n1", labels: { zone: "a" } } };
  assert.equal(nodeSelectorTermMatches({}, node), false);
  assert.equal(
    nodeSelectorTermMatches(
      { matchFields: [{ key: "metadata.name", operator: "In", values: ["n1"] }] },
      node,
    ),
    true,
  );
  assert.equal(
    nodeSelectorTermMatches({ matchFields: [{ key: "metadata.uid", operator: "In", values: ["n1"] }] }, node),
    false,
  );
  assert.equal(
    nodeSelectorTermMatches(
      {
        matchExpressions: [{ key: "zone", operator: "In", values: ["a"] }],
        matchFields: [{ key: "metadata.name", operator: "NotIn", values: ["n1"] }],
      },
      node,
    ),
    false,
  );
});

test("allowedTopologies and taints", () => {
  assert.equal(topologyTermsMatch(undefined, {}), true);
  assert.equal(topologyTermsMatch([{ matchLabelExpressions: [] }], { zone: "a" }), false);
  assert.equal(
    topologyTermsMatch(
      [
        { matchLabelExpressions: [{ key: "zone", values: ["b"] }] },
        { matchLabelExpressions: [{ key: "zone", values: ["a"] }] },
      ],
      { zone: "a" },
    ),
    true,
  );
  const taints = [
    { key: "soft", effect: "PreferNoSchedule" as const },
    { key: "k", value: "v", effect: "NoSchedule" as const },
  ];
  assert.equal(firstUntoleratedTaint(taints, [])?.key, "k");
  assert.equal(firstUntoleratedTaint(taints, [{ key: "k", value: "v" }]), undefined);
  assert.equal(firstUntoleratedTaint(taints, [{ key: "k", value: "w" }])?.key, "k");
  assert.equal(firstUntoleratedTaint(taints, [{ operator: "Exists" }]), undefined);
  assert.equal(
    firstUntoleratedTaint(taints, [{ key: "k", operator: "Exists", effect: "NoExecute" }])?.key,
    "k",
  );
});

test("fit error messages sort the reason histogram", () => {
  assert.equal(
    fitErrorMessage(3, [
      ["node(s) were unschedulable"],
      ["node(s) didn't match Pod's node affinity/selector"],
      ["node(s) were unschedulable"],
    ]),
    "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 node(s) were unschedulable.",
  );
  assert.equal(
    preFilterErrorMessage(2, "pod has unbound immediate PersistentVolumeClaims"),
    "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims.",
  );
});
