import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import type { KubeObject } from "../rest/resource.ts";
import { createBuiltinRegistry } from "../registry.ts";
import { openApiDocument } from "../discovery/openapi.ts";
import { CRDS_DIR } from "../../../test/harness/snapshots.ts";
import { customResourceDefinitions, evaluateSimpleJSONPath, resourceDefFromCRD } from "./apiextensions.ts";

function fixture(name: string): KubeObject {
  const parsed: unknown = parse(readFileSync(join(CRDS_DIR, `snapshot.storage.k8s.io_${name}.yaml`), "utf8"));
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
  // *.k8s.io groups are protected
  const unapproved = fixture("volumesnapshots");
  (unapproved.metadata as Record<string, unknown>).annotations = {};
  assert.deepEqual(
    customResourceDefinitions.validateCreate(unapproved).map((c) => `${c.field}: ${c.message}`),
    [
      'metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation "api-approved.kubernetes.io", see https://github.com/kubernetes/enhancements/pull/1111',
    ],
  );
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
      source: { volumeHandle: "v" },
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

test("VolumeSnapshot CEL rules: exactly one source, immutable names, non-empty class", () => {
  const [def] = resourceDefFromCRD(fixture("volumesnapshots"));
  assert.ok(def);
  const snapshot = (spec: Record<string, unknown>): KubeObject => ({
    metadata: { name: "s", namespace: "default" },
    spec,
  });
  const both = def.validateCreate(
    snapshot({ source: { persistentVolumeClaimName: "a", volumeSnapshotContentName: "b" } }),
  );
  assert.deepEqual(
    both.map((c) => `${c.field}: ${c.message}`),
    [
      'spec.source: Invalid value: "object": exactly one of volumeSnapshotContentName and persistentVolumeClaimName must be set',
    ],
  );
  assert.deepEqual(
    def
      .validateCreate(snapshot({ source: { persistentVolumeClaimName: "a" }, volumeSnapshotClassName: "" }))
      .map((c) => c.message),
    ['Invalid value: "string": volumeSnapshotClassName must not be the empty string when set'],
  );
  const old = snapshot({ source: { persistentVolumeClaimName: "a" } });
  assert.deepEqual(def.validateUpdate(snapshot({ source: { persistentVolumeClaimName: "a" } }), old), []);
  assert.deepEqual(
    def
      .validateUpdate(snapshot({ source: { persistentVolumeClaimName: "b" } }), old)
      .map((c) => `${c.field}: ${c.message}`),
    [
      'spec.source.persistentVolumeClaimName: Invalid value: "string": persistentVolumeClaimName is immutable',
    ],
  );
  assert.deepEqual(
    def.validateUpdate(snapshot({ source: { volumeSnapshotContentName: "c" } }), old).map((c) => c.message),
    ['Invalid value: "object": persistentVolumeClaimName is required once set'],
  );
});

test("VolumeSnapshotContent CEL rules", () => {
  const [def] = resourceDefFromCRD(fixture("volumesnapshotcontents"));
  assert.ok(def);
  const content = (spec: Record<string, unknown>): KubeObject => ({
    metadata: { name: "snapcontent-1" },
    spec: {
      deletionPolicy: "Delete",
      driver: "hostpath.csi.k8s.io",
      volumeSnapshotRef: { name: "s", namespace: "default" },
      ...spec,
    },
  });
  assert.deepEqual(def.validateCreate(content({ source: { volumeHandle: "v" } })), []);
  assert.deepEqual(
    def
      .validateCreate(content({ source: {}, volumeSnapshotRef: { name: "s" } }))
      .map((c) => `${c.field}: ${c.message}`),
    [
      'spec.source: Invalid value: "object": exactly one of volumeHandle and snapshotHandle must be set',
      'spec.volumeSnapshotRef: Invalid value: "object": both spec.volumeSnapshotRef.name and spec.volumeSnapshotRef.namespace must be set',
    ],
  );
  const old = content({ source: { snapshotHandle: "h1" } });
  assert.deepEqual(
    def.validateUpdate(content({ source: { snapshotHandle: "h2" } }), old).map((c) => c.field),
    ["spec.source.snapshotHandle"],
  );
});

test("oneOf, anyOf and not in CRD schemas", () => {
  const crd = fixture("volumesnapshotclasses");
  const version = (crd.spec as { versions: { schema: { openAPIV3Schema: Record<string, unknown> } }[] })
    .versions[0];
  assert.ok(version);
  const schema = version.schema.openAPIV3Schema as { properties: Record<string, unknown> };
  schema.properties.parameters = {
    type: "object",
    additionalProperties: { type: "string" },
    oneOf: [{ required: ["a"] }, { required: ["b"] }],
  };
  const [def] = resourceDefFromCRD(crd);
  assert.ok(def);
  const klass = (parameters: Record<string, string>): KubeObject => ({
    metadata: { name: "c" },
    driver: "d",
    deletionPolicy: "Delete",
    parameters,
  });
  assert.deepEqual(def.validateCreate(klass({ a: "1" })), []);
  assert.deepEqual(
    def.validateCreate(klass({ a: "1", b: "2" })).map((c) => c.message),
    [
      'Invalid value: "object": parameters in body must validate one and only one schema (oneOf). Found 2 valid alternatives',
    ],
  );
});
