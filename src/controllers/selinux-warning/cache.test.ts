// The conflict rules and messages of the selinux-warning-controller, table-tested.
import { test } from "node:test";
import assert from "node:assert/strict";
import { VolumeLabelCache, conflictMessage, fileLabel, labelsConflict } from "./index.ts";

test("labels: missing parts match anything, set parts must be equal", () => {
  const cases: [string, string, boolean][] = [
    ["system_u:system_r:container_t:s0:c1,c2", ":::s0:c1,c2", false],
    ["system_u:system_r:container_t:s0:c1,c2", ":::s0:c98,c99", true],
    [":::s0:c1", ":::s0:c1", false],
    ["", ":::s0:c1", false],
    ["a:b:c:d", "a:x:c:d", true],
  ];
  for (const [a, b, want] of cases) assert.equal(labelsConflict(a, b), want, `${a} vs ${b}`);
  assert.equal(fileLabel({}), "");
  assert.equal(fileLabel(undefined), "");
  assert.equal(fileLabel({ level: "s0:c1" }), ":::s0:c1");
});

test("cache: a conflict is reported once to each pod; the same values again report nothing", () => {
  const cache = new VolumeLabelCache();
  const use = (label: string) => ({ label, changePolicy: "MountOption", csiDriver: "d" });
  assert.deepEqual(cache.addVolume("v", { namespace: "a", name: "p1" }, use(":::s0:c1")), []);
  const conflicts = cache.addVolume("v", { namespace: "a", name: "p2" }, use(":::s0:c2"));
  assert.deepEqual(
    conflicts.map((c) => `${c.pod.name}->${c.otherPod.name}:${c.reason}`),
    ["p2->p1:SELinuxLabelConflict", "p1->p2:SELinuxLabelConflict"],
  );
  assert.deepEqual(cache.addVolume("v", { namespace: "a", name: "p2" }, use(":::s0:c2")), []);
  assert.equal(cache.conflicts().length, 2);
  assert.deepEqual(
    cache
      .podsForCSIDriver("d")
      .map((p) => p.name)
      .sort(),
    ["p1", "p2"],
  );
  cache.deletePod({ namespace: "a", name: "p2" });
  assert.equal(cache.conflicts().length, 0);
});

test("messages: another namespace's pod is not named", () => {
  const base = {
    property: "SELinuxLabel" as const,
    reason: "SELinuxLabelConflict" as const,
    pod: { namespace: "a", name: "p1" },
    value: ":::s0:c1",
    otherValue: ":::s0:c2",
  };
  assert.equal(
    conflictMessage({ ...base, otherPod: { namespace: "b", name: "secret-pod" } }),
    'SELinuxLabel":::s0:c1" conflicts with another pod that uses the same volume as this pod with a different ' +
      "SELinuxLabel. If both pods land on the same node, only one of them may access the volume.",
  );
});
