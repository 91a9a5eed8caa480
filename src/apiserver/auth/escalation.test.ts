// Which granted rules a holder's rules cover, as upstream's validation.Covers decides it:
// wildcards, subresources, resource names and non-resource URL prefixes.

import { test } from "node:test";
import assert from "node:assert/strict";
import { uncoveredRules } from "./escalation.ts";

const rule = (r: Record<string, string[]>) => r;

test("a granted rule is covered piece by piece: each verb, group, resource and name by some held rule", () => {
  const held = [
    rule({ apiGroups: ["apps"], resources: ["deployments"], verbs: ["get", "list"] }),
    rule({ apiGroups: ["apps"], resources: ["*/scale"], verbs: ["update"] }),
    rule({ apiGroups: [""], resources: ["secrets"], verbs: ["get"], resourceNames: ["a"] }),
    rule({ nonResourceURLs: ["/healthz/*", "/version"], verbs: ["get"] }),
    rule({ apiGroups: ["storage.k8s.io"], resources: ["*"], verbs: ["*"] }),
  ];
  const covered = (granted: Record<string, string[]>) => uncoveredRules(held, [granted]).length === 0;
  assert.ok(covered(rule({ apiGroups: ["apps"], resources: ["deployments"], verbs: ["list"] })));
  assert.ok(!covered(rule({ apiGroups: ["apps"], resources: ["deployments"], verbs: ["list", "delete"] })));
  assert.ok(covered(rule({ apiGroups: ["apps"], resources: ["statefulsets/scale"], verbs: ["update"] })));
  assert.ok(!covered(rule({ apiGroups: ["apps"], resources: ["statefulsets"], verbs: ["update"] })));
  assert.ok(covered(rule({ apiGroups: [""], resources: ["secrets"], verbs: ["get"], resourceNames: ["a"] })));
  assert.ok(
    !covered(rule({ apiGroups: [""], resources: ["secrets"], verbs: ["get"] })),
    "all names need no names",
  );
  assert.ok(
    !covered(rule({ apiGroups: [""], resources: ["secrets"], verbs: ["get"], resourceNames: ["a", "b"] })),
  );
  assert.ok(covered(rule({ nonResourceURLs: ["/healthz/etcd", "/version"], verbs: ["get"] })));
  assert.ok(!covered(rule({ nonResourceURLs: ["/metrics"], verbs: ["get"] })));
  assert.ok(covered(rule({ apiGroups: ["storage.k8s.io"], resources: ["csinodes"], verbs: ["escalate"] })));
  // A literal "*" is granted only by a held "*".
  assert.ok(!covered(rule({ apiGroups: ["apps"], resources: ["deployments"], verbs: ["*"] })));
  assert.deepEqual(
    uncoveredRules(held, [
      rule({ apiGroups: ["apps", "batch"], resources: ["deployments"], verbs: ["get"] }),
    ]),
    [
      {
        apiGroups: ["batch"],
        resources: ["deployments"],
        verbs: ["get"],
        resourceNames: [],
        nonResourceURLs: [],
      },
    ],
  );
});
