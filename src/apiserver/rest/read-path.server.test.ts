// The read path serves lists from the store's in-memory copy of the latest state, splicing the
// stored JSON texts when no selector needs the objects decoded: the answer must be the one the
// decoding path gives, and both must show every write that was acknowledged before the list.

import assert from "node:assert/strict";
import { request as httpsRequest } from "node:https";
import { test } from "node:test";
import { raw, startTestServer } from "../../../test/harness/apiserver.ts";

test("a spliced list equals the decoded list, and shows every acknowledged write", async (t) => {
  const server = await startTestServer();
  t.after(() => server.dispose());
  const { handle } = server;
  const path = "/api/v1/namespaces/default/configmaps";
  // Concurrent creates land in shared batches; each 201 comes after its batch's fsync.
  const created = await Promise.all(
    Array.from({ length: 40 }, (_, i) =>
      raw(handle, {
        method: "POST",
        path,
        body: JSON.stringify({
          // Both key orders a client may send: the stored text starts with apiVersion/kind or not.
          ...(i % 2 === 0 ? { apiVersion: "v1", kind: "ConfigMap" } : {}),
          metadata: { name: `cm-${String(i).padStart(2, "0")}`, labels: { all: "yes" } },
          data: { i: String(i) },
          ...(i % 2 === 1 ? { kind: "ConfigMap", apiVersion: "v1" } : {}),
        }),
      }),
    ),
  );
  for (const response of created) assert.equal(response.status, 201, response.text);

  const spliced = (await raw(handle, { path })).json();
  const decoded = (await raw(handle, { path: `${path}?labelSelector=all%3Dyes` })).json();
  const items = spliced["items"] as { metadata: { name: string } }[];
  assert.equal(items.length, 40);
  assert.deepEqual(
    items.map((item) => item.metadata.name),
    Array.from({ length: 40 }, (_, i) => `cm-${String(i).padStart(2, "0")}`),
  );
  assert.deepEqual(spliced, decoded);
  for (const item of items as Record<string, unknown>[]) {
    assert.equal(item["apiVersion"], "v1");
    assert.equal(item["kind"], "ConfigMap");
  }

  // Paged: the same objects, in the same order, across pages.
  const names: string[] = [];
  let token = "";
  do {
    const page = (
      await raw(handle, { path: `${path}?limit=7${token ? `&continue=${encodeURIComponent(token)}` : ""}` })
    ).json();
    for (const item of page["items"] as { metadata: { name: string } }[]) names.push(item.metadata.name);
    token = ((page["metadata"] as { continue?: string }).continue ?? "").toString();
  } while (token !== "");
  assert.deepEqual(
    names,
    items.map((item) => item.metadata.name),
  );
});

test("answers large enough to be written in slices arrive whole, characters outside the BMP included", async (t) => {
  const server = await startTestServer();
  t.after(() => server.dispose());
  const { handle } = server;
  const path = "/api/v1/namespaces/default/configmaps";
  // Each value is 4-byte UTF-8 characters (two UTF-16 units each) after an odd or even ASCII
  // prefix, so slice boundaries fall in the middle of surrogate pairs one way or the other.
  const value = (i: number): string => "a".repeat(i) + "\u{1F600}".repeat(40_000) + "z";
  for (let i = 0; i < 6; i++) {
    const response = await raw(handle, {
      method: "POST",
      path,
      body: JSON.stringify({ metadata: { name: `big-${i}`, labels: { big: "yes" } }, data: { v: value(i) } }),
    });
    assert.equal(response.status, 201, response.text.slice(0, 300));
  }
  // Over the slicing threshold: the spliced list (pieces), the decoded one (one string), a GET.
  const spliced = await raw(handle, { path });
  const decoded = await raw(handle, { path: `${path}?labelSelector=big%3Dyes` });
  for (const response of [spliced, decoded]) {
    assert.equal(response.status, 200);
    const items = response.json()["items"] as { metadata: { name: string }; data: { v: string } }[];
    assert.deepEqual(
      items.map((item) => item.metadata.name),
      Array.from({ length: 6 }, (_, i) => `big-${i}`),
    );
    items.forEach((item, i) => assert.equal(item.data.v, value(i), `${item.metadata.name} arrived changed`));
  }
  const one = await raw(handle, { path: `${path}/big-3` });
  assert.equal(one.status, 200);
  assert.equal((one.json()["data"] as { v: string }).v, value(3));
  // Sliced answers go out chunked, as kube-apiserver sends a body larger than its write buffer
  // (no scan of every character for a Content-Length); small ones say their exact length.
  for (const response of [spliced, decoded]) {
    assert.equal(response.headers["transfer-encoding"], "chunked");
    assert.equal(response.headers["content-length"], undefined);
  }
  assert.equal(one.headers["transfer-encoding"], undefined);
  assert.equal(Number(one.headers["content-length"]), one.bytes.length);
});

test("a watch without selectors sends the stored texts: its events equal a selecting watch's, decoded", async (t) => {
  const server = await startTestServer();
  t.after(() => server.dispose());
  const { handle } = server;
  const path = "/api/v1/namespaces/default/configmaps";
  const listed = (await raw(handle, { path })).json() as { metadata: { resourceVersion: string } };
  const open = (query: string): { events: Record<string, unknown>[] } => {
    const stream = { events: [] as Record<string, unknown>[] };
    const req = httpsRequest(
      `${handle.url}${path}?watch=1&resourceVersion=${listed.metadata.resourceVersion}${query}`,
      { headers: { Authorization: `Bearer ${handle.adminToken}` }, ca: handle.caCertPem },
      (response) => {
        let pending = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => {
          pending += chunk;
          for (let newline = pending.indexOf("\n"); newline >= 0; newline = pending.indexOf("\n")) {
            stream.events.push(JSON.parse(pending.slice(0, newline)) as Record<string, unknown>);
            pending = pending.slice(newline + 1);
          }
        });
        response.on("error", () => {});
      },
    );
    req.on("error", () => {});
    t.after(() => req.destroy());
    req.end();
    return stream;
  };
  const plain = open("");
  const selecting = open("&labelSelector=w%3Dyes");
  const body = (v: string): string =>
    // Sent without apiVersion/kind, as kubectl may: the server adds them.
    JSON.stringify({
      metadata: { name: "w", labels: { w: "yes" } },
      data: { v, unicode: "\u00e9\u{1F600}" },
    });
  assert.equal((await raw(handle, { method: "POST", path, body: body("1") })).status, 201);
  assert.equal((await raw(handle, { method: "PUT", path: `${path}/w`, body: body("2") })).status, 200);
  assert.equal((await raw(handle, { method: "DELETE", path: `${path}/w` })).status, 200);
  const deadline = Date.now() + 20_000;
  while ((plain.events.length < 3 || selecting.events.length < 3) && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 10));
  assert.deepEqual(
    plain.events.map((event) => event["type"]),
    ["ADDED", "MODIFIED", "DELETED"],
  );
  assert.deepEqual(plain.events, selecting.events);
  const object = plain.events[1]!["object"] as Record<string, unknown>;
  assert.equal(object["apiVersion"], "v1");
  assert.equal(object["kind"], "ConfigMap");
  assert.deepEqual(object["data"], { v: "2", unicode: "\u00e9\u{1F600}" });
});
