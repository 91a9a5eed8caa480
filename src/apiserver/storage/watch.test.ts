import assert from "node:assert/strict";
import { test } from "node:test";
import type { TestContext } from "node:test";
import { setImmediate as nextTurn } from "node:timers/promises";
import { memoryLogger } from "../../base/index.ts";
import { openSqliteStore, StoreError } from "./index.ts";
import type { KubeObject, SqliteStore, SqliteStoreOptions, StoreEvent, Watch } from "./index.ts";

/** A lost event would make a reader wait forever: fail instead (a guard, not a timing assertion). */
const HANG_GUARD_MS = 30_000;

function memoryStore(t: TestContext, options: Omit<SqliteStoreOptions, "path"> = {}): SqliteStore {
  const store = openSqliteStore({ path: ":memory:", ...options });
  t.after(() => store.close());
  return store;
}

function obj(name: string, data: Record<string, unknown> = {}): KubeObject {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name }, data };
}

/** Reads exactly `count` events (fails the test instead of hanging if the watch ends early). */
async function take(watch: Watch, count: number): Promise<StoreEvent[]> {
  const events: StoreEvent[] = [];
  const iterator = watch[Symbol.asyncIterator]();
  while (events.length < count) {
    const next = await iterator.next();
    if (next.done) throw new Error(`watch ended after ${events.length} of ${count} events`);
    events.push(next.value);
  }
  return events;
}

/** Reads events until one at or past `revision`. */
async function takeUntil(watch: Watch, revision: number): Promise<StoreEvent[]> {
  const events: StoreEvent[] = [];
  const iterator = watch[Symbol.asyncIterator]();
  for (;;) {
    const next = await iterator.next();
    if (next.done) throw new Error(`watch ended after ${events.length} events, before revision ${revision}`);
    events.push(next.value);
    if (next.value.revision >= revision) return events;
  }
}

function summary(events: StoreEvent[]): string[] {
  return events.map((e) => `${e.revision} ${e.type} ${e.key}`);
}

interface Written {
  revision: number;
  type: StoreEvent["type"];
  key: string;
}

test(
  "replay then live: every change after fromRevision once, in order, with object and previous",
  { timeout: HANG_GUARD_MS },
  async (t) => {
    const store = memoryStore(t);
    store.create("/cm/a", obj("a", { v: "1" })); // 1
    store.create("/cm/b", obj("b")); // 2
    store.update("/cm/a", obj("a", { v: "2" })); // 3
    store.create("/other/x", obj("x")); // 4
    const watch = store.watch("/cm/", 1);
    t.after(() => watch.close());
    store.delete("/cm/a"); // 5, live
    store.create("/cm/c", obj("c")); // 6, live
    const events = await take(watch, 4);
    assert.deepEqual(summary(events), [
      "2 ADDED /cm/b",
      "3 MODIFIED /cm/a",
      "5 DELETED /cm/a",
      "6 ADDED /cm/c",
    ]);
    const [added, modified, deleted] = events;
    assert.equal(added!.previous, undefined);
    assert.deepEqual(modified!.previous, {
      ...obj("a", { v: "1" }),
      metadata: { name: "a", resourceVersion: "1" },
    });
    assert.equal(modified!.object.metadata?.["resourceVersion"], "3");
    // DELETED carries the last state stamped with the deletion revision, and the state before.
    assert.deepEqual(deleted!.object, {
      ...obj("a", { v: "2" }),
      metadata: { name: "a", resourceVersion: "5" },
    });
    assert.equal(deleted!.previous?.metadata?.["resourceVersion"], "3");
    assert.equal(watch.progressRevision(), 6);
    store.create("/other/y", obj("y")); // 7: not ours, but progress moves past it
    assert.equal(watch.progressRevision(), 7);
  },
);

test("replayed events equal the live events of the same changes", { timeout: HANG_GUARD_MS }, async (t) => {
  const store = memoryStore(t);
  const live = store.watch("/", 0);
  t.after(() => live.close());
  store.create("/cm/a", obj("a"));
  store.update("/cm/a", obj("a", { v: "x" }));
  store.delete("/cm/a");
  store.create("/cm/a", obj("a", { v: "again" }));
  const replay = store.watch("/", 0);
  t.after(() => replay.close());
  assert.deepEqual(await take(replay, 4), await take(live, 4));
});

test(
  "no gap and no duplicate while watches open, replay in pages and read during a write storm",
  { timeout: HANG_GUARD_MS },
  async (t) => {
    const store = memoryStore(t, { watchReplayPageSize: 7 });
    const prefixes = ["/a/", "/b/", "/"];
    const written: Written[] = [];
    const write = (index: number): void => {
      const key = `${prefixes[index % 2]}${index % 13}`;
      const existing = store.get(key);
      if (!existing) written.push({ type: "ADDED", key, revision: store.create(key, obj(key)).revision });
      else if (index % 5 === 0) written.push({ type: "DELETED", key, revision: store.delete(key).revision });
      else
        written.push({
          type: "MODIFIED",
          key,
          revision: store.update(key, obj(key, { i: String(index) })).revision,
        });
    };
    for (let i = 0; i < 60; i++) write(i);

    // Watchers open at different moments, from different revisions, while the writer keeps
    // going and yields to the event loop between small bursts.
    const consumers: { prefix: string; from: number; watch: Watch; first: StoreEvent[] }[] = [];
    for (let i = 60; i < 400; i++) {
      write(i);
      if (i % 40 === 0) {
        const prefix = prefixes[(i / 40) % 3]!;
        const from = Math.max(0, store.currentRevision() - 50);
        const watch = store.watch(prefix, from);
        t.after(() => watch.close());
        // Read a little now, so replay pages and live events interleave with the writes.
        consumers.push({ prefix, from, watch, first: await take(watch, 3) });
      }
      if (i % 3 === 0) await nextTurn();
    }
    assert.equal(consumers.length, 8);
    // Markers end every expected sequence, so a missing event shows as a mismatch, not a hang.
    written.push({ type: "ADDED", key: "/a/marker", revision: store.create("/a/marker", obj("m")).revision });
    written.push({ type: "ADDED", key: "/b/marker", revision: store.create("/b/marker", obj("m")).revision });
    for (const { prefix, from, watch, first } of consumers) {
      const expected = written.filter((w) => w.revision > from && w.key.startsWith(prefix));
      const events = [...first, ...(await takeUntil(watch, expected[expected.length - 1]!.revision))];
      assert.deepEqual(
        summary(events),
        expected.map((w) => `${w.revision} ${w.type} ${w.key}`),
        `watch on ${prefix} from ${from}`,
      );
      assert.equal(watch.progressRevision(), store.currentRevision());
    }
  },
);

test(
  "watch from a compacted revision, or overtaken by compaction mid-replay, ends with Gone",
  { timeout: HANG_GUARD_MS },
  async (t) => {
    const store = memoryStore(t, { watchReplayPageSize: 2 });
    store.create("/k", obj("k"));
    for (let i = 0; i < 9; i++) store.update("/k", obj("k", { i: String(i) }));
    const early = store.watch("/", 2); // opened before compaction; replay not started yet
    t.after(() => early.close());
    const started = store.watch("/", 0);
    t.after(() => started.close());
    await take(started, 2); // one page read
    store.compact(5);
    assert.equal(store.compactedRevision(), 5);

    await assert.rejects(take(early, 1), isGone);
    await assert.rejects(take(started, 1), isGone);
    assert.equal((await started[Symbol.asyncIterator]().next()).done, true, "after Gone the watch is done");

    const tooOld = store.watch("/", 4);
    await assert.rejects(take(tooOld, 1), isGone);
    // From the boundary itself, history is complete.
    const fromBoundary = store.watch("/", 5);
    t.after(() => fromBoundary.close());
    assert.deepEqual(
      (await take(fromBoundary, 5)).map((e) => e.revision),
      [6, 7, 8, 9, 10],
    );
  },
);

function isGone(error: unknown): boolean {
  return error instanceof StoreError && error.reason === "Gone";
}

test(
  "a watcher that stops reading is ended with Gone at its buffer limit; others and writers go on",
  { timeout: HANG_GUARD_MS },
  async (t) => {
    const { logger, lines } = memoryLogger();
    const store = memoryStore(t, { watchBufferLimit: 5, logger });
    const slow = store.watch("/", 0);
    t.after(() => slow.close());
    const fast = store.watch("/", 0);
    t.after(() => fast.close());
    const fastRead: StoreEvent[] = [];
    for (let i = 0; i < 20; i++) {
      store.create(`/k/${i}`, obj(String(i)));
      fastRead.push(...(await take(fast, 1)));
    }
    assert.equal(store.currentRevision(), 20);
    assert.deepEqual(
      fastRead.map((e) => e.revision),
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
    await assert.rejects(
      take(slow, 1),
      (error: unknown) => isGone(error) && /fell more than 5 events behind/.test(String(error)),
    );
    assert.ok(lines.some((line) => line.includes("watch fell too far behind")));
  },
);

test(
  "fan-out: many watchers on different prefixes each see exactly their changes",
  { timeout: HANG_GUARD_MS },
  async (t) => {
    const store = memoryStore(t);
    const watchers = Array.from({ length: 60 }, (_, i) => {
      const prefix = `/ns${i % 6}/`;
      const watch = store.watch(prefix, 0);
      t.after(() => watch.close());
      return { prefix, watch };
    });
    const keys: string[] = [];
    for (let i = 0; i < 300; i++) {
      const key = `/ns${i % 7}/obj${i}`;
      keys.push(key);
      store.create(key, obj(`obj${i}`));
    }
    for (const { prefix, watch } of watchers) {
      const expected = keys.flatMap((key, i) => (key.startsWith(prefix) ? [`${i + 1} ADDED ${key}`] : []));
      assert.deepEqual(summary(await take(watch, expected.length)), expected);
    }
  },
);

test(
  "close ends a pending read; breaking out of for-await and store.close end watches",
  { timeout: HANG_GUARD_MS },
  async (t) => {
    const store = openSqliteStore({ path: ":memory:" });
    t.after(() => store.close());
    const watch = store.watch("/", 0);
    const pending = watch[Symbol.asyncIterator]().next();
    watch.close();
    assert.equal((await pending).done, true);

    const looped = store.watch("/", 0);
    store.create("/k/a", obj("a"));
    store.create("/k/b", obj("b"));
    const seen: number[] = [];
    for await (const event of looped) {
      seen.push(event.revision);
      break;
    }
    assert.deepEqual(seen, [1]);
    assert.equal((await looped[Symbol.asyncIterator]().next()).done, true);

    const open = store.watch("/", 2);
    const waiting = open[Symbol.asyncIterator]().next();
    store.close();
    assert.equal((await waiting).done, true);
  },
);

test("a watch from a future revision starts after it", { timeout: HANG_GUARD_MS }, async (t) => {
  const store = memoryStore(t);
  store.create("/k/a", obj("a")); // 1
  const watch = store.watch("/k/", 3);
  t.after(() => watch.close());
  assert.equal(watch.progressRevision(), 3);
  store.update("/k/a", obj("a", { v: "2" })); // 2: at or below fromRevision, skipped
  store.update("/k/a", obj("a", { v: "3" })); // 3: skipped
  store.update("/k/a", obj("a", { v: "4" })); // 4
  assert.deepEqual(summary(await take(watch, 1)), ["4 MODIFIED /k/a"]);
});

test(
  "follow: refused while replay or buffered events remain; then live events arrive synchronously, in order",
  { timeout: HANG_GUARD_MS },
  async (t) => {
    const store = memoryStore(t);
    store.create("/cm/a", obj("a")); // 1
    const watch = store.watch("/cm/", 0);
    const seen: string[] = [];
    const listener = (event: StoreEvent): void =>
      void seen.push(`${event.revision} ${event.type} ${event.key}`);
    // Revision 1 is still to be replayed through the iterator.
    assert.equal(watch.follow?.(listener), undefined);
    assert.deepEqual(summary(await take(watch, 1)), ["1 ADDED /cm/a"]);
    store.update("/cm/a", obj("a", { v: "2" })); // 2, buffered
    assert.equal(watch.follow?.(listener), undefined, "a buffered live event must be read first");
    assert.deepEqual(summary(await take(watch, 1)), ["2 MODIFIED /cm/a"]);
    const ended = watch.follow?.(listener);
    assert.ok(ended, "caught up: follows");
    store.create("/cm/b", obj("b")); // 3
    store.create("/other/x", obj("x")); // 4, not ours
    store.delete("/cm/a"); // 5
    // Delivered during the writes themselves: nothing to wait for.
    assert.deepEqual(seen, ["3 ADDED /cm/b", "5 DELETED /cm/a"]);
    assert.equal(watch.progressRevision(), 5);
    watch.close();
    await ended;
    store.create("/cm/c", obj("c"));
    assert.equal(seen.length, 2, "nothing after close");
  },
);
