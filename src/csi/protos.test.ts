// Wire identity of the protos: method paths, field numbers, the csi_secret markers, and every
// message, enum, field, service and marker compared with the committed fingerprint of the
// spec's proto (src/csi/proto/spec-descriptors.json), and with the spec text itself when it is
// at hand (shared/ beside the repository, or /work/shared).

import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { test } from "node:test";
import protobuf from "protobufjs";
import { serviceDefinition } from "./index.ts";
import {
  FINGERPRINT_PATH,
  SPEC_CANDIDATES,
  fingerprint,
  loadOurRoot,
  parseSpecRoot,
  type ProtoFingerprint,
} from "./proto-fingerprint.ts";
import { secretTable } from "./generated/secrets.ts";

function methodPath(service: string, method: string): string | undefined {
  return serviceDefinition(service)[method]?.path;
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
  const streaming = serviceDefinition("csi.v1.SnapshotMetadata");
  assert.equal(streaming.GetMetadataDelta?.responseStream, true);
});

const ourRoot = loadOurRoot;

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
          // snapshotmetadata.proto names csi.proto's option with its package.
          if (field.options?.["(csi_secret)"] === true || field.options?.["(csi.v1.csi_secret)"] === true)
            // The table names fields as decoded (camelCase).
            marked.push(
              `${nested.fullName.slice(1)}.${field.name.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase())}`,
            );
        }
      }
      if (nested instanceof protobuf.Namespace || nested instanceof protobuf.Type) visit(nested);
    }
  };
  visit(root);
  const listed = Object.entries(secretTable).flatMap(([type, entry]) =>
    entry.secrets.map((f) => `${type}.${f}`),
  );
  // 19 in CSI v1.12, plus security_token of the two Kubernetes SnapshotMetadata requests.
  assert.equal(marked.length, 21);
  assert.deepEqual(listed.sort(), marked.sort());
});

/** The committed fingerprint, without its provenance line. */
function committedFingerprint(): ProtoFingerprint {
  const { generatedBy, ...committed } = JSON.parse(
    readFileSync(FINGERPRINT_PATH, "utf8"),
  ) as ProtoFingerprint & {
    generatedBy: string;
  };
  assert.match(generatedBy, /scripts\/spec-fingerprint\.ts/);
  return committed;
}

/** Section by section and entry by entry, so a failure names the message, enum or service. */
function assertSameContract(actual: ProtoFingerprint, expected: ProtoFingerprint, what: string): void {
  assert.equal(actual.package, expected.package);
  for (const section of ["messages", "enums", "services"] as const) {
    assert.deepEqual(Object.keys(actual[section]), Object.keys(expected[section]), `${what}: ${section}`);
    for (const [name, entries] of Object.entries(expected[section])) {
      assert.deepEqual(actual[section][name], entries, `${what}: ${name}`);
    }
  }
  assert.deepEqual(actual.extensions, expected.extensions, `${what}: extensions`);
  assert.deepEqual(actual.markers, expected.markers, `${what}: markers`);
  assert.deepEqual(actual, expected, what);
}

test("every service, message, enum, field and marker of csi.proto equals the committed spec fingerprint", () => {
  const committed = committedFingerprint();
  assert.ok(Object.keys(committed.messages).length > 90, "the fingerprint lists the spec's messages");
  assert.equal(committed.markers["csi_secret"]?.length, 19);
  assertSameContract(fingerprint(ourRoot(), "csi.v1"), committed, "csi.proto vs spec-descriptors.json");
});

const SPEC = SPEC_CANDIDATES.find((path) => existsSync(path));

test(
  "the committed fingerprint and csi.proto both equal the live spec text",
  { skip: SPEC === undefined ? `the spec text is at none of ${SPEC_CANDIDATES.join(", ")}` : false },
  () => {
    const spec = fingerprint(parseSpecRoot(readFileSync(SPEC ?? "", "utf8")), "csi.v1");
    assertSameContract(committedFingerprint(), spec, `spec-descriptors.json vs ${SPEC}`);
    assertSameContract(fingerprint(ourRoot(), "csi.v1"), spec, `csi.proto vs ${SPEC}`);
  },
);
