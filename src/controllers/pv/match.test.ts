// The binder's matching rules as a table: seeded volumes → the volume a claim gets.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Node, PersistentVolume, PersistentVolumeClaim } from "../../api/index.ts";
import { findBestMatchForClaim, nodeSelectorTermMatches } from "./match.ts";
import { checkVolumeSatisfiesClaim } from "./satisfy.ts";

function volume(
  name: string,
  spec: Record<string, unknown> = {},
  labels?: Record<string, string>,
): PersistentVolume {
  return {
    metadata: { name, ...(labels ? { labels } : {}) },
    spec: { capacity: { storage: "1Gi" }, accessModes: ["ReadWriteOnce"], storageClassName: "c", ...spec },
    status: { phase: "Available" },
  };
}

function claim(spec: Record<string, unknown> = {}): PersistentVolumeClaim {
  return {
    metadata: { name: "claim", namespace: "ns", uid: "u1" },
    spec: {
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage: "1Gi" } },
      storageClassName: "c",
      ...spec,
    },
  };
}

const zoneNode: Node = { metadata: { name: "n1", labels: { zone: "b" } } };
const inZone = (zone: string) => ({
  nodeAffinity: {
    required: {
      nodeSelectorTerms: [{ matchExpressions: [{ key: "zone", operator: "In", values: [zone] }] }],
    },
  },
});

const cases: {
  name: string;
  volumes: PersistentVolume[];
  claim: PersistentVolumeClaim;
  delay?: boolean;
  node?: Node;
  want: string | undefined;
}[] = [
  {
    name: "smallest that fits",
    volumes: [
      volume("big", { capacity: { storage: "5Gi" } }),
      volume("fit", { capacity: { storage: "2Gi" } }),
      volume("small", { capacity: { storage: "1Mi" } }),
    ],
    claim: claim({ resources: { requests: { storage: "1500Mi" } } }),
    want: "fit",
  },
  {
    name: "other class never",
    volumes: [volume("other", { storageClassName: "d" })],
    claim: claim(),
    want: undefined,
  },
  {
    name: "fewest access modes first",
    volumes: [
      volume("rwo-rox", { accessModes: ["ReadWriteOnce", "ReadOnlyMany"] }),
      volume("rwo", { capacity: { storage: "9Gi" } }),
    ],
    claim: claim(),
    want: "rwo",
  },
  {
    name: "missing mode never",
    volumes: [volume("rwx", { accessModes: ["ReadWriteMany"] })],
    claim: claim(),
    want: undefined,
  },
  {
    name: "volumeMode must agree",
    volumes: [volume("block", { volumeMode: "Block" }), volume("fs", { capacity: { storage: "2Gi" } })],
    claim: claim(),
    want: "fs",
  },
  {
    name: "selector",
    volumes: [volume("gold", {}, { tier: "gold" }), volume("plain")],
    claim: claim({ selector: { matchLabels: { tier: "gold" } } }),
    want: "gold",
  },
  {
    name: "not Available never",
    volumes: [Object.assign(volume("released"), { status: { phase: "Released" } })],
    claim: claim(),
    want: undefined,
  },
  {
    name: "bound elsewhere never",
    volumes: [volume("taken", { claimRef: { namespace: "ns", name: "other", uid: "u2" } })],
    claim: claim(),
    want: undefined,
  },
  {
    name: "pre-bound by name wins over a better fit, whatever its phase",
    volumes: [
      volume("exact"),
      Object.assign(
        volume("pre", { capacity: { storage: "9Gi" }, claimRef: { namespace: "ns", name: "claim" } }),
        { status: { phase: "Pending" } },
      ),
    ],
    claim: claim(),
    want: "pre",
  },
  {
    name: "pre-bound to another UID never",
    volumes: [volume("stale", { claimRef: { namespace: "ns", name: "claim", uid: "old" } })],
    claim: claim(),
    want: undefined,
  },
  {
    name: "being deleted never",
    volumes: [{ ...volume("del"), metadata: { name: "del", deletionTimestamp: "2024-01-01T00:00:00Z" } }],
    claim: claim(),
    want: undefined,
  },
  {
    name: "late binding without node: only pre-bound",
    volumes: [volume("free")],
    claim: claim(),
    delay: true,
    want: undefined,
  },
  {
    name: "late binding with node: affinity decides",
    volumes: [volume("za", inZone("a")), volume("zb", { ...inZone("b"), capacity: { storage: "4Gi" } })],
    claim: claim(),
    delay: true,
    node: zoneNode,
    want: "zb",
  },
  {
    name: "late binding: pre-bound volume not usable on the node means no match",
    volumes: [
      volume("pre-a", { ...inZone("a"), claimRef: { namespace: "ns", name: "claim" } }),
      volume("zb", inZone("b")),
    ],
    claim: claim(),
    delay: true,
    node: zoneNode,
    want: undefined,
  },
];

for (const c of cases) {
  test(`match: ${c.name}`, () => {
    const found = findBestMatchForClaim(c.claim, c.volumes, {
      delayBinding: c.delay ?? false,
      ...(c.node ? { node: c.node } : {}),
    });
    assert.equal(found?.metadata?.name, c.want);
  });
}

test("node selector terms: empty terms match nothing; matchFields on metadata.name; Gt/Lt", () => {
  assert.equal(nodeSelectorTermMatches({}, zoneNode), false);
  assert.equal(
    nodeSelectorTermMatches(
      { matchFields: [{ key: "metadata.name", operator: "In", values: ["n1"] }] },
      zoneNode,
    ),
    true,
  );
  assert.equal(
    nodeSelectorTermMatches(
      { matchExpressions: [{ key: "zone", operator: "NotIn", values: ["b"] }] },
      zoneNode,
    ),
    false,
  );
  const numbered: Node = { metadata: { name: "n", labels: { gen: "5" } } };
  assert.equal(
    nodeSelectorTermMatches({ matchExpressions: [{ key: "gen", operator: "Gt", values: ["4"] }] }, numbered),
    true,
  );
  assert.equal(
    nodeSelectorTermMatches({ matchExpressions: [{ key: "gen", operator: "Lt", values: ["4"] }] }, numbered),
    false,
  );
});

test("a named volume that does not fit says why, as upstream's VolumeMismatch", () => {
  const named = claim({ resources: { requests: { storage: "2Gi" } } });
  assert.equal(
    checkVolumeSatisfiesClaim(volume("v"), named),
    'Cannot bind to requested volume "v": requested PV is too small',
  );
  assert.equal(
    checkVolumeSatisfiesClaim(volume("v", { storageClassName: "d" }), claim()),
    'Cannot bind to requested volume "v": storageClassName does not match',
  );
  assert.equal(
    checkVolumeSatisfiesClaim(volume("v", { accessModes: ["ReadOnlyMany"] }), claim()),
    'Cannot bind to requested volume "v": incompatible accessMode',
  );
  assert.equal(checkVolumeSatisfiesClaim(volume("v"), claim()), undefined);
});
