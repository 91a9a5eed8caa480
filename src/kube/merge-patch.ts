// createMergePatch(original, modified): the JSON merge patch (RFC 7386) that turns `original`
// into `modified` — as client-go's jsonmergepatch.CreateThreeWayJSONMergePatch with no third
// party. Keys gone become null, nested objects are diffed, arrays and scalars that differ are
// replaced whole. Controllers send it to PATCH only what they changed, so RBAC rules that
// grant `patch` (not `update`) are enough, as upstream's.

import { isRecord } from "../base/index.ts";

export function createMergePatch(original: unknown, modified: unknown): Record<string, unknown> {
  const patch: Record<string, unknown> = {};
  const before = isRecord(original) ? original : {};
  const after = isRecord(modified) ? modified : {};
  for (const key of Object.keys(before)) if (!(key in after) || after[key] === undefined) patch[key] = null;
  for (const [key, value] of Object.entries(after)) {
    if (value === undefined) continue;
    const old = before[key];
    if (isRecord(value) && isRecord(old)) {
      const nested = createMergePatch(old, value);
      if (Object.keys(nested).length > 0) patch[key] = nested;
    } else if (JSON.stringify(old) !== JSON.stringify(value)) {
      patch[key] = structuredClone(value);
    }
  }
  return patch;
}
