import { test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { appendFile, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CsikitError, isRecord } from "../../base/index.ts";
import { JournalStore, readJournaled } from "./journal-store.ts";
import { defer, tempDir } from "../../../test/harness/cleanup.ts";

interface Doc {
  version: 2;
  items: Record<string, { name: string; n: number }>;
  tags: string[];
}

function options(dir: string) {
  return {
    file: join(dir, "state.json"),
    version: 2,
    empty: (): Doc => ({ version: 2, items: {}, tags: [] }),
    validate: (value: unknown, file: string): Doc => {
      if (!isRecord(value) || !isRecord(value.items) || !Array.isArray(value.tags))
        throw new CsikitError("CSIKIT_ERR_HOSTPATH_STATE", `bad ${file}`);
      return { version: 2, items: value.items as Doc["items"], tags: value.tags as string[] };
    },
    collections: ["items"] as const,
    indexes: { items: (item: { name: string }) => item.name },
  };
}

function open(dir: string, t: TestContext): JournalStore<Doc> {
  const store = new JournalStore<Doc>(options(dir));
  defer(t, () => store.close());
  return store;
}

test("journal store: concurrent updates share fdatasyncs, apply in order, and are visible only once durable", async (t) => {
  const dir = await tempDir(t, "hostpath-journal-");
  const store = open(dir, t);
  await store.load();
  const updates = Array.from({ length: 50 }, (_, i) =>
    store.update((draft) => {
      draft.items[`i${i}`] = { name: `name-${i}`, n: i };
      if (i % 10 === 0) draft.tags.push(`t${i}`);
      return Object.keys(store.latest.items).length;
    }),
  );
  // Queued, not durable: readers do not see them yet; the next mutator does.
  assert.equal(Object.keys(store.current.items).length, 0);
  assert.equal(Object.keys(store.latest.items).length, 50);
  assert.deepEqual(await Promise.all(updates), [...Array(50).keys()]);
  assert.ok(store.commits < 50, `expected batches, got ${store.commits} commits for 50 updates`);
  assert.equal(store.lookup("items", "name-7")?.n, 7);
  assert.deepEqual(store.current.tags, ["t0", "t10", "t20", "t30", "t40"]);
  // A record read through the draft is a copy: editing it changes nothing until committed.
  await store.update((draft) => {
    draft.items.i3!.n = 33;
    draft.items.i4!.name = "renamed";
    delete draft.items.i5;
  });
  assert.equal(store.current.items.i3?.n, 33);
  assert.equal(store.lookup("items", "name-4"), undefined);
  assert.equal(store.lookup("items", "renamed")?.n, 4);
  assert.equal(store.current.items.i5, undefined);
  assert.throws(() => {
    (store.current.items.i3 as { n: number }).n = 0;
  }, TypeError);
  // Another process's view (snapshot + journal) agrees before any compaction.
  const { doc } = await readJournaled(options(dir));
  assert.deepEqual(doc.items, store.current.items);
});

test("journal store: a throwing mutator changes nothing; a read-only update waits for earlier ones", async (t) => {
  const dir = await tempDir(t, "hostpath-journal-");
  const store = open(dir, t);
  await store.load();
  const first = store.update((draft) => void (draft.items.a = { name: "a", n: 1 }));
  await assert.rejects(
    store.update((draft) => {
      draft.items.b = { name: "b", n: 2 };
      throw new Error("refused");
    }),
    /refused/,
  );
  // Resolves only once every earlier update is durable, as if it had written.
  await store.update(() => undefined);
  assert.deepEqual(Object.keys(store.current.items), ["a"]);
  await first;
  assert.deepEqual(Object.keys(store.latest.items), ["a"]);
});

test("journal store: a draft copies what it reads; reading alone, or reordering keys, writes nothing", async (t) => {
  const dir = await tempDir(t, "hostpath-journal-");
  const store = open(dir, t);
  await store.load();
  // A key named __proto__ (volume parameters come from the request) is data, kept as such.
  const withProto = JSON.parse('{"name":"p","n":1,"__proto__":{"polluted":true}}') as {
    name: string;
    n: number;
  };
  await store.update((draft) => void (draft.items.p = withProto));
  await store.update((draft) => void (draft.items.p!.n = 2));
  const stored = store.current.items.p as Record<string, unknown>;
  assert.equal(Object.getPrototypeOf(stored), Object.prototype);
  assert.deepEqual(Object.getOwnPropertyDescriptor(stored, "__proto__")?.value, { polluted: true });
  assert.equal(stored.n, 2);
  const commits = store.commits;
  await store.update((draft) => {
    void draft.items.p!.name;
    void draft.tags.length;
    // The same record, its keys in another order.
    draft.items.p = JSON.parse('{"n":2,"__proto__":{"polluted":true},"name":"p"}') as never;
  });
  assert.equal(store.commits, commits, "an update that changed nothing wrote a journal line");
  // A collection changes record by record: replacing it whole is refused, not dropped.
  await assert.rejects(
    store.update((draft) => {
      draft.items = {};
    }),
    TypeError,
  );
  await store.update((draft) => void draft.tags.push("x"));
  assert.deepEqual(store.current.tags, ["x"]);
  const { doc } = await readJournaled(options(dir));
  assert.deepEqual(Object.getOwnPropertyDescriptor(doc.items.p, "__proto__")?.value, { polluted: true });
  assert.deepEqual(doc.tags, ["x"]);
});

test("journal store: after kill -9 the journal is replayed, a torn tail ignored, a compaction half-done redone", async (t) => {
  const dir = await tempDir(t, "hostpath-journal-");
  const { file } = options(dir);
  const journal = join(dir, "state.journal");
  const crashed = new JournalStore<Doc>(options(dir));
  await crashed.load();
  for (let i = 0; i < 5; i++)
    await crashed.update((draft) => void (draft.items[`k${i}`] = { name: `${i}`, n: i }));
  await crashed.update((draft) => void delete draft.items.k0);
  // Not closed: as if killed. A write the crash tore off mid-line was never acknowledged.
  await appendFile(journal, '{"q":7,"c":[["items","k9",');
  const saved = await readFile(journal, "utf8");
  const reloaded = open(dir, t);
  await reloaded.load();
  assert.deepEqual(Object.keys(reloaded.current.items), ["k1", "k2", "k3", "k4"]);
  // load compacted: the snapshot holds everything, the journal is empty.
  assert.equal((await stat(journal)).size, 0);
  assert.equal(JSON.parse(await readFile(file, "utf8")).journalSeq, 6);
  await reloaded.close();
  await crashed.close();
  // Killed between writing the snapshot and emptying the journal: old lines are skipped.
  await writeFile(journal, saved);
  const again = open(dir, t);
  await again.load();
  assert.deepEqual(Object.keys(again.current.items), ["k1", "k2", "k3", "k4"]);
  await again.update((draft) => void (draft.items.k5 = { name: "5", n: 5 }));
  await again.close();
  const { doc, seq } = await readJournaled(options(dir));
  assert.deepEqual([Object.keys(doc.items), seq], [["k1", "k2", "k3", "k4", "k5"], 7]);
});

test("journal store: a journal that does not continue its snapshot is refused, naming the file", async (t) => {
  const dir = await tempDir(t, "hostpath-journal-");
  const store = open(dir, t);
  await store.load();
  await store.update((draft) => void (draft.items.a = { name: "a", n: 1 }));
  await store.close();
  await writeFile(join(dir, "state.journal"), '{"q":5,"c":[["items","z",{"name":"z","n":0}]]}\n');
  await assert.rejects(open(dir, t).load(), /state\.journal does not continue its snapshot/);
  await writeFile(join(dir, "state.json"), "[]");
  await assert.rejects(open(dir, t).load(), /bad .*state\.json/);
});
