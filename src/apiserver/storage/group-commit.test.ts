import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import type { TestContext } from "node:test";
import { openSqliteStore, StoreError } from "./index.ts";
import type { KubeObject, SqliteStore, StoreEvent } from "./index.ts";

function fileStore(t: TestContext): { store: SqliteStore; path: string } {
  const dir = mkdtempSync(join(tmpdir(), "csikit-group-commit-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, "state.db");
  const store = openSqliteStore({ path, groupCommit: true });
  t.after(() => store.close());
  return { store, path };
}

function cm(name: string, data: Record<string, string> = {}): KubeObject {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default" }, data };
}

test("writes of one turn share one commit; each is durable once whenDurable resolves", async (t) => {
  const { store, path } = fileStore(t);
  const before = store.commitCount;
  const revisions: number[] = [];
  for (let i = 0; i < 50; i++)
    revisions.push(store.create(`/core/configmaps/default/c${i}`, cm(`c${i}`)).revision);
  // Read-check-write sees the open batch: the key is taken, the update conflicts on a stale revision.
  assert.throws(
    () => store.create("/core/configmaps/default/c0", cm("c0")),
    (e) => e instanceof StoreError && e.reason === "AlreadyExists",
  );
  assert.equal(store.get("/core/configmaps/default/c49")?.revision, revisions[49]);
  assert.equal(store.commitCount, before, "nothing is committed within the turn");
  await store.whenDurable(revisions[49]!);
  assert.equal(store.commitCount, before + 1, "one COMMIT (one fsync) for the 50 writes");

  // A second reader of the file sees all of them: they are on disk, not only in this process.
  store.close();
  const reopened = openSqliteStore({ path });
  t.after(() => reopened.close());
  assert.equal(reopened.currentRevision(), revisions[49]);
  assert.equal(reopened.list({ prefix: "/core/configmaps/default/" }).items.length, 50);
});

test("a failed write in a batch undoes only itself", async (t) => {
  const { store } = fileStore(t);
  const a = store.create("/k/a", cm("a"));
  assert.throws(
    () => store.update("/k/a", cm("a", { x: "1" }), a.revision + 5),
    (e) => e instanceof StoreError && e.reason === "Conflict",
  );
  const b = store.create("/k/b", cm("b"));
  assert.equal(b.revision, a.revision + 1, "a refused write uses no revision");
  await store.whenDurable(b.revision);
  assert.deepEqual(
    store.list({ prefix: "/k/" }).items.map((item) => item.key),
    ["/k/a", "/k/b"],
  );
});

test("watchers hear of a change only after its batch committed", async (t) => {
  const { store } = fileStore(t);
  const start = store.currentRevision();
  const watch = store.watch("/w/", start);
  t.after(() => watch.close());
  const iterator = watch[Symbol.asyncIterator]();
  const first = iterator.next();
  let delivered: IteratorResult<StoreEvent> | undefined;
  void first.then((result) => (delivered = result));
  const written = store.create("/w/x", cm("x"));
  // Let microtasks run without reaching the check phase, where the batch commits.
  await Promise.resolve();
  await Promise.resolve();
  assert.equal(delivered, undefined, "no event before COMMIT");
  assert.ok(watch.progressRevision() < written.revision, "bookmarks do not run ahead of durability");
  await store.whenDurable(written.revision);
  const event = await first;
  assert.equal(event.done, false);
  assert.equal(event.value.revision, written.revision);
});

test("close commits the open batch; whenDurable after close rejects", async (t) => {
  const { store, path } = fileStore(t);
  const written = store.create("/c/x", cm("x"));
  store.close();
  await assert.rejects(store.whenDurable(written.revision + 1), /closed/);
  const reopened = openSqliteStore({ path });
  t.after(() => reopened.close());
  assert.equal(reopened.get("/c/x")?.revision, written.revision);
});
