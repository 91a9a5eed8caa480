// Tests of the harness's own helpers: the bounded poll and the last-in-first-out cleanups.

import assert from "node:assert/strict";
import { access } from "node:fs/promises";
import { test } from "node:test";
import { defer, tempDir } from "./harness/cleanup.ts";
import { until } from "./harness/until.ts";

test("until returns the first value that is neither undefined nor false", async () => {
  assert.equal(await until(() => 5, "five"), 5);
  let calls = 0;
  assert.equal(await until(() => ++calls >= 3 && calls, "the third call", { intervalMs: 1 }), 3);
  assert.equal(await until(async () => 0, "zero"), 0, "0 is a value");
});

test("until fails at its bound naming what it waited for and the last value or error", async () => {
  await assert.rejects(
    until(
      () => {
        throw new Error("boom");
      },
      "a thrower",
      { timeoutMs: 100 },
    ),
    /^UntilTimeout: timed out after 100 ms waiting for a thrower: last error: boom$/,
  );
  await assert.rejects(
    until(() => undefined, "a phase", { timeoutMs: 100 }),
    /waiting for a phase: last value: undefined/,
  );
});

test("until fails at its bound when a check never settles", async () => {
  const started = Date.now();
  await assert.rejects(
    until(() => new Promise<never>(() => undefined), "a hung check", { timeoutMs: 100 }),
    /timed out after 100 ms waiting for a hung check: a check did not settle/,
  );
  assert.ok(Date.now() - started < 10_000, "the hung check did not hold the wait");
});

test("defer runs cleanups last registered first, after the test, and all of them", async () => {
  const order: string[] = [];
  let dir = "";
  await test("inner", async (t) => {
    dir = await tempDir(t);
    defer(t, async () => {
      await access(dir); // the dir registered first is still there
      order.push("writer stopped");
    });
    defer(t, () => {
      order.push("second");
    });
  });
  assert.deepEqual(order, ["second", "writer stopped"]);
  await assert.rejects(access(dir), { code: "ENOENT" });
});
