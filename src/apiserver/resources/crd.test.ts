import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import type { KubeObject } from "../resource.ts";
import { createBuiltinRegistry } from "../registry.ts";
import { openApiDocument } from "../openapi.ts";
import { customResourceDefinitions, evaluateSimpleJSONPath, resourceDefFromCRD } from "./apiextensions.ts";

function fixture(name: string): KubeObject {
  const parsed: unknown = parse(
    readFileSync(join(import.meta.dirname, "testdata", `snapshot.storage.k8s.io_${name}.yaml`), "utf8"),
  );
  assert.ok(typeof parsed === "object" && parsed !== null);
  const crd = parsed as KubeObject;
  customResourceDefinitions.applyDefaults(crd);
  return crd;
}

const NOW = Date.parse("2026-01-01T00:10:00Z");

test("the upstream VolumeSnapshot CRDs are valid and get established", () => {
  for (const name of ["volumesnapshots", "volumesnapshotcontents", "volumesnapshotclasses"]) {
    const crd = fixture(name);
    assert.deepEqual(customResourceDefinitions.validateCreate(crd), [], name);
    const status = crd.status as { conditions: { type: string; status: string }[] };
    assert.ok(status.conditions.some((c) => c.type === "Established" && c.status === "True"));
  }
  const bad = fixture("volumesnapshots");
  (bad.metadata as Record<string, unknown>).name = "snapshots.example.com";
  assert.equal(customResourceDefinitions.validateCreate(bad)[0]?.field, "metadata.name");
});

test("VolumeSnapshot: scope, status subresource, printer columns, validation, pruning", () => {
  const [def] = resourceDefFromCRD(fixture("volumesnapshots"));
  assert.ok(def);
  assert.equal(def.namespaced, true);
  assert.equal(def.hasStatus, true);
  assert.equal(def.custom, true);
  assert.deepEqual(def.shortNames, ["vs"]);
  assert.deepEqual(
    def.tableColumns.map((c) => c.name),
    [
      "Name",
      "ReadyToUse",
      "SourcePVC",
      "SourceSnapshotContent",
      "RestoreSize",
      "SnapshotClass",
      "SnapshotContent",
      "CreationTime",
      "Age",
    ],
  );
  const snapshot: KubeObject = {
    apiVersion: "snapshot.storage.k8s.io/v1",
    kind: "VolumeSnapshot",
    metadata: { name: "snap-1", namespace: "default", creationTimestamp: "2026-01-01T00:00:00Z" },
    spec: {
      source: { persistentVolumeClaimName: "pvc-1" },
      volumeSnapshotClassName: "csi-hostpath-snapclass",
      bogus: 1,
    },
    status: { readyToUse: true, restoreSize: "1Gi", boundVolumeSnapshotContentName: "snapcontent-x" },
  };
  def.applyDefaults(snapshot);
  assert.equal((snapshot.spec as Record<string, unknown>).bogus, undefined, "unknown fields are pruned");
  assert.deepEqual(def.validateCreate(snapshot), []);
  assert.deepEqual(def.tableRow(snapshot, NOW), [
    "snap-1",
    true,
    "pvc-1",
    null,
    "1Gi",
    "csi-hostpath-snapclass",
    "snapcontent-x",
    null,
    "10m",
  ]);
  const missing: KubeObject = { metadata: { name: "s", namespace: "default" }, spec: {} };
  assert.deepEqual(
    def.validateCreate(missing).map((c) => `${c.field}: ${c.message}`),
    ["spec.source: Required value"],
  );
  const older = structuredClone(snapshot);
  (snapshot.status as Record<string, unknown>).readyToUse = false;
  assert.equal(def.specChanged(snapshot, older), false, "status changes do not bump generation");
});

test("VolumeSnapshotContent and Class: cluster-scoped, enums and types checked", () => {
  const [content] = resourceDefFromCRD(fixture("volumesnapshotcontents"));
  const [klass] = resourceDefFromCRD(fixture("volumesnapshotclasses"));
  assert.ok(content && klass);
  assert.equal(content.namespaced, false);
  assert.equal(klass.hasStatus, false);
  assert.deepEqual(klass.shortNames, ["vsclass", "vsclasses"]);
  const badClass: KubeObject = {
    metadata: { name: "c" },
    driver: "hostpath.csi.k8s.io",
    deletionPolicy: "Keep",
  };
  assert.deepEqual(
    klass.validateCreate(badClass).map((c) => c.field),
    ["deletionPolicy"],
  );
  assert.equal(
    klass.validateCreate(badClass)[0]?.message,
    'Unsupported value: "Keep": supported values: "Delete", "Retain"',
  );
  const badContent: KubeObject = {
    metadata: { name: "snapcontent-1" },
    spec: {
      deletionPolicy: "Delete",
      driver: 5,
      source: {},
      volumeSnapshotRef: { name: "s", namespace: "default" },
    },
  };
  const causes = content.validateCreate(badContent);
  assert.deepEqual(
    causes.map((c) => c.field),
    ["spec.driver"],
  );
  assert.equal(
    causes[0]?.message,
    'Invalid value: "integer": spec.driver in body must be of type string: "integer"',
  );
});

test("registry serves and withdraws CRD kinds and tells listeners", () => {
  const registry = createBuiltinRegistry();
  let changes = 0;
  registry.onChange(() => changes++);
  assert.equal(registry.lookup("snapshot.storage.k8s.io", "v1", "volumesnapshots"), undefined);
  const crd = fixture("volumesnapshots");
  registry.addCustomResource(crd);
  assert.equal(registry.lookup("snapshot.storage.k8s.io", "v1", "volumesnapshots")?.kind, "VolumeSnapshot");
  assert.ok(registry.all().some((def) => def.resource === "volumesnapshots"));
  const document = openApiDocument(registry, "/openapi/v3/apis/snapshot.storage.k8s.io/v1") as {
    paths: Record<string, unknown>;
  };
  assert.ok(document.paths["/apis/snapshot.storage.k8s.io/v1/namespaces/{namespace}/volumesnapshots/{name}"]);
  registry.removeCustomResource(crd);
  assert.equal(registry.lookup("snapshot.storage.k8s.io", "v1", "volumesnapshots"), undefined);
  assert.equal(changes, 2);
  // A CRD cannot shadow a built-in group.
  const shadow = structuredClone(crd);
  (shadow.spec as Record<string, unknown>).group = "storage.k8s.io";
  registry.addCustomResource(shadow);
  assert.equal(changes, 2);
});

test("simple JSONPath", () => {
  const object = { spec: { list: [{ x: 1 }], "a.b": "dotted" } };
  assert.equal(evaluateSimpleJSONPath(object, ".spec.list[0].x"), 1);
  assert.equal(evaluateSimpleJSONPath(object, "{.spec.list[0].x}"), 1);
  assert.equal(evaluateSimpleJSONPath(object, ".spec['a.b']"), "dotted");
  assert.equal(evaluateSimpleJSONPath(object, ".spec.missing.deep"), undefined);
});
