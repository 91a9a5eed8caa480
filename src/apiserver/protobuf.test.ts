import { test } from "node:test";
import assert from "node:assert/strict";
import { decodeProtobufObject } from "./protobuf.ts";
import { ApiError } from "./status.ts";

// Bodies captured from `kubectl create secret generic s1 --from-literal=p=q` and
// `kubectl create namespace tmp1` (kubectl v1.32).
const SECRET =
  "6b3873000a0c0a0276311206536563726574121e0a120a02733112001a0022002a0032003800420012060a01701201711a001a002200";
const NAMESPACE =
  "6b3873000a0f0a02763112094e616d657370616365121c0a140a04746d703112001a0022002a0032003800420012001a020a001a002200";

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
    spec: {},
  });
});

test("unknown kinds and non-envelopes are not decoded; truncated bodies are 400", () => {
  assert.equal(decodeProtobufObject(Buffer.from("{}")), undefined);
  const deployment = Buffer.concat([
    Buffer.from([0x6b, 0x38, 0x73, 0x00, 0x0a, 0x12, 0x0a, 0x07]),
    Buffer.from("apps/v1"),
    Buffer.from([0x12, 0x07]),
    Buffer.from("Deploym"),
    Buffer.from([0x12, 0x00]),
  ]);
  assert.equal(decodeProtobufObject(deployment), undefined);
  const truncated = Buffer.from(SECRET.slice(0, SECRET.length - 20), "hex");
  assert.throws(
    () => decodeProtobufObject(truncated),
    (e: unknown) => e instanceof ApiError && e.code === 400,
  );
});
