// The group-commit store's worker thread: ownership of the file, reads at past revisions through
// the main thread's read-only connection, close with a batch in flight, and a held COMMIT that
// leaves the main thread free.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import type { TestContext } from "node:test";
import { CsikitError } from "../../base/index.ts";
import { CommitFaults, openSqliteStore } from "./index.ts";
import type { KubeObject } from "./index.ts";
import { until } from "../../../test/harness/until.ts";

function tempPath(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), "csikit-commit-worker-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, "state.db");
}

function cm(name: string, value = "v"): KubeObject {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name }, data: { value } };
}

test("a second store on the file is refused while a group-commit store owns it, in either mode", (t) => {
  const path = tempPath(t);
  const first = openSqliteStore({ path, groupCommit: true });
  t.after(() => first.close());
  for (const groupCommit of [true, false]) {
    assert.throws(
      () => openSqliteStore({ path, groupCommit, lockTimeoutMs: 50 }),
      (error: unknown) =>
        error instanceof CsikitError &&
        error.code === "CSIKIT_ERR_STORE_OPEN" &&
        error.message.includes(path) &&
        /in use by another process/.test(error.message),
    );
  }
  assert.throws(() => openSqliteStore({ path: ":memory:", groupCommit: true }), /needs a database file/);
});

test("lists at a past revision and watch replays read the log while writes go on", async (t) => {
  const path = tempPath(t);
  const store = openSqliteStore({ path, groupCommit: true });
  t.after(() => store.close());
  for (let i = 0; i < 20; i++) store.create(`/k/${String(i).padStart(2, "0")}`, cm(`c${i}`));
  const at = store.currentRevision();
  await store.whenDurable(at);
  for (let i = 0; i < 10; i++) store.update(`/k/${String(i).padStart(2, "0")}`, cm(`c${i}`, "changed"));
  store.delete("/k/19");
  await store.whenDurable(store.currentRevision());
  const page = store.list({ prefix: "/k/", revision: at, limit: 5, startAfter: "/k/04" });
  assert.deepEqual(
    page.items.map((item) => [item.key, item.object["data"]]),
    ["/k/05", "/k/06", "/k/07", "/k/08", "/k/09"].map((key) => [key, { value: "v" }]),
  );
  assert.equal(page.remaining, 10, "/k/10 … /k/19 as of that revision");

  const watch = store.watch("/k/", at);
  t.after(() => watch.close());
  const types: string[] = [];
  for await (const event of watch) {
    types.push(event.type);
    if (event.revision === store.currentRevision()) break;
  }
  assert.deepEqual(types, [...Array<string>(10).fill("MODIFIED"), "DELETED"]);
});

test("close commits the batch in flight and the writes queued behind it", async (t) => {
  const path = tempPath(t);
  const faults = new CommitFaults();
  const store = openSqliteStore({ path, groupCommit: true, commitFaults: faults });
  let closed = false;
  t.after(() => {
    faults.release();
    if (!closed) store.close();
  });
  faults.hold();
  const first = store.create("/c/a", cm("a"));
  const durable = store.whenDurable(first.revision);
  await until(() => faults.heldCommits >= 1, "the first batch is in the worker");
  // The main thread is free while the worker holds the COMMIT: timers run, writes apply.
  const second = store.create("/c/b", cm("b"));
  assert.equal(store.get("/c/b")?.revision, second.revision);
  faults.release();
  store.close();
  closed = true;
  await durable;
  const reopened = openSqliteStore({ path });
  t.after(() => reopened.close());
  assert.equal(reopened.get("/c/a")?.revision, first.revision);
  assert.equal(reopened.get("/c/b")?.revision, second.revision);
});

test("a failed COMMIT rejects its writes and the later ones; memory and revision go back", async (t) => {
  const path = tempPath(t);
  const faults = new CommitFaults();
  const store = openSqliteStore({ path, groupCommit: true, commitFaults: faults });
  t.after(() => {
    faults.release();
    store.close();
  });
  const kept = store.create("/f/kept", cm("kept"));
  await store.whenDurable(kept.revision);
  const events = store.watch("/f/", kept.revision);
  t.after(() => events.close());

  faults.hold();
  const a = store.create("/f/a", cm("a"));
  const failedA = store.whenDurable(a.revision);
  await until(() => faults.heldCommits >= 1, "the batch is in the worker");
  const updated = store.update("/f/kept", cm("kept", "changed"));
  const failedB = store.whenDurable(updated.revision);
  faults.failNext(1);
  faults.release();
  await assert.rejects(failedA, /commit failed: injected fault/);
  await assert.rejects(failedB, /commit failed/);
  assert.equal(store.currentRevision(), kept.revision);
  assert.equal(store.get("/f/a"), undefined);
  assert.deepEqual(store.get("/f/kept")?.object["data"], { value: "v" });

  // The next write reuses the revision nobody was told about, and it is the first event seen.
  const next = store.create("/f/next", cm("next"));
  assert.equal(next.revision, kept.revision + 1);
  await store.whenDurable(next.revision);
  const iterator = events[Symbol.asyncIterator]();
  const event = await iterator.next();
  assert.equal(event.done, false);
  assert.equal(event.value.key, "/f/next");
});

test("remaining at a past revision matches the full list, with writes not yet durable", async (t) => {
  const path = tempPath(t);
  const store = openSqliteStore({ path, groupCommit: true });
  t.after(() => store.close());
  // A fixed pseudo-random mix of creates, updates and deletes over 40 keys.
  let seed = 7;
  const next = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return (seed >>> 8) % n;
  };
  const revisions: number[] = [];
  for (let i = 0; i < 400; i++) {
    const key = `/r/${String(next(40)).padStart(2, "0")}`;
    if (!store.get(key)) store.create(key, cm(key));
    else if (next(5) === 0) store.delete(key);
    else store.update(key, cm(key, String(i)));
    revisions.push(store.currentRevision());
    // Some writes become durable, the newest ones stay in the batch.
    if (i % 50 === 0) await store.whenDurable(store.currentRevision());
  }
  const durable = revisions[350]!;
  await store.whenDurable(durable);
  for (const revision of [revisions[100]!, revisions[250]!, durable]) {
    const all = store.list({ prefix: "/r/", revision }).items.map((item) => item.key);
    assert.ok(all.length >= 10, `${all.length} keys live at ${revision}`);
    for (const startIndex of [0, 5, all.length - 4]) {
      const startAfter = all[startIndex]!;
      const page = store.list({ prefix: "/r/", revision, limit: 3, startAfter });
      const expected = all.length - (startIndex + 1) - page.items.length;
      assert.deepEqual(
        page.items.map((item) => item.key),
        all.slice(startIndex + 1, startIndex + 4),
      );
      assert.equal(page.remaining ?? 0, expected, `revision ${revision}, after ${startAfter}`);
    }
  }
});
