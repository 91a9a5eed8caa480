// The three patch formats kubectl and client libraries send: JSON merge patch (RFC 7386),
// JSON patch (RFC 6902, via fast-json-patch) and strategic merge patch, whose list semantics
// come from ResourceDef.patchStrategies (merge by key, merge primitive sets, else replace) and
// which honours the directives kubectl apply emits: `$patch: replace|delete|merge`,
// `$setElementOrder/<field>`, `$retainKeys`, `$deleteFromPrimitiveList/<field>`.
// Every function is pure: it returns a new object and never mutates its inputs.

import jsonPatch from "fast-json-patch";
import type { KubeObject, ResourceDef } from "./resource.ts";
import { ApiError, badRequest } from "./status.ts";

export const PATCH_TYPES = {
  json: "application/json-patch+json",
  merge: "application/merge-patch+json",
  strategic: "application/strategic-merge-patch+json",
  apply: "application/apply-patch+yaml",
} as const;

type Json = unknown;
type JsonMap = Record<string, unknown>;
type Strategies = ResourceDef["patchStrategies"];

function isMap(value: unknown): value is JsonMap {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** RFC 7386: null deletes, objects merge recursively, anything else replaces. */
export function applyMergePatch(target: Json, patch: Json): Json {
  if (!isMap(patch)) return structuredClone(patch);
  const result: JsonMap = isMap(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = applyMergePatch(result[key], value);
  }
  return result;
}

/** RFC 6902. A malformed operation is 400; a failed `test` or a bad path is 422 as upstream. */
export function applyJsonPatch(target: KubeObject, operations: unknown): Json {
  if (!Array.isArray(operations)) throw badRequest("json patch must be an array of operations");
  const validationError = jsonPatch.validate(operations as jsonPatch.Operation[], structuredClone(target));
  if (validationError) {
    if (validationError.name === "TEST_OPERATION_FAILED") {
      throw new ApiError(422, "Invalid", `the server rejected our request due to an error in our request`);
    }
    if (["OPERATION_PATH_UNRESOLVABLE", "OPERATION_FROM_UNRESOLVABLE"].includes(validationError.name)) {
      throw new ApiError(
        422,
        "Invalid",
        `the server rejected our request because the json patch ${validationError.message.split("\n")[0]}`,
      );
    }
    throw badRequest(
      `the server rejected our request due to an error in our request: ${validationError.message.split("\n")[0]}`,
    );
  }
  const result = jsonPatch.applyPatch(
    structuredClone(target),
    operations as jsonPatch.Operation[],
    false,
    false,
  );
  return result.newDocument;
}

const METADATA_STRATEGIES: Strategies = {
  "metadata.finalizers": { merge: "set" },
  "metadata.ownerReferences": { mergeKey: "uid" },
};

/** Strategic merge patch of `patch` onto `original` using the kind's list strategies. */
export function applyStrategicMergePatch(original: KubeObject, patch: Json, strategies: Strategies): Json {
  if (!isMap(patch)) throw badRequest("strategic merge patch must be a JSON object");
  return mergeMap(original, patch, "", { ...METADATA_STRATEGIES, ...strategies });
}

function childPath(path: string, key: string): string {
  return path === "" ? key : `${path}.${key}`;
}

function mergeMap(original: Json, patch: JsonMap, path: string, strategies: Strategies): Json {
  const directive = patch.$patch;
  if (directive === "replace") {
    const { $patch: _ignored, ...rest } = patch;
    return stripDirectives(rest);
  }
  if (directive === "delete") return undefined;
  let result: JsonMap = isMap(original) ? { ...original } : {};
  const retainKeys = patch.$retainKeys;
  if (Array.isArray(retainKeys)) {
    const keep = new Set(retainKeys.map(String));
    result = Object.fromEntries(Object.entries(result).filter(([key]) => keep.has(key)));
  }
  const orders: Record<string, unknown[]> = {};
  for (const [key, value] of Object.entries(patch)) {
    if (key === "$patch" || key === "$retainKeys") continue;
    if (key.startsWith("$setElementOrder/")) {
      if (Array.isArray(value)) orders[key.slice("$setElementOrder/".length)] = value;
      continue;
    }
    if (key.startsWith("$deleteFromPrimitiveList/")) {
      const field = key.slice("$deleteFromPrimitiveList/".length);
      const current = result[field];
      if (Array.isArray(current) && Array.isArray(value)) {
        const drop = new Set(value.map((v) => JSON.stringify(v)));
        result[field] = current.filter((item) => !drop.has(JSON.stringify(item)));
      }
      continue;
    }
    if (key.startsWith("$")) continue;
    const fieldPath = childPath(path, key);
    if (value === null) {
      delete result[key];
    } else if (Array.isArray(value)) {
      result[key] = mergeList(result[key], value, fieldPath, strategies);
    } else if (isMap(value)) {
      const merged = mergeMap(result[key], value, fieldPath, strategies);
      if (merged === undefined) delete result[key];
      else result[key] = merged;
    } else {
      result[key] = value;
    }
  }
  for (const [field, order] of Object.entries(orders)) {
    const list = result[field];
    if (Array.isArray(list)) result[field] = reorder(list, order, strategies[childPath(path, field)]);
  }
  return result;
}

function mergeList(original: Json, patch: unknown[], path: string, strategies: Strategies): Json {
  const strategy = strategies[path];
  const current: unknown[] = Array.isArray(original) ? (original as unknown[]) : [];
  if (!strategy) {
    return stripDirectives(patch.filter((item) => !(isMap(item) && item.$patch === "replace")));
  }
  if ("merge" in strategy) {
    const seen = new Set(current.map((v) => JSON.stringify(v)));
    const result = [...current];
    for (const item of patch) {
      if (!seen.has(JSON.stringify(item))) {
        seen.add(JSON.stringify(item));
        result.push(item);
      }
    }
    return result;
  }
  const mergeKey = strategy.mergeKey;
  if (patch.some((item) => isMap(item) && item.$patch === "replace")) {
    return stripDirectives(patch.filter((item) => !(isMap(item) && item.$patch === "replace")));
  }
  const result: Json[] = [...current];
  const itemPath = `${path}[]`;
  for (const item of patch) {
    if (!isMap(item)) {
      result.push(item);
      continue;
    }
    const key = item[mergeKey];
    const index = result.findIndex((existing) => isMap(existing) && existing[mergeKey] === key);
    if (item.$patch === "delete") {
      if (index >= 0) result.splice(index, 1);
      continue;
    }
    if (index >= 0) {
      result[index] = mergeMap(result[index], item, itemPath, strategies);
    } else {
      result.push(mergeMap(undefined, item, itemPath, strategies));
    }
  }
  return result;
}

/** Orders `list` as `$setElementOrder` says; items it does not name keep their relative order at the end. */
function reorder(list: unknown[], order: unknown[], strategy: Strategies[string] | undefined): unknown[] {
  const identity = (item: unknown): string =>
    strategy && "mergeKey" in strategy && isMap(item)
      ? JSON.stringify(item[strategy.mergeKey])
      : JSON.stringify(item);
  const rank = new Map(order.map((item, index) => [identity(item), index]));
  const indexed = list.map((item, index) => ({ item, index, rank: rank.get(identity(item)) }));
  indexed.sort((a, b) => {
    if (a.rank !== undefined && b.rank !== undefined) return a.rank - b.rank;
    if (a.rank !== undefined) return -1;
    if (b.rank !== undefined) return 1;
    return a.index - b.index;
  });
  return indexed.map((entry) => entry.item);
}

function stripDirectives(value: Json): Json {
  if (Array.isArray(value)) return value.map(stripDirectives);
  if (!isMap(value)) return value;
  const result: JsonMap = {};
  for (const [key, inner] of Object.entries(value)) {
    if (key.startsWith("$")) continue;
    result[key] = stripDirectives(inner);
  }
  return result;
}
