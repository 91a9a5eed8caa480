// Descriptions of the built-in kinds' fields for `kubectl explain`, read from the doc comments
// of @kubernetes/client-node's generated model declarations (which carry upstream's OpenAPI
// descriptions). Read lazily, once per model, when an /openapi/v3 document is first built;
// a missing or unreadable declaration file only means no descriptions.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

export interface ModelDocs {
  /** The model's own description ("" when none). */
  description: string;
  /** Field descriptions by JSON name. */
  fields: ReadonlyMap<string, string>;
}

const EMPTY: ModelDocs = Object.freeze({ description: "", fields: new Map<string, string>() });
const cache = new Map<string, ModelDocs>();
let modelsDir: string | undefined | null = null;

function declarationsDir(): string | undefined {
  if (modelsDir === null) {
    try {
      const entry = createRequire(import.meta.url).resolve("@kubernetes/client-node");
      modelsDir = join(dirname(entry), "gen", "models");
    } catch {
      modelsDir = undefined;
    }
  }
  return modelsDir;
}

/** The text of a `/** … *\/` comment body: leading `*` and indentation dropped, lines joined. */
function commentText(body: string): string {
  return body
    .split("\n")
    .map((line) =>
      line
        .replace(/^\s*\*\s?/, "")
        .replace(/\\(["'\\])/g, "$1")
        .trim(),
    )
    .filter((line) => line !== "")
    .join("\n");
}

/** Parses a generated declaration file: the class comment and one comment per property. */
export function parseModelDocs(source: string): ModelDocs {
  const classMatch = /\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*export declare class/.exec(source);
  const fields = new Map<string, string>();
  const property = /\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*'([^']+)'\??:/g;
  for (const match of source.matchAll(property)) {
    if (match[2] !== undefined) fields.set(match[2], commentText(match[1] ?? ""));
  }
  return { description: commentText(classMatch?.[1] ?? ""), fields };
}

/** The descriptions of a client-node model ("V1PodSpec"); empty when unavailable. */
export function modelDocs(modelName: string): ModelDocs {
  const cached = cache.get(modelName);
  if (cached !== undefined) return cached;
  const dir = declarationsDir();
  let docs = EMPTY;
  if (dir !== undefined && /^[A-Za-z0-9]+$/.test(modelName)) {
    try {
      docs = parseModelDocs(readFileSync(join(dir, `${modelName}.d.ts`), "utf8"));
    } catch {
      docs = EMPTY;
    }
  }
  cache.set(modelName, docs);
  return docs;
}
