// The precompiled codecs (loader.ts, protobufjs/light over generated/descriptor.json) against
// @grpc/proto-loader parsing the .proto files with LOADER_OPTIONS, which is what the generated
// types were written for: for every request and response of every service, a message with every
// field set (int64 above 2^53, enums, maps, oneofs, wrappers, timestamps, bytes) and an empty
// one must encode to the same bytes and decode to the same objects.

import { loadSync } from "@grpc/proto-loader";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import protobuf from "protobufjs/light.js";
import {
  DESCRIPTOR_PATH,
  LOADER_OPTIONS,
  PROTO_DIR,
  PROTO_FILES,
  serviceDefinition,
  type MethodDefinition,
} from "./loader.ts";
import { SERVICE_SPECS } from "./services.ts";

const reference = loadSync(
  PROTO_FILES.map((file) => join(PROTO_DIR, file)),
  LOADER_OPTIONS,
);
const reflection = protobuf.Root.fromJSON(
  JSON.parse(readFileSync(DESCRIPTOR_PATH, "utf8")) as protobuf.INamespace,
);

/** A value for a scalar field: int64 past 2^53 so a lossy number conversion shows. */
function scalar(type: string, name: string): unknown {
  switch (type) {
    case "string":
      return `${name}-value`;
    case "bool":
      return true;
    case "bytes":
      return Buffer.from(name);
    case "int64":
    case "uint64":
    case "sint64":
    case "fixed64":
    case "sfixed64":
      return "9007199254740993";
    case "double":
    case "float":
      return 1.5;
    default:
      return 7;
  }
}

/** Every field set (one member per oneof, the last enum value), nested messages to `depth`. */
function filled(type: protobuf.Type, depth: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const oneofTaken = new Set<string>();
  for (const field of type.fieldsArray) {
    field.resolve();
    if (field.partOf) {
      if (oneofTaken.has(field.partOf.name)) continue;
      oneofTaken.add(field.partOf.name);
    }
    const resolved = field.resolvedType;
    let value: unknown;
    if (resolved instanceof protobuf.Enum) {
      const names = Object.keys(resolved.values);
      value = names[names.length - 1];
    } else if (resolved instanceof protobuf.Type) {
      if (depth === 0) continue;
      value = filled(resolved, depth - 1);
    } else {
      value = scalar(field.type, field.name);
    }
    if (field.map) out[field.name] = { "key-a": value, "key-b": value };
    else if (field.repeated) out[field.name] = [value, value];
    else out[field.name] = value;
  }
  return out;
}

for (const spec of Object.values(SERVICE_SPECS)) {
  test(`${spec.name}: every message encodes and decodes as proto-loader's`, () => {
    const ours = serviceDefinition(spec.name);
    const found = reference[spec.name];
    assert.ok(found !== undefined && !("format" in found), `${spec.name} in proto-loader's package`);
    const theirs: Record<string, MethodDefinition | undefined> = found;
    for (const method of Object.values(spec.methods)) {
      const mine = ours[method.name];
      const other = theirs[method.name];
      assert.ok(mine && other, method.path);
      assert.equal(mine.path, other.path);
      assert.equal(mine.responseStream, other.responseStream);
      assert.equal(mine.requestStream, other.requestStream);
      assert.equal(mine.originalName, other.originalName);
      const sides = [
        [
          method.requestType,
          mine.requestSerialize,
          other.requestSerialize,
          mine.requestDeserialize,
          other.requestDeserialize,
        ],
        [
          method.responseType,
          mine.responseSerialize,
          other.responseSerialize,
          mine.responseDeserialize,
          other.responseDeserialize,
        ],
      ] as const;
      for (const [typeName, encode, encodeRef, decode, decodeRef] of sides) {
        for (const message of [{}, filled(reflection.lookupType(typeName), 4)]) {
          const bytes = encode(message);
          assert.deepEqual(bytes, encodeRef(message), `${typeName} encodes as proto-loader's`);
          assert.deepEqual(decode(bytes), decodeRef(bytes), `${typeName} decodes as proto-loader's`);
        }
      }
    }
  });
}

test("int64 above 2^53 stays exact, enums are names, defaults are filled, the oneof is named", () => {
  const { CreateVolume } = serviceDefinition("csi.v1.Controller");
  assert.ok(CreateVolume);
  const bytes = CreateVolume.requestSerialize({
    name: "pvc-1",
    capacityRange: { requiredBytes: "9007199254740993" },
    volumeCapabilities: [{ block: {}, accessMode: { mode: "MULTI_NODE_MULTI_WRITER" } }],
  });
  const decoded = CreateVolume.requestDeserialize(bytes) as Record<string, unknown>;
  assert.deepEqual(decoded.capacityRange, { requiredBytes: "9007199254740993", limitBytes: "0" });
  assert.deepEqual(decoded.volumeCapabilities, [
    { block: {}, accessMode: { mode: "MULTI_NODE_MULTI_WRITER" }, accessType: "block" },
  ]);
  assert.deepEqual(decoded.parameters, {});
  assert.equal(decoded.volumeContentSource, null);
});

test("an unknown service is a coded error naming it", () => {
  assert.throws(() => serviceDefinition("csi.v1.Nope"), {
    code: "CSIKIT_ERR_PROTO",
    message: /csi\.v1\.Nope is not a service/,
  });
});
