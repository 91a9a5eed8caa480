// Every protobuf body the API server writes — create, get, update and patch answers, lists,
// PartialObjectMetadata, Status errors, watch frames of every event type — read the way
// client-go reads them by a reader that shares nothing with csikit's codec
// (test/harness/client-go-protobuf.ts), and compared with the JSON the server gives for the same
// object. Request bodies go the other way: written by that independent writer, and csikit's own
// encoder's bodies read by the independent reader. csikit's own decoder cannot catch a framing
// both sides of csikit agree on (the enveloped watch events of issue 24 were one).

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { request as httpsRequest } from "node:https";
import type { IncomingMessage } from "node:http";
import { raw, startTestServer, type RawRequest, type TestServer } from "../../../test/harness/apiserver.ts";
import {
  differences,
  readObject,
  readWatchEvent,
  splitFrames,
  writeObject,
  type ReadEvent,
} from "../../../test/harness/client-go-protobuf.ts";
import { until } from "../../../test/harness/until.ts";
import { encodeProtobufObject } from "./protobuf.ts";
import { CORPUS, REVIEWS } from "../testdata/protobuf-corpus.ts";

const PB = "application/vnd.kubernetes.protobuf";
/** client-go's Accept for typed clients with protobuf on. */
const ACCEPT = `${PB},application/json`;
// The corpus names its namespace in places (an Event's involvedObject).
const NS = "pb";
type Json = Record<string, unknown> & { metadata?: Json; items?: Json[] };

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

async function getJson(path: string): Promise<Json> {
  const response = await call({ path });
  assert.equal(response.status, 200, `GET ${path}: ${response.text}`);
  return response.json();
}

/** A protobuf answer: its Content-Type, then what client-go reads from it. */
function readAnswer(response: Awaited<ReturnType<typeof raw>>, what: string): ReturnType<typeof readObject> {
  assert.equal(response.headers["content-type"], PB, `${what}: ${response.status} ${response.text}`);
  try {
    return readObject(response.bytes);
  } catch (error) {
    assert.fail(`${what}: client-go could not read the answer: ${(error as Error).message}`);
  }
}

function assertSame(read: ReturnType<typeof readObject>, json: Json, what: string, list = false): void {
  const ignore = list ? (path: string) => /^items\[\d+\]\.(apiVersion|kind)$/.test(path) : undefined;
  assert.deepEqual(differences(read, json, ignore), [], what);
}

describe("answers, as client-go reads them", () => {
  const entries = CORPUS.map((entry) => ({ ...entry, collection: entry.collection.replace("{ns}", NS) }));

  test("every built-in kind: create answer, get and list in protobuf are the JSON objects", async () => {
    for (const { collection, object } of entries) {
      const kind = String(object.kind);
      const created = await call({
        method: "POST",
        path: collection,
        body: JSON.stringify(object),
        headers: { Accept: ACCEPT },
      });
      assert.equal(created.status, 201, `${kind}: ${created.text}`);
      const path = `${collection}/${String((object.metadata as Json).name)}`;
      const json = await getJson(path);
      assertSame(readAnswer(created, `create ${kind}`), json, `create answer of ${kind}`);
      const got = await call({ path, headers: { Accept: ACCEPT } });
      assertSame(readAnswer(got, `GET ${path}`), json, `GET ${path}`);
      const listed = await call({ path: collection, headers: { Accept: ACCEPT } });
      const list = readAnswer(listed, `LIST ${collection}`);
      assert.equal(list.kind, `${kind}List`);
      assertSame(list, await getJson(collection), `LIST ${collection}`, true);
    }
  });

  test("reviews and TokenRequest answers", async () => {
    for (const { collection, object } of REVIEWS) {
      const answered = await call({
        method: "POST",
        path: collection,
        body: JSON.stringify(object),
        headers: { Accept: ACCEPT },
      });
      assert.equal(answered.status, 201, answered.text);
      const read = readAnswer(answered, String(object.kind));
      assert.equal(read.kind, object.kind);
      assert.ok(read.message.status, `${String(object.kind)} has a status`);
    }
    const token = await call({
      method: "POST",
      path: `/api/v1/namespaces/${NS}/serviceaccounts/corpus-sa/token`,
      body: writeObject("authentication.k8s.io/v1", "TokenRequest", {
        metadata: {},
        spec: { audiences: ["csi"], expirationSeconds: 600 },
      }),
      headers: { Accept: ACCEPT, "Content-Type": PB },
    });
    assert.equal(token.status, 201, token.text);
    const read = readAnswer(token, "TokenRequest");
    assert.match(String((read.message.status as Json).token), /^ey/);
  });

  test("update and patch answers; PartialObjectMetadata", async () => {
    const path = `/api/v1/namespaces/${NS}/configmaps/corpus-cm`;
    const current = await getJson(path);
    const metadata = current.metadata as Json;
    // The PUT body is written by the independent writer, as a Go client writes it.
    const updated = await call({
      method: "PUT",
      path,
      body: writeObject("v1", "ConfigMap", {
        metadata: {
          name: "corpus-cm",
          namespace: NS,
          resourceVersion: metadata.resourceVersion,
          labels: { written: "by-go" },
        },
        data: { a: "1", empty: "" },
        binaryData: { bin: Buffer.from([0, 1, 2]) },
      }),
      headers: { Accept: ACCEPT, "Content-Type": PB },
    });
    assert.equal(updated.status, 200, updated.text);
    const afterUpdate = await getJson(path);
    assertSame(readAnswer(updated, "PUT"), afterUpdate, "update answer");
    assert.deepEqual(afterUpdate.data, { a: "1", empty: "" });
    assert.deepEqual(afterUpdate.binaryData, { bin: "AAEC" });
    assert.deepEqual((afterUpdate.metadata as Json).labels, { written: "by-go" });
    const patched = await call({
      method: "PATCH",
      path,
      body: JSON.stringify({ data: { patched: "yes" } }),
      headers: { Accept: ACCEPT, "Content-Type": "application/merge-patch+json" },
    });
    assert.equal(patched.status, 200, patched.text);
    assertSame(readAnswer(patched, "PATCH"), await getJson(path), "patch answer");

    const POM = "as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
    const partial = await call({ path, headers: { Accept: `${PB};${POM},application/json;${POM}` } });
    const partialJson = await call({ path, headers: { Accept: `application/json;${POM}` } });
    const read = readAnswer(partial, "PartialObjectMetadata");
    assert.deepEqual([read.apiVersion, read.kind], ["meta.k8s.io/v1", "PartialObjectMetadata"]);
    assertSame(read, partialJson.json(), "PartialObjectMetadata");
    const POM_LIST = "as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
    const collection = `/api/v1/namespaces/${NS}/configmaps`;
    const partialList = await call({
      path: collection,
      headers: { Accept: `${PB};${POM_LIST},application/json;${POM_LIST}` },
    });
    const partialListJson = await call({
      path: collection,
      headers: { Accept: `application/json;${POM_LIST}` },
    });
    const list = readAnswer(partialList, "PartialObjectMetadataList");
    assert.equal(list.kind, "PartialObjectMetadataList");
    assertSame(list, partialListJson.json(), "PartialObjectMetadataList", true);
  });

  test("request bodies written as a Go client writes them are stored as meant", async () => {
    const claims = `/api/v1/namespaces/${NS}/persistentvolumeclaims`;
    const claim = {
      metadata: { name: "go-claim", annotations: { "volume.kubernetes.io/selected-node": "n1" } },
      spec: {
        accessModes: ["ReadWriteOnce"],
        resources: { requests: { storage: { string: "1Gi" } } },
        storageClassName: "",
        volumeMode: "Filesystem",
      },
      status: {},
    };
    const created = await call({
      method: "POST",
      path: claims,
      body: writeObject("v1", "PersistentVolumeClaim", claim),
      headers: { Accept: ACCEPT, "Content-Type": PB },
    });
    assert.equal(created.status, 201, created.text);
    const stored = await getJson(`${claims}/go-claim`);
    assert.deepEqual(stored.spec, {
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage: "1Gi" } },
      storageClassName: "",
      volumeMode: "Filesystem",
    });
    assertSame(readAnswer(created, "create claim"), stored, "create answer of a Go-written claim");
    const classes = "/apis/storage.k8s.io/v1/storageclasses";
    const sc = await call({
      method: "POST",
      path: classes,
      body: writeObject("storage.k8s.io/v1", "StorageClass", {
        metadata: { name: "go-class" },
        provisioner: "hostpath.csi.k8s.io",
        parameters: { "csi.storage.k8s.io/fstype": "ext4" },
        reclaimPolicy: "Delete",
        allowVolumeExpansion: false,
        volumeBindingMode: "WaitForFirstConsumer",
      }),
      headers: { Accept: ACCEPT, "Content-Type": PB },
    });
    assert.equal(sc.status, 201, sc.text);
    const storedSc = await getJson(`${classes}/go-class`);
    assert.equal(storedSc.allowVolumeExpansion, false, "a pointer bool set to false survives");
    assert.deepEqual(storedSc.parameters, { "csi.storage.k8s.io/fstype": "ext4" });
    assertSame(readAnswer(sc, "create class"), storedSc, "create answer of a Go-written class");
  });

  test("csikit's own request encoder writes bodies client-go's decoder accepts", () => {
    for (const { object } of [...CORPUS, ...REVIEWS]) {
      const read = readObject(encodeProtobufObject(object));
      assert.deepEqual(differences(read, object), [], `${String(object.kind)}`);
    }
  });

  test("errors are protobuf Status objects with the JSON Status's fields", async () => {
    const cms = `/api/v1/namespaces/${NS}/configmaps`;
    const existing = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "corpus-cm" } };
    const cases: [string, RawRequest, number, string][] = [
      ["not found", { path: `${cms}/missing` }, 404, "NotFound"],
      ["already exists", { method: "POST", path: cms, body: JSON.stringify(existing) }, 409, "AlreadyExists"],
      [
        "conflict",
        {
          method: "PUT",
          path: `${cms}/corpus-cm`,
          body: JSON.stringify({ ...existing, metadata: { name: "corpus-cm", resourceVersion: "1" } }),
        },
        409,
        "Conflict",
      ],
      [
        "invalid",
        { method: "POST", path: cms, body: JSON.stringify({ ...existing, metadata: { name: "Bad_Name" } }) },
        422,
        "Invalid",
      ],
      [
        "malformed protobuf body",
        {
          method: "POST",
          path: cms,
          body: Buffer.from("k8s\0\x0a\x05", "latin1"),
          headers: { "Content-Type": PB },
        },
        400,
        "BadRequest",
      ],
    ];
    for (const [name, request, code, reason] of cases) {
      const json = await call(request);
      const pb = await call({ ...request, headers: { ...request.headers, Accept: ACCEPT } });
      assert.equal(pb.status, code, `${name}: ${pb.text}`);
      const read = readAnswer(pb, name);
      assert.deepEqual([read.apiVersion, read.kind], ["v1", "Status"], name);
      assert.equal(read.message.code, code, name);
      assert.equal(read.message.reason, reason, name);
      assertSame(read, json.json(), name);
    }
  });
});

interface Stream {
  events: ReadEvent[];
  json: Json[];
  errors: string[];
  response: IncomingMessage;
  close(): void;
}

/** A watch request; protobuf frames are read with the independent framer and reader. */
function openWatch(path: string, accept: string): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      `${server.handle.url}${path}`,
      {
        headers: { Accept: accept, Authorization: `Bearer ${server.handle.adminToken}` },
        ca: server.handle.caCertPem,
      },
      (response) => {
        const stream: Stream = { events: [], json: [], errors: [], response, close: () => req.destroy() };
        let pending: Buffer = Buffer.alloc(0);
        const protobufStream = String(response.headers["content-type"]).startsWith(PB);
        response.on("data", (chunk: Buffer) => {
          pending = Buffer.concat([pending, chunk]);
          if (protobufStream) {
            const { frames, rest } = splitFrames(pending);
            pending = rest;
            for (const frame of frames) {
              try {
                stream.events.push(readWatchEvent(frame));
              } catch (error) {
                stream.errors.push((error as Error).message);
              }
            }
          } else {
            for (let newline = pending.indexOf(0x0a); newline >= 0; newline = pending.indexOf(0x0a)) {
              stream.json.push(JSON.parse(pending.subarray(0, newline).toString()) as Json);
              pending = pending.subarray(newline + 1);
            }
          }
        });
        response.on("error", () => {});
        resolve(stream);
      },
    );
    req.on("error", (error) => {
      if (!req.destroyed) reject(error);
    });
    req.end();
  });
}

describe("watch frames, as client-go's framer and decoder read them", () => {
  test("ADDED, MODIFIED, DELETED and BOOKMARK frames carry the JSON watch's objects", async (t) => {
    const collection = `/api/v1/namespaces/${NS}/configmaps`;
    const query =
      "?watch=1&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan";
    const pbWatch = await openWatch(collection + query, ACCEPT);
    t.after(() => pbWatch.close());
    const jsonWatch = await openWatch(collection + query, "application/json");
    t.after(() => jsonWatch.close());
    assert.equal(pbWatch.response.headers["content-type"], `${PB};stream=watch`);

    const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "watched" }, data: { a: "1" } };
    assert.equal((await call({ method: "POST", path: collection, body: JSON.stringify(cm) })).status, 201);
    const patched = await call({
      method: "PATCH",
      path: `${collection}/watched`,
      body: JSON.stringify({ data: { a: "2" } }),
      headers: { "Content-Type": "application/merge-patch+json" },
    });
    assert.equal(patched.status, 200, patched.text);
    assert.equal((await call({ method: "DELETE", path: `${collection}/watched` })).status, 200);

    const types = (events: readonly Json[] | readonly ReadEvent[]): string =>
      events.map((e) => String(e.type)).join(",");
    await until(
      () =>
        (pbWatch.errors.length > 0 || /MODIFIED,DELETED$/.test(types(pbWatch.events))) &&
        /DELETED$/.test(types(jsonWatch.json)),
      "the delete on both watches",
      { timeoutMs: 10_000 },
    );
    assert.deepEqual(pbWatch.errors, [], "every frame readable by client-go");
    assert.equal(types(pbWatch.events), types(jsonWatch.json));
    assert.match(types(pbWatch.events), /BOOKMARK.*ADDED,MODIFIED,DELETED$/);
    pbWatch.events.forEach((event, i) => {
      const json = jsonWatch.json[i]!;
      assertSame(event.object, json.object as Json, `event ${i} (${event.type})`);
    });
  });

  test("a watch from a compacted resourceVersion: one ERROR frame holding a 410 Status", async (t) => {
    const collection = `/api/v1/namespaces/${NS}/secrets`;
    const before = String((await getJson(collection)).metadata?.resourceVersion);
    for (let i = 0; i < 3; i++) {
      const secret = { apiVersion: "v1", kind: "Secret", metadata: { name: `gone-${i}` } };
      assert.equal(
        (await call({ method: "POST", path: collection, body: JSON.stringify(secret) })).status,
        201,
      );
    }
    server.handle.compact(1);
    const watch = await openWatch(`${collection}?watch=1&resourceVersion=${before}`, ACCEPT);
    t.after(() => watch.close());
    await until(() => watch.events.length > 0 || watch.errors.length > 0, "the ERROR frame", {
      timeoutMs: 10_000,
    });
    assert.deepEqual(watch.errors, []);
    const [event] = watch.events;
    assert.equal(event!.type, "ERROR");
    assert.deepEqual([event!.object.apiVersion, event!.object.kind], ["v1", "Status"]);
    assert.equal(event!.object.message.code, 410);
    assert.equal(event!.object.message.reason, "Expired");
  });
});
