import { test } from "node:test";
import assert from "node:assert/strict";
import { FakeClock } from "../base/index.ts";
import {
  BucketRateLimiter,
  ItemExponentialRateLimiter,
  MaxOfRateLimiter,
  TokenBucket,
  controllerRateLimiter,
} from "./ratelimit.ts";

test("token bucket: full burst at once, then one token per 1/qps, in order", () => {
  const clock = new FakeClock();
  const bucket = new TokenBucket({ qps: 5, burst: 3, clock });
  assert.deepEqual([bucket.reserve(), bucket.reserve(), bucket.reserve()], [0, 0, 0]);
  assert.equal(bucket.reserve(), 200);
  assert.equal(bucket.reserve(), 400);
  assert.equal(bucket.tryAccept(), false);
});

test("token bucket refills over time but never beyond burst", async () => {
  const clock = new FakeClock();
  const bucket = new TokenBucket({ qps: 10, burst: 2, clock });
  bucket.reserve();
  bucket.reserve();
  await clock.advance(100);
  assert.equal(bucket.reserve(), 0);
  assert.equal(bucket.tryAccept(), false);
  await clock.advance(60_000);
  assert.equal(bucket.tokens, 2);
});

test("token bucket wait resolves after the reserved delay; an aborted wait returns its token", async () => {
  const clock = new FakeClock();
  const bucket = new TokenBucket({ qps: 1, burst: 1, clock });
  await bucket.wait();
  let done = false;
  const waiting = bucket.wait().then(() => (done = true));
  await clock.advance(999);
  assert.equal(done, false);
  await clock.advance(1);
  await waiting;
  assert.equal(done, true);

  const controller = new AbortController();
  const aborted = bucket.wait(controller.signal);
  controller.abort(new Error("stop"));
  await assert.rejects(aborted, /stop/);
  // The token came back: the next caller waits 1s (one token owed), not 2s.
  assert.equal(bucket.reserve(), 1000);
});

test("token bucket rejects nonsense settings", () => {
  assert.throws(() => new TokenBucket({ qps: 0, burst: 1 }), RangeError);
  assert.throws(() => new TokenBucket({ qps: 1, burst: 0 }), RangeError);
});

test("item exponential: doubles per failure up to max, per item, forget resets", () => {
  const limiter = new ItemExponentialRateLimiter<string>({ baseMs: 1000, maxMs: 5000 });
  assert.deepEqual(
    [1, 2, 3, 4, 5].map(() => limiter.when("a")),
    [1000, 2000, 4000, 5000, 5000],
  );
  assert.equal(limiter.when("b"), 1000);
  assert.equal(limiter.numRequeues("a"), 5);
  limiter.forget("a");
  assert.equal(limiter.numRequeues("a"), 0);
  assert.equal(limiter.when("a"), 1000);
});

test("item exponential never overflows after many failures", () => {
  const limiter = new ItemExponentialRateLimiter<string>({ baseMs: 1000, maxMs: 300_000 });
  let last = 0;
  for (let i = 0; i < 2000; i++) last = limiter.when("x");
  assert.equal(last, 300_000);
});

test("max-of: every limiter records, the longest delay wins", () => {
  const clock = new FakeClock();
  const limiter = new MaxOfRateLimiter<string>([
    new ItemExponentialRateLimiter<string>({ baseMs: 5, maxMs: 1000 }),
    new BucketRateLimiter<string>(new TokenBucket({ qps: 1, burst: 1, clock })),
  ]);
  assert.equal(limiter.when("a"), 5);
  assert.equal(limiter.when("b"), 1000); // bucket empty: 1s
  assert.equal(limiter.numRequeues("a"), 1);
  limiter.forget("a");
  assert.equal(limiter.numRequeues("a"), 0);
});

test("controller rate limiter defaults: 1s start, 5m max, bucket of 100 at 10 qps", () => {
  const clock = new FakeClock();
  const limiter = controllerRateLimiter<string>({ clock });
  assert.equal(limiter.when("a"), 1000);
  for (let i = 0; i < 20; i++) limiter.when("a");
  assert.equal(limiter.when("a"), 300_000);
  // 22 tokens used; 78 more are free, then the bucket spaces them 100ms apart.
  for (let i = 0; i < 78; i++) assert.equal(limiter.when(`k${i}`), 1000);
  assert.equal(limiter.when("late"), 1000); // exponential 1s still beats the bucket's 100ms
  for (let i = 0; i < 20; i++) limiter.when(`m${i}`);
  assert.equal(limiter.when("m-last"), 2200);
});
