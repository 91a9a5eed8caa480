// Key ranges for prefix scans. SQLite compares TEXT keys byte-wise on their UTF-8 encoding,
// which orders strings by code point, so "every key starting with P" is exactly the half-open
// range [P, end(P)) where end(P) is P with its last code point incremented. Expressing prefixes
// as ranges (instead of LIKE or substr) lets every scan walk an index.

export interface KeyRange {
  /** Lower bound. */
  lo: string;
  /** Whether `lo` itself is in the range (`>=`) or not (`>`, for startAfter). */
  loInclusive: boolean;
  /** Exclusive upper bound; undefined when the range is unbounded above. */
  hi: string | undefined;
}

/** The smallest string greater than every string that starts with `prefix`, or undefined if none exists. */
export function prefixEnd(prefix: string): string | undefined {
  const codePoints = Array.from(prefix, (ch) => ch.codePointAt(0) ?? 0);
  while (codePoints.length > 0) {
    const last = codePoints.pop()!;
    if (last < 0x10ffff) {
      // Surrogate code points are not encodable in UTF-8: skip straight past them.
      const next = last + 1 === 0xd800 ? 0xe000 : last + 1;
      return String.fromCodePoint(...codePoints, next);
    }
  }
  return undefined;
}

/** Byte-wise UTF-8 comparison, the order SQLite uses for TEXT with the BINARY collation. */
export function compareKeys(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

/**
 * UTF-16 order is code point (so UTF-8 byte) order except that surrogates, which encode code
 * points above U+FFFF, sort below U+E000..U+FFFF: lift them above. Two differing units after an
 * equal prefix are both surrogates of the same kind or compare as code points, so this is exact.
 */
function codePointRank(unit: number): number {
  return unit >= 0xd800 && unit <= 0xdfff ? unit + 0x10000 : unit;
}

/** Keys under `prefix`, strictly after `startAfter` when that is given. */
export function keyRange(prefix: string, startAfter?: string): KeyRange {
  const hi = prefixEnd(prefix);
  if (startAfter !== undefined && compareKeys(startAfter, prefix) >= 0) {
    return { lo: startAfter, loInclusive: false, hi };
  }
  return { lo: prefix, loInclusive: true, hi };
}
