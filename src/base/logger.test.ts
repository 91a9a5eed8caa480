import { test } from "node:test";
import assert from "node:assert/strict";
import { memoryLogger } from "./logger.ts";

test("verbosity gates info lines; warn and error always print", () => {
  const { logger, lines } = memoryLogger({ verbosity: 2, now: () => 0 });
  logger.info(0, "zero");
  logger.info(2, "two");
  logger.info(3, "three");
  logger.warn("careful");
  logger.error("broken", { err: new Error("boom") });
  assert.equal(lines.length, 4);
  assert.ok(!lines.some((l) => l.includes("three")));
  assert.match(lines[3]!, /ERROR "broken" err="boom"/);
});

test("json format carries contextual fields", () => {
  const { logger, lines } = memoryLogger({ format: "json", now: () => 0 });
  logger.with({ controller: "pv", key: "ns/a" }).info(0, "synced", { attempt: 2, big: 2n ** 64n });
  const record = JSON.parse(lines[0]!);
  assert.deepEqual(
    {
      msg: record.msg,
      controller: record.controller,
      key: record.key,
      attempt: record.attempt,
      big: record.big,
    },
    { msg: "synced", controller: "pv", key: "ns/a", attempt: 2, big: "18446744073709551616" },
  );
  assert.equal(record.ts, "1970-01-01T00:00:00.000Z");
});
