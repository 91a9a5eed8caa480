// controller.ComputeHash's shape: a 32-bit FNV-1a hash of the pod template (and the collision
// count, when set) rendered with rand.SafeEncodeString's alphabet, so names and labels look
// like upstream's (`<deployment>-<hash>`, `pod-template-hash`, `controller-revision-hash`).
// Upstream hashes Go's spew rendering of the struct; csikit hashes the template's canonical
// JSON, so the same template always gets the same value here but not the same as upstream's.

/** rand.SafeEncodeString's alphabet: no vowels and no look-alike characters. */
const ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789";

/** JSON with object keys sorted at every level (the one rendering hashes and history compare). */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record)
      .filter((key) => record[key] !== undefined)
      .sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

function fnv32a(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, "utf8")) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/** rand.SafeEncodeString of the decimal rendering, as ComputeHash does. */
function safeEncode(text: string): string {
  let out = "";
  for (const char of text) out += ALPHANUMS[char.charCodeAt(0) % ALPHANUMS.length];
  return out;
}

export function computeHash(template: unknown, collisionCount?: number): string {
  let hash = fnv32a(canonicalJson(template));
  if (collisionCount !== undefined && collisionCount > 0) {
    const bytes = Buffer.alloc(4);
    bytes.writeUInt32LE(collisionCount);
    for (const byte of bytes) {
      hash ^= byte;
      hash = Math.imul(hash, 0x01000193) >>> 0;
    }
  }
  return safeEncode(String(hash >>> 0));
}
