// The static codecs (loader.ts over codec.ts and generated/codec.ts) against
// @grpc/proto-loader parsing the .proto files with LOADER_OPTIONS, which is what the generated
// types were written for: for every request and response of every service, a message with every
// field set (int64 above 2^53, enums, maps, oneofs, wrappers, timestamps, bytes) and an empty
// one must encode to the same bytes and decode to the same objects; so must the edge cases
// below (explicit defaults, negatives, unknown enum values, unknown fields, truncations).

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

/** Both codecs on one message: the same bytes out, the same object back (or both refuse). */
function sameAsProtoLoader(
  service: string,
  method: string,
  side: "request" | "response",
  message: object,
): void {
  const mine = serviceDefinition(service)[method];
  const found = reference[service];
  assert.ok(mine && found && !("format" in found));
  const theirs = (found as Record<string, MethodDefinition>)[method]!;
  const serialize = side === "request" ? "requestSerialize" : "responseSerialize";
  const deserialize = side === "request" ? "requestDeserialize" : "responseDeserialize";
  const bytes = mine[serialize](message);
  assert.deepEqual(bytes, theirs[serialize](message), `${method} ${side} ${JSON.stringify(message)} encodes`);
  assert.deepEqual(mine[deserialize](bytes), theirs[deserialize](bytes), `${method} ${side} decodes`);
}

test("explicit defaults, negatives, numbers for int64 and enums, unknown enum names, both oneof members", () => {
  const cases: [string, string, "request" | "response", object][] = [
    [
      "csi.v1.Controller",
      "CreateVolume",
      "request",
      { name: "", capacityRange: { requiredBytes: 0, limitBytes: "0" } },
    ],
    [
      "csi.v1.Controller",
      "CreateVolume",
      "request",
      { capacityRange: { requiredBytes: -1, limitBytes: "-9007199254740993" } },
    ],
    [
      "csi.v1.Controller",
      "CreateVolume",
      "request",
      { capacityRange: { requiredBytes: 2 ** 60, limitBytes: 1.9 } },
    ],
    [
      "csi.v1.Controller",
      "CreateVolume",
      "request",
      { capacityRange: { requiredBytes: "18446744073709551615" } },
    ],
    ["csi.v1.Controller", "CreateVolume", "request", { parameters: {}, volumeCapabilities: [] }],
    [
      "csi.v1.Controller",
      "CreateVolume",
      "request",
      { parameters: { "": "", "ü/ß": "日本" }, secrets: { a: "b" } },
    ],
    ["csi.v1.Controller", "CreateVolume", "request", { volumeCapabilities: [{ accessMode: { mode: 5 } }] }],
    ["csi.v1.Controller", "CreateVolume", "request", { volumeCapabilities: [{ accessMode: { mode: 42 } }] }],
    [
      "csi.v1.Controller",
      "CreateVolume",
      "request",
      { volumeCapabilities: [{ accessMode: { mode: "NOPE" } }] },
    ],
    [
      "csi.v1.Controller",
      "CreateVolume",
      "request",
      { volumeCapabilities: [{ block: {}, mount: { fsType: "x" } }] },
    ],
    [
      "csi.v1.Controller",
      "CreateVolume",
      "request",
      { volumeCapabilities: [{ mount: {}, accessType: "block" }] },
    ],
    [
      "csi.v1.Controller",
      "CreateVolume",
      "request",
      { name: null, parameters: undefined, capacityRange: null },
    ],
    ["csi.v1.Node", "NodeGetInfo", "response", { nodeId: "n", maxVolumesPerNode: -5 }],
    ["csi.v1.Node", "NodeGetInfo", "response", { maxVolumesPerNode: "12" }],
    ["csi.v1.Identity", "Probe", "response", { ready: { value: false } }],
    ["csi.v1.Identity", "Probe", "response", { ready: {} }],
  ];
  for (const [service, method, side, message] of cases) sameAsProtoLoader(service, method, side, message);
});

test("unknown fields are skipped, a repeated singular message keeps the last, bad bytes are refused", () => {
  const mine = serviceDefinition("csi.v1.Controller").CreateVolume!;
  const theirs = (reference["csi.v1.Controller"] as Record<string, MethodDefinition>).CreateVolume!;
  const base = theirs.requestSerialize(filled(reflection.lookupType("csi.v1.CreateVolumeRequest"), 4));
  const unknown = Buffer.from([
    ...[0xa0, 0x06, 0x96, 0x01], // field 100, varint 150
    ...[0xaa, 0x06, 0x02, 0x68, 0x69], // field 101, bytes "hi"
    ...[0xb5, 0x06, 1, 2, 3, 4], // field 102, fixed32
    ...[0xb9, 0x06, 1, 2, 3, 4, 5, 6, 7, 8], // field 103, fixed64
    ...[0xc3, 0x06, 0x08, 0x01, 0xc4, 0x06], // field 104, a group holding field 1 varint 1
    ...[0x12, 0x02, 0x08, 0x07], // capacity_range again: the last one wins
  ]);
  const bytes = Buffer.concat([base, unknown]);
  assert.deepEqual(mine.requestDeserialize(bytes), theirs.requestDeserialize(bytes));
  // Every truncation: what proto-loader refuses is refused, and what is decoded is decoded the
  // same. (protobufjs's Node reader clamps a string running past the end instead of refusing
  // it; the codec refuses that too.)
  for (let end = 0; end <= base.length; end++) {
    const prefix = base.subarray(0, end);
    let expected: unknown;
    try {
      expected = theirs.requestDeserialize(prefix);
    } catch {
      assert.throws(() => mine.requestDeserialize(prefix), `a prefix of ${end} bytes is refused`);
      continue;
    }
    let decoded: unknown;
    try {
      decoded = mine.requestDeserialize(prefix);
    } catch (error) {
      assert.match(String(error), /index out of range/, `a prefix of ${end} bytes`);
      continue;
    }
    assert.deepEqual(decoded, expected, `a prefix of ${end} bytes`);
  }
});

test("a map key __proto__ stays a key; a non-decimal int64 string is refused naming the field", () => {
  sameAsProtoLoader(
    "csi.v1.Controller",
    "CreateVolume",
    "request",
    JSON.parse('{"parameters":{"__proto__":"x"}}') as object,
  );
  const { CreateVolume } = serviceDefinition("csi.v1.Controller");
  assert.throws(() => CreateVolume!.requestSerialize({ capacityRange: { requiredBytes: "12abc" } }), {
    code: "CSIKIT_ERR_PROTO",
    message: /\.csi\.v1\.CapacityRange\.requiredBytes: "12abc" is not a decimal integer/,
  });
  assert.throws(() => CreateVolume!.requestSerialize({ capacityRange: 5 }), /capacityRange: object expected/);
  assert.throws(
    () => CreateVolume!.requestSerialize({ volumeCapabilities: {} }),
    /volumeCapabilities: array expected/,
  );
});
