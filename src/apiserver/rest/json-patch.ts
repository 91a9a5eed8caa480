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

type JsonMap = Record<string, unknown>;
type Container = JsonMap | unknown[];

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

function add(container: Container, key: string, value: unknown): void {
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
  container.splice(index, 0, value);
}

function remove(container: Container, key: string): void {
  if (Array.isArray(container)) {
    container.splice(elementIndex(container, key), 1);
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
  return JSON.stringify(documentValue) === JSON.stringify(patchValue);
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

/** Applies `operations` (already checked to be objects) to a copy of `document`. */
export function applyJsonPatchV4(document: unknown, operations: readonly JsonMap[]): unknown {
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
          if (op === "add") add(target.container, target.key, valueOf(operation));
          else remove(target.container, target.key);
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
          if (op === "move") remove(source.container, source.key);
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
        try {
          add(target.container, target.key, op === "copy" ? structuredClone(value ?? null) : (value ?? null));
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
