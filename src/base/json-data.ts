// Values that are JSON data: what the API server stores and the hostpath driver journals.

/**
 * Whether two JSON values write the same JSON, key order aside: an undefined property counts
 * as absent, as JSON.stringify leaves it out. Walks both without building key lists or text,
 * since callers compare on every write.
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let defined = 0;
  for (const key of Object.keys(x)) {
    if (x[key] === undefined) continue;
    defined++;
    if (!Object.hasOwn(y, key) || !jsonEqual(x[key], y[key])) return false;
  }
  for (const key of Object.keys(y)) if (y[key] !== undefined) defined--;
  return defined === 0;
}
