import { test } from "node:test";
import assert from "node:assert/strict";
import { createBuiltinRegistry } from "../registry.ts";
import { openApiDocument, openAPIV3Document, openAPIV3Root } from "./openapi.ts";

interface Operation {
  "x-kubernetes-group-version-kind"?: { group: string; version: string; kind: string };
  parameters?: { name: string; in: string }[];
  requestBody?: { content: Record<string, unknown> };
}

test("every served kind's PATCH declares fieldValidation, as kubectl's verifier looks for it", () => {
  const registry = createBuiltinRegistry();
  const root = openAPIV3Root(registry);
  for (const path of [
    "api/v1",
    "apis/storage.k8s.io/v1",
    "apis/coordination.k8s.io/v1",
    "apis/events.k8s.io/v1",
    "apis/apiextensions.k8s.io/v1",
  ]) {
    assert.match(
      root.paths[path]?.serverRelativeURL ?? "",
      new RegExp(`^/openapi/v3/${path}\\?hash=[0-9A-F]+$`),
    );
  }
  for (const def of registry.all()) {
    const path = def.group === "" ? `api/${def.version}` : `apis/${def.group}/${def.version}`;
    const url = root.paths[path]?.serverRelativeURL ?? "";
    // served as JSON and parsable again, as the client does
    const document = JSON.parse(JSON.stringify(openApiDocument(registry, url))) as {
      openapi: string;
      paths: Record<string, { patch?: Operation }>;
      components: { schemas: Record<string, { "x-kubernetes-group-version-kind"?: unknown[] }> };
    };
    assert.equal(document.openapi, "3.0.0");
    const patches = Object.values(document.paths)
      .map((item) => item.patch)
      .filter((op): op is Operation => op !== undefined)
      .filter((op) => op["x-kubernetes-group-version-kind"]?.kind === def.kind);
    assert.ok(patches.length > 0, `${def.kind} has a PATCH`);
    for (const op of patches) {
      assert.ok(
        op.parameters?.some((p) => p.name === "fieldValidation" && p.in === "query"),
        def.kind,
      );
      // no strategic-merge body: kubectl apply then uses its compiled-in patch metadata
      assert.equal(op.requestBody?.content["application/strategic-merge-patch+json"], undefined);
    }
    assert.ok(
      Object.values(document.components.schemas).some((s) =>
        JSON.stringify(s["x-kubernetes-group-version-kind"] ?? []).includes(`"kind":"${def.kind}"`),
      ),
    );
  }
});

test("unknown documents and /openapi/v2 are absent (404)", () => {
  const registry = createBuiltinRegistry();
  assert.equal(openApiDocument(registry, "/openapi/v2"), undefined);
  assert.equal(openApiDocument(registry, "/openapi/v3/apis/example.com/v1"), undefined);
  assert.equal(openAPIV3Document(registry, "apis/nothing/v1"), undefined);
  assert.ok(openAPIV3Document(registry, "/openapi/v3/api/v1?hash=ABC"));
});

test("unknown fields of built-in and custom kinds, as strict decoding names them", async () => {
  const registry = createBuiltinRegistry();
  const { unknownFields } = await import("./openapi.ts");
  const pvc = registry.lookup("", "v1", "persistentvolumeclaims");
  assert.ok(pvc);
  const body = {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name: "c", namespace: "default", labelz: {} },
    spec: { acessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
    extra: 1,
  };
  assert.deepEqual(unknownFields(pvc, body), ["metadata.labelz", "spec.acessModes", "extra"]);
  const pod = registry.lookup("", "v1", "pods");
  assert.ok(pod);
  assert.deepEqual(
    unknownFields(pod, {
      spec: { containers: [{ name: "a", image: "b", imagee: "c", env: [{ name: "x", valeu: "y" }] }] },
    }),
    ["spec.containers[0].imagee", "spec.containers[0].env[0].valeu"],
  );
  // decoding drops them, as upstream does
  const stored = structuredClone(body);
  pvc.applyDefaults(stored);
  assert.equal("extra" in stored, false);
  assert.equal("acessModes" in stored.spec, false);
  assert.deepEqual(stored.spec.resources, { requests: { storage: "1Gi" } });
  // CRD schemas keep their own rules (openAPIV3Schema, extensions)
  const crd = registry.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions");
  assert.ok(crd);
  assert.deepEqual(
    unknownFields(crd, {
      spec: {
        group: "g.example.com",
        versions: [
          {
            name: "v1",
            schema: {
              openAPIV3Schema: {
                type: "object",
                "x-kubernetes-preserve-unknown-fields": true,
                properties: { a: { type: "string" } },
              },
            },
          },
        ],
      },
    }),
    [],
  );
});

test("component schemas carry upstream's definition names", () => {
  const registry = createBuiltinRegistry();
  const core = openAPIV3Document(registry, "api/v1") as { components: { schemas: Record<string, unknown> } };
  const names = Object.keys(core.components.schemas);
  for (const name of [
    "io.k8s.api.core.v1.PersistentVolumeClaim",
    "io.k8s.api.core.v1.PersistentVolumeClaimSpec",
    "io.k8s.api.core.v1.Event",
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
  ])
    assert.ok(names.includes(name), `${name} in ${names.slice(0, 5).join(", ")}…`);
  const storage = openAPIV3Document(registry, "apis/storage.k8s.io/v1") as {
    components: { schemas: Record<string, unknown> };
  };
  for (const name of [
    "io.k8s.api.storage.v1.StorageClass",
    "io.k8s.api.core.v1.TopologySelectorTerm",
    "io.k8s.api.storage.v1.VolumeAttachmentSource",
  ])
    assert.ok(Object.hasOwn(storage.components.schemas, name), name);
  assert.ok(!names.some((name) => name.startsWith("io.k8s.csikit.")), "no csikit-made names");
});
