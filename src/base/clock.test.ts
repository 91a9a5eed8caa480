import { test } from "node:test";
import assert from "node:assert/strict";
import { FakeClock } from "./clock.ts";
import { Backoff, exponentialDelay } from "./backoff.ts";

test("FakeClock fires timers in time order only when advanced", async () => {
  const clock = new FakeClock(0);
  const fired: string[] = [];
  clock.setTimer(200, () => fired.push("b"));
  clock.setTimer(100, () => fired.push("a"));
  const cancel = clock.setTimer(150, () => fired.push("cancelled"));
  cancel();
  await clock.advance(99);
  assert.deepEqual(fired, []);
  await clock.advance(101);
  assert.deepEqual(fired, ["a", "b"]);
  assert.equal(clock.now(), 200);
  assert.equal(clock.pendingTimers, 0);
});

test("FakeClock sleep resolves on advance and rejects on abort", async () => {
  const clock = new FakeClock(0);
  let done = false;
  const sleeping = clock.sleep(1000).then(() => (done = true));
  await clock.advance(999);
  assert.equal(done, false);
  await clock.advance(1);
  await sleeping;
  assert.equal(done, true);

  const controller = new AbortController();
  const aborted = clock.sleep(1000, controller.signal);
  controller.abort(new Error("stop"));
  await assert.rejects(aborted, /stop/);
  assert.equal(clock.pendingTimers, 0);
});

test("Backoff doubles up to max and resets", () => {
  const backoff = new Backoff({ initial: 100, max: 500, factor: 2 });
  assert.deepEqual(
    [backoff.next(), backoff.next(), backoff.next(), backoff.next(), backoff.next()],
    [100, 200, 400, 500, 500],
  );
  backoff.reset();
  assert.equal(backoff.next(), 100);
  const jittered = new Backoff({ initial: 100, jitter: 0.5, random: () => 1 });
  assert.equal(jittered.next(), 150);
});

test("exponentialDelay caps and never overflows", () => {
  assert.equal(exponentialDelay(0, 1000, 300_000), 1000);
  assert.equal(exponentialDelay(3, 1000, 300_000), 8000);
  assert.equal(exponentialDelay(20, 1000, 300_000), 300_000);
  assert.equal(exponentialDelay(5000, 1000, 300_000), 300_000);
});
