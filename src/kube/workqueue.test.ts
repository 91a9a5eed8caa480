import { test } from "node:test";
import assert from "node:assert/strict";
import { FakeClock, settle } from "../base/index.ts";
import { ItemExponentialRateLimiter } from "./ratelimit.ts";
import { TerminalError, WorkQueue, type GetResult } from "./workqueue.ts";
import { WorkQueueMetrics } from "./workqueue-metrics.ts";
import { Registry } from "prom-client";

function queue(clock = new FakeClock()): { q: WorkQueue<string>; clock: FakeClock } {
  return {
    q: new WorkQueue<string>({
      clock,
      rateLimiter: new ItemExponentialRateLimiter<string>({ baseMs: 1000, maxMs: 8000 }),
    }),
    clock,
  };
}

async function take(q: WorkQueue<string>): Promise<string> {
  const next = await q.get();
  assert.equal(next.shutdown, false);
  return next.shutdown ? "" : next.item;
}

test("dedup: an item added twice while queued is stored once, FIFO kept", async () => {
  const { q } = queue();
  q.add("a");
  q.add("b");
  q.add("a");
  assert.equal(q.len(), 2);
  assert.equal(await take(q), "a");
  assert.equal(await take(q), "b");
  assert.equal(q.len(), 0);
});

test("an item being processed is never handed to a second getter", async () => {
  const { q } = queue();
  q.add("a");
  assert.equal(await take(q), "a");
  q.add("a");
  assert.equal(q.len(), 0, "re-added item waits for done");
  let second: GetResult<string> | undefined;
  void q.get().then((r) => (second = r));
  await settle();
  assert.equal(second, undefined);
  q.done("a");
  await settle();
  assert.deepEqual(second, { shutdown: false, item: "a" });
});

test("re-add while processing is processed once more after done, not twice", async () => {
  const { q } = queue();
  q.add("a");
  await take(q);
  q.add("a");
  q.add("a");
  q.done("a");
  assert.equal(q.len(), 1);
  assert.equal(await take(q), "a");
  q.done("a");
  assert.equal(q.len(), 0);
});

test("done without re-add does not requeue", async () => {
  const { q } = queue();
  q.add("a");
  await take(q);
  q.done("a");
  assert.equal(q.len(), 0);
  assert.equal(q.processingCount(), 0);
});

test("waiting getters are served in order as items arrive", async () => {
  const { q } = queue();
  const got: string[] = [];
  const g1 = q.get().then((r) => !r.shutdown && got.push(`1:${r.item}`));
  const g2 = q.get().then((r) => !r.shutdown && got.push(`2:${r.item}`));
  q.add("x");
  q.add("y");
  await Promise.all([g1, g2]);
  assert.deepEqual(got, ["1:x", "2:y"]);
});

test("addAfter adds when the delay passes; the earlier deadline wins", async () => {
  const { q, clock } = queue();
  q.addAfter("a", 5000);
  q.addAfter("a", 2000);
  q.addAfter("a", 9000);
  assert.equal(q.delayedCount(), 1);
  await clock.advance(1999);
  assert.equal(q.len(), 0);
  await clock.advance(1);
  assert.equal(q.len(), 1);
  await clock.advance(10_000);
  assert.equal(q.len(), 1, "the replaced timers never fire");
  q.addAfter("b", 0);
  assert.equal(q.len(), 2);
});

test("addRateLimited backs off exponentially per item; forget resets", async () => {
  const { q, clock } = queue();
  q.addRateLimited("a");
  q.addRateLimited("a"); // second failure recorded, but the 1s deadline is earlier
  assert.equal(q.numRequeues("a"), 2);
  await clock.advance(1000);
  assert.equal(q.len(), 1);
  await take(q);
  q.addRateLimited("a"); // 4s
  q.done("a");
  await clock.advance(3999);
  assert.equal(q.len(), 0);
  await clock.advance(1);
  assert.equal(q.len(), 1);
  q.forget("a");
  assert.equal(q.numRequeues("a"), 0);
});

test("shutDown: adds ignored, delays dropped, queued items still handed out, then shutdown", async () => {
  const { q, clock } = queue();
  q.add("a");
  q.addAfter("later", 1000);
  q.shutDown();
  q.add("b");
  await clock.advance(5000);
  assert.equal(q.len(), 1);
  assert.equal(await take(q), "a");
  assert.deepEqual(await q.get(), { shutdown: true });
});

test("shutDown wakes every waiting getter", async () => {
  const { q } = queue();
  const waiting = [q.get(), q.get(), q.get()];
  q.shutDown();
  assert.deepEqual(await Promise.all(waiting), [{ shutdown: true }, { shutdown: true }, { shutdown: true }]);
});

test("shutDownWithDrain resolves only after in-flight items are done", async () => {
  const { q } = queue();
  q.add("a");
  q.add("b");
  await take(q);
  await take(q);
  let drained = false;
  const drain = q.shutDownWithDrain().then(() => (drained = true));
  q.done("a");
  await settle();
  assert.equal(drained, false);
  q.done("b");
  await drain;
  assert.equal(drained, true);
});

test("runWorkers: never two workers on one key, and every add after a start is seen", async () => {
  const { q } = queue();
  const controller = new AbortController();
  const active = new Set<string>();
  const runs = new Map<string, number>();
  let maxParallel = 0;
  let overlap = false;
  const gates: (() => void)[] = [];
  const run = q.runWorkers(
    {
      workers: 4,
      async process(item) {
        if (active.has(item)) overlap = true;
        active.add(item);
        maxParallel = Math.max(maxParallel, active.size);
        await new Promise<void>((resolve) => gates.push(resolve));
        active.delete(item);
        runs.set(item, (runs.get(item) ?? 0) + 1);
      },
    },
    controller.signal,
  );
  // Idle workers take a, b, c at once; the second a and b arrive while they are processing.
  for (const key of ["a", "b", "c", "a", "b"]) q.add(key);
  await settle();
  assert.equal(active.size, 3);
  q.add("a"); // already dirty: still only one more run
  q.add("a");
  while (gates.length > 0 || q.len() > 0 || q.processingCount() > 0) {
    gates.shift()?.();
    await settle();
  }
  assert.equal(overlap, false);
  assert.equal(maxParallel, 3);
  assert.deepEqual(Object.fromEntries(runs), { a: 2, b: 2, c: 1 });
  controller.abort();
  await run;
});

test("runWorkers: errors retry with backoff, TerminalError does not, success forgets", async () => {
  const { q, clock } = queue();
  const controller = new AbortController();
  const outcomes: string[] = [];
  let failures = 2;
  const run = q.runWorkers(
    {
      workers: 2,
      process(item) {
        if (item === "flaky" && failures-- > 0) return Promise.reject(new Error("transient"));
        if (item === "bad") return Promise.reject(new TerminalError("cannot ever work"));
        if (item === "poll") return Promise.resolve({ requeueAfterMs: 30_000 });
        return Promise.resolve();
      },
      onResult: (item, outcome) => outcomes.push(`${item}:${outcome}`),
    },
    controller.signal,
  );
  q.add("flaky");
  q.add("bad");
  await settle();
  assert.deepEqual(outcomes.sort(), ["bad:terminal", "flaky:retry"]);
  assert.equal(q.numRequeues("flaky"), 1);
  assert.equal(q.terminalErrors, 1);
  await clock.advance(1000);
  assert.equal(outcomes.at(-1), "flaky:retry");
  assert.equal(q.numRequeues("flaky"), 2);
  await clock.advance(1999);
  assert.equal(outcomes.length, 3);
  await clock.advance(1);
  assert.equal(outcomes.at(-1), "flaky:success");
  assert.equal(q.numRequeues("flaky"), 0);
  q.add("poll");
  await settle();
  assert.equal(outcomes.at(-1), "poll:requeue");
  await clock.advance(30_000);
  assert.equal(outcomes.filter((o) => o === "poll:requeue").length, 2);
  controller.abort();
  await run;
});

test("runWorkers: abort lets in-flight items finish, starts no queued ones, resolves when stopped", async () => {
  const { q } = queue();
  const controller = new AbortController();
  const started: string[] = [];
  let release!: () => void;
  let sawAbort = false;
  const run = q.runWorkers(
    {
      workers: 1,
      async process(item, signal) {
        started.push(item);
        await new Promise<void>((resolve) => (release = resolve));
        sawAbort = signal.aborted;
      },
    },
    controller.signal,
  );
  q.add("a");
  q.add("b");
  await settle();
  let stopped = false;
  void run.then(() => (stopped = true));
  controller.abort();
  await settle();
  assert.equal(stopped, false, "waits for the in-flight item");
  release();
  await run;
  assert.equal(sawAbort, true);
  assert.deepEqual(started, ["a"]);
  assert.equal(q.processingCount(), 0);
});

test("runWorkers on an already aborted signal returns at once", async () => {
  const { q } = queue();
  const controller = new AbortController();
  controller.abort();
  await q.runWorkers({ workers: 3, process: () => Promise.resolve() }, controller.signal);
  assert.equal(q.shuttingDown(), true);
});

test("workqueue_* metrics: adds, retries, depth, queue and work durations, in-flight work", async () => {
  const registry = new Registry();
  const clock = new FakeClock();
  const q = new WorkQueue<string>({
    name: "claims",
    clock,
    metrics: new WorkQueueMetrics({ registry }),
    rateLimiter: new ItemExponentialRateLimiter<string>({ baseMs: 1000, maxMs: 8000 }),
  });
  q.add("a");
  q.add("b");
  q.add("a");
  await clock.advance(2000);
  const text = async (): Promise<string> => registry.metrics();
  assert.match(await text(), /workqueue_depth\{name="claims"\} 2/);
  assert.match(await text(), /workqueue_adds_total\{name="claims"\} 2/);
  assert.match(await text(), /workqueue_oldest_waiting_item_seconds\{name="claims"\} 2/);
  await take(q);
  await clock.advance(3000);
  // "b" has now waited 5s; "a" is processing and no longer counts as waiting.
  assert.match(await text(), /workqueue_oldest_waiting_item_seconds\{name="claims"\} 5/);
  assert.match(await text(), /workqueue_longest_running_processor_seconds\{name="claims"\} 3/);
  assert.match(await text(), /workqueue_unfinished_work_seconds\{name="claims"\} 3/);
  q.addRateLimited("a");
  q.done("a");
  const after = await text();
  assert.match(after, /workqueue_retries_total\{name="claims"\} 1/);
  assert.match(after, /workqueue_queue_duration_seconds_sum\{name="claims"\} 2/);
  assert.match(after, /workqueue_work_duration_seconds_sum\{name="claims"\} 3/);
  assert.match(after, /workqueue_depth\{name="claims"\} 1/);
  await take(q);
  q.done("b");
  // Nothing waits: a delayed retry ("a" in backoff) is not a backlog.
  assert.match(await text(), /workqueue_oldest_waiting_item_seconds\{name="claims"\} 0/);
});

test("waitIdle resolves once nothing is queued or processing; delayed items do not count", async () => {
  const { q } = queue();
  await q.waitIdle();
  q.add("a");
  q.addAfter("later", 10_000);
  let idle = false;
  const waiting = q.waitIdle().then(() => (idle = true));
  await take(q);
  await settle();
  assert.equal(idle, false);
  q.done("a");
  await waiting;
  assert.equal(q.delayedCount(), 1);
});

test("backoff holds: an add (a watch event) while an item backs off waits for its retry; forget ends it", async () => {
  const { q, clock } = queue();
  q.add("a");
  await take(q);
  q.addRateLimited("a"); // failed: retry in 1s
  q.done("a");
  assert.equal(q.inBackoff("a"), true);
  q.add("a");
  q.addAfter("a", 10); // an earlier deadline does not get past the backoff either
  await clock.advance(999);
  assert.equal(q.len(), 0, "held until the retry deadline");
  await clock.advance(1);
  assert.equal(q.len(), 1, "the retry comes at its deadline");
  await take(q);
  q.forget("a"); // success
  q.done("a");
  assert.equal(q.inBackoff("a"), false);
  q.add("a");
  assert.equal(q.len(), 1, "after success an add is immediate again");
});

test("backoff holds: a failing worker that writes its own object (re-add while processing) runs once per backoff interval", async () => {
  const { q, clock } = queue();
  const controller = new AbortController();
  let runs = 0;
  const run = q.runWorkers(
    {
      workers: 1,
      process(item) {
        runs++;
        // The watch event of the worker's own write, arriving while it runs (bounded, so that
        // without the hold the storm this test catches still ends).
        if (runs < 100) q.add(item);
        return Promise.reject(new Error("final error from the driver"));
      },
    },
    controller.signal,
  );
  q.add("claim");
  await settle();
  assert.equal(runs, 1);
  q.add("claim"); // the event of its write arriving after it finished
  await clock.advance(999);
  assert.equal(runs, 1, "neither re-add bypassed the 1s backoff");
  await clock.advance(1);
  assert.equal(runs, 2);
  await clock.advance(1999);
  assert.equal(runs, 2, "2s after the second failure, not before");
  await clock.advance(1);
  assert.equal(runs, 3);
  // 8s cap: over the next 60s, one run per 8s at most.
  await clock.advance(60_000);
  const total: number = runs;
  assert.ok(total <= 3 + 1 + Math.ceil(60_000 / 8000), `${total} runs in 60s`);
  controller.abort();
  await run;
});

test("expedite gets past the backoff once and keeps the failure count", async () => {
  const { q, clock } = queue();
  q.addRateLimited("a");
  q.addRateLimited("a");
  assert.equal(q.numRequeues("a"), 2);
  q.expedite("a");
  assert.equal(q.len(), 1);
  await take(q);
  q.addRateLimited("a"); // third failure: 4s
  q.done("a");
  q.add("a");
  await clock.advance(3999);
  assert.equal(q.len(), 0);
  await clock.advance(1);
  assert.equal(q.len(), 1);
});

test("expedited while its failing run is in progress: runs again right after, not after the new backoff", async () => {
  const { q } = queue();
  q.add("a");
  await take(q);
  q.expedite("a"); // e.g. the object's deletion starts while a failing reconcile runs
  q.addRateLimited("a"); // that run fails
  q.done("a");
  assert.equal(q.len(), 1);
  await take(q);
  q.addRateLimited("a");
  q.add("a");
  q.done("a");
  assert.equal(q.len(), 0, "an ordinary re-add is held again");
});
