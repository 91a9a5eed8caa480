// Wire identity of the protos: method paths, field numbers, the csi_secret markers, and (when
// the spec text is at hand) every message, enum and field compared with the spec's own proto.

import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { test } from "node:test";
import protobuf from "protobufjs";
import { packageDefinition } from "./index.ts";
import { PROTO_DIR } from "./loader.ts";
import { secretTable } from "./generated/secrets.ts";

const SPEC = "/work/shared/reference/csi-spec-v1.12.0.md";

function methodPath(service: string, method: string): string | undefined {
  const definition = packageDefinition()[service];
  if (!definition || "format" in definition) return undefined;
  return definition[method]?.path;
}

test("the loaded package defines the upstream method paths", () => {
  assert.equal(methodPath("csi.v1.Node", "NodePublishVolume"), "/csi.v1.Node/NodePublishVolume");
  assert.equal(methodPath("csi.v1.Identity", "Probe"), "/csi.v1.Identity/Probe");
  assert.equal(
    methodPath("csi.v1.GroupController", "CreateVolumeGroupSnapshot"),
    "/csi.v1.GroupController/CreateVolumeGroupSnapshot",
  );
  assert.equal(
    methodPath("csi.v1.SnapshotMetadata", "GetMetadataAllocated"),
    "/csi.v1.SnapshotMetadata/GetMetadataAllocated",
  );
  assert.equal(
    methodPath("pluginregistration.Registration", "GetInfo"),
    "/pluginregistration.Registration/GetInfo",
  );
  assert.equal(
    methodPath("pluginregistration.Registration", "NotifyRegistrationStatus"),
    "/pluginregistration.Registration/NotifyRegistrationStatus",
  );
  const streaming = packageDefinition()["csi.v1.SnapshotMetadata"];
  assert.ok(streaming && !("format" in streaming));
  assert.equal(streaming.GetMetadataDelta?.responseStream, true);
});

function ourRoot(): protobuf.Root {
  const root = new protobuf.Root();
  root.resolvePath = (origin, target) =>
    target.startsWith("google/protobuf/")
      ? join(dirname(createRequire(import.meta.url).resolve("protobufjs/package.json")), target)
      : resolve(PROTO_DIR, target);
  root.loadSync([join(PROTO_DIR, "csi.proto"), join(PROTO_DIR, "pluginregistration.proto")], {
    keepCase: true,
  });
  root.resolveAll();
  return root;
}

test("field numbers of CreateVolumeRequest and PluginInfo match the spec and FACTS", () => {
  const root = ourRoot();
  const numbers = (name: string): Record<string, number> =>
    Object.fromEntries(root.lookupType(name).fieldsArray.map((field) => [field.name, field.id]));
  assert.deepEqual(numbers("csi.v1.CreateVolumeRequest"), {
    name: 1,
    capacity_range: 2,
    volume_capabilities: 3,
    parameters: 4,
    secrets: 5,
    volume_content_source: 6,
    accessibility_requirements: 7,
    mutable_parameters: 8,
  });
  assert.deepEqual(numbers("csi.v1.NodePublishVolumeRequest"), {
    volume_id: 1,
    publish_context: 2,
    staging_target_path: 3,
    target_path: 4,
    volume_capability: 5,
    readonly: 6,
    secrets: 7,
    volume_context: 8,
  });
  assert.deepEqual(numbers("pluginregistration.PluginInfo"), {
    type: 1,
    name: 2,
    endpoint: 3,
    supported_versions: 4,
  });
  assert.deepEqual(numbers("pluginregistration.RegistrationStatus"), { plugin_registered: 1, error: 2 });
  assert.equal(root.lookupType("csi.v1.CreateVolumeRequest").fields.secrets?.options?.["(csi_secret)"], true);
});

test("the secret table lists exactly the csi_secret fields of the proto", () => {
  const root = ourRoot();
  const marked: string[] = [];
  const visit = (namespace: protobuf.NamespaceBase): void => {
    for (const nested of namespace.nestedArray) {
      if (nested instanceof protobuf.Type) {
        for (const field of nested.fieldsArray) {
          if (field.options?.["(csi_secret)"] === true)
            marked.push(`${nested.fullName.slice(1)}.${field.name}`);
        }
      }
      if (nested instanceof protobuf.Namespace || nested instanceof protobuf.Type) visit(nested);
    }
  };
  visit(root);
  const listed = Object.entries(secretTable).flatMap(([type, entry]) =>
    entry.secrets.map((f) => `${type}.${f}`),
  );
  assert.equal(marked.length, 19);
  assert.deepEqual(listed.sort(), marked.sort());
});

function describeTypes(root: protobuf.Root, pkg: string): Map<string, string> {
  const out = new Map<string, string>();
  const visit = (namespace: protobuf.NamespaceBase): void => {
    for (const nested of namespace.nestedArray) {
      const name = nested.fullName.slice(1);
      if (nested instanceof protobuf.Type) {
        const fields = nested.fieldsArray
          .map((field) => {
            const kind =
              field instanceof protobuf.MapField ? `map<${field.keyType},${field.type}>` : field.type;
            const secret = field.options?.["(csi_secret)"] === true ? " secret" : "";
            return `${field.id}:${field.name}:${field.repeated ? "repeated " : ""}${kind}:${field.partOf?.name ?? ""}${secret}`;
          })
          .sort();
        out.set(name, fields.join(", "));
      } else if (nested instanceof protobuf.Enum) {
        out.set(name, JSON.stringify(nested.values));
      } else if (nested instanceof protobuf.Service) {
        const methods = nested.methodsArray.map(
          (m) => `${m.name}(${m.requestType})${m.responseStream ? " stream " : " "}${m.responseType}`,
        );
        out.set(name, methods.join(", "));
      }
      if (nested instanceof protobuf.Namespace || nested instanceof protobuf.Type) visit(nested);
    }
  };
  visit(root.lookup(pkg) as protobuf.Namespace);
  return out;
}

test(
  "every service, message, enum and field equals the spec's proto",
  { skip: existsSync(SPEC) ? false : `the spec text is not at ${SPEC}` },
  () => {
    const text = readFileSync(SPEC, "utf8");
    const source = [...text.matchAll(/```protobuf\n([\s\S]*?)```/g)].map((match) => match[1]).join("\n");
    const spec = protobuf.parse(source, new protobuf.Root(), { keepCase: true }).root;
    const ours = describeTypes(ourRoot(), "csi.v1");
    const theirs = describeTypes(spec, "csi.v1");
    assert.ok(theirs.size > 100, `parsed only ${theirs.size} definitions from the spec`);
    assert.deepEqual([...ours.keys()].sort(), [...theirs.keys()].sort());
    for (const [name, shape] of theirs) assert.equal(ours.get(name), shape, name);
  },
);
