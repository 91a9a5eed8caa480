// The protobuf wire format against the real server: every built-in kind created, read,
// listed and watched in protobuf and JSON giving the same objects; mixed clients; content
// negotiation (406/415); custom resources JSON-only; bad bodies answered 4xx.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { request as httpsRequest } from "node:https";
import type { IncomingMessage } from "node:http";
import protobuf from "protobufjs";
import { raw, startTestServer, type RawRequest, type TestServer } from "../../../test/harness/apiserver.ts";
import {
  decodeEnvelope,
  decodeProtobufObject,
  decodeProtobufWatchEvent,
  encodeProtobufObject,
  protobufType,
} from "./protobuf.ts";
import { CORPUS, REVIEWS } from "../testdata/protobuf-corpus.ts";
import { until } from "../../../test/harness/until.ts";

const PB = "application/vnd.kubernetes.protobuf";
const NS = "pb";
type Obj = Record<string, unknown> & { metadata?: Record<string, unknown>; items?: Obj[] };

let server: TestServer;

before(async () => {
  server = await startTestServer();
  const created = await call({
    method: "POST",
    path: "/api/v1/namespaces",
    body: JSON.stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name: NS } }),
  });
  assert.equal(created.status, 201, created.text);
});
after(async () => {
  await server?.dispose();
});

function call(request: RawRequest): ReturnType<typeof raw> {
  return raw(server.handle, request);
}

/** A protobuf request and its decoded protobuf answer. */
async function pb(
  method: string,
  path: string,
  body?: Obj,
): Promise<{ status: number; object: Obj; contentType: string }> {
  const response = await call({
    method,
    path,
    headers: { Accept: `${PB}, application/json`, ...(body ? { "Content-Type": PB } : {}) },
    ...(body ? { body: encodeProtobufObject(body) } : {}),
  });
  const contentType = String(response.headers["content-type"]);
  assert.equal(contentType, PB, `${method} ${path}: ${response.status} ${response.text}`);
  return { status: response.status, object: decodeProtobufObject(response.bytes)!, contentType };
}

async function json(method: string, path: string, body?: Obj): Promise<{ status: number; object: Obj }> {
  const response = await call({ method, path, ...(body ? { body: JSON.stringify(body) } : {}) });
  return { status: response.status, object: response.json() };
}

function nameOf(object: Obj): string {
  return String(object.metadata?.name);
}

describe("every built-in kind in protobuf and JSON", () => {
  const entries = CORPUS.map((entry) => ({ ...entry, collection: entry.collection.replace("{ns}", NS) }));

  test("created with a protobuf body, read and listed in protobuf and JSON: the same objects", async () => {
    for (const { collection, object } of entries) {
      const created = await pb("POST", collection, object);
      assert.equal(created.status, 201, `${String(object.kind)}: ${JSON.stringify(created.object)}`);
      assert.equal(created.object.kind, object.kind);
      const path = `${collection}/${nameOf(object)}`;
      const viaProtobuf = await pb("GET", path);
      const viaJson = await json("GET", path);
      assert.equal(viaJson.status, 200);
      assert.deepEqual(viaProtobuf.object, viaJson.object, `GET ${path}`);
      assert.deepEqual(viaProtobuf.object, created.object, `create answer of ${path}`);
      // What the client sent arrived: its annotations are stored as sent.
      const annotations = viaJson.object.metadata?.annotations as Record<string, string>;
      const sentAnnotations = (object.metadata as Obj)["annotations"] as Record<string, string>;
      for (const [key, value] of Object.entries(sentAnnotations))
        assert.equal(annotations[key], value, `${path} annotation ${key}`);
      const listPb = await pb("GET", collection);
      const listJson = await json("GET", collection);
      assert.equal(listPb.object.kind, listJson.object.kind);
      assert.deepEqual(listPb.object.metadata, listJson.object.metadata);
      const stripType = (items: Obj[] | undefined): Obj[] =>
        (items ?? []).map(({ apiVersion: _a, kind: _k, ...rest }) => rest);
      assert.deepEqual(
        stripType(listPb.object.items),
        stripType(listJson.object.items),
        `LIST ${collection}`,
      );
    }
  });

  test("updated with a protobuf body (PUT), patched with JSON and answered in protobuf", async () => {
    const path = `/api/v1/namespaces/${NS}/configmaps/corpus-cm`;
    const current = (await json("GET", path)).object;
    const updated = await pb("PUT", path, { ...current, data: { changed: "yes" } });
    assert.equal(updated.status, 200);
    assert.deepEqual(updated.object.data, { changed: "yes" });
    const patched = await call({
      method: "PATCH",
      path,
      body: JSON.stringify({ data: { patched: "1" } }),
      headers: { "Content-Type": "application/merge-patch+json", Accept: PB },
    });
    assert.equal(patched.status, 200, patched.text);
    assert.equal(patched.headers["content-type"], PB);
    assert.deepEqual(decodeProtobufObject(patched.bytes)!.data, { changed: "yes", patched: "1" });
    // A patch body in protobuf is not a patch type: 415 as upstream.
    const refused = await call({
      method: "PATCH",
      path,
      body: encodeProtobufObject(current),
      headers: { "Content-Type": PB },
    });
    assert.equal(refused.status, 415, refused.text);
  });

  test("reviews and TokenRequest answer in protobuf", async () => {
    for (const { collection, object } of REVIEWS) {
      const answered = await pb("POST", collection, object);
      assert.equal(answered.status, 201, JSON.stringify(answered.object));
      assert.equal(answered.object.kind, object.kind);
      assert.ok(answered.object.status, `${String(object.kind)} has a status`);
    }
    const sar = await pb("POST", REVIEWS[1]!.collection, REVIEWS[1]!.object);
    assert.equal((sar.object.status as { allowed?: boolean }).allowed, true);
    const token = await pb("POST", `/api/v1/namespaces/${NS}/serviceaccounts/corpus-sa/token`, {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      metadata: {},
      spec: { audiences: ["csi"], expirationSeconds: 600 },
    });
    assert.equal(token.status, 201, JSON.stringify(token.object));
    assert.match(String((token.object.status as { token?: string }).token), /^ey/);
  });

  test("delete with protobuf DeleteOptions; errors are protobuf Status objects", async () => {
    const path = `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/roles/corpus-role`;
    const deleted = await pb("DELETE", path, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "DeleteOptions",
      propagationPolicy: "Background",
      preconditions: { uid: "not-the-uid" },
    });
    assert.equal(deleted.status, 409);
    assert.equal(deleted.object.kind, "Status");
    assert.equal(deleted.object.reason, "Conflict");
    const gone = await pb("DELETE", path, { apiVersion: "v1", kind: "DeleteOptions", gracePeriodSeconds: 0 });
    assert.equal(gone.status, 200, JSON.stringify(gone.object));
    const missing = await pb("GET", path);
    assert.equal(missing.status, 404);
    assert.deepEqual(
      [missing.object.kind, missing.object.reason, missing.object.code],
      ["Status", "NotFound", 404],
    );
  });
});

interface Frames {
  events: { type: string; object: Obj }[];
  response: IncomingMessage;
  close(): void;
}

/** Opens a watch and decodes its events as they come (protobuf frames or JSON lines). */
function openWatch(path: string, accept: string): Promise<Frames> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      `${server.handle.url}${path}`,
      {
        headers: { Accept: accept, Authorization: `Bearer ${server.handle.adminToken}` },
        ca: server.handle.caCertPem,
      },
      (response) => {
        const frames: Frames = { events: [], response, close: () => req.destroy() };
        let pending = Buffer.alloc(0);
        const protobufStream = String(response.headers["content-type"]).startsWith(PB);
        response.on("data", (chunk: Buffer) => {
          pending = Buffer.concat([pending, chunk]);
          for (;;) {
            if (protobufStream) {
              if (pending.length < 4) break;
              const length = pending.readUInt32BE(0);
              if (pending.length < 4 + length) break;
              const event = decodeProtobufWatchEvent(pending.subarray(4, 4 + length));
              frames.events.push(event);
              pending = pending.subarray(4 + length);
            } else {
              const newline = pending.indexOf(0x0a);
              if (newline < 0) break;
              frames.events.push(JSON.parse(pending.subarray(0, newline).toString()) as Frames["events"][0]);
              pending = pending.subarray(newline + 1);
            }
          }
        });
        response.on("error", () => {});
        resolve(frames);
      },
    );
    req.on("error", (error) => {
      if (!req.destroyed) reject(error);
    });
    req.end();
  });
}

describe("watch", () => {
  test("a protobuf watcher and a JSON watcher see the same events from mixed writers", async (t) => {
    const collection = "/apis/storage.k8s.io/v1/storageclasses";
    const list = await json("GET", collection);
    const from = String(list.object.metadata?.resourceVersion);
    const pbWatch = await openWatch(
      `${collection}?watch=1&resourceVersion=${from}`,
      `${PB}, application/json`,
    );
    t.after(() => pbWatch.close());
    const jsonWatch = await openWatch(`${collection}?watch=1&resourceVersion=${from}`, "application/json");
    t.after(() => jsonWatch.close());
    assert.equal(pbWatch.response.headers["content-type"], `${PB};stream=watch`);
    assert.equal(jsonWatch.response.headers["content-type"], "application/json");

    const sc = {
      apiVersion: "storage.k8s.io/v1",
      kind: "StorageClass",
      metadata: { name: "mixed" },
      provisioner: "a.b",
    };
    assert.equal((await json("POST", collection, sc)).status, 201); // JSON writer
    const stored = (await json("GET", `${collection}/mixed`)).object;
    const relabeled = { ...stored, metadata: { ...stored.metadata, labels: { by: "protobuf" } } };
    assert.equal((await pb("PUT", `${collection}/mixed`, relabeled)).status, 200); // protobuf writer
    assert.equal((await pb("DELETE", `${collection}/mixed`)).status, 200);

    await until(
      () => pbWatch.events.length >= 3 && jsonWatch.events.length >= 3,
      "three events on both watches",
      { timeoutMs: 10_000 },
    );
    assert.deepEqual(
      pbWatch.events.map((e) => e.type),
      ["ADDED", "MODIFIED", "DELETED"],
    );
    assert.deepEqual(pbWatch.events, jsonWatch.events);
    assert.deepEqual(pbWatch.events[1]!.object.metadata?.labels, { by: "protobuf" });
  });

  test("initial events and bookmarks in protobuf", async (t) => {
    const collection = `/api/v1/namespaces/${NS}/configmaps`;
    const watch = await openWatch(
      `${collection}?watch=1&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan`,
      PB,
    );
    t.after(() => watch.close());
    await until(() => watch.events.some((e) => e.type === "BOOKMARK"), "initial events and their bookmark", {
      timeoutMs: 10_000,
    });
    const added = watch.events.filter((e) => e.type === "ADDED").map((e) => nameOf(e.object));
    assert.ok(added.includes("corpus-cm"), added.join(","));
    const bookmark = watch.events.find((e) => e.type === "BOOKMARK")!;
    assert.equal(bookmark.object.kind, "ConfigMap");
    assert.equal(
      (bookmark.object.metadata?.annotations as Record<string, string>)["k8s.io/initial-events-end"],
      "true",
    );
  });
});

describe("negotiation and refusals", () => {
  test("Accept: preference order, wildcards, YAML, and 406 for what cannot be produced", async () => {
    const path = `/api/v1/namespaces/${NS}`;
    const cases: [string, number, string][] = [
      [`${PB};q=0.5, application/json`, 200, "application/json"],
      [`application/json;q=0.5, ${PB}`, 200, PB],
      ["*/*", 200, "application/json"],
      ["application/*", 200, "application/json"],
      ["application/yaml", 200, "application/yaml"],
      ["text/html, application/xml", 406, "application/json"],
    ];
    for (const [accept, status, type] of cases) {
      const response = await call({ path, headers: { Accept: accept } });
      assert.equal(response.status, status, `${accept}: ${response.text}`);
      assert.equal(response.headers["content-type"], type, accept);
    }
    const refused = await call({ path, headers: { Accept: "text/html" } });
    assert.equal(
      refused.json().message,
      "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf",
    );
    const yaml = await call({ path, headers: { Accept: "application/yaml" } });
    assert.match(yaml.text, /^apiVersion: v1\nkind: Namespace\n/);
  });

  test("custom resources are JSON-only: protobuf bodies 415, protobuf-only Accept 406, fallback JSON", async () => {
    const crd = {
      apiVersion: "apiextensions.k8s.io/v1",
      kind: "CustomResourceDefinition",
      metadata: { name: "widgets.pb.example.com" },
      spec: {
        group: "pb.example.com",
        scope: "Namespaced",
        names: { plural: "widgets", singular: "widget", kind: "Widget" },
        versions: [
          {
            name: "v1",
            served: true,
            storage: true,
            schema: { openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true } },
          },
        ],
      },
    };
    assert.equal(
      (await json("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)).status,
      201,
    );
    const widgets = `/apis/pb.example.com/v1/namespaces/${NS}/widgets`;
    const widget = {
      apiVersion: "pb.example.com/v1",
      kind: "Widget",
      metadata: { name: "w1" },
      spec: { a: 1 },
    };
    let created = await json("POST", widgets, widget);
    for (let i = 0; created.status === 404 && i < 100; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      created = await json("POST", widgets, widget);
    }
    assert.equal(created.status, 201, JSON.stringify(created.object));
    const body = await call({
      method: "POST",
      path: widgets,
      body: Buffer.concat([Buffer.from("k8s\0"), Buffer.from([0x0a, 0x00])]),
      headers: { "Content-Type": PB },
    });
    assert.equal(body.status, 415, body.text);
    assert.equal(
      body.json().message,
      "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml",
    );
    const onlyPb = await call({ path: `${widgets}/w1`, headers: { Accept: PB } });
    assert.equal(onlyPb.status, 406, onlyPb.text);
    assert.equal(
      onlyPb.json().message,
      "only the following media types are accepted: application/json, application/yaml",
    );
    const fallback = await call({ path: `${widgets}/w1`, headers: { Accept: `${PB}, application/json` } });
    assert.equal(fallback.status, 200);
    assert.equal(fallback.headers["content-type"], "application/json");
    // A CustomResourceDefinition itself has no protobuf message here: JSON as well.
    const crdGet = await call({
      path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.pb.example.com",
      headers: { Accept: `${PB}, application/json` },
    });
    assert.equal(crdGet.headers["content-type"], "application/json");
  });

  test("bad protobuf bodies are 4xx with a clear message, never 500", async () => {
    const collection = `/api/v1/namespaces/${NS}/configmaps`;
    const good = encodeProtobufObject({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "bad" } });
    const deepGroups = protobuf.Writer.create();
    for (let i = 0; i < 20_000; i++) deepGroups.uint32((99 << 3) | 3);
    const unknownField = Buffer.concat([good, Buffer.from([0x12, 0x04, 0xd0, 0x02, 0x01, 0x00])]);
    const cases: [string, Buffer, number, RegExp, string?, Buffer?][] = [
      ["truncated", good.subarray(0, good.length - 3), 400, /truncated or malformed/],
      ["wrong magic", Buffer.concat([Buffer.from("k9s\0"), good.subarray(4)]), 400, /magic/],
      [
        "wrong kind",
        encodeProtobufObject({ apiVersion: "v1", kind: "Secret", metadata: { name: "bad" } }),
        400,
        /must be of type ConfigMap/,
      ],
      [
        "unknown fields, Strict",
        encodeUnknown(good, Buffer.from([0xd0, 0x02, 0x01])),
        400,
        /strict decoding error: unknown field "<field 42>"/,
        "?fieldValidation=Strict",
      ],
      ["nesting too deep", encodeUnknown(good, Buffer.from(deepGroups.finish())), 400, /groups/],
      ["over size", Buffer.concat([good, Buffer.alloc(3 * 1024 * 1024)]), 413, /Request entity too large/],
      [
        "JSON nested too deep inside a raw field (managedFields fieldsV1)",
        encodeProtobufObject({
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: {
            name: "deep",
            managedFields: [{ manager: "m", operation: "Apply", fieldsType: "FieldsV1", fieldsV1: {} }],
          },
        }),
        400,
        /exceeded max depth/,
        "",
        Buffer.from('{"f:a":'.repeat(20_000) + "{}" + "}".repeat(20_000)),
      ],
      ["empty body", Buffer.alloc(0), 400, /magic/],
      [
        "envelope without typeMeta",
        Buffer.concat([Buffer.from("k8s\0"), Buffer.from([0x12, 0x00])]),
        400,
        /no apiVersion and kind/,
      ],
      ["not an envelope", unknownField.subarray(2), 400, /magic/],
    ];
    for (const [name, encoded, status, message, query, fieldsV1] of cases) {
      const body = fieldsV1 ? withFieldsV1(encoded, fieldsV1) : encoded;
      // Creates and updates decode bodies alike: both must refuse.
      for (const [method, path] of [
        ["POST", collection],
        ["PUT", `${collection}/bad`],
      ] as const) {
        const response = await call({
          method,
          path: path + (query ?? ""),
          body,
          headers: { "Content-Type": PB },
        });
        assert.equal(response.status, status, `${name}, ${method}: ${response.text}`);
        assert.match(String(response.json().message), message, `${name}, ${method}`);
      }
    }
    // Unknown fields under the default (Warn): created, with a warning naming them.
    const warned = await call({
      method: "POST",
      path: collection,
      body: encodeUnknown(good, Buffer.from([0xd0, 0x02, 0x01])),
      headers: { "Content-Type": PB },
    });
    assert.equal(warned.status, 201, warned.text);
    assert.match(String(warned.headers.warning), /unknown field \\"<field 42>\\"/);
  });
});

/** `good` with extra bytes appended to the object inside its envelope. */
function encodeUnknown(good: Buffer, extra: Buffer): Buffer {
  const envelope = decodeEnvelope(good);
  const unknown = protobuf.Writer.create();
  unknown.uint32(10).fork().uint32(10).string(envelope.apiVersion).uint32(18).string(envelope.kind).ldelim();
  unknown.uint32(18).bytes(Buffer.concat([envelope.raw, extra]));
  return Buffer.concat([Buffer.from("k8s\0"), unknown.finish()]);
}

/** `good` (a ConfigMap with one managedFields entry) with that entry's fieldsV1 raw bytes replaced. */
function withFieldsV1(good: Buffer, raw: Buffer): Buffer {
  const envelope = decodeEnvelope(good);
  const type = protobufType(envelope.apiVersion, envelope.kind)!;
  const message = type.decode(envelope.raw);
  const metadata = Reflect.get(message, "metadata") as { managedFields: { fieldsV1: { Raw: Uint8Array } }[] };
  metadata.managedFields[0]!.fieldsV1.Raw = raw;
  const unknown = protobuf.Writer.create();
  unknown.uint32(10).fork().uint32(10).string(envelope.apiVersion).uint32(18).string(envelope.kind).ldelim();
  unknown.uint32(18).bytes(type.encode(message).finish());
  return Buffer.concat([Buffer.from("k8s\0"), unknown.finish()]);
}
