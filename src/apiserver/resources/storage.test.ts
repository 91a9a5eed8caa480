import { test } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject, ResourceDef } from "../rest/resource.ts";
import { csiDrivers, csiNodes, csiStorageCapacities, storageClasses, volumeAttachments } from "./storage.ts";

function created(def: ResourceDef, object: KubeObject): KubeObject {
  const copy = structuredClone(object);
  def.applyDefaults(copy);
  return copy;
}

function fields(causes: { field: string }[]): string[] {
  return causes.map((c) => c.field);
}

const NOW = Date.parse("2026-01-01T00:10:00Z");
const meta = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  creationTimestamp: "2026-01-01T00:00:00Z",
  ...extra,
});

test("StorageClass defaults, validation, immutability and printing", () => {
  const sc = created(storageClasses, { metadata: meta("fast"), provisioner: "hostpath.csi.k8s.io" });
  assert.equal(sc.reclaimPolicy, "Delete");
  assert.equal(sc.volumeBindingMode, "Immediate");
  assert.deepEqual(storageClasses.validateCreate(sc), []);
  assert.deepEqual(storageClasses.shortNames, ["sc"]);

  const bad = created(storageClasses, { metadata: meta("Bad_Name"), reclaimPolicy: "Recycle" });
  assert.deepEqual(fields(storageClasses.validateCreate(bad)), [
    "metadata.name",
    "provisioner",
    "reclaimPolicy",
  ]);
  assert.equal(
    storageClasses.validateCreate(bad)[2]?.message,
    'Unsupported value: "Recycle": supported values: "Delete", "Retain"',
  );

  const changed = {
    ...sc,
    provisioner: "other",
    parameters: { a: "b" },
    volumeBindingMode: "WaitForFirstConsumer",
  };
  const causes = storageClasses.validateUpdate(changed, sc);
  assert.deepEqual(fields(causes), ["parameters", "provisioner", "volumeBindingMode"]);
  assert.equal(causes[0]?.message, "Forbidden: updates to parameters are forbidden.");
  assert.equal(causes[2]?.message, 'Invalid value: "WaitForFirstConsumer": field is immutable');
  assert.deepEqual(storageClasses.validateUpdate({ ...sc, allowVolumeExpansion: true }, sc), []);

  const isDefault = {
    ...sc,
    metadata: meta("fast", { annotations: { "storageclass.kubernetes.io/is-default-class": "true" } }),
  };
  assert.deepEqual(storageClasses.tableRow(isDefault, NOW), [
    "fast (default)",
    "hostpath.csi.k8s.io",
    "Delete",
    "Immediate",
    false,
    "10m",
  ]);
  assert.deepEqual(
    storageClasses.tableColumns.map((c) => c.name),
    ["Name", "Provisioner", "ReclaimPolicy", "VolumeBindingMode", "AllowVolumeExpansion", "Age"],
  );
});

test("CSIDriver defaults every spec field as upstream", () => {
  const driver = created(csiDrivers, { metadata: meta("hostpath.csi.k8s.io") });
  assert.deepEqual(driver.spec, {
    attachRequired: true,
    podInfoOnMount: false,
    storageCapacity: false,
    fsGroupPolicy: "ReadWriteOnceWithFSType",
    volumeLifecycleModes: ["Persistent"],
    requiresRepublish: false,
    seLinuxMount: false,
  });
  assert.deepEqual(csiDrivers.validateCreate(driver), []);
  const bad = created(csiDrivers, {
    metadata: meta("d.example.com"),
    spec: {
      fsGroupPolicy: "Always",
      volumeLifecycleModes: ["Forever"],
      tokenRequests: [{ audience: "a" }, { audience: "a", expirationSeconds: 60 }],
    },
  });
  assert.deepEqual(fields(csiDrivers.validateCreate(bad)), [
    "spec.tokenRequests[1].audience",
    "spec.fsGroupPolicy",
    "spec.volumeLifecycleModes",
  ]);
  const flipped = structuredClone(driver);
  (flipped.spec as Record<string, unknown>).attachRequired = false;
  assert.deepEqual(fields(csiDrivers.validateUpdate(flipped, driver)), ["spec.attachedRequired"]);
  assert.deepEqual(csiDrivers.tableRow(driver, NOW), [
    "hostpath.csi.k8s.io",
    true,
    false,
    false,
    "<unset>",
    false,
    "Persistent",
    "10m",
  ]);
});

test("CSINode drivers: required node IDs, duplicates, immutable IDs", () => {
  const node = created(csiNodes, {
    metadata: meta("node-1"),
    spec: {
      drivers: [
        { name: "hostpath.csi.k8s.io", nodeID: "node-1", topologyKeys: ["topology.hostpath.csi/node"] },
      ],
    },
  });
  assert.deepEqual(csiNodes.validateCreate(node), []);
  const bad = created(csiNodes, {
    metadata: meta("node-1"),
    spec: {
      drivers: [
        { name: "a.b", nodeID: "" },
        { name: "a.b", nodeID: "x" },
      ],
    },
  });
  assert.deepEqual(fields(csiNodes.validateCreate(bad)), ["spec.drivers[0].nodeID", "spec.drivers[1].name"]);
  const moved = structuredClone(node);
  ((moved.spec as { drivers: Record<string, unknown>[] }).drivers[0] ?? {}).nodeID = "other";
  assert.deepEqual(fields(csiNodes.validateUpdate(moved, node)), ["spec.drivers"]);
  const longID = structuredClone(node);
  ((longID.spec as { drivers: Record<string, unknown>[] }).drivers[0] ?? {}).nodeID = "x".repeat(193);
  assert.equal(
    csiNodes.validateCreate(longID)[0]?.message,
    `Invalid value: "${"x".repeat(193)}": must be 192 characters or less`,
  );
  assert.deepEqual(csiNodes.tableRow(node, NOW), ["node-1", 1, "10m"]);
  assert.deepEqual(csiNodes.patchStrategies["spec.drivers"], { mergeKey: "name" });
});

test("VolumeAttachment spec is required and immutable; status prints", () => {
  const va = created(volumeAttachments, {
    metadata: meta("csi-abc"),
    spec: { attacher: "hostpath.csi.k8s.io", nodeName: "node-1", source: { persistentVolumeName: "pv1" } },
  });
  assert.deepEqual(volumeAttachments.validateCreate(va), []);
  assert.equal(volumeAttachments.hasStatus, true);
  const bad = created(volumeAttachments, { metadata: meta("csi-abc"), spec: { source: {} } });
  // Upstream runs the generic and the v1 checks, so an empty attacher is reported by both.
  assert.deepEqual(fields(volumeAttachments.validateCreate(bad)), [
    "spec.attacher",
    "spec.source",
    "spec.nodeName",
    "spec.attacher",
    "spec.attacher",
  ]);
  const moved = structuredClone(va);
  (moved.spec as Record<string, unknown>).nodeName = "node-2";
  const causes = volumeAttachments.validateUpdate(moved, va);
  assert.deepEqual(fields(causes), ["spec"]);
  assert.match(causes[0]?.message ?? "", /field is immutable$/);
  const attached = { ...va, status: { attached: true } };
  assert.deepEqual(volumeAttachments.tableRow(attached, NOW), [
    "csi-abc",
    "hostpath.csi.k8s.io",
    "pv1",
    "node-1",
    true,
    "10m",
  ]);
});

test("CSIStorageCapacity is namespaced and checks quantities", () => {
  const capacity = created(csiStorageCapacities, {
    metadata: meta("csisc-1", { namespace: "default" }),
    storageClassName: "fast",
    capacity: "10Gi",
    nodeTopology: { matchLabels: { "topology.hostpath.csi/node": "node-1" } },
  });
  assert.deepEqual(csiStorageCapacities.validateCreate(capacity), []);
  const bad = { ...capacity, capacity: "-1", storageClassName: "" };
  assert.deepEqual(fields(csiStorageCapacities.validateCreate(bad)), ["storageClassName", "capacity"]);
  const noNamespace = { ...capacity, metadata: meta("x") };
  assert.deepEqual(fields(csiStorageCapacities.validateCreate(noNamespace)), ["metadata.namespace"]);
  assert.deepEqual(csiStorageCapacities.tableRow(capacity, NOW), ["csisc-1", "fast", "10Gi"]);
});
