// The three patch formats kubectl and client libraries send: JSON merge patch (RFC 7386),
// JSON patch (RFC 6902 as evanphx/json-patch v4 applies it, see json-patch.ts) and strategic merge patch, whose list semantics
// come from ResourceDef.patchStrategies (merge by key, merge primitive sets, else replace) and
// which honours the directives kubectl apply emits: `$patch: replace|delete|merge`,
// `$setElementOrder/<field>`, `$retainKeys`, `$deleteFromPrimitiveList/<field>`.
// Every function is pure: it returns a new object and never mutates its inputs. Keys are set as
// own properties (never by assignment), so a "__proto__" or "constructor" key in a patch is data,
// not a prototype change.

import { applyJsonPatchV4, JsonPatchError } from "./json-patch.ts";
import type { KubeObject, ResourceDef } from "./resource.ts";
import { MAX_BODY_BYTES } from "../transport/http.ts";
import { ApiError, badRequest } from "../transport/status.ts";

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

/**
 * Sets an own enumerable property, also for keys such as "__proto__" that plain assignment
 * would treat as the prototype setter (dropping the key, changing the object's prototype).
 */
function setOwn(target: JsonMap, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** A shallow copy with own properties only (spread defines properties, so "__proto__" stays a key). */
function copyMap(value: Json): JsonMap {
  return isMap(value) ? { ...value } : {};
}

/** RFC 7386: null deletes, objects merge recursively, anything else replaces. */
export function applyMergePatch(target: Json, patch: Json): Json {
  if (!isMap(patch)) return structuredClone(patch);
  const result = copyMap(target);
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else setOwn(result, key, applyMergePatch(Object.hasOwn(result, key) ? result[key] : undefined, value));
  }
  return result;
}

/**
 * Upstream's answer when a JSON patch does not apply (the patcher's generic 422): a fixed
 * message, the reason in details.causes.
 */
function jsonPatchNotApplied(reason: string): ApiError {
  return new ApiError(422, "Invalid", "the server rejected our request due to an error in our request", {
    causes: [{ reason: "UnexpectedServerResponse", message: reason, field: "" }],
  });
}

/** Upstream's cap on the operations of one JSON patch (413 beyond it). */
const MAX_JSON_PATCH_OPERATIONS = 10_000;

/**
 * RFC 6902 with kube-apiserver's deviations (json-patch.ts). A body that is not an array of
 * objects is 400 (upstream cannot decode it); an operation that does not apply is 422 as
 * upstream's patcher answers.
 */
export function applyJsonPatch(target: KubeObject, operations: unknown): Json {
  if (!Array.isArray(operations) || operations.some((operation) => !isMap(operation))) {
    throw badRequest("json: cannot unmarshal the patch: a JSON patch must be an array of operation objects");
  }
  if (operations.length > MAX_JSON_PATCH_OPERATIONS) {
    throw new ApiError(
      413,
      "RequestEntityTooLarge",
      `Request entity too large: The allowed maximum operations in a JSON patch is ${MAX_JSON_PATCH_OPERATIONS}, got ${operations.length}`,
    );
  }
  try {
    return applyJsonPatchV4(target, operations as Record<string, unknown>[]);
  } catch (error) {
    if (error instanceof JsonPatchError) throw jsonPatchNotApplied(error.message);
    throw error;
  }
}

/**
 * The request body limit applied to what a patch built (kube-apiserver's MaxRequestBodyBytes,
 * 3 MiB): a small patch must not store an object no client could have sent. 413 as upstream
 * answers a too-large body, saying that the patched object is what exceeded it.
 */
export function checkPatchedSize(patched: unknown, limit = MAX_BODY_BYTES): void {
  const size = Buffer.byteLength(JSON.stringify(patched) ?? "");
  if (size > limit) {
    throw new ApiError(
      413,
      "RequestEntityTooLarge",
      `Request entity too large: the patched object is ${size} bytes, the limit is ${limit}`,
    );
  }
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

/** An own property's value (never one inherited from Object.prototype, e.g. for "constructor"). */
function ownValue(map: JsonMap, key: string): Json {
  return Object.hasOwn(map, key) ? map[key] : undefined;
}

function strategyAt(strategies: Strategies, path: string): Strategies[string] | undefined {
  return Object.hasOwn(strategies, path) ? strategies[path] : undefined;
}

function childPath(path: string, key: string): string {
  return path === "" ? key : `${path}.${key}`;
}

/**
 * Go's %v of a decoded JSON value, as upstream's strategic-merge errors print the patch map
 * (`map[$patch:bogus name:a]`: keys sorted, lists space-separated, null as <nil>).
 */
function goValue(value: Json): string {
  if (value === null || value === undefined) return "<nil>";
  if (Array.isArray(value)) return `[${value.map(goValue).join(" ")}]`;
  if (isMap(value)) {
    const keys = Object.keys(value).sort();
    return `map[${keys.map((key) => `${key}:${goValue(value[key])}`).join(" ")}]`;
  }
  return typeof value === "string" || typeof value === "number" || typeof value === "boolean"
    ? String(value)
    : "";
}

/** Go's %s of the directive's value (a string as is, anything else as fmt marks a bad verb). */
function goString(value: Json): string {
  if (typeof value === "string") return value;
  if (typeof value === "number") return `%!s(${Number.isInteger(value) ? "int64" : "float64"}=${value})`;
  if (typeof value === "boolean") return `%!s(bool=${value})`;
  if (value === null || value === undefined) return "%!s(<nil>)";
  return goValue(value);
}

/**
 * A strategic-merge error upstream's patcher passes on as a plain error (interpretStrategicMergePatchError
 * knows only its format errors): kube-apiserver answers it as a 500 without a reason, its text as the message.
 */
function strategicMergeError(message: string): ApiError {
  return new ApiError(500, "", message);
}

/** upstream's ErrBadPatchType: a `$patch` value the directive's position does not know. */
function unknownPatchType(directive: Json, map: JsonMap): ApiError {
  return strategicMergeError(`unknown patch type: ${goString(directive)} in map: ${goValue(map)}`);
}

function mergeMap(original: Json, patch: JsonMap, path: string, strategies: Strategies): Json {
  const directive = patch.$patch;
  if (directive === "replace") {
    const { $patch: _ignored, ...rest } = patch;
    return stripDirectives(rest);
  }
  if (directive === "delete") return undefined;
  // A map knows only replace and delete (upstream's handleDirectiveInMergeMap).
  if (Object.hasOwn(patch, "$patch")) throw unknownPatchType(directive, patch);
  let result = copyMap(original);
  const retainKeys = patch.$retainKeys;
  if (Array.isArray(retainKeys)) {
    const keep = new Set(retainKeys.map(String));
    const kept: JsonMap = {};
    for (const [key, value] of Object.entries(result)) if (keep.has(key)) setOwn(kept, key, value);
    result = kept;
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
      const current = ownValue(result, field);
      if (Array.isArray(current) && Array.isArray(value)) {
        const drop = new Set(value.map((v) => JSON.stringify(v)));
        setOwn(
          result,
          field,
          current.filter((item) => !drop.has(JSON.stringify(item))),
        );
      }
      continue;
    }
    if (key.startsWith("$")) continue;
    const fieldPath = childPath(path, key);
    if (value === null) {
      delete result[key];
    } else if (Array.isArray(value)) {
      setOwn(result, key, mergeList(ownValue(result, key), value, fieldPath, strategies));
    } else if (isMap(value)) {
      const merged = mergeMap(ownValue(result, key), value, fieldPath, strategies);
      if (merged === undefined) delete result[key];
      else setOwn(result, key, merged);
    } else {
      setOwn(result, key, value);
    }
  }
  for (const [field, order] of Object.entries(orders)) {
    const list = ownValue(result, field);
    if (Array.isArray(list))
      setOwn(result, field, reorder(list, order, strategyAt(strategies, childPath(path, field))));
  }
  return result;
}

function mergeList(original: Json, patch: unknown[], path: string, strategies: Strategies): Json {
  const strategy = strategyAt(strategies, path);
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
  checkListDirectives(patch);
  if (patch.some((item) => isMap(item) && item.$patch === "replace")) {
    return stripDirectives(patch.filter((item) => !(isMap(item) && item.$patch === "replace")));
  }
  // Linear in both lists: the items of each merge key are found through an index, not by
  // scanning the list once per patch item (40,000 keyed items took seconds on the event loop).
  const result: Json[] = [...current];
  const removed = new Set<number>();
  const positions = new Map<unknown, number[]>();
  const remember = (key: unknown, index: number): void => {
    const known = positions.get(key);
    if (known) known.push(index);
    else positions.set(key, [index]);
  };
  result.forEach((existing, index) => {
    if (isMap(existing)) remember(existing[mergeKey], index);
  });
  const itemPath = `${path}[]`;
  for (const item of patch) {
    if (!isMap(item)) {
      result.push(item);
      continue;
    }
    const key = item[mergeKey];
    if (item.$patch === "delete") {
      // Every item with the key goes, as upstream's deleteMatchingEntries.
      for (const index of positions.get(key) ?? []) removed.add(index);
      positions.delete(key);
      continue;
    }
    const index = positions.get(key)?.[0];
    if (index !== undefined) {
      result[index] = mergeMap(result[index], item, itemPath, strategies);
    } else {
      remember(key, result.length);
      result.push(mergeMap(undefined, item, itemPath, strategies));
    }
  }
  return removed.size === 0 ? result : result.filter((_, index) => !removed.has(index));
}

/**
 * The `$patch` values a keyed list's items may carry (upstream's mergeSliceWithSpecialElements):
 * delete and replace; merge is refused as upstream refuses it, anything else is unknown.
 */
function checkListDirectives(patch: unknown[]): void {
  for (const item of patch) {
    if (!isMap(item) || !Object.hasOwn(item, "$patch")) continue;
    const directive = item.$patch;
    if (directive === "delete" || directive === "replace") continue;
    if (directive === "merge")
      throw strategicMergeError("merging lists cannot yet be specified in the patch");
    throw unknownPatchType(directive, item);
  }
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
    setOwn(result, key, stripDirectives(inner));
  }
  return result;
}
