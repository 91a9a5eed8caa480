// The storage capacity score as a table: utilization through the default shape, per-class
// mean, static bindings before provisions, provisions without a tracked capacity left out.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { CSIStorageCapacity, PersistentVolume, PersistentVolumeClaim } from "../../api/index.ts";
import { storageCapacityScore } from "./score.ts";
import type { VolumeDecision } from "./volume-binding.ts";

function claim(name: string, storage: string, storageClassName = "fast"): PersistentVolumeClaim {
  return {
    metadata: { name, namespace: "default" },
    spec: { storageClassName, resources: { requests: { storage } } },
  };
}

function capacity(bytes: string): CSIStorageCapacity {
  return { metadata: { name: `cap-${bytes}` }, storageClassName: "fast", capacity: bytes };
}

function provisions(...entries: [PersistentVolumeClaim, CSIStorageCapacity | undefined][]): VolumeDecision {
  const nodeCapacities = new Map<PersistentVolumeClaim, CSIStorageCapacity>();
  for (const [c, cap] of entries) if (cap) nodeCapacities.set(c, cap);
  return { reasons: [], staticBindings: [], provisions: entries.map(([c]) => c), nodeCapacities };
}

test("dynamic provisions: the freer pool scores higher (utilization 0 → 100, 100 → 0)", () => {
  assert.equal(storageCapacityScore(provisions([claim("a", "10"), capacity("100")])), 90);
  assert.equal(storageCapacityScore(provisions([claim("a", "1"), capacity("3")])), 67, "33% used, truncated");
  assert.equal(storageCapacityScore(provisions([claim("a", "0"), capacity("100")])), 100);
  assert.equal(storageCapacityScore(provisions([claim("a", "200"), capacity("100")])), 0, "over capacity");
  assert.equal(storageCapacityScore(provisions([claim("a", "1"), capacity("0")])), 0, "zero capacity");
  // Two claims of one class share the pool: requests add up, the capacity does not.
  assert.equal(
    storageCapacityScore(
      provisions([claim("a", "30"), capacity("100")], [claim("b", "20"), capacity("100")]),
    ),
    50,
  );
  // No tracked capacity (driver without storageCapacity): nothing scored.
  assert.equal(storageCapacityScore(provisions([claim("a", "10"), undefined])), 0);
  // Classes are averaged, rounded: (90 + 25) / 2 = 57.5 → 58.
  const mixed = provisions([claim("a", "10"), capacity("100")], [claim("b", "75", "slow"), capacity("100")]);
  assert.equal(storageCapacityScore(mixed), 58);
});

test("static bindings, when the node has any, are scored by their PVs instead", () => {
  const pv = (name: string, storage: string): PersistentVolume => ({
    metadata: { name },
    spec: { storageClassName: "local", capacity: { storage } },
  });
  const decision: VolumeDecision = {
    reasons: [],
    staticBindings: [{ claim: claim("s", "25Mi", "local"), volume: pv("pv", "100Mi") }],
    provisions: [claim("d", "10")],
    nodeCapacities: new Map([[claim("d", "10"), capacity("10")]]),
  };
  assert.equal(storageCapacityScore(decision), 75);
});
