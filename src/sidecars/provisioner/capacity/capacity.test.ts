// Pure parts of capacity tracking: segments from CSINode keys and Node labels, the managed-by
// names (upstream's own test vectors), the GetCapacity request and the create/update/no-op plan.

import assert from "node:assert/strict";
import { test } from "node:test";
import type { CSIStorageCapacity, Node, StorageClass } from "../../../api/index.ts";
import type { GetCapacityResponse } from "../../../csi/index.ts";
import { managedByID, nameWithMaxLength } from "./managed-by.ts";
import {
  driverTopologyKeys,
  nodeSegment,
  segmentOf,
  segmentSelector,
  selectorMatchesSegment,
  termSegment,
} from "./segment.ts";
import { capacityRequest, planCapacity, reportedCapacity, type CapacityIdentity } from "./sync.ts";

test("segments: sorted pairs, one identity for equal pairs in any order, empty matches all", () => {
  const a = segmentOf({ zone: "a", region: "r1" });
  const b = segmentOf({ region: "r1", zone: "a" });
  assert.equal(a.id, b.id);
  assert.deepEqual(
    a.entries.map((e) => e.key),
    ["region", "zone"],
  );
  assert.notEqual(segmentOf({ zone: "b", region: "r1" }).id, a.id);
  assert.deepEqual(segmentSelector(a), { matchLabels: { region: "r1", zone: "a" } });
  assert.deepEqual(segmentSelector(segmentOf({})), {});
  assert.ok(selectorMatchesSegment({ matchLabels: { zone: "a", region: "r1" } }, a));
  assert.ok(!selectorMatchesSegment({ matchLabels: { zone: "a" } }, a), "fewer labels");
  assert.ok(!selectorMatchesSegment({ matchLabels: { zone: "a", region: "r2" } }, a), "other value");
  assert.ok(
    !selectorMatchesSegment(
      { matchLabels: { zone: "a", region: "r1" }, matchExpressions: [{ key: "x", operator: "Exists" }] },
      a,
    ),
    "extra expressions",
  );
  assert.ok(selectorMatchesSegment(undefined, segmentOf({})), "no selector = the empty segment");
});

test("node segment: the driver's keys among the Node labels; a missing label or driver means none", () => {
  const csiNode = {
    metadata: { name: "n1" },
    spec: {
      drivers: [
        { name: "d", nodeID: "n1", topologyKeys: ["zone", "rack"] },
        { name: "e", nodeID: "n1" },
      ],
    },
  };
  assert.deepEqual(driverTopologyKeys(csiNode, "d"), ["zone", "rack"]);
  assert.deepEqual(driverTopologyKeys(csiNode, "e"), [], "registered without keys");
  assert.equal(driverTopologyKeys(csiNode, "f"), undefined, "not on this node");
  const node: Node = { metadata: { name: "n1", labels: { zone: "a", rack: "7", other: "x" } } };
  assert.equal(nodeSegment(["zone", "rack"], node)?.id, segmentOf({ rack: "7", zone: "a" }).id);
  assert.equal(nodeSegment(["zone", "row"], node), undefined);
  assert.equal(nodeSegment([], node)?.id, segmentOf({}).id);
});

test("PV node-affinity terms map back to segments only in the provisioner's own form", () => {
  assert.equal(
    termSegment({ matchExpressions: [{ key: "zone", operator: "In", values: ["a"] }] })?.id,
    segmentOf({ zone: "a" }).id,
  );
  assert.equal(
    termSegment({ matchExpressions: [{ key: "zone", operator: "In", values: ["a", "b"] }] }),
    undefined,
  );
  assert.equal(
    termSegment({ matchExpressions: [{ key: "zone", operator: "NotIn", values: ["a"] }] }),
    undefined,
  );
  assert.equal(
    termSegment({ matchFields: [{ key: "metadata.name", operator: "In", values: ["n"] }] }),
    undefined,
  );
});

test("managed-by: upstream's getNameWithMaxLength vectors", () => {
  assert.equal(managedByID(), "external-provisioner");
  assert.equal(managedByID("node01"), "external-provisioner-node01");
  const exactly63 = `node${"a".repeat(38)}`;
  assert.equal(managedByID(exactly63), `external-provisioner-${exactly63}`);
  const oneOver = `node${"a".repeat(39)}`;
  assert.equal(managedByID(oneOver), `external-p-53f40b57-${oneOver}`);
  assert.equal(managedByID(`node${"a".repeat(63)}`), "external-provisioner-df38e37f");
  assert.equal(nameWithMaxLength("", "node01", 63), "node01");
  for (const length of [10, 40, 63, 80]) assert.ok(managedByID("n".repeat(length)).length <= 63);
});

const identity: CapacityIdentity = {
  driverName: "d.example.com",
  managedBy: "external-provisioner",
  namespace: "ns",
  owner: { apiVersion: "apps/v1", kind: "StatefulSet", name: "p", uid: "uid-1", controller: true },
};
const segment = segmentOf({ zone: "a" });
const item = { segment, storageClassName: "fast" };
const response = (available: string, maximum?: string): GetCapacityResponse => ({
  availableCapacity: available,
  maximumVolumeSize: maximum === undefined ? null : { value: maximum },
  minimumVolumeSize: { value: "1" },
});

test("GetCapacity request: class parameters, the segment, one mount capability with mode UNKNOWN", () => {
  const sc: StorageClass = { metadata: { name: "fast" }, provisioner: "d", parameters: { kind: "ssd" } };
  assert.deepEqual(capacityRequest(sc, segment), {
    parameters: { kind: "ssd" },
    volumeCapabilities: [{ mount: {}, accessType: "mount", accessMode: { mode: "UNKNOWN" } }],
    accessibleTopology: { segments: { zone: "a" } },
  });
  assert.deepEqual(capacityRequest({ metadata: { name: "x" }, provisioner: "d" }, segment).parameters, {});
});

test("plan: create with labels, selector, BinarySI quantities and owner; minimum size not published", () => {
  const plan = planCapacity(
    identity,
    item,
    reportedCapacity(response(String(3n * 1024n ** 3n), "1610612736")),
    null,
  );
  assert.equal(plan.action, "create");
  assert.deepEqual(plan.action === "create" ? plan.object : undefined, {
    apiVersion: "storage.k8s.io/v1",
    kind: "CSIStorageCapacity",
    metadata: {
      generateName: "csisc-",
      namespace: "ns",
      labels: {
        "csi.storage.k8s.io/drivername": "d.example.com",
        "csi.storage.k8s.io/managed-by": "external-provisioner",
      },
      ownerReferences: [identity.owner],
    },
    storageClassName: "fast",
    nodeTopology: { matchLabels: { zone: "a" } },
    capacity: "3Gi",
    maximumVolumeSize: "1536Mi",
  });
  const zero = planCapacity({ ...identity, owner: null }, item, reportedCapacity(response("0")), null);
  assert.ok(
    zero.action === "create" && zero.object.capacity === "0" && zero.object.maximumVolumeSize === undefined,
  );
  assert.ok(zero.action === "create" && zero.object.metadata?.ownerReferences === undefined);
});

test("plan: nothing when equal (any spelling of the quantity), update otherwise, owner appended not replaced", () => {
  const existing: CSIStorageCapacity = {
    metadata: { name: "csisc-x", namespace: "ns", uid: "o", ownerReferences: [identity.owner!] },
    storageClassName: "fast",
    nodeTopology: { matchLabels: { zone: "a" } },
    capacity: "1024Mi",
    maximumVolumeSize: "1Gi",
  };
  const GiB = String(1024n ** 3n);
  assert.deepEqual(planCapacity(identity, item, reportedCapacity(response(GiB, GiB)), existing), {
    action: "none",
  });
  const changed = planCapacity(identity, item, reportedCapacity(response("2147483648")), existing);
  assert.ok(changed.action === "update");
  assert.equal(changed.object.capacity, "2Gi");
  assert.equal(
    changed.object.maximumVolumeSize,
    undefined,
    "maximum dropped when the driver stops sending it",
  );
  assert.equal(existing.capacity, "1024Mi", "the cached object is not modified");
  const foreignOwner = { apiVersion: "v1", kind: "Pod", name: "old", uid: "other", controller: true };
  const adopted = planCapacity(identity, item, reportedCapacity(response(GiB, GiB)), {
    ...existing,
    metadata: { ...existing.metadata, ownerReferences: [foreignOwner] },
  });
  assert.ok(adopted.action === "update");
  assert.deepEqual(adopted.object.metadata?.ownerReferences, [foreignOwner, identity.owner]);
});
