// The store's live keys in key order (compareKeys: UTF-8 byte order), kept as a list of sorted
// chunks so that inserting or removing one key moves at most one chunk's entries instead of
// every key after it: one flat array made each create cost a shift of the whole collection
// (tens of µs with 20,000 objects). Ranks (a key's index in the whole order) are what list
// pagination and counting use; a rank costs one pass over the chunk lengths.

import { compareKeys } from "./key-range.ts";

/** A chunk is split in two past this many keys. */
const MAX_CHUNK = 512;

export class SortedKeys {
  #chunks: string[][] = [];
  #length = 0;

  /** From keys in any order (duplicates are the caller's to avoid). */
  static of(keys: Iterable<string>): SortedKeys {
    const sorted = [...keys].sort(compareKeys);
    const result = new SortedKeys();
    for (let i = 0; i < sorted.length; i += MAX_CHUNK / 2)
      result.#chunks.push(sorted.slice(i, i + MAX_CHUNK / 2));
    result.#length = sorted.length;
    return result;
  }

  get length(): number {
    return this.#length;
  }

  /** Adds `key`, which must not be present. */
  insert(key: string): void {
    if (this.#chunks.length === 0) {
      this.#chunks.push([key]);
      this.#length = 1;
      return;
    }
    const c = Math.min(this.#chunkFor(key), this.#chunks.length - 1);
    const chunk = this.#chunks[c]!;
    chunk.splice(lowerBound(chunk, key, true), 0, key);
    this.#length++;
    if (chunk.length > MAX_CHUNK) this.#chunks.splice(c + 1, 0, chunk.splice(MAX_CHUNK / 2));
  }

  /** Removes `key`; false if it was not present. */
  delete(key: string): boolean {
    const c = this.#chunkFor(key);
    const chunk = this.#chunks[c];
    if (!chunk) return false;
    const index = lowerBound(chunk, key, true);
    if (chunk[index] !== key) return false;
    chunk.splice(index, 1);
    this.#length--;
    if (chunk.length === 0) this.#chunks.splice(c, 1);
    return true;
  }

  /** Rank of the first key >= `key` (inclusive) or > `key` (exclusive); `length` if none. */
  lowerBound(key: string, inclusive: boolean): number {
    let rank = 0;
    for (const chunk of this.#chunks) {
      const last = chunk[chunk.length - 1]!;
      const order = compareKeys(last, key);
      if (order < 0 || (order === 0 && !inclusive)) {
        rank += chunk.length;
        continue;
      }
      return rank + lowerBound(chunk, key, inclusive);
    }
    return rank;
  }

  /** The keys of ranks [start, stop), in order. */
  slice(start: number, stop: number): string[] {
    const out: string[] = [];
    let rank = 0;
    for (const chunk of this.#chunks) {
      if (rank >= stop) break;
      const end = rank + chunk.length;
      if (end > start)
        out.push(...chunk.slice(Math.max(0, start - rank), Math.min(chunk.length, stop - rank)));
      rank = end;
    }
    return out;
  }

  /** Index of the first chunk whose last key is >= `key` (the chunk `key` belongs in). */
  #chunkFor(key: string): number {
    let lo = 0;
    let hi = this.#chunks.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const chunk = this.#chunks[mid]!;
      if (compareKeys(chunk[chunk.length - 1]!, key) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

/** First index whose key is >= `key` (inclusive) or > `key` (exclusive). */
export function lowerBound(keys: readonly string[], key: string, inclusive: boolean): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const order = compareKeys(keys[mid]!, key);
    if (order < 0 || (order === 0 && !inclusive)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
