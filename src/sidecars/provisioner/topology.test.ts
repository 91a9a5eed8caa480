// Every row of the README's topology table, plus aggregation details (one CSINode as the source
// of keys, nodes missing a key skipped, dedup and ordering, selected node first, StatefulSet
// spreading) and nodeAffinity "Form 1".

import assert from "node:assert/strict";
import { test } from "node:test";
import type { CSINode, Node, TopologySelectorTerm } from "../../api/index.ts";
import {
  accessibilityRequirements,
  affinityMatches,
  claimNameHashAndIndex,
  flattenAllowedTopologies,
  SelectedNodeMissingError,
  volumeNodeAffinity,
  type TopologyInputs,
} from "./topology.ts";

const DRIVER = "d.example.com";
const csiNode = (name: string, keys: string[] | null = ["zone", "rack"]): CSINode => ({
  metadata: { name },
  spec: { drivers: [{ name: DRIVER, nodeID: name, topologyKeys: keys }] },
});
const node = (name: string, labels: Record<string, string>): Node => ({ metadata: { name, labels } });

const CLUSTER = {
  csiNodes: [csiNode("n1"), csiNode("n2"), csiNode("n3"), csiNode("other", null)],
  nodes: [
    node("n1", { zone: "b", rack: "r1" }),
    node("n2", { zone: "a", rack: "r1" }),
    node("n3", { zone: "b", rack: "r1" }), // same segment as n1: deduplicated
    node("other", { zone: "c" }), // lacks "rack": not part of the aggregate
  ],
};
const ALLOWED: TopologySelectorTerm[] = [
  {
    matchLabelExpressions: [
      { key: "zone", values: ["a", "b"] },
      { key: "rack", values: ["r1"] },
    ],
  },
];
const seg = (zone: string, rack = "r1") => ({ segments: { rack, zone } });

function inputs(overrides: Partial<TopologyInputs>): TopologyInputs {
  return {
    driverName: DRIVER,
    claimName: "data",
    selectedNode: "",
    allowedTopologies: [],
    strictTopology: false,
    immediateTopology: true,
    ...CLUSTER,
    ...overrides,
  };
}

test("row 1: delayed + strict: requisite = preferred = selected node topology", () => {
  for (const allowedTopologies of [[], ALLOWED]) {
    for (const immediateTopology of [true, false]) {
      const r = accessibilityRequirements(
        inputs({ selectedNode: "n1", strictTopology: true, allowedTopologies, immediateTopology }),
      );
      assert.deepEqual(r, { requisite: [seg("b")], preferred: [seg("b")] });
    }
  }
});

test("row 1: delayed + strict with allowedTopologies excluding the selected node is an error", () => {
  const allowed: TopologySelectorTerm[] = [{ matchLabelExpressions: [{ key: "zone", values: ["a"] }] }];
  assert.throws(
    () =>
      accessibilityRequirements(
        inputs({ selectedNode: "n1", strictTopology: true, allowedTopologies: allowed }),
      ),
    /not in allowed topologies/,
  );
});

test("row 2: delayed, not strict, no allowedTopologies: aggregated cluster topology, selected node first", () => {
  for (const immediateTopology of [true, false]) {
    const r = accessibilityRequirements(inputs({ selectedNode: "n1", immediateTopology }));
    assert.deepEqual(r?.requisite, [seg("a"), seg("b")]);
    assert.deepEqual(r?.preferred, [seg("b"), seg("a")]);
    const r2 = accessibilityRequirements(inputs({ selectedNode: "n2", immediateTopology }));
    assert.deepEqual(r2?.preferred, [seg("a"), seg("b")]);
  }
});

test("row 3: delayed, not strict, allowedTopologies: requisite = allowed, selected node first", () => {
  const allowed: TopologySelectorTerm[] = [
    {
      matchLabelExpressions: [
        { key: "zone", values: ["a", "b", "z"] },
        { key: "rack", values: ["r1"] },
      ],
    },
  ];
  const r = accessibilityRequirements(inputs({ selectedNode: "n1", allowedTopologies: allowed }));
  assert.deepEqual(r?.requisite, [seg("a"), seg("b"), seg("z")]);
  assert.deepEqual(r?.preferred, [seg("b"), seg("z"), seg("a")]);
});

test("row 4: immediate + allowedTopologies: requisite = allowed, preferred rotated by the claim-name hash", () => {
  for (const immediateTopology of [true, false]) {
    const r = accessibilityRequirements(inputs({ allowedTopologies: ALLOWED, immediateTopology }));
    assert.deepEqual(r?.requisite, [seg("a"), seg("b")]);
    const { hash, index } = claimNameHashAndIndex("data");
    const shift = (hash + index) % 2;
    assert.deepEqual(r?.preferred, shift === 0 ? [seg("a"), seg("b")] : [seg("b"), seg("a")]);
  }
});

test("row 5: immediate, no allowedTopologies, immediate-topology: aggregated, rotated", () => {
  const r = accessibilityRequirements(inputs({}));
  assert.deepEqual(r?.requisite, [seg("a"), seg("b")]);
  assert.equal(r?.preferred?.length, 2);
  assert.deepEqual(new Set(r?.preferred?.map((s) => s.segments?.zone)), new Set(["a", "b"]));
});

test("row 6: immediate, no allowedTopologies, --immediate-topology=false: no requirements", () => {
  assert.equal(accessibilityRequirements(inputs({ immediateTopology: false })), undefined);
});

test("StatefulSet spreading: replicas of one set rotate through the segments", () => {
  const csiNodes = ["n1", "n2", "n3"].map((n) => csiNode(n, ["zone"]));
  const nodes = [node("n1", { zone: "a" }), node("n2", { zone: "b" }), node("n3", { zone: "c" })];
  const firsts = [0, 1, 2].map(
    (i) =>
      accessibilityRequirements(inputs({ csiNodes, nodes, claimName: `www-web-${i}` }))?.preferred?.[0]
        ?.segments?.zone,
  );
  assert.equal(new Set(firsts).size, 3, `each replica prefers another zone: ${firsts.join(",")}`);
  // Two claims of one replica share the set's hash (only the set name is hashed).
  const a = accessibilityRequirements(inputs({ csiNodes, nodes, claimName: "data-web-1" }));
  const b = accessibilityRequirements(inputs({ csiNodes, nodes, claimName: "logs-web-1" }));
  assert.deepEqual(a?.preferred, b?.preferred);
});

test("errors: selected node without keys or labels, or gone; keys on no node", () => {
  assert.throws(
    () => accessibilityRequirements(inputs({ selectedNode: "other" })),
    /no topology key found for node other/,
  );
  // A selected node whose Node or CSINode is gone: the scheduler must pick again (#1437).
  assert.throws(
    () => accessibilityRequirements(inputs({ selectedNode: "ghost" })),
    (error) =>
      error instanceof SelectedNodeMissingError && /selected node "ghost" not found/.test(error.message),
  );
  assert.throws(
    () =>
      accessibilityRequirements(
        inputs({ selectedNode: "n1", csiNodes: CLUSTER.csiNodes.filter((n) => n.metadata?.name !== "n1") }),
      ),
    (error) =>
      error instanceof SelectedNodeMissingError && /CSINode of selected node "n1"/.test(error.message),
  );
  // A CSINode without the driver's keys yet is not "missing": retried, never rescheduled.
  assert.throws(
    () => accessibilityRequirements(inputs({ selectedNode: "other" })),
    (error) => !(error instanceof SelectedNodeMissingError),
  );
  assert.throws(
    () => accessibilityRequirements(inputs({ selectedNode: "n1", nodes: [node("n1", { zone: "b" })] })),
    /do not match topology keys/,
  );
  // Immediate binding with no CSINode carrying keys: no requirement (upstream warns).
  assert.equal(accessibilityRequirements(inputs({ csiNodes: [csiNode("x", [])] })), undefined);
});

test("allowedTopologies flatten distributes OR over AND", () => {
  const flat = flattenAllowedTopologies([
    {
      matchLabelExpressions: [
        { key: "zone", values: ["z1", "z2"] },
        { key: "rack", values: ["rA", "rB"] },
      ],
    },
    { matchLabelExpressions: [{ key: "zone", values: ["z9"] }] },
  ]);
  assert.deepEqual(flat, [
    [
      ["rack", "rA"],
      ["zone", "z1"],
    ],
    [
      ["rack", "rA"],
      ["zone", "z2"],
    ],
    [
      ["rack", "rB"],
      ["zone", "z1"],
    ],
    [
      ["rack", "rB"],
      ["zone", "z2"],
    ],
    [["zone", "z9"]],
  ]);
});

test("PV nodeAffinity from accessible_topology (Form 1) and matching", () => {
  const affinity = volumeNodeAffinity([
    { segments: { zone: "a", rack: "r1" } },
    { segments: {} },
    { segments: { zone: "b" } },
  ]);
  assert.deepEqual(affinity, {
    required: {
      nodeSelectorTerms: [
        {
          matchExpressions: [
            { key: "rack", operator: "In", values: ["r1"] },
            { key: "zone", operator: "In", values: ["a"] },
          ],
        },
        { matchExpressions: [{ key: "zone", operator: "In", values: ["b"] }] },
      ],
    },
  });
  assert.equal(volumeNodeAffinity([]), undefined);
  assert.ok(affinityMatches(affinity, { zone: "b" }));
  assert.ok(!affinityMatches(affinity, { zone: "a" }));
  assert.ok(affinityMatches(undefined, {}));
});
