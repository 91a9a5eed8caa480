// The Unused condition's decisions, table-tested: which pods keep a claim used, when the
// condition is written, and that its transition time moves only on a flip.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { PersistentVolumeClaim, Pod } from "../../api/index.ts";
import { PVC_UNUSED, claimTracksUnused, conditionsWithUnused, podUsesClaimForUnused } from "./pvc-unused.ts";

const claim = (extra: Partial<PersistentVolumeClaim> = {}): PersistentVolumeClaim => ({
  metadata: {
    name: "data",
    namespace: "ns",
    ownerReferences: [{ apiVersion: "v1", kind: "Pod", name: "p", uid: "u1", controller: true }],
  },
  status: { phase: "Bound" },
  ...extra,
});

function podWith(
  volume: NonNullable<NonNullable<Pod["spec"]>["volumes"]>[number],
  extra: Partial<Pod> = {},
): Pod {
  return {
    metadata: { name: "p", namespace: "ns", uid: "u1" },
    spec: { containers: [], volumes: [volume] },
    ...extra,
  };
}

test("pods that keep a claim used", () => {
  const byName = { name: "v", persistentVolumeClaim: { claimName: "data" } };
  const cases: [string, Pod, boolean][] = [
    ["pending, unscheduled", podWith(byName), true],
    ["running", podWith(byName, { status: { phase: "Running" } }), true],
    ["succeeded", podWith(byName, { status: { phase: "Succeeded" } }), false],
    ["failed", podWith(byName, { status: { phase: "Failed" } }), false],
    [
      "deleting, containers stopped",
      podWith(byName, {
        metadata: { name: "p", namespace: "ns", uid: "u1", deletionTimestamp: "2026-01-01T00:00:00Z" },
        status: {
          containerStatuses: [{ name: "c", ready: false, restartCount: 0, state: { terminated: {} } }],
        },
      }),
      false,
    ],
    [
      "deleting, a container running",
      podWith(byName, {
        metadata: { name: "p", namespace: "ns", uid: "u1", deletionTimestamp: "2026-01-01T00:00:00Z" },
        status: { containerStatuses: [{ name: "c", ready: true, restartCount: 0, state: { running: {} } }] },
      }),
      true,
    ],
    ["another claim", podWith({ name: "v", persistentVolumeClaim: { claimName: "other" } }), false],
    [
      "its generic ephemeral claim",
      { ...podWith({ name: "data", ephemeral: {} }), metadata: { name: "p", namespace: "ns", uid: "u1" } },
      false,
    ],
  ];
  // "p-data" is the ephemeral claim of pod p's volume "data".
  const ephemeralClaim = claim({ metadata: { ...claim().metadata, name: "p-data" } });
  for (const [name, pod, want] of cases) assert.equal(podUsesClaimForUnused(pod, claim()), want, name);
  assert.equal(
    podUsesClaimForUnused(podWith({ name: "data", ephemeral: {} }), ephemeralClaim),
    true,
    "owned ephemeral",
  );
  const stranger = podWith(
    { name: "data", ephemeral: {} },
    { metadata: { name: "p", namespace: "ns", uid: "other" } },
  );
  assert.equal(podUsesClaimForUnused(stranger, ephemeralClaim), false, "ephemeral claim of another pod uid");
});

test("which claims carry the condition", () => {
  assert.equal(claimTracksUnused(claim()), true);
  assert.equal(claimTracksUnused(claim({ status: { phase: "Pending" } })), false);
  assert.equal(
    claimTracksUnused(claim({ metadata: { name: "data", deletionTimestamp: "2026-01-01T00:00:00Z" } })),
    false,
  );
});

test("the condition is written on a flip only, its time kept otherwise", () => {
  const t0 = Date.parse("2026-11-28T00:00:00.400Z");
  const first = conditionsWithUnused(
    claim({ status: { phase: "Bound", conditions: [{ type: "Resizing", status: "True" }] } }),
    false,
    t0,
  );
  assert.deepEqual(first, [
    { type: "Resizing", status: "True" },
    { type: "Unused", ...PVC_UNUSED.unused, lastTransitionTime: "2026-11-28T00:00:00Z" },
  ]);
  const withFirst = claim({ status: { phase: "Bound", conditions: first } });
  assert.equal(conditionsWithUnused(withFirst, false, t0 + 60_000), undefined, "no change: no write");
  const flipped = conditionsWithUnused(withFirst, true, t0 + 60_000);
  assert.deepEqual(flipped?.[1], {
    type: "Unused",
    ...PVC_UNUSED.used,
    lastTransitionTime: "2026-11-28T00:01:00Z",
  });
  // Same status with a stale message (say, written by hand): rewritten, the time kept.
  const edited = claim({
    status: { phase: "Bound", conditions: [{ ...first[1]!, message: "hand-written" }] },
  });
  assert.equal(
    conditionsWithUnused(edited, false, t0 + 120_000)?.[0]?.lastTransitionTime,
    "2026-11-28T00:00:00Z",
  );
});
