import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { test } from "node:test";
import type { TestContext } from "node:test";
import { CsikitError, FakeClock, memoryLogger } from "../../base/index.ts";
import { openSqliteStore, StoreError } from "./index.ts";
import type { KubeObject, SqliteStore } from "./index.ts";

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), "csikit-store-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function memoryStore(t: TestContext, options: { compactionWindow?: number } = {}): SqliteStore {
  const store = openSqliteStore({ path: ":memory:", ...options });
  t.after(() => store.close());
  return store;
}

function pod(name: string, extra: Record<string, unknown> = {}): KubeObject {
  return { apiVersion: "v1", kind: "Pod", metadata: { name, namespace: "default" }, ...extra };
}

function rv(object: KubeObject): unknown {
  return object.metadata?.["resourceVersion"];
}

function reason(reason: StoreError["reason"]): (error: unknown) => boolean {
  return (error) => error instanceof StoreError && error.reason === reason;
}

test("create, get, update, delete stamp resourceVersion with the revision", (t) => {
  const store = memoryStore(t);
  assert.equal(store.currentRevision(), 0);
  const created = store.create("/core/pods/default/a", pod("a", { spec: { nodeName: "n1" } }));
  assert.equal(created.revision, 1);
  assert.equal(created.createRevision, 1);
  assert.equal(rv(created.object), "1");

  const got = store.get("/core/pods/default/a");
  assert.ok(got);
  assert.deepEqual(got.object, created.object);
  assert.equal(got.revision, 1);

  const updated = store.update("/core/pods/default/a", { ...got.object, spec: { nodeName: "n2" } }, 1);
  assert.equal(updated.revision, 2);
  assert.equal(updated.createRevision, 1);
  assert.equal(rv(updated.object), "2");
  assert.deepEqual(store.get("/core/pods/default/a")?.object["spec"], { nodeName: "n2" });

  const deleted = store.delete("/core/pods/default/a", 2);
  assert.equal(deleted.revision, 3);
  assert.equal(rv(deleted.object), "3");
  assert.deepEqual(deleted.object["spec"], { nodeName: "n2" });
  assert.equal(store.get("/core/pods/default/a"), undefined);
  assert.equal(store.currentRevision(), 3);
});

test("returned objects are copies: changing them or the input changes nothing stored", (t) => {
  const store = memoryStore(t);
  const input = pod("a", { spec: { x: 1 } });
  const created = store.create("/k/a", input);
  (input["spec"] as { x: number }).x = 99;
  (created.object["spec"] as { x: number }).x = 98;
  assert.deepEqual(store.get("/k/a")?.object["spec"], { x: 1 });
  assert.equal(input.metadata?.["resourceVersion"], undefined, "the caller's object is not stamped");
});

test("conflicts: AlreadyExists, Conflict on a stale revision, NotFound; failures use no revision", (t) => {
  const store = memoryStore(t);
  store.create("/k/a", pod("a"));
  assert.throws(() => store.create("/k/a", pod("a")), reason("AlreadyExists"));
  assert.throws(() => store.update("/k/a", pod("a"), 7), reason("Conflict"));
  assert.throws(() => store.delete("/k/a", 7), reason("Conflict"));
  assert.throws(() => store.update("/k/missing", pod("m")), reason("NotFound"));
  assert.throws(() => store.delete("/k/missing"), reason("NotFound"));
  assert.equal(store.currentRevision(), 1);
  // Without expectedRevision the write is unconditional.
  assert.equal(store.update("/k/a", pod("a")).revision, 2);
  // A deleted key can be created again; its createRevision starts over.
  store.delete("/k/a");
  const again = store.create("/k/a", pod("a"));
  assert.equal(again.revision, 4);
  assert.equal(again.createRevision, 4);
});

test("list: prefix boundaries, key order, pagination with remaining, at a past revision", (t) => {
  const store = memoryStore(t);
  store.create("/core/pods/default/b", pod("b"));
  store.create("/core/pods/default/a", pod("a"));
  store.create("/core/pods/defaultx/z", pod("z"));
  store.create("/core/pods/kube-system/c", pod("c"));
  store.create("/core/podsx/default/q", pod("q"));
  const afterFive = store.currentRevision();

  const all = store.list({ prefix: "/core/pods/" });
  assert.deepEqual(
    all.items.map((i) => i.key),
    ["/core/pods/default/a", "/core/pods/default/b", "/core/pods/defaultx/z", "/core/pods/kube-system/c"],
  );
  assert.equal(all.revision, 5);
  assert.equal(all.continueKey, undefined);
  assert.equal(all.remaining, undefined);
  assert.deepEqual(
    store.list({ prefix: "/core/pods/default/" }).items.map((i) => i.key),
    ["/core/pods/default/a", "/core/pods/default/b"],
  );
  assert.equal(store.list({ prefix: "" }).items.length, 5);

  const page1 = store.list({ prefix: "/core/pods/", limit: 2 });
  assert.deepEqual(
    page1.items.map((i) => i.key),
    ["/core/pods/default/a", "/core/pods/default/b"],
  );
  assert.equal(page1.continueKey, "/core/pods/default/b");
  assert.equal(page1.remaining, 2);

  // Changes after the first page must not show in the next pages read at page1.revision.
  store.delete("/core/pods/defaultx/z");
  store.create("/core/pods/default/c", pod("c"));
  store.update("/core/pods/kube-system/c", pod("c", { spec: { changed: true } }));

  const page2 = store.list({
    prefix: "/core/pods/",
    limit: 1,
    startAfter: page1.continueKey,
    revision: page1.revision,
  });
  assert.equal(page2.revision, afterFive);
  assert.deepEqual(
    page2.items.map((i) => i.key),
    ["/core/pods/defaultx/z"],
  );
  assert.equal(page2.remaining, 1);
  const page3 = store.list({
    prefix: "/core/pods/",
    limit: 1,
    startAfter: page2.continueKey!,
    revision: page1.revision,
  });
  assert.deepEqual(
    page3.items.map((i) => [i.key, i.revision, i.object["spec"]]),
    [["/core/pods/kube-system/c", 4, undefined]],
  );
  assert.equal(page3.continueKey, undefined);
  assert.equal(page3.remaining, undefined);

  // Latest state sees the changes; a limit equal to the rest reports no continuation.
  const latest = store.list({ prefix: "/core/pods/", limit: 4 });
  assert.deepEqual(
    latest.items.map((i) => i.key),
    ["/core/pods/default/a", "/core/pods/default/b", "/core/pods/default/c", "/core/pods/kube-system/c"],
  );
  assert.equal(latest.continueKey, undefined);
  // A revision at or above the current one reads the latest state.
  assert.equal(store.list({ prefix: "/core/pods/", revision: 1000 }).revision, store.currentRevision());
});

test("compaction keeps exact reads at every revision >= the boundary and answers Gone below it", (t) => {
  const store = memoryStore(t);
  // A deterministic mix of creates, updates, deletes and re-creates over a few keys, with the
  // expected state recorded after every revision.
  const model = new Map<string, number>();
  const snapshots: Map<string, number>[] = [new Map()];
  let seed = 7;
  const random = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  for (let i = 0; i < 300; i++) {
    const key = `/k/${random(12)}`;
    const revision = model.has(key)
      ? random(3) === 0
        ? store.delete(key).revision
        : store.update(key, pod(key)).revision
      : store.create(key, pod(key)).revision;
    if (store.get(key)) model.set(key, revision);
    else model.delete(key);
    snapshots[revision] = new Map(model);
  }
  const listAt = (revision: number): [string, number][] =>
    store.list({ prefix: "/k/", revision }).items.map((i) => [i.key, i.revision]);
  const expectedAt = (revision: number): [string, number][] =>
    [...snapshots[revision]!.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

  const result = store.compact(100);
  assert.equal(result.compactedRevision, 200);
  assert.equal(store.compactedRevision(), 200);
  assert.ok(result.removedRows > 0);
  for (let revision = 200; revision <= 300; revision++)
    assert.deepEqual(listAt(revision), expectedAt(revision));
  assert.throws(() => store.list({ prefix: "/k/", revision: 199 }), reason("Gone"));
  // Compacting again to a lower boundary is a no-op.
  assert.equal(store.compact(150).removedRows, 0);
  assert.equal(store.compactedRevision(), 200);
  // Compacting everything away still serves the latest state, and revisions continue.
  store.compact(0);
  assert.equal(store.compactedRevision(), 300);
  assert.deepEqual(listAt(300), expectedAt(300));
  assert.equal(store.create("/k/new", pod("new")).revision, 301);
});

test("revisions strictly increase across reopen, even when compaction removed the newest row", (t) => {
  const path = join(tempDir(t), "state.db");
  let store = openSqliteStore({ path });
  store.create("/k/a", pod("a"));
  store.create("/k/b", pod("b"));
  store.delete("/k/b"); // revision 3: a tombstone, the newest row
  store.compact(0); // removes the tombstone and the row it superseded
  assert.equal(store.compactedRevision(), 3);
  store.close();

  store = openSqliteStore({ path });
  t.after(() => store.close());
  assert.equal(store.currentRevision(), 3);
  assert.equal(store.compactedRevision(), 3);
  assert.equal(store.get("/k/a")?.revision, 1);
  assert.equal(store.get("/k/b"), undefined);
  const next = store.create("/k/b", pod("b"));
  assert.equal(next.revision, 4);
});

test("a second store on the same file is refused while the first is open", (t) => {
  const path = join(tempDir(t), "state.db");
  const first = openSqliteStore({ path });
  t.after(() => first.close());
  first.create("/k/a", pod("a"));
  assert.throws(
    () => openSqliteStore({ path, lockTimeoutMs: 50 }),
    (error: unknown) =>
      error instanceof CsikitError && error.code === "CSIKIT_ERR_STORE_OPEN" && error.message.includes(path),
  );
});

test("a closed store refuses calls; close is idempotent", (t) => {
  const store = openSqliteStore({ path: ":memory:" });
  store.close();
  store.close();
  assert.throws(
    () => store.get("/k/a"),
    (error: unknown) => error instanceof CsikitError,
  );
  t.diagnostic("closed store threw as expected");
});

test("periodic compaction runs every interval until its signal aborts", async (t) => {
  const clock = new FakeClock();
  const { logger } = memoryLogger();
  const store = openSqliteStore({ path: ":memory:", compactionWindow: 2, clock, logger });
  t.after(() => store.close());
  for (let i = 0; i < 5; i++) store.create(`/k/${i}`, pod(`p${i}`));
  const controller = new AbortController();
  const loop = store.runCompaction({ intervalMs: 60_000 }, controller.signal);
  await clock.advance(59_999);
  assert.equal(store.compactedRevision(), 0);
  await clock.advance(1);
  assert.equal(store.compactedRevision(), 3);
  store.create("/k/5", pod("p5"));
  await clock.advance(60_000);
  assert.equal(store.compactedRevision(), 4);
  controller.abort();
  await loop;
});

test("open errors name the database path", (t) => {
  const dir = tempDir(t);
  const missing = join(dir, "no-such-dir", "state.db");
  assert.throws(
    () => openSqliteStore({ path: missing }),
    (error: unknown) =>
      error instanceof CsikitError &&
      error.code === "CSIKIT_ERR_STORE_OPEN" &&
      error.message.includes(missing),
  );
  assert.throws(() => openSqliteStore({ path: ":memory:", compactionWindow: -1 }), /compactionWindow/);
});

test("a database written by a newer schema is refused, not misread", (t) => {
  const path = join(tempDir(t), "state.db");
  const db = new DatabaseSync(path);
  db.exec("PRAGMA user_version = 99");
  db.close();
  assert.throws(
    () => openSqliteStore({ path }),
    (error: unknown) => error instanceof CsikitError && /schema version 99/.test(error.message),
  );
});
