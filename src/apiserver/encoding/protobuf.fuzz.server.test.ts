// A protobuf fuzz corpus against the real server: bodies of several kinds, truncated, with bytes
// flipped, inserted and cut, their object re-enveloped so the mutation reaches the message,
// random bytes behind the magic, and a list of hand-made faults (a map entry without its value,
// a time past year 9999, field number 0, wire types 6/7, a varint of 11 bytes...). Every body is
// sent over HTTPS as a create, an update or a delete's options: no answer is a 5xx, none hangs,
// the server stays up, and every 400 is a Status that names what is wrong. The same mutations
// run in-process first (many more of them, fast) against the decoder itself: it returns an
// object or throws a 400 ApiError, nothing else. The PRNG is seeded: a failure prints the seed
// and the case, and the run replays exactly.

import { test } from "node:test";
import assert from "node:assert/strict";
import protobuf from "protobufjs";
import { raw, startTestServer, type RawRequest, type TestServer } from "../../../test/harness/apiserver.ts";
import { seededRandom } from "../../../test/harness/random.ts";
import {
  decodeEnvelope,
  decodeProtobufObject,
  decodeProtobufWatchEvent,
  encodeProtobufObject,
  encodeProtobufWatchEvent,
} from "./protobuf.ts";
import { ApiError } from "../transport/status.ts";
import { CORPUS } from "../testdata/protobuf-corpus.ts";

const PB = "application/vnd.kubernetes.protobuf";
const NS = "fz";
const SEED = 0x7b0f;
const MAGIC = Buffer.from("k8s\0", "latin1");

/** The corpus kinds the fuzzer starts from, with where they are created. */
const KINDS = [
  "ConfigMap",
  "Secret",
  "PersistentVolumeClaim",
  "PersistentVolume",
  "Pod",
  "StorageClass",
  "VolumeAttachment",
  "CSINode",
  "Lease",
  "Deployment",
  "RoleBinding",
];
const SEEDS = KINDS.map((kind) => {
  const entry = CORPUS.find((candidate) => candidate.object.kind === kind)!;
  return { kind, collection: entry.collection.replace("{ns}", NS), body: encodeProtobufObject(entry.object) };
});

/** A delete's options, as client-go sends them in protobuf. */
const DELETE_OPTIONS = {
  kind: "DeleteOptions",
  collection: "",
  body: encodeProtobufObject({
    apiVersion: "v1",
    kind: "DeleteOptions",
    gracePeriodSeconds: 0,
    propagationPolicy: "Background",
    preconditions: { uid: "6b1f6c2e-0000-4000-8000-000000000000" },
  }),
};

/** `raw` wrapped in a well-formed envelope of apiVersion/kind, so that faults reach the object. */
function envelope(apiVersion: string, kind: string, message: Uint8Array): Buffer {
  const unknown = protobuf.Writer.create();
  unknown.uint32(10).fork().uint32(10).string(apiVersion).uint32(18).string(kind).ldelim();
  unknown.uint32(18).bytes(message);
  return Buffer.concat([MAGIC, unknown.finish()]);
}

type Random = () => number;
const below = (random: Random, n: number): number => Math.floor(random() * n);

function randomBytes(random: Random, n: number): Buffer {
  return Buffer.from(Array.from({ length: n }, () => below(random, 256)));
}

/** One mutation of `bytes`; `name` says which, for the failure message. */
function mutate(random: Random, bytes: Buffer): { name: string; bytes: Buffer } {
  const at = below(random, bytes.length + 1);
  switch (below(random, 6)) {
    case 0:
      return { name: `truncated at ${at}`, bytes: bytes.subarray(0, at) };
    case 1: {
      const copy = Buffer.from(bytes);
      const flips = 1 + below(random, 4);
      for (let i = 0; i < flips && copy.length > 0; i++)
        copy[below(random, copy.length)] = below(random, 256);
      return { name: `${flips} bytes changed`, bytes: copy };
    }
    case 2: {
      const inserted = randomBytes(random, 1 + below(random, 8));
      return {
        name: `${inserted.toString("hex")} inserted at ${at}`,
        bytes: Buffer.concat([bytes.subarray(0, at), inserted, bytes.subarray(at)]),
      };
    }
    case 3: {
      const length = 1 + below(random, 16);
      return {
        name: `${length} bytes cut at ${at}`,
        bytes: Buffer.concat([bytes.subarray(0, at), bytes.subarray(at + length)]),
      };
    }
    case 4: {
      // A tag of a random field number and wire type, with a random varint after it.
      const tag = protobuf.Writer.create()
        .uint32((below(random, 40) << 3) | below(random, 8))
        .uint32(below(random, 1 << 20))
        .finish();
      return {
        name: `tag ${Buffer.from(tag).toString("hex")} at ${at}`,
        bytes: Buffer.concat([bytes.subarray(0, at), tag, bytes.subarray(at)]),
      };
    }
    default: {
      const length = below(random, 64);
      return { name: `${length} random bytes`, bytes: randomBytes(random, length) };
    }
  }
}

/** A fuzzed body of `seed`: the whole body mutated, or its object mutated and re-enveloped. */
function fuzzed(random: Random, seed: (typeof SEEDS)[number]): { name: string; bytes: Buffer } {
  const choice = below(random, 4);
  if (choice === 0) {
    const m = mutate(random, seed.body);
    return { name: `body ${m.name}`, bytes: m.bytes };
  }
  if (choice === 1) {
    const m = mutate(random, seed.body.subarray(4));
    return { name: `behind the magic ${m.name}`, bytes: Buffer.concat([MAGIC, m.bytes]) };
  }
  const decoded = decodeEnvelope(seed.body);
  let message: Buffer = Buffer.from(decoded.raw);
  const rounds = choice === 2 ? 1 : 2 + below(random, 3);
  const names: string[] = [];
  for (let i = 0; i < rounds; i++) {
    const m = mutate(random, message);
    names.push(m.name);
    message = m.bytes;
  }
  return {
    name: `object ${names.join(", then ")}`,
    bytes: envelope(decoded.apiVersion, decoded.kind, message),
  };
}

/** Hand-made faults, each a 400 naming the field (or decoded as Go decodes it, `status`). */
function faults(): { name: string; collection: string; bytes: Buffer; message: RegExp | undefined }[] {
  const w = (): protobuf.Writer => protobuf.Writer.create();
  const meta = w().uint32(10).string("faulty").finish();
  const cms = `/api/v1/namespaces/${NS}/configmaps`;
  const configMap = (...fields: Uint8Array[]): Buffer =>
    envelope("v1", "ConfigMap", Buffer.concat([w().uint32(10).bytes(meta).finish(), ...fields]));
  const time = (seconds: number): Uint8Array => w().uint32(8).int64(seconds).finish();
  const timeMeta = (seconds: number): Uint8Array =>
    w()
      .uint32(10)
      .bytes(w().uint32(10).string("faulty").uint32(66).bytes(time(seconds)).finish())
      .finish();
  const managed = w()
    .uint32(10)
    .string("m")
    .uint32(50)
    .string("FieldsV1")
    .uint32(58)
    .bytes(w().uint32(10).bytes(Buffer.from("{not json")).finish())
    .finish();
  const pvSpec = w().uint32(10).bytes(w().uint32(10).string("storage").finish()).finish();
  return [
    {
      name: "a map entry with no value (a PersistentVolume's capacity)",
      collection: "/api/v1/persistentvolumes",
      bytes: envelope(
        "v1",
        "PersistentVolume",
        Buffer.concat([w().uint32(10).bytes(meta).finish(), w().uint32(18).bytes(pvSpec).finish()]),
      ),
      message: undefined,
    },
    {
      name: "a time past the year 9999",
      collection: cms,
      bytes: envelope("v1", "ConfigMap", timeMeta(9e15)),
      message: /metadata\.creationTimestamp: the time .* is outside the years 0000 to 9999/,
    },
    {
      name: "fieldsV1 that is not JSON",
      collection: cms,
      bytes: envelope(
        "v1",
        "ConfigMap",
        w().uint32(10).bytes(w().uint32(10).string("faulty").uint32(138).bytes(managed).finish()).finish(),
      ),
      message: /metadata\.managedFields\[0\]\.fieldsV1: the raw extension does not hold JSON/,
    },
    {
      name: "field number 0",
      collection: cms,
      bytes: configMap(Buffer.from([0x02, 0x00])),
      message: /field <field 0> .*not a field number/,
    },
    {
      name: "wire type 6",
      collection: cms,
      bytes: configMap(Buffer.from([0x16, 0x00])),
      message: /field data \(number 2\) .*invalid wire type 6/,
    },
    {
      name: "wire type 7 in metadata",
      collection: cms,
      bytes: envelope(
        "v1",
        "ConfigMap",
        w()
          .uint32(10)
          .bytes(Buffer.from([0x0f]))
          .finish(),
      ),
      message: /field metadata\.name .*invalid wire type 7/,
    },
    {
      name: "a map value of the wrong wire type",
      collection: cms,
      bytes: configMap(
        w().uint32(18).bytes(w().uint32(10).string("k").uint32(16).uint32(7).finish()).finish(),
      ),
      message: /value of a data entry has wire type 0, expected 2/,
    },
    {
      name: "a map key of the wrong wire type",
      collection: cms,
      bytes: configMap(w().uint32(18).bytes(w().uint32(8).uint32(1).finish()).finish()),
      message: /key of a data entry has wire type 0, expected 2/,
    },
    {
      name: "a nested length past the end",
      collection: cms,
      bytes: envelope("v1", "ConfigMap", Buffer.from([0x0a, 0x03, 0x0a, 0x10, 0x61])),
      message: /field metadata\.name \(number 1\) of ObjectMeta is truncated or malformed/,
    },
    {
      name: "a varint of 11 bytes",
      collection: cms,
      bytes: envelope(
        "v1",
        "ConfigMap",
        Buffer.from([0x0a, 0x0c, 0x38, ...Array<number>(10).fill(0xff), 0x01]),
      ),
      message:
        /field metadata\.generation \(number 7\) of ObjectMeta is truncated or malformed: invalid varint/,
    },
    {
      name: "typeMeta as a varint",
      collection: cms,
      bytes: Buffer.concat([MAGIC, Buffer.from([0x08, 0x01])]),
      message: /field typeMeta \(number 1\) of Unknown has wire type 0, expected 2/,
    },
    {
      name: "a packed repeated value cut short (a Pod's container ports as packed varints)",
      collection: `/api/v1/namespaces/${NS}/pods`,
      bytes: envelope(
        "v1",
        "Pod",
        Buffer.concat([
          w().uint32(10).bytes(meta).finish(),
          // spec.securityContext (14) .supplementalGroups (4, repeated int64), packed and cut.
          w()
            .uint32(18)
            .bytes(
              w()
                .uint32(114)
                .bytes(
                  w()
                    .uint32(34)
                    .bytes(Buffer.from([0x80]))
                    .finish(),
                )
                .finish(),
            )
            .finish(),
        ]),
      ),
      message:
        /field spec\.securityContext\.supplementalGroups \(number 4\) of PodSecurityContext is truncated or malformed/,
    },
  ];
}

test("in-process: every mutated body decodes or is a 400 naming the problem", () => {
  const random = seededRandom(SEED);
  const seen = new Map<string, number>();
  for (let i = 0; i < 2500; i++) {
    const seed = SEEDS[i % SEEDS.length]!;
    const body = fuzzed(random, seed);
    try {
      decodeProtobufObject(body.bytes, { unknownFields: [] });
    } catch (error) {
      const what = `seed ${SEED}, case ${i} (${seed.kind}, ${body.name}): ${String(error)}`;
      assert.ok(error instanceof ApiError, what);
      assert.equal(error.code, 400, what);
      assert.match(error.message, /^the body of the request could not be decoded as protobuf: ./, what);
      const shape = error.message.replace(/\d+/g, "N").replace(/"[^"]*"/g, "S");
      seen.set(shape, (seen.get(shape) ?? 0) + 1);
    }
  }
  // The fuzzer reaches the decoder's paths, not only the magic check.
  assert.ok(seen.size >= 10, [...seen.keys()].join("\n"));
  for (const fault of faults()) {
    try {
      decodeProtobufObject(fault.bytes, { unknownFields: [] });
      assert.equal(fault.message, undefined, `${fault.name} decoded`);
    } catch (error) {
      assert.ok(error instanceof ApiError && error.code === 400, `${fault.name}: ${String(error)}`);
      assert.match(error.message, fault.message ?? /^$/, fault.name);
    }
  }
  // A map entry without a value holds the zero value, as Go's generated Unmarshal gives it.
  const pv = faults()[0]!;
  assert.deepEqual((decodeProtobufObject(pv.bytes)!.spec as Record<string, unknown>).capacity, {
    storage: "0",
  });
});

test("in-process: mutated watch frames decode or are a 400", () => {
  const random = seededRandom(SEED + 1);
  const frame = encodeProtobufWatchEvent("ADDED", CORPUS[0]!.object).subarray(4);
  for (let i = 0; i < 2000; i++) {
    const body = mutate(random, frame);
    try {
      decodeProtobufWatchEvent(body.bytes);
    } catch (error) {
      assert.ok(
        error instanceof ApiError && error.code === 400,
        `case ${i} (${body.name}): ${String(error)}`,
      );
    }
  }
});

let server: TestServer;

/** One request with a bound: a hang fails the test instead of stalling it. */
async function send(request: RawRequest, what: string): Promise<Awaited<ReturnType<typeof raw>>> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within 10 s`)), 10_000);
  });
  try {
    return await Promise.race([raw(server.handle, request), bound]);
  } catch (error) {
    throw new Error(`${what}: ${String(error)}`, { cause: error });
  } finally {
    clearTimeout(timer);
  }
}

/** 400s that are not decode errors: a decoded body of another kind, version, name or namespace. */
const OTHER_400 = new RegExp(
  [
    "must be of type",
    "does not match the expected API version",
    "does not match the (namespace|name on the URL)",
    "the namespace of the provided object",
    "is not a DeleteOptions",
  ].join("|"),
);

test("over HTTPS: fuzzed creates, updates and delete options never get a 5xx, 400s say why", async (t) => {
  // Started here, not before the in-process tests: their seconds of busy loop would outlast the
  // server's keep-alive timeout, and the client would reuse a socket the server had closed.
  server = await startTestServer();
  t.after(() => server.dispose());
  const namespace = await raw(server.handle, {
    method: "POST",
    path: "/api/v1/namespaces",
    body: JSON.stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name: NS } }),
  });
  assert.equal(namespace.status, 201, namespace.text);
  const random = seededRandom(SEED + 2);
  const statuses = new Map<number, number>();
  for (let i = 0; i < 400; i++) {
    const seed = SEEDS[i % SEEDS.length]!;
    const [method, path] = [
      ["POST", seed.collection],
      ["PUT", `${seed.collection}/fuzzed`],
      ["DELETE", `${seed.collection}/fuzzed`],
    ][i % 3] as [string, string];
    const body = fuzzed(random, method === "DELETE" ? DELETE_OPTIONS : seed);
    const what = `seed ${SEED + 2}, case ${i}: ${method} ${path} (${seed.kind}, ${body.name})`;
    const answer = await send(
      { method, path, body: body.bytes, headers: { "Content-Type": PB, Accept: "application/json" } },
      what,
    );
    statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
    assert.ok(answer.status < 500, `${what}: ${answer.status} ${answer.text}`);
    if (answer.status === 400) {
      const status = answer.json();
      assert.equal(status.kind, "Status", what);
      assert.equal(status.reason, "BadRequest", what);
      assert.ok(
        /^the body of the request could not be decoded as protobuf: ./.test(String(status.message)) ||
          OTHER_400.test(String(status.message)),
        `${what}: ${String(status.message)}`,
      );
    }
  }
  assert.ok((statuses.get(400) ?? 0) > 100, JSON.stringify([...statuses]));
  for (const fault of faults()) {
    const answer = await send(
      { method: "POST", path: fault.collection, body: fault.bytes, headers: { "Content-Type": PB } },
      fault.name,
    );
    if (fault.message) {
      assert.equal(answer.status, 400, `${fault.name}: ${answer.text}`);
      assert.match(String(answer.json().message), fault.message, fault.name);
    } else {
      assert.ok(answer.status < 500, `${fault.name}: ${answer.status} ${answer.text}`);
    }
  }
  const alive = await send({ path: `/api/v1/namespaces/${NS}` }, "the server after the fuzzing");
  assert.equal(alive.status, 200);
});
