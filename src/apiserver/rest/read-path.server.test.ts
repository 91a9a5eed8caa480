// The read path serves lists from the store's in-memory copy of the latest state, splicing the
// stored JSON texts when no selector needs the objects decoded: the answer must be the one the
// decoding path gives, and both must show every write that was acknowledged before the list.

import assert from "node:assert/strict";
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
