import { test } from "node:test";
import assert from "node:assert/strict";
import { GrpcStatus, grpcCode } from "../../csi/index.ts";
import { Locks, page, sizeRange } from "./requests.ts";
import { isVolumeId } from "./ids.ts";

const ids = ["vol-" + "1".repeat(32), "vol-" + "2".repeat(32), "vol-" + "3".repeat(32)];

test("page: tokens name the next entry, survive deletions, and bad tokens are ABORTED", () => {
  const first = page(ids, { token: "", maxEntries: 2, isId: isVolumeId });
  assert.deepEqual(first.ids, ids.slice(0, 2));
  assert.equal(first.nextToken, ids[2]);
  // The entry the token names was deleted: the page starts at the next survivor.
  const after = page([ids[0]!, ids[1]!], { token: ids[2]!, maxEntries: 2, isId: isVolumeId });
  assert.deepEqual(after, { ids: [], nextToken: "" });
  assert.deepEqual(page(ids, { token: "", maxEntries: 0, isId: isVolumeId }).ids, ids);
  assert.throws(
    () => page(ids, { token: "1", maxEntries: 0, isId: isVolumeId }),
    (e) => grpcCode(e) === GrpcStatus.ABORTED,
  );
  assert.throws(
    () => page(ids, { token: "", maxEntries: -1, isId: isVolumeId }),
    (e) => grpcCode(e) === GrpcStatus.INVALID_ARGUMENT,
  );
});

test("sizeRange: negative and inverted ranges are INVALID_ARGUMENT", () => {
  assert.deepEqual(sizeRange({ requiredBytes: "10", limitBytes: "20" }), { required: 10, limit: 20 });
  assert.deepEqual(sizeRange(null), { required: 0, limit: 0 });
  assert.throws(
    () => sizeRange({ requiredBytes: "-1", limitBytes: "0" }),
    (e) => grpcCode(e) === GrpcStatus.INVALID_ARGUMENT,
  );
  assert.throws(
    () => sizeRange({ requiredBytes: "30", limitBytes: "20" }),
    (e) => grpcCode(e) === GrpcStatus.INVALID_ARGUMENT,
  );
  assert.throws(
    () => sizeRange({ requiredBytes: "99999999999999999999", limitBytes: "0" }),
    (e) => grpcCode(e) === GrpcStatus.OUT_OF_RANGE,
  );
});

test("locks: a second operation on a busy object is ABORTED; all-or-nothing over several keys", async () => {
  const locks = new Locks();
  let release = (): void => {};
  const held = locks.run(["a", "b"], () => new Promise<void>((resolve) => (release = resolve)));
  await assert.rejects(
    locks.run(["c", "b"], () => Promise.resolve()),
    (e) => grpcCode(e) === GrpcStatus.ABORTED,
  );
  // "c" was not left locked by the failed attempt.
  await locks.run(["c"], () => Promise.resolve());
  release();
  await held;
  await locks.run(["a", "b"], () => Promise.resolve());
});
