// The one seeded pseudo-random generator of the tests: fuzzers and generators draw from it so
// that a failure names a seed that replays it exactly.

/** mulberry32: small, fast, seedable; good enough to spread test inputs (not for secrets). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
