// SortedKeys against the plain sorted array it replaces: the same order, ranks and slices after
// every insert and delete, through chunk splits and chunks emptied.

import assert from "node:assert/strict";
import { test } from "node:test";
import { compareKeys } from "./key-range.ts";
import { lowerBound, SortedKeys } from "./sorted-keys.ts";

test("inserts, deletes, ranks and slices agree with a sorted array", () => {
  // A fixed pseudo-random sequence, so a failure repeats.
  let seed = 42;
  const next = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  // Keys with shared prefixes, other planes and private-use characters: compareKeys is UTF-8 order.
  const keyOf = (i: number): string =>
    `/core/configmaps/ns-${i % 7}/${["c", "\u{1F600}", "\uE000", "b"][i % 4]}-${i}`;
  const keys = SortedKeys.of(Array.from({ length: 700 }, (_, i) => keyOf(i * 3)));
  const reference = Array.from({ length: 700 }, (_, i) => keyOf(i * 3)).sort(compareKeys);
  const check = (): void => {
    assert.equal(keys.length, reference.length);
    assert.deepEqual(keys.slice(0, keys.length), reference);
    for (let probe = 0; probe < 20; probe++) {
      const key = keyOf(next(4000));
      for (const inclusive of [true, false])
        assert.equal(
          keys.lowerBound(key, inclusive),
          lowerBound(reference, key, inclusive),
          `${key} ${inclusive}`,
        );
      const start = next(reference.length + 1);
      const stop = start + next(600);
      assert.deepEqual(keys.slice(start, stop), reference.slice(start, stop));
    }
  };
  check();
  for (let round = 0; round < 3000; round++) {
    const key = keyOf(next(4000));
    const at = lowerBound(reference, key, true);
    if (reference[at] === key) {
      assert.equal(keys.delete(key), true);
      reference.splice(at, 1);
    } else {
      assert.equal(keys.delete(key), false);
      keys.insert(key);
      reference.splice(at, 0, key);
    }
    if (round % 300 === 0) check();
  }
  check();
  // Emptied completely, then used again.
  for (const key of [...reference]) assert.equal(keys.delete(key), true);
  assert.equal(keys.length, 0);
  assert.deepEqual(keys.slice(0, 10), []);
  keys.insert("/b");
  keys.insert("/a");
  assert.deepEqual(keys.slice(0, 2), ["/a", "/b"]);
  assert.equal(keys.lowerBound("/b", false), 2);
});
