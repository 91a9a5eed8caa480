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

/**
 * Go's os.Expand over `${name}` and `$name`, as the sidecars resolve secret-name templates
 * (csi.storage.k8s.io/*-secret-name): every token is looked up in `values`; the ones without a
 * value expand to "" and are returned in `missing`, so the caller can refuse them.
 */
export function expandTemplate(
  template: string,
  values: Readonly<Record<string, string>>,
): { value: string; missing: string[] } {
  const missing: string[] = [];
  const value = template.replace(
    /\$\{([^}]*)\}|\$([A-Za-z0-9_]+)/g,
    (_m, braced: string | undefined, bare: string | undefined) => {
      const token = braced ?? bare ?? "";
      const found = values[token];
      if (found === undefined) {
        missing.push(token);
        return "";
      }
      return found;
    },
  );
  return { value, missing };
}
