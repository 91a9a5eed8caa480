// The PartialObjectMetadata conversion against the real server, with the Accept headers
// client-go's metadata client sends (protobuf first, then JSON, then the plain object): get,
// list and watch answer meta.k8s.io/v1 PartialObjectMetadata(List) in protobuf and JSON; the
// wrong shape is 406 with upstream's message; a Table is never protobuf (upstream has no
// protobuf Table), so a protobuf-only Table Accept is 406 and a fallback entry is used instead.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { request as httpsRequest } from "node:https";
import { raw, startTestServer, type RawRequest, type TestServer } from "../../../test/harness/apiserver.ts";
import { decodeProtobufObject, decodeProtobufWatchEvent } from "./protobuf.ts";

const PB = "application/vnd.kubernetes.protobuf";
const NS = "pom";
const POM = "as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
const POM_LIST = "as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
/** client-go metadata client's Accept headers (k8s.io/client-go/metadata). */
const METADATA_LIST_ACCEPT = `${PB};${POM_LIST},application/json;${POM_LIST},application/json`;
const METADATA_ACCEPT = `${PB};${POM},application/json;${POM},application/json`;
type Obj = Record<string, unknown> & { metadata?: Record<string, unknown>; items?: Obj[] };

let server: TestServer;
const cms = `/api/v1/namespaces/${NS}/configmaps`;

function call(request: RawRequest): ReturnType<typeof raw> {
  return raw(server.handle, request);
}

before(async () => {
  server = await startTestServer();
  const ns = await call({
    method: "POST",
    path: "/api/v1/namespaces",
    body: JSON.stringify({ metadata: { name: NS } }),
  });
  assert.equal(ns.status, 201, ns.text);
  for (const name of ["a", "b"]) {
    const created = await call({
      method: "POST",
      path: cms,
      body: JSON.stringify({
        metadata: { name, labels: { app: "pom" } },
        data: { secret: "not in metadata" },
      }),
    });
    assert.equal(created.status, 201, created.text);
  }
});
after(async () => {
  await server?.dispose();
});

test("get and list as PartialObjectMetadata(List), protobuf and JSON, carry the metadata only", async () => {
  const full = (await call({ path: `${cms}/a` })).json() as Obj;

  const pbGet = await call({ path: `${cms}/a`, headers: { Accept: METADATA_ACCEPT } });
  assert.equal(pbGet.status, 200, pbGet.text);
  assert.equal(pbGet.headers["content-type"], PB);
  assert.deepEqual(decodeProtobufObject(pbGet.bytes), {
    apiVersion: "meta.k8s.io/v1",
    kind: "PartialObjectMetadata",
    metadata: full.metadata,
  });
  const jsonGet = await call({ path: `${cms}/a`, headers: { Accept: `application/json;${POM}` } });
  assert.equal(jsonGet.headers["content-type"], "application/json");
  assert.deepEqual(jsonGet.json(), {
    apiVersion: "meta.k8s.io/v1",
    kind: "PartialObjectMetadata",
    metadata: full.metadata,
  });

  const pbList = await call({ path: cms, headers: { Accept: METADATA_LIST_ACCEPT } });
  assert.equal(pbList.status, 200, pbList.text);
  assert.equal(pbList.headers["content-type"], PB);
  const list = decodeProtobufObject(pbList.bytes) as Obj;
  assert.equal(list.kind, "PartialObjectMetadataList");
  assert.equal(list.apiVersion, "meta.k8s.io/v1");
  assert.ok(Number(list.metadata?.resourceVersion) > 0);
  // Protobuf items are bare PartialObjectMetadata messages (metadata only: the message has no
  // TypeMeta); the JSON items below carry their kind.
  assert.deepEqual(
    list.items?.map((item) => Object.keys(item).join()),
    ["metadata", "metadata"],
  );
  assert.deepEqual(
    list.items?.map((item) => item.metadata?.name),
    ["a", "b"],
  );
  const jsonList = await call({
    path: `${cms}?limit=1`,
    headers: { Accept: `application/json;${POM_LIST}` },
  });
  const page = jsonList.json() as Obj;
  assert.equal(page.kind, "PartialObjectMetadataList");
  assert.equal(page.items?.length, 1);
  assert.equal(typeof page.metadata?.continue, "string");
  assert.deepEqual(page.items?.[0], {
    kind: "PartialObjectMetadata",
    apiVersion: "meta.k8s.io/v1",
    metadata: full.metadata,
  });
});

test("the wrong shape is 406 with upstream's message; a protobuf Table is never offered", async () => {
  const listAsObject = await call({ path: cms, headers: { Accept: `application/json;${POM}` } });
  assert.equal(listAsObject.status, 406, listAsObject.text);
  assert.equal(
    listAsObject.json().message,
    "you requested PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)",
  );
  const objectAsList = await call({ path: `${cms}/a`, headers: { Accept: `application/json;${POM_LIST}` } });
  assert.equal(objectAsList.status, 406, objectAsList.text);
  assert.equal(
    objectAsList.json().message,
    "you requested PartialObjectMetadataList, but the requested object is not a list (*core.ConfigMap)",
  );

  const table = "as=Table;g=meta.k8s.io;v=v1";
  const pbTable = await call({ path: cms, headers: { Accept: `${PB};${table}` } });
  assert.equal(pbTable.status, 406, pbTable.text);
  assert.equal(
    pbTable.json().message,
    "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf",
  );
  // The next entry is used: here the plain protobuf list.
  const fallback = await call({ path: cms, headers: { Accept: `${PB};${table},${PB}` } });
  assert.equal(fallback.status, 200);
  assert.equal((decodeProtobufObject(fallback.bytes) as Obj).kind, "ConfigMapList");
  const jsonTable = await call({
    path: cms,
    headers: { Accept: `${PB};${table},application/json;${table}` },
  });
  assert.equal(jsonTable.json().kind, "Table");
  // An unknown conversion is skipped like any entry the server cannot produce.
  const unknown = await call({
    path: cms,
    headers: { Accept: "application/json;as=Scale;g=autoscaling;v=v1" },
  });
  assert.equal(unknown.status, 406);
});

test("a metadata watch (client-go's Accept) streams PartialObjectMetadata events and bookmarks", async (t) => {
  const listed = (await call({ path: cms })).json() as Obj;
  const from = String(listed.metadata?.resourceVersion);
  const events: { type: string; object: Obj }[] = [];
  let contentType = "";
  const req = httpsRequest(
    `${server.handle.url}${cms}?watch=1&resourceVersion=${from}&allowWatchBookmarks=true`,
    {
      headers: { Accept: METADATA_ACCEPT, Authorization: `Bearer ${server.handle.adminToken}` },
      ca: server.handle.caCertPem,
    },
    (response) => {
      contentType = String(response.headers["content-type"]);
      let pending = Buffer.alloc(0);
      response.on("data", (chunk: Buffer) => {
        pending = Buffer.concat([pending, chunk]);
        while (pending.length >= 4 && pending.length >= 4 + pending.readUInt32BE(0)) {
          const length = pending.readUInt32BE(0);
          events.push(decodeProtobufWatchEvent(pending.subarray(4, 4 + length)));
          pending = pending.subarray(4 + length);
        }
      });
      response.on("error", () => {});
    },
  );
  req.on("error", () => {});
  req.end();
  t.after(() => req.destroy());

  const created = await call({
    method: "POST",
    path: cms,
    body: JSON.stringify({ metadata: { name: "c", labels: { app: "pom" } }, data: { k: "v" } }),
  });
  assert.equal(created.status, 201, created.text);
  assert.equal((await call({ method: "DELETE", path: `${cms}/c` })).status, 200);
  const deadline = Date.now() + 10_000;
  while (events.filter((e) => e.type !== "BOOKMARK").length < 2) {
    if (Date.now() > deadline) throw new Error(`timed out: ${JSON.stringify(events)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.equal(contentType, `${PB};stream=watch`);
  const changes = events.filter((e) => e.type !== "BOOKMARK");
  assert.deepEqual(
    changes.map((e) => [
      e.type,
      e.object.kind,
      e.object.apiVersion,
      e.object.metadata?.name,
      "data" in e.object,
    ]),
    [
      ["ADDED", "PartialObjectMetadata", "meta.k8s.io/v1", "c", false],
      ["DELETED", "PartialObjectMetadata", "meta.k8s.io/v1", "c", false],
    ],
  );
  assert.deepEqual(changes[0]!.object.metadata?.labels, { app: "pom" });
  for (const bookmark of events.filter((e) => e.type === "BOOKMARK"))
    assert.equal(bookmark.object.kind, "PartialObjectMetadata");
});
