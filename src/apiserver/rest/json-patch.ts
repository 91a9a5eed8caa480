// JSON patch as kube-apiserver applies it: with evanphx/json-patch v4, which departs from
// RFC 6902 in ways clients rely on (the upstream csi-snapshotter's first write to a new
// VolumeSnapshotContent replaces /metadata/annotations on an object that has none):
// - `replace` of a member missing from an existing object sets it (RFC 6902: error);
// - negative array indices count from the end (-1 is the last element) in every operation;
// - `test` of a missing or null member passes when the value is null or absent, and compares
//   objects one-sidedly (every member of the document's object must be in the patch value);
// - `copy` from a missing member of an object copies null; `add`/`replace` without a value set
//   null;
// - `move` removes the source before resolving the destination, so a move into its own child
//   finds no destination (an error, never a cycle);
// - the path "" is only understood by `replace` (the whole document) and `test`;
// - a path is split on "/" and its first segment ignored, and array indices parse as Go's
//   strconv.Atoi (a sign and leading zeros are accepted).
// Error texts are the library's (its wrapped errors joined with ": "). The document is a deep
// copy; keys are read and written as own properties only, so "__proto__" is a plain key.
//
// A patch's work and growth are bounded while it applies, not after: kube-apiserver arms the
// library's AccumulatedCopySizeLimit with JSONPatchMaxCopyBytes (3 MiB), so 40 `copy`
// operations that each double the document stop after a few megabytes instead of allocating
// gigabytes. Every other operation grows the document by no more than its own value (bounded
// by the body limit). What upstream leaves unbounded but a single-threaded server cannot
// afford is bounded too: inserting into or removing from the front of a large array shifts
// every later element (10,000 of those on a million-element array block for seconds), so the
// elements all operations shift have a budget; a `copy` never nests the document deeper than
// the server stores (the clone and every later step recurse).

type JsonMap = Record<string, unknown>;
type Container = JsonMap | unknown[];

export interface JsonPatchLimits {
  /** Bytes all `copy` operations may add (upstream's AccumulatedCopySizeLimit). */
  maxCopyBytes: number;
  /** Array elements all operations may shift by inserting or removing before an array's end. */
  maxShiftedElements: number;
  /** Levels of nesting a `copy` may build (the server's decoding limit). */
  maxDepth: number;
}

/**
 * kube-apiserver's JSONPatchMaxCopyBytes (3 MiB); 32 Mi shifted elements (~0.3 s of moving
 * memory, far beyond any patch a client writes); the API server's MAX_NESTING_DEPTH.
 */
export const DEFAULT_JSON_PATCH_LIMITS: JsonPatchLimits = {
  maxCopyBytes: 3 * 1024 * 1024,
  maxShiftedElements: 32 * 1024 * 1024,
  maxDepth: 1_000,
};

/** An operation that does not apply, with the library's error text. */
export class JsonPatchError extends Error {}

const MISSING = "missing value";
const INVALID_INDEX = "invalid index referenced";

function isMap(value: unknown): value is JsonMap {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isContainer(value: unknown): value is Container {
  return typeof value === "object" && value !== null;
}

function setOwn(target: JsonMap, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function decodeKey(key: string): string {
  return key.replace(/~1/g, "/").replace(/~0/g, "~");
}

/** Go's strconv.Atoi: an optional sign and decimal digits. */
function atoi(key: string): number {
  if (!/^[+-]?\d+$/.test(key))
    throw new JsonPatchError(`strconv.Atoi: parsing ${JSON.stringify(key)}: invalid syntax`);
  const value = Number(key);
  if (!Number.isSafeInteger(value))
    throw new JsonPatchError(`strconv.Atoi: parsing ${JSON.stringify(key)}: value out of range`);
  return value;
}

function invalidIndex(index: number): JsonPatchError {
  return new JsonPatchError(`Unable to access invalid index: ${index}: ${INVALID_INDEX}`);
}

/** An existing element's position, negative indices counting from the end. */
function elementIndex(list: unknown[], key: string): number {
  let index = atoi(key);
  if (index < 0) {
    if (index < -list.length) throw invalidIndex(index);
    index += list.length;
  }
  if (index >= list.length) throw invalidIndex(index);
  return index;
}

/** The member or element at `key`: undefined for a missing member (no error, as the library). */
function get(container: Container, key: string): unknown {
  if (Array.isArray(container)) return container[elementIndex(container, key)];
  return Object.hasOwn(container, key) ? container[key] : undefined;
}

/** What one patch has spent of its limits so far. */
class Work {
  readonly #limits: JsonPatchLimits;
  #copied = 0;
  #shifted = 0;

  constructor(limits: JsonPatchLimits) {
    this.#limits = limits;
  }

  /** Counts the elements an insertion or removal at `index` moves. */
  shift(list: unknown[], index: number): void {
    this.#shifted += list.length - index;
    if (this.#shifted > this.#limits.maxShiftedElements)
      throw new JsonPatchError(
        `the patch shifts more than ${this.#limits.maxShiftedElements} array elements (an insertion or removal before the end of an array moves every later element)`,
      );
  }

  /** Counts a copied value before it is cloned; `depth` is where it goes. */
  copy(value: unknown, depth: number): void {
    const measured = measure(value);
    if (depth + measured.depth > this.#limits.maxDepth)
      throw new JsonPatchError(
        `Unable to complete the copy, the copy would nest the document deeper than ${this.#limits.maxDepth} levels`,
      );
    this.#copied += measured.bytes;
    if (this.#copied > this.#limits.maxCopyBytes)
      throw new JsonPatchError(
        `Unable to complete the copy, the accumulated size increase of copy is ${this.#copied}, exceeding the limit ${this.#limits.maxCopyBytes}`,
      );
  }
}

/**
 * The compact JSON size in bytes (as the library counts a copy: the length of its encoding)
 * and the nesting depth of `value`, walked without recursion so that no depth overflows the stack.
 */
function measure(value: unknown): { bytes: number; depth: number } {
  if (value === undefined) return { bytes: 0, depth: 0 };
  let bytes = 0;
  let maxDepth = 0;
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const { value: current, depth } = stack.pop()!;
    if (typeof current === "string") bytes += Buffer.byteLength(JSON.stringify(current));
    else if (typeof current !== "object" || current === null) bytes += String(current).length;
    else {
      maxDepth = Math.max(maxDepth, depth + 1);
      const entries = Array.isArray(current)
        ? current.map((item) => ["", item] as const)
        : Object.entries(current);
      bytes += 2 + Math.max(0, entries.length - 1);
      for (const [key, child] of entries) {
        if (!Array.isArray(current)) bytes += Buffer.byteLength(JSON.stringify(key)) + 1;
        stack.push({ value: child, depth: depth + 1 });
      }
    }
  }
  return { bytes, depth: maxDepth };
}

function add(container: Container, key: string, value: unknown, work: Work): void {
  if (!Array.isArray(container)) {
    setOwn(container, key, value);
    return;
  }
  if (key === "-") {
    container.push(value);
    return;
  }
  let index: number;
  try {
    index = atoi(key);
  } catch (error) {
    throw new JsonPatchError(`value was not a proper array index: '${key}': ${(error as Error).message}`);
  }
  const size = container.length + 1;
  if (index >= size) throw invalidIndex(index);
  if (index < 0) {
    if (index < -size) throw invalidIndex(index);
    index += size;
  }
  work.shift(container, index);
  container.splice(index, 0, value);
}

function remove(container: Container, key: string, work: Work): void {
  if (Array.isArray(container)) {
    const index = elementIndex(container, key);
    work.shift(container, index + 1);
    container.splice(index, 1);
    return;
  }
  if (!Object.hasOwn(container, key))
    throw new JsonPatchError(`Unable to remove nonexistent key: ${key}: ${MISSING}`);
  delete container[key];
}

function set(container: Container, key: string, value: unknown): void {
  if (Array.isArray(container)) container[elementIndex(container, key)] = value;
  else setOwn(container, key, value);
}

/** The container holding the last segment of `path`, and that segment; undefined when unreachable. */
function findObject(doc: Container, path: string): { container: Container; key: string } | undefined {
  const segments = path.split("/");
  if (segments.length < 2) return undefined;
  let container = doc;
  for (const segment of segments.slice(1, -1)) {
    let next: unknown;
    try {
      next = get(container, decodeKey(segment));
    } catch {
      return undefined;
    }
    if (!isContainer(next)) return undefined;
    container = next;
  }
  return { container, key: decodeKey(segments[segments.length - 1]!) };
}

/** The library's structural equality: one-sided for objects, exact for arrays and scalars. */
function equal(documentValue: unknown, patchValue: unknown): boolean {
  if (Array.isArray(documentValue)) {
    return (
      Array.isArray(patchValue) &&
      documentValue.length === patchValue.length &&
      documentValue.every((item, i) => equal(item, patchValue[i]))
    );
  }
  if (isMap(documentValue)) {
    if (!isMap(patchValue)) return false;
    for (const [key, value] of Object.entries(documentValue)) {
      if (!Object.hasOwn(patchValue, key)) return false;
      const other = patchValue[key];
      if (value === null && other === null) continue;
      if (value === null || other === null) return false;
      if (!equal(value, other)) return false;
    }
    return true;
  }
  // Scalars directly: encoding a large string of the document for each `test` would cost its
  // length every time.
  return documentValue === patchValue;
}

function stringField(operation: JsonMap, field: string): string | undefined {
  const value = Object.hasOwn(operation, field) ? operation[field] : undefined;
  return typeof value === "string" ? value : undefined;
}

/** The operation's value: null when absent, as the library stores a nil node. */
function valueOf(operation: JsonMap): unknown {
  const value = Object.hasOwn(operation, "value") ? operation.value : null;
  return value === undefined ? null : structuredClone(value);
}

/** Applies `operations` (already checked to be objects) to a copy of `document`, within `limits`. */
export function applyJsonPatchV4(
  document: unknown,
  operations: readonly JsonMap[],
  limits: JsonPatchLimits = DEFAULT_JSON_PATCH_LIMITS,
): unknown {
  const work = new Work(limits);
  let doc: Container = structuredClone(isContainer(document) ? document : {});
  for (const operation of operations) {
    const op = stringField(operation, "op") ?? "unknown";
    switch (op) {
      case "add":
      case "remove": {
        const path = stringField(operation, "path");
        if (path === undefined) throw new JsonPatchError(`${op} operation failed to decode path: ${MISSING}`);
        const target = findObject(doc, path);
        if (!target)
          throw new JsonPatchError(
            `${op} operation does not apply: doc is missing path: "${path}": ${MISSING}`,
          );
        try {
          if (op === "add") add(target.container, target.key, valueOf(operation), work);
          else remove(target.container, target.key, work);
        } catch (error) {
          throw new JsonPatchError(`error in ${op} for path: '${path}': ${(error as Error).message}`);
        }
        break;
      }
      case "replace": {
        const path = stringField(operation, "path");
        if (path === undefined)
          throw new JsonPatchError(
            `replace operation failed to decode path: operation missing path field: ${MISSING}`,
          );
        if (path === "") {
          const value = valueOf(operation);
          if (!isContainer(value))
            throw new JsonPatchError("replace operation value must be object or array: %!w(<nil>)");
          doc = value;
          break;
        }
        const target = findObject(doc, path);
        if (!target)
          throw new JsonPatchError(
            `replace operation does not apply: doc is missing path: ${path}: ${MISSING}`,
          );
        try {
          get(target.container, target.key);
        } catch {
          throw new JsonPatchError(
            `replace operation does not apply: doc is missing key: ${path}: ${MISSING}`,
          );
        }
        set(target.container, target.key, valueOf(operation));
        break;
      }
      case "move":
      case "copy": {
        const from = stringField(operation, "from");
        if (from === undefined)
          throw new JsonPatchError(
            `${op} operation failed to decode from: operation, missing from field: ${MISSING}`,
          );
        const source = findObject(doc, from);
        if (!source)
          throw new JsonPatchError(
            `${op} operation does not apply: doc is missing from path: ${from}: ${MISSING}`,
          );
        let value: unknown;
        try {
          value = get(source.container, source.key);
          if (op === "move") remove(source.container, source.key, work);
        } catch (error) {
          const where =
            op === "move" ? `error in move for path: '${source.key}'` : `error in copy for from: '${from}'`;
          throw new JsonPatchError(`${where}: ${(error as Error).message}`);
        }
        const path = stringField(operation, "path");
        if (path === undefined) throw new JsonPatchError(`${op} operation failed to decode path: ${MISSING}`);
        const target = findObject(doc, path);
        if (!target)
          throw new JsonPatchError(
            `${op} operation does not apply: doc is missing destination path: ${path}: ${MISSING}`,
          );
        // Upstream counts a copy (and fails on its limit) after finding the destination.
        if (op === "copy") work.copy(value, path.split("/").length - 1);
        try {
          add(
            target.container,
            target.key,
            op === "copy" ? structuredClone(value ?? null) : (value ?? null),
            work,
          );
        } catch (error) {
          const where =
            op === "move" ? `error in move for path: '${path}'` : "error while adding value during copy";
          throw new JsonPatchError(`${where}: ${(error as Error).message}`);
        }
        break;
      }
      case "test": {
        const path = stringField(operation, "path");
        if (path === undefined)
          throw new JsonPatchError(
            `test operation failed to decode path: operation missing path field: ${MISSING}`,
          );
        const expected = Object.hasOwn(operation, "value") ? operation.value : undefined;
        if (path === "") {
          if (!equal(doc, expected)) throw new JsonPatchError(`testing value ${path} failed: test failed`);
          break;
        }
        const target = findObject(doc, path);
        if (!target)
          throw new JsonPatchError(`test operation does not apply: is missing path: ${path}: ${MISSING}`);
        let actual: unknown;
        try {
          actual = get(target.container, target.key);
        } catch (error) {
          throw new JsonPatchError(`error in test for path: '${path}': ${(error as Error).message}`);
        }
        const passes =
          actual === undefined || actual === null
            ? expected === undefined || expected === null
            : expected !== undefined && equal(actual, expected);
        if (!passes) throw new JsonPatchError(`testing value ${path} failed: test failed`);
        break;
      }
      default:
        throw new JsonPatchError(`Unexpected kind: ${op}`);
    }
  }
  return doc;
}
