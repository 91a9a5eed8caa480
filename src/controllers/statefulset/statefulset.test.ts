// The StatefulSet controller's pure parts, table-driven: ordinals and names, revision data and
// hash (key order never changes a name; the collision count does), and the retention policy as
// owner references for every policy × kept/scaled-down ordinal.

import assert from "node:assert/strict";
import { test } from "node:test";
import type { PersistentVolumeClaim, Pod, StatefulSet } from "../../api/index.ts";
import {
  claimsForOrdinal,
  inOrdinalRange,
  newStatefulSetPod,
  parentAndOrdinal,
  storageMatches,
} from "./identity.ts";
import { canonicalJson, equalRevision, newRevision, revisionHash, safeEncodeString } from "./revisions.ts";
import { claimIsStale, isClaimOwnerUpToDate, ownerRefsForPolicy } from "./retention.ts";

function set(
  policy: { whenDeleted?: "Retain" | "Delete"; whenScaled?: "Retain" | "Delete" } = {},
  replicas = 2,
): StatefulSet {
  return {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: { name: "web", namespace: "ns", uid: "set-uid" },
    spec: {
      replicas,
      selector: { matchLabels: { app: "web" } },
      persistentVolumeClaimRetentionPolicy: policy,
      template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "c", image: "i" }] } },
      volumeClaimTemplates: [{ metadata: { name: "data" }, spec: { accessModes: ["ReadWriteOnce"] } }],
    },
  };
}

const pod = (ordinal: number): Pod => ({
  metadata: { name: `web-${ordinal}`, namespace: "ns", uid: `pod-${ordinal}` },
});

test("ordinals and names: <set>-<ordinal> pods, <template>-<set>-<ordinal> claims with the selector's labels", () => {
  assert.deepEqual(parentAndOrdinal(pod(12)), { parent: "web", ordinal: 12 });
  assert.deepEqual(parentAndOrdinal({ metadata: { name: "web" } }), { parent: "", ordinal: -1 });
  assert.deepEqual(parentAndOrdinal({ metadata: { name: "my-web-3" } }), { parent: "my-web", ordinal: 3 });
  assert.equal(inOrdinalRange(pod(1), set()), true);
  assert.equal(inOrdinalRange(pod(2), set()), false);
  const claim = claimsForOrdinal(set(), 1).get("data")!;
  assert.equal(claim.metadata.name, "data-web-1");
  assert.deepEqual(claim.metadata.labels, { app: "web" });
  const made = newStatefulSetPod(set(), 1, "web-abc");
  assert.equal(made.metadata.name, "web-1");
  assert.deepEqual(made.metadata.labels, {
    app: "web",
    "statefulset.kubernetes.io/pod-name": "web-1",
    "apps.kubernetes.io/pod-index": "1",
    "controller-revision-hash": "web-abc",
  });
  assert.equal(storageMatches(set(), made), true);
  assert.equal(storageMatches(set(), { ...made, spec: { containers: [] } }), false);
});

test("revisions: canonical data, a hash of safe characters, the collision count changes the name", () => {
  assert.equal(
    canonicalJson({ b: 1, a: { d: [1, { z: 0, y: 1 }], c: null } }),
    '{"a":{"c":null,"d":[1,{"y":1,"z":0}]},"b":1}',
  );
  assert.equal(safeEncodeString("0123456789"), "456789bcdf");
  const revision = newRevision(set(), 1, 0);
  assert.match(revision.metadata.name ?? "", /^web-[bcdfghjklmnpqrstvwxz2456789]+$/);
  assert.equal(
    revision.metadata.labels?.["controller.kubernetes.io/hash"],
    (revision.metadata.name ?? "").slice(4),
  );
  assert.deepEqual(revision.data, { spec: { template: { ...set().spec!.template, $patch: "replace" } } });
  const reordered = set();
  reordered.spec!.template = {
    spec: { containers: [{ image: "i", name: "c" }] },
    metadata: { labels: { app: "web" } },
  };
  assert.equal(
    newRevision(reordered, 1, 0).metadata.name,
    revision.metadata.name,
    "key order never changes a name",
  );
  assert.ok(equalRevision(newRevision(reordered, 2, 0), revision));
  assert.notEqual(revisionHash(revision.data, 1), revisionHash(revision.data, 0));
});

test("retention policy → owner references, for a kept and a scaled-down ordinal", () => {
  const claim: PersistentVolumeClaim = { metadata: { name: "data-web-1", namespace: "ns" } };
  const setRef = {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    name: "web",
    uid: "set-uid",
    controller: true,
    blockOwnerDeletion: true,
  };
  const podRef = (ordinal: number) => ({
    apiVersion: "v1",
    kind: "Pod",
    name: `web-${ordinal}`,
    uid: `pod-${ordinal}`,
    controller: true,
    blockOwnerDeletion: true,
  });
  const cases = [
    { policy: {}, kept: [], scaled: [] },
    { policy: { whenDeleted: "Delete" as const }, kept: [setRef], scaled: [setRef] },
    { policy: { whenScaled: "Delete" as const }, kept: [], scaled: [podRef(3)] },
    {
      policy: { whenDeleted: "Delete" as const, whenScaled: "Delete" as const },
      kept: [setRef],
      scaled: [podRef(3)],
    },
  ];
  for (const { policy, kept, scaled } of cases) {
    const name = JSON.stringify(policy);
    assert.deepEqual(ownerRefsForPolicy(claim, set(policy), pod(1)), kept, `${name}, kept ordinal`);
    assert.deepEqual(ownerRefsForPolicy(claim, set(policy), pod(3)), scaled, `${name}, scaled-down ordinal`);
    assert.equal(
      isClaimOwnerUpToDate(
        { ...claim, metadata: { ...claim.metadata, ownerReferences: kept } },
        set(policy),
        pod(1),
      ),
      true,
      name,
    );
    assert.equal(
      isClaimOwnerUpToDate(
        { ...claim, metadata: { ...claim.metadata, ownerReferences: scaled } },
        set(policy),
        pod(3),
      ),
      true,
      name,
    );
  }
  // Another controller owns it: left alone, whatever the policy.
  const foreign = { apiVersion: "v1", kind: "ConfigMap", name: "x", uid: "x", controller: true };
  const owned: PersistentVolumeClaim = { metadata: { name: "data-web-1", ownerReferences: [foreign] } };
  assert.deepEqual(ownerRefsForPolicy(owned, set({ whenDeleted: "Delete" }), pod(1)), [foreign]);
  assert.equal(isClaimOwnerUpToDate(owned, set({ whenDeleted: "Delete" }), pod(1)), true);
  // A claim of an earlier web-1 (another UID) that whenScaled Delete dooms: the new pod waits.
  const stale: PersistentVolumeClaim = {
    metadata: { name: "data-web-1", ownerReferences: [{ ...podRef(1), uid: "old" }] },
  };
  const newPod: Pod = { metadata: { name: "web-1", namespace: "ns" } };
  assert.equal(claimIsStale(stale, set({ whenScaled: "Delete" }), newPod), true);
  assert.equal(claimIsStale(stale, set(), newPod), false, "Retain: claims are reused");
});
