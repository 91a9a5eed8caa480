// Watch fan-out through the coalesced writer (watch-flush.ts) and the synchronous follow path:
// many watchers — JSON and protobuf, with and without a label selector, with frequent
// bookmarks — while concurrent writers create, update and delete. Every watcher must see exactly
// the changes that concern it, each once, in resourceVersion order, and no bookmark may carry a
// revision ahead of an event that follows it (a bookmark written past queued events would).

import assert from "node:assert/strict";
import { request as httpsRequest } from "node:https";
import { test } from "node:test";
import { raw, startTestServer } from "../../../test/harness/apiserver.ts";
import { decodeProtobufWatchEvent, PROTOBUF_MEDIA_TYPE } from "../encoding/protobuf.ts";

interface Seen {
  type: string;
  name: string;
  rv: number;
}

test(
  "many JSON and protobuf watchers, some filtered, see every change once and in order",
  { timeout: 120_000 },
  async (t) => {
    const server = await startTestServer({ bookmarkIntervalMs: 20 });
    t.after(() => server.dispose());
    const { handle } = server;
    const ns = "fanout";
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    assert.equal(
      (
        await raw(handle, {
          method: "POST",
          path: "/api/v1/namespaces",
          body: JSON.stringify({ metadata: { name: ns } }),
        })
      ).status,
      201,
    );
    const listed = (await raw(handle, { path })).json() as { metadata: { resourceVersion: string } };

    const WATCHERS = 40;
    const watchers: {
      protobuf: boolean;
      filtered: boolean;
      seen: Seen[];
      bookmarks: number[];
      ended: boolean;
    }[] = [];
    for (let w = 0; w < WATCHERS; w++) {
      const watcher = {
        protobuf: w % 2 === 1,
        filtered: w % 4 >= 2,
        seen: [] as Seen[],
        bookmarks: [] as number[],
        ended: false,
      };
      watchers.push(watcher);
      const query =
        `?watch=1&allowWatchBookmarks=true&resourceVersion=${listed.metadata.resourceVersion}` +
        (watcher.filtered ? "&labelSelector=parity%3Deven" : "");
      await new Promise<void>((resolve, reject) => {
        const req = httpsRequest(
          `${handle.url}${path}${query}`,
          {
            headers: {
              Accept: watcher.protobuf ? PROTOBUF_MEDIA_TYPE : "application/json",
              Authorization: `Bearer ${handle.adminToken}`,
            },
            ca: handle.caCertPem,
          },
          (response) => {
            let pending = Buffer.alloc(0);
            const onEvent = (event: {
              type: string;
              object: { metadata?: { name?: string; resourceVersion?: string } };
            }): void => {
              const rv = Number(event.object.metadata?.resourceVersion);
              if (event.type === "BOOKMARK") watcher.bookmarks.push(rv);
              else watcher.seen.push({ type: event.type, name: String(event.object.metadata?.name), rv });
              // A bookmark promises every change up to its revision was sent.
              const lastBookmark = watcher.bookmarks.at(-1) ?? 0;
              if (event.type !== "BOOKMARK")
                assert.ok(rv > lastBookmark, `event ${rv} after bookmark ${lastBookmark}`);
            };
            response.on("data", (chunk: Buffer) => {
              pending = Buffer.concat([pending, chunk]);
              for (;;) {
                if (watcher.protobuf) {
                  if (pending.length < 4 || pending.length < 4 + pending.readUInt32BE(0)) break;
                  const length = pending.readUInt32BE(0);
                  onEvent(decodeProtobufWatchEvent(pending.subarray(4, 4 + length)));
                  pending = pending.subarray(4 + length);
                } else {
                  const newline = pending.indexOf(0x0a);
                  if (newline < 0) break;
                  onEvent(
                    JSON.parse(pending.subarray(0, newline).toString()) as Parameters<typeof onEvent>[0],
                  );
                  pending = pending.subarray(newline + 1);
                }
              }
            });
            response.on("end", () => (watcher.ended = true));
            response.on("error", () => (watcher.ended = true));
            resolve();
          },
        );
        req.on("error", reject);
        t.after(() => req.destroy());
        req.end();
      });
    }

    // Writers: 8 in flight; objects 0..59 created, updated twice, every third deleted.
    const OBJECTS = 60;
    const written: Seen[] = [];
    const parity = (i: number): string => (i % 2 === 0 ? "even" : "odd");
    const ops: (() => Promise<void>)[] = [];
    const body = (i: number, v: number): string =>
      JSON.stringify({
        metadata: { name: `cm-${i}`, labels: { parity: parity(i) } },
        data: { v: String(v) },
      });
    for (let i = 0; i < OBJECTS; i++) {
      ops.push(async () => {
        const created = await raw(handle, { method: "POST", path, body: body(i, 0) });
        assert.equal(created.status, 201, created.text);
        written.push({
          type: "ADDED",
          name: `cm-${i}`,
          rv: Number((created.json().metadata as { resourceVersion: string }).resourceVersion),
        });
        for (let v = 1; v <= 2; v++) {
          const updated = await raw(handle, { method: "PUT", path: `${path}/cm-${i}`, body: body(i, v) });
          assert.equal(updated.status, 200, updated.text);
          written.push({
            type: "MODIFIED",
            name: `cm-${i}`,
            rv: Number((updated.json().metadata as { resourceVersion: string }).resourceVersion),
          });
        }
        if (i % 3 === 0) {
          const deleted = await raw(handle, { method: "DELETE", path: `${path}/cm-${i}` });
          assert.equal(deleted.status, 200, deleted.text);
          // A DELETE answers the object as it was: its revision is the watch's to tell.
          written.push({ type: "DELETED", name: `cm-${i}`, rv: Number.NaN });
        }
      });
    }
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < ops.length) await ops[next++]!();
      }),
    );
    const key = (e: Seen): string => `${e.type} ${e.name}`;
    const expectedFor = (filtered: boolean): string[] =>
      written
        .filter((w) => !filtered || Number(w.name.slice(3)) % 2 === 0)
        .map(key)
        .sort();

    const deadline = Date.now() + 30_000;
    while (watchers.some((w) => w.seen.length < expectedFor(w.filtered).length && !w.ended)) {
      if (Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const acked = new Map(written.filter((w) => w.type !== "DELETED").map((w) => [`${key(w)} ${w.rv}`, w]));
    for (const [index, watcher] of watchers.entries()) {
      const label = `watcher ${index} (${watcher.protobuf ? "protobuf" : "JSON"}${watcher.filtered ? ", filtered" : ""})`;
      // Exactly the changes that concern it, each once ...
      assert.deepEqual(watcher.seen.map(key).sort(), expectedFor(watcher.filtered), label);
      // ... in resourceVersion order, with the revisions the writes were acknowledged with.
      for (let i = 1; i < watcher.seen.length; i++)
        assert.ok(watcher.seen[i]!.rv > watcher.seen[i - 1]!.rv, `${label}: out of order at ${i}`);
      for (const event of watcher.seen)
        if (event.type !== "DELETED")
          assert.ok(acked.has(`${key(event)} ${event.rv}`), `${label}: ${key(event)} ${event.rv}`);
    }
    // Watchers of the same filter saw the very same sequence.
    for (const filtered of [false, true]) {
      const group = watchers.filter((w) => w.filtered === filtered);
      for (const watcher of group) assert.deepEqual(watcher.seen, group[0]!.seen);
    }
    assert.ok(
      watchers.some((w) => w.bookmarks.length > 0),
      "bookmarks were interleaved with the events",
    );
  },
);
