// Reflector and informer logic driven through a scripted ListerWatcher, for the transitions a
// real server cannot be made to produce on cue (a drop between two exact events, an expired
// continue token). The same paths run against the embedded API server in informer.test.ts.
import { test } from "node:test";
import assert from "node:assert/strict";
import { FakeClock, settle } from "../base/index.ts";
import { KubeApiError } from "./errors.ts";
import { SharedInformer, Tombstone, deletedObject, isTombstone } from "./informer.ts";
import type { ListerWatcher } from "./reflector.ts";
import type { KubeList, KubeObject, WatchEvent } from "./types.ts";

interface Obj extends KubeObject {
  data?: string;
}

const obj = (name: string, rv: string, data = ""): Obj => ({
  metadata: { namespace: "ns", name, resourceVersion: rv },
  data,
});

type WatchScript = { events: WatchEvent<Obj>[]; then: "end" | "hang" | Error };

/** Lists answer from `lists` in order (the last repeats); each watch plays the next script. */
class ScriptedLW implements ListerWatcher<Obj> {
  lists: (KubeList<Obj> | Error)[] = [];
  watches: WatchScript[] = [];
  listCalls: { limit?: number; continue?: string }[] = [];
  watchFrom: string[] = [];
  list(options: { limit?: number; continue?: string }): Promise<KubeList<Obj>> {
    this.listCalls.push(options);
    const next = this.lists.length > 1 ? this.lists.shift()! : this.lists[0]!;
    return next instanceof Error ? Promise.reject(next) : Promise.resolve(structuredClone(next));
  }
  async *watch(options: { resourceVersion: string }, signal: AbortSignal): AsyncGenerator<WatchEvent<Obj>> {
    this.watchFrom.push(options.resourceVersion);
    const script = this.watches.shift() ?? { events: [], then: "hang" };
    for (const event of script.events) {
      await Promise.resolve();
      yield structuredClone(event);
    }
    if (script.then instanceof Error) throw script.then;
    if (script.then === "hang")
      await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
  }
}

function setup(lw: ScriptedLW, options: { resyncPeriodMs?: number } = {}) {
  const clock = new FakeClock();
  const informer = new SharedInformer<Obj>({
    name: "test",
    listerWatcher: lw,
    clock,
    freeze: true,
    pageSize: 2,
    ...options,
  });
  const log: string[] = [];
  informer.addEventHandler({
    onAdd: (o) => log.push(`add ${o.metadata?.name}@${o.metadata?.resourceVersion}`),
    onUpdate: (a, b) =>
      log.push(`update ${a.metadata?.name}@${a.metadata?.resourceVersion}->${b.metadata?.resourceVersion}`),
    onDelete: (o) =>
      log.push(
        `${isTombstone(o) ? "tombstone" : "delete"} ${deletedObject(o).metadata?.name}@${deletedObject(o).metadata?.resourceVersion}`,
      ),
  });
  const controller = new AbortController();
  const running = informer.run(controller.signal);
  const stop = async (): Promise<void> => {
    controller.abort();
    await running;
  };
  return { clock, informer, log, stop };
}

test("list pages, then watch from the list's resourceVersion; final state on delete", async (t) => {
  const lw = new ScriptedLW();
  lw.lists = [
    { metadata: { resourceVersion: "10", continue: "c1" }, items: [obj("a", "5"), obj("b", "6")] },
    { metadata: { resourceVersion: "10" }, items: [obj("c", "7")] },
  ];
  lw.watches = [
    {
      events: [
        { type: "MODIFIED", object: obj("a", "11", "x") },
        { type: "ADDED", object: obj("d", "12") },
        { type: "DELETED", object: obj("b", "13", "final") },
        { type: "BOOKMARK", object: { metadata: { resourceVersion: "20" } } },
      ],
      then: "hang",
    },
  ];
  const { informer, log, stop } = setup(lw);
  t.after(stop);
  await informer.waitForSync();
  await settle();
  assert.deepEqual(lw.listCalls, [{ limit: 2 }, { limit: 2, continue: "c1" }]);
  assert.deepEqual(lw.watchFrom, ["10"]);
  assert.deepEqual(log, ["add a@5", "add b@6", "add c@7", "update a@5->11", "add d@12", "delete b@13"]);
  assert.equal(informer.lastSyncResourceVersion, "20");
  assert.deepEqual(informer.store.keys().sort(), ["ns/a", "ns/c", "ns/d"]);
  assert.equal(informer.store.get("ns/a")?.data, "x");
  assert.throws(() => {
    informer.store.get("ns/a")!.data = "mutated";
  }, TypeError);
});

test("a dropped watch resumes from the last seen resourceVersion without relisting", async (t) => {
  const lw = new ScriptedLW();
  lw.lists = [{ metadata: { resourceVersion: "10" }, items: [obj("a", "5")] }];
  lw.watches = [
    { events: [{ type: "MODIFIED", object: obj("a", "11") }], then: new Error("socket hang up") },
    { events: [{ type: "MODIFIED", object: obj("a", "12") }], then: "end" },
    { events: [], then: "hang" },
  ];
  const { clock, informer, log, stop } = setup(lw);
  t.after(stop);
  await informer.waitForSync();
  await settle();
  assert.deepEqual(lw.watchFrom, ["10"]);
  await clock.advance(60_000); // past any backoff
  assert.deepEqual(
    lw.watchFrom,
    ["10", "11", "12"],
    "resumed from 11, then re-watched from 12 after a normal end",
  );
  assert.equal(lw.listCalls.length, 1);
  assert.deepEqual(log, ["add a@5", "update a@5->11", "update a@11->12"]);
  assert.equal(informer.reflector.stats.errors, 1);
});

test("410 Gone relists; objects missing from the new list get tombstones with their last state", async (t) => {
  const lw = new ScriptedLW();
  lw.lists = [
    { metadata: { resourceVersion: "10" }, items: [obj("a", "5"), obj("b", "6")] },
    { metadata: { resourceVersion: "50" }, items: [obj("a", "40"), obj("c", "45")] },
  ];
  lw.watches = [
    {
      events: [
        {
          type: "ERROR",
          object: { code: 410, reason: "Expired", message: "too old resource version" } as Obj,
        },
      ],
      then: "end",
    },
  ];
  const { informer, log, stop } = setup(lw);
  t.after(stop);
  await informer.waitForSync();
  await settle();
  assert.equal(lw.listCalls.length, 2);
  assert.deepEqual(lw.watchFrom, ["10", "50"]);
  assert.deepEqual(log, ["add a@5", "add b@6", "update a@5->40", "add c@45", "tombstone b@6"]);
});

test("an expired continue token falls back to one unpaged list", async (t) => {
  const lw = new ScriptedLW();
  lw.lists = [
    { metadata: { resourceVersion: "10", continue: "c1" }, items: [obj("a", "5"), obj("b", "6")] },
    new KubeApiError(410, "Expired", "continue token expired"),
    { metadata: { resourceVersion: "11" }, items: [obj("a", "5"), obj("b", "6"), obj("c", "11")] },
  ];
  const { informer, stop } = setup(lw);
  t.after(stop);
  await informer.waitForSync();
  assert.deepEqual(lw.listCalls, [{ limit: 2 }, { limit: 2, continue: "c1" }, {}]);
  assert.equal(informer.store.size, 3);
  await settle();
  assert.deepEqual(lw.watchFrom, ["11"]);
});

test("list failures retry with growing backoff and never stop the informer", async (t) => {
  const lw = new ScriptedLW();
  lw.lists = [
    new KubeApiError(0, "", "connection refused"),
    new KubeApiError(500, "InternalError", "boom"),
    new KubeApiError(403, "Forbidden", "no"),
    { metadata: { resourceVersion: "3" }, items: [obj("a", "2")] },
  ];
  const clock = new FakeClock();
  const informer = new SharedInformer<Obj>({ name: "t", listerWatcher: lw, clock });
  const controller = new AbortController();
  const running = informer.run(controller.signal);
  t.after(async () => {
    controller.abort();
    await running;
  });
  await settle();
  assert.equal(lw.listCalls.length, 1);
  assert.equal(informer.hasSynced(), false);
  // Backoff starts at 800ms (jittered up to 2x): nothing retries before that.
  await clock.advance(799);
  assert.equal(lw.listCalls.length, 1);
  await clock.advance(60_000);
  assert.equal(lw.listCalls.length, 4);
  assert.equal(informer.hasSynced(), true);
  assert.equal(informer.reflector.stats.errors, 3);
});

test("periodic resync delivers onUpdate(obj, obj) for every cached object", async (t) => {
  const lw = new ScriptedLW();
  lw.lists = [{ metadata: { resourceVersion: "10" }, items: [obj("a", "5"), obj("b", "6")] }];
  const { clock, informer, log, stop } = setup(lw, { resyncPeriodMs: 30_000 });
  t.after(stop);
  await informer.waitForSync();
  log.length = 0;
  await clock.advance(30_000);
  assert.deepEqual(log.sort(), ["update a@5->5", "update b@6->6"]);
  await clock.advance(30_000);
  assert.equal(log.length, 4);
});

test("a handler added late gets onAdd for cached objects; a throwing handler harms no other", async (t) => {
  const lw = new ScriptedLW();
  lw.lists = [{ metadata: { resourceVersion: "10" }, items: [obj("a", "5")] }];
  lw.watches = [{ events: [{ type: "ADDED", object: obj("b", "11") }], then: "hang" }];
  const { informer, log, stop } = setup(lw);
  t.after(stop);
  await informer.waitForSync();
  const late: string[] = [];
  informer.addEventHandler({
    onAdd: (o) => {
      late.push(o.metadata?.name ?? "");
      throw new Error("handler bug");
    },
  });
  await settle();
  assert.deepEqual(late, ["a", "b"]);
  assert.deepEqual(log, ["add a@5", "add b@11"]);
});

test("waitForSync rejects when its signal aborts first; run resolves after abort", async () => {
  const lw = new ScriptedLW();
  lw.lists = [new KubeApiError(0, "", "down")];
  const { informer, stop } = setup(lw);
  const controller = new AbortController();
  const waiting = informer.waitForSync(controller.signal);
  controller.abort();
  await assert.rejects(waiting, /stopped before its cache synced/);
  await stop();
  assert.ok(new Tombstone("k", obj("a", "1")).key === "k");
});

test("a watch answered 504 Too large resource version relists from scratch", async (t) => {
  const lw = new ScriptedLW();
  lw.lists = [
    { metadata: { resourceVersion: "900" }, items: [obj("a", "800"), obj("gone", "850")] },
    { metadata: { resourceVersion: "7" }, items: [obj("a", "3")] },
  ];
  lw.watches = [
    {
      events: [],
      then: new KubeApiError(504, "Timeout", "Too large resource version: 900, current: 7"),
    },
    { events: [], then: "hang" },
  ];
  const { informer, log, stop } = setup(lw);
  t.after(stop);
  await informer.waitForSync();
  for (let i = 0; i < 50 && lw.watchFrom.length < 2; i++) await settle();
  assert.deepEqual(lw.watchFrom, ["900", "7"]);
  assert.equal(lw.listCalls.length, 2);
  assert.deepEqual(informer.store.keys().sort(), ["ns/a"]);
  assert.ok(log.includes("tombstone gone@850") || log.includes("delete gone@850"), log.join(", "));
});
