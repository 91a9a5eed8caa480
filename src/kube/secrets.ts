// Secret data as the sidecars hand it to CSI calls (`secrets` fields): every key of the Secret,
// its bytes as UTF-8 strings, as upstream's `string(value)`. The values only ever go into a
// CSI request, whose secret fields the CSI trace strips; never into a log, event or error.

import type { Secret } from "../api/index.ts";

/** Secret data as UTF-8 strings (all keys), as upstream passes it to CSI. */
export function secretStrings(secret: Secret): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(secret.data ?? {}))
    out[key] = Buffer.from(value, "base64").toString("utf8");
  for (const [key, value] of Object.entries(secret.stringData ?? {})) out[key] = value;
  return out;
}
