import { test } from "node:test";
import assert from "node:assert/strict";
import protobuf from "protobufjs";
import { decodeEnvelope, decodeProtobufObject, encodeProtobufObject, protobufType } from "./protobuf.ts";
import { ApiError } from "../transport/status.ts";
import { CORPUS, REVIEWS } from "../testdata/protobuf-corpus.ts";

// Bodies captured from `kubectl create secret generic s1 --from-literal=p=q` and
// `kubectl create namespace tmp1` (kubectl v1.32).
const SECRET =
  "6b3873000a0c0a0276311206536563726574121e0a120a02733112001a0022002a0032003800420012060a01701201711a001a002200";
const NAMESPACE =
  "6b3873000a0f0a02763112094e616d657370616365121c0a140a04746d703112001a0022002a0032003800420012001a020a001a002200";

function isBadRequest(pattern: RegExp): (e: unknown) => boolean {
  return (e: unknown) => e instanceof ApiError && e.code === 400 && pattern.test(e.message);
}

test("protobuf bodies of kubectl's typed clients decode to the JSON objects they stand for", () => {
  assert.deepEqual(decodeProtobufObject(Buffer.from(SECRET, "hex")), {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "s1" },
    data: { p: Buffer.from("q").toString("base64") },
  });
  assert.deepEqual(decodeProtobufObject(Buffer.from(NAMESPACE, "hex")), {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name: "tmp1" },
    // Go writes its non-pointer structs even when empty, and its JSON shows them as {} too.
    spec: {},
    status: {},
  });
});

test("Go-encoded bodies re-encode byte for byte: the field numbers and types agree with upstream's", () => {
  for (const hex of [SECRET, NAMESPACE]) {
    const envelope = decodeEnvelope(Buffer.from(hex, "hex"));
    const type = protobufType(envelope.apiVersion, envelope.kind)!;
    const again = type.encode(type.decode(envelope.raw)).finish();
    assert.equal(Buffer.from(again).toString("hex"), Buffer.from(envelope.raw).toString("hex"));
  }
});

test("JSON → protobuf → JSON is identical for every built-in kind of the corpus", () => {
  const kinds = new Set<string>();
  for (const { object } of [...CORPUS, ...REVIEWS]) {
    const bytes = encodeProtobufObject(object);
    assert.deepEqual(bytes.subarray(0, 4), Buffer.from("k8s\0"), `${String(object.kind)} magic`);
    assert.deepEqual(
      decodeProtobufObject(bytes),
      object,
      `${String(object.apiVersion)} ${String(object.kind)}`,
    );
    kinds.add(`${String(object.apiVersion)}/${String(object.kind)}`);
  }
  assert.equal(kinds.size, CORPUS.length + REVIEWS.length);
});

/** Top-level field numbers and wire types of a message, in order. */
function tags(bytes: Uint8Array): string[] {
  const reader = protobuf.Reader.create(bytes);
  const out: string[] = [];
  while (reader.pos < reader.len) {
    const tag = reader.uint32();
    out.push(`${tag >>> 3}:${tag & 7}`);
    reader.skipType(tag & 7);
  }
  return out;
}

test("the encoder writes upstream's envelope and field numbers", () => {
  const pv = CORPUS.find((entry) => entry.object.kind === "PersistentVolume")!.object;
  const envelope = decodeEnvelope(encodeProtobufObject(pv));
  assert.deepEqual([envelope.apiVersion, envelope.kind], ["v1", "PersistentVolume"]);
  // PersistentVolume: metadata = 1, spec = 2 (no status in the corpus object).
  assert.deepEqual(tags(envelope.raw), ["1:2", "2:2"]);
  const decoded = protobufType("v1", "PersistentVolume")!.toObject(
    protobufType("v1", "PersistentVolume")!.decode(envelope.raw),
  );
  assert.ok(
    decoded.spec?.persistentVolumeSource?.csi,
    "the flat JSON csi source lands in persistentVolumeSource",
  );
  // PersistentVolumeSpec: capacity = 1, persistentVolumeSource = 2 (csi = 22 inside), accessModes
  // = 3, claimRef = 4, reclaim policy = 5, storageClassName = 6, mountOptions = 7, volumeMode = 8,
  // nodeAffinity = 9 — upstream's generated.proto numbering.
  const specBytes = protobuf.Reader.create(envelope.raw);
  specBytes.uint32();
  specBytes.skipType(2);
  specBytes.uint32();
  const specRaw = specBytes.bytes();
  assert.deepEqual(tags(specRaw), ["1:2", "2:2", "3:2", "4:2", "5:2", "6:2", "7:2", "8:2", "9:2"]);
  // Unknown envelope: typeMeta = 1, raw = 2 (contentEncoding/contentType empty, omitted).
  assert.deepEqual(tags(encodeProtobufObject(pv).subarray(4)), ["1:2", "2:2"]);
});

test("int-or-string, quantities, times and micro-times keep their JSON spelling", () => {
  const deployment = CORPUS.find((entry) => entry.object.kind === "Deployment")!.object;
  const decoded = decodeProtobufObject(encodeProtobufObject(deployment)) as {
    spec: { strategy: { rollingUpdate: { maxUnavailable: unknown; maxSurge: unknown } }; replicas: number };
  };
  assert.deepEqual(decoded.spec.strategy.rollingUpdate, { maxUnavailable: "25%", maxSurge: 1 });
  assert.equal(decoded.spec.replicas, 0, "a pointer field set to zero survives");
  const lease = decodeProtobufObject(
    encodeProtobufObject({
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name: "l", creationTimestamp: "2026-01-02T03:04:05Z" },
      spec: { renewTime: "2026-01-02T03:04:05.5Z" },
    }),
  );
  assert.deepEqual(lease, {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: { name: "l", creationTimestamp: "2026-01-02T03:04:05Z" },
    spec: { renewTime: "2026-01-02T03:04:05.500000Z" },
  });
});

test("kinds without a protobuf form are not decoded; bad bodies are 400 naming what is wrong", () => {
  const gadget = Buffer.concat([
    Buffer.from("k8s\0"),
    protobuf.Writer.create()
      .uint32(10)
      .fork()
      .uint32(10)
      .string("example.com/v1")
      .uint32(18)
      .string("Gadget")
      .ldelim()
      .finish(),
  ]);
  assert.equal(decodeProtobufObject(gadget), undefined);
  assert.throws(() => decodeProtobufObject(Buffer.from("{}")), isBadRequest(/magic/));
  const truncated = Buffer.from(SECRET.slice(0, SECRET.length - 20), "hex");
  assert.throws(() => decodeProtobufObject(truncated), isBadRequest(/truncated or malformed/));
  // metadata (field 1 of Secret) sent as a varint instead of a message.
  const wrongWire = encodeRaw("v1", "Secret", protobuf.Writer.create().uint32(8).uint32(1).finish());
  assert.throws(() => decodeProtobufObject(wrongWire), isBadRequest(/metadata.*wire type 0, expected 2/));
  // Deeply nested unknown groups would recurse in a skipping reader.
  const groups = protobuf.Writer.create();
  for (let i = 0; i < 5000; i++) groups.uint32((99 << 3) | 3);
  const deep = encodeRaw("v1", "Secret", groups.finish());
  assert.throws(() => decodeProtobufObject(deep), isBadRequest(/groups/));
  const noType = Buffer.concat([
    Buffer.from("k8s\0"),
    protobuf.Writer.create().uint32(18).bytes(new Uint8Array()).finish(),
  ]);
  assert.throws(() => decodeProtobufObject(noType), isBadRequest(/no apiVersion and kind/));
});

test("unknown fields are named, not silently kept", () => {
  const message = protobuf.Writer.create();
  message
    .uint32(10)
    .fork()
    .uint32(10)
    .string("s1")
    .uint32((77 << 3) | 0)
    .uint32(5)
    .ldelim();
  message.uint32((42 << 3) | 2).string("x");
  const unknownFields: string[] = [];
  const decoded = decodeProtobufObject(encodeRaw("v1", "Secret", message.finish()), { unknownFields });
  assert.deepEqual(decoded, { apiVersion: "v1", kind: "Secret", metadata: { name: "s1" } });
  assert.deepEqual(unknownFields, ["metadata.<field 77>", "<field 42>"]);
});

function encodeRaw(apiVersion: string, kind: string, raw: Uint8Array): Buffer {
  const unknown = protobuf.Writer.create();
  unknown.uint32(10).fork().uint32(10).string(apiVersion).uint32(18).string(kind).ldelim();
  unknown.uint32(18).bytes(raw);
  return Buffer.concat([Buffer.from("k8s\0"), unknown.finish()]);
}
