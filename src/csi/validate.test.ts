import assert from "node:assert/strict";
import { test } from "node:test";
import { CsiError, GrpcStatus, OperationLocks, requireField } from "./index.ts";

function invalidArgument(message: string) {
  return (error: unknown): boolean => {
    assert.ok(error instanceof CsiError);
    assert.equal(error.code, GrpcStatus.INVALID_ARGUMENT);
    assert.equal(error.message, message);
    return true;
  };
}

test("requireField answers INVALID_ARGUMENT naming the field for every kind of missing value", () => {
  for (const missing of [undefined, null, "", [], {}]) {
    assert.throws(() => requireField(missing, "volume_id"), invalidArgument("volume_id is required"));
  }
  assert.throws(
    () => requireField({}, "volume_capability"),
    invalidArgument("volume_capability is required"),
  );
});

test("requireField accepts present values, including false and 0", () => {
  for (const present of ["vol-1", ["x"], { mount: {} }, 0, false, "0"]) requireField(present, "field");
});

test("OperationLocks answers ABORTED for a second operation on the same id and frees it after", async () => {
  const locks = new OperationLocks();
  let finish!: () => void;
  const first = locks.run("vol-1", () => new Promise<string>((resolve) => (finish = () => resolve("done"))));
  await assert.rejects(
    locks.run("vol-1", async () => "second"),
    (error: unknown) => {
      assert.ok(error instanceof CsiError);
      assert.equal(error.code, GrpcStatus.ABORTED);
      assert.equal(error.message, "an operation on vol-1 is already in progress");
      return true;
    },
  );
  assert.equal(await locks.run("vol-2", async () => "other id"), "other id");
  finish();
  assert.equal(await first, "done");
  assert.equal(locks.isHeld("vol-1"), false);
  assert.equal(await locks.run("vol-1", async () => "again"), "again");
});

test("OperationLocks releases after a failure, and release is idempotent", async () => {
  const locks = new OperationLocks();
  await assert.rejects(
    locks.run("vol-1", async () => {
      throw new Error("boom");
    }),
    /boom/,
  );
  const release = locks.tryAcquire("vol-1");
  assert.ok(release);
  assert.equal(locks.tryAcquire("vol-1"), undefined);
  release();
  const again = locks.tryAcquire("vol-1");
  assert.ok(again);
  release();
  assert.equal(locks.isHeld("vol-1"), true, "a stale release must not free a newer holder");
  again();
});
