// Type checking of built-in objects as kube-apiserver's decoding into the Go types does it: a
// value of the wrong JSON type (a string for an int32, a string for a list, a number for a map
// value) fails the whole request with 400 BadRequest and encoding/json's message, e.g.
// `json: cannot unmarshal string into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32`
// (the struct is the innermost Go struct holding the field; the path is the JSON field names
// from the root, without list indexes or map keys). Custom decoders keep their own messages:
// []byte fields take standard base64 (`illegal base64 data at input byte N`), Quantity takes a
// string or number in quantity syntax, Time an RFC 3339 string. null is always accepted (the
// zero value). Unknown fields are not this module's business (builtin-schema.ts).
//
// Invariant: never mutates the object; returns the FIRST mismatch in document order.

import { parseQuantity } from "../../api/index.ts";
import { ValidationError, isRecord } from "../../base/index.ts";
import { attributesOf } from "./builtin-schema.ts";

/**
 * Fields the generated models type as string (or map of string) whose Go type is
 * resource.Quantity (or v1.ResourceList): they also take JSON numbers. Keyed "Model.field".
 */
const QUANTITY_FIELDS: ReadonlySet<string> = new Set([
  "V1ResourceRequirements.limits",
  "V1ResourceRequirements.requests",
  "V1VolumeResourceRequirements.limits",
  "V1VolumeResourceRequirements.requests",
  "V1PersistentVolumeSpec.capacity",
  "V1PersistentVolumeClaimStatus.capacity",
  "V1PersistentVolumeClaimStatus.allocatedResources",
  "V1NodeStatus.capacity",
  "V1NodeStatus.allocatable",
  "V1ContainerStatus.allocatedResources",
  "V1PodSpec.overhead",
  "V1EmptyDirVolumeSource.sizeLimit",
  "V1ResourceFieldSelector.divisor",
  "V1CSIStorageCapacity.capacity",
  "V1CSIStorageCapacity.maximumVolumeSize",
]);

/** The Go struct name of a model: "V1ContainerPort" → "ContainerPort", "CoreV1Event" → "Event". */
function structName(model: string): string {
  return /^(?:[A-Z][a-z]+)?V\d+(?:alpha\d+|beta\d+)?([A-Z].*)$/.exec(model)?.[1] ?? model;
}

/** The Go type of a model: "V1PodSpec" → "v1.PodSpec", "V1beta1X" → "v1beta1.X". */
function goModelType(model: string): string {
  const match = /^(?:[A-Z][a-z]+)?(V\d+(?:alpha\d+|beta\d+)?)([A-Z].*)$/.exec(model);
  return match === null ? model : `${(match[1] ?? "").toLowerCase()}.${match[2] ?? ""}`;
}

interface FieldType {
  type: string;
  format: string;
  quantity: boolean;
}

function goType(field: FieldType): string {
  const { type, format } = field;
  const array = /^Array<(.+)>$/.exec(type);
  if (array !== null) return `[]${goType({ ...field, type: array[1] ?? "any" })}`;
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map !== null) {
    if (field.quantity) return "v1.ResourceList";
    return `map[string]${goType({ ...field, type: map[1] ?? "any" })}`;
  }
  switch (type) {
    case "string":
      if (field.quantity) return "resource.Quantity";
      return format === "byte" ? "[]uint8" : "string";
    case "number":
      return format === "int32" || format === "int64" ? format : "float64";
    case "boolean":
      return "bool";
    case "Date":
    case "V1MicroTime":
      return "string";
    case "IntOrString":
      return "int32";
    default:
      return goModelType(type);
  }
}

/** encoding/json's name for the JSON type of a value. */
function jsonKind(value: unknown): string {
  if (Array.isArray(value)) return "array";
  if (typeof value === "boolean") return "bool";
  return typeof value === "object" ? "object" : typeof value;
}

/** Where the walk is: the innermost Go struct and the dotted JSON field path from the root. */
interface Position {
  struct: string;
  path: string;
}

class DecodeError extends Error {}

function mismatch(value: unknown, field: FieldType, at: Position, detail?: string): DecodeError {
  const what = detail ?? jsonKind(value);
  return new DecodeError(
    `json: cannot unmarshal ${what} into Go struct field ${at.struct}.${at.path} of type ${goType(field)}`,
  );
}

const INT_RANGES: Readonly<Record<string, readonly [number, number]>> = {
  int32: [-2147483648, 2147483647],
  int64: [-9223372036854775808, 9223372036854775807],
};

function checkInteger(value: number, field: FieldType, at: Position, bits: string): void {
  const range = INT_RANGES[bits];
  if (range === undefined) return;
  if (!Number.isInteger(value) || value < range[0] || value > range[1]) {
    throw mismatch(value, { ...field, type: "number", format: bits }, at, `number ${String(value)}`);
  }
}

/**
 * Go's base64.StdEncoding.Decode error offset for a string, or undefined when it decodes
 * (padding required; CR and LF ignored; trailing garbage after padding is an error).
 */
export function base64ErrorOffset(text: string): number | undefined {
  const src = Buffer.from(text, "utf8");
  const isNewline = (c: number | undefined): boolean => c === 0x0a || c === 0x0d;
  const isAlphabet = (c: number): boolean =>
    (c >= 0x41 && c <= 0x5a) ||
    (c >= 0x61 && c <= 0x7a) ||
    (c >= 0x30 && c <= 0x39) ||
    c === 0x2b ||
    c === 0x2f;
  let si = 0;
  for (;;) {
    for (let j = 0; j < 4; j++) {
      if (si === src.length) return j === 0 ? undefined : si - j;
      const c = src[si++] ?? 0;
      if (isAlphabet(c)) continue;
      if (isNewline(c)) {
        j--;
        continue;
      }
      if (c !== 0x3d || j < 2) return si - 1;
      if (j === 2) {
        while (si < src.length && isNewline(src[si])) si++;
        if (si === src.length) return src.length;
        if (src[si] !== 0x3d) return si - 1;
        si++;
      }
      while (si < src.length && isNewline(src[si])) si++;
      return si < src.length ? si : undefined;
    }
  }
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$/;

function checkTime(value: string): void {
  if (RFC3339.test(value)) return;
  // Go's time.Parse names the first layout element that fails; the year is by far the most
  // common culprit and the only one reported precisely here.
  const layout = "2006-01-02T15:04:05Z07:00";
  const element = /^\d{4}/.test(value) ? layout : "2006";
  throw new DecodeError(
    `parsing time ${JSON.stringify(value)} as "${layout}": cannot parse ${JSON.stringify(value)} as "${element}"`,
  );
}

function checkQuantity(value: unknown): void {
  if (typeof value === "number") {
    if (Number.isFinite(value)) return;
  } else if (typeof value === "string") {
    parseQuantity(value); // throws upstream's message
    return;
  }
  parseQuantity(JSON.stringify(value));
}

function checkScalar(value: unknown, field: FieldType, at: Position): void {
  switch (field.type) {
    case "string":
      if (field.quantity) return checkQuantity(value);
      if (typeof value !== "string") throw mismatch(value, field, at);
      if (field.format === "byte") {
        const offset = base64ErrorOffset(value);
        if (offset !== undefined) throw new DecodeError(`illegal base64 data at input byte ${offset}`);
      }
      return;
    case "number":
      if (typeof value !== "number") throw mismatch(value, field, at);
      return checkInteger(value, field, at, field.format);
    case "boolean":
      if (typeof value !== "boolean") throw mismatch(value, field, at);
      return;
    case "Date":
    case "V1MicroTime":
      if (typeof value !== "string") throw mismatch(value, field, at);
      return checkTime(value);
    case "IntOrString":
      if (typeof value === "string") return;
      if (typeof value !== "number") throw mismatch(value, field, at);
      return checkInteger(value, field, at, "int32");
    case "any":
    case "object":
      return;
    default:
      checkModel(value, field, at);
  }
}

function checkModel(value: unknown, field: FieldType, at: Position): void {
  const attributes = attributesOf(field.type);
  if (attributes === undefined) return;
  if (!isRecord(value)) throw mismatch(value, field, at);
  const struct = structName(field.type);
  for (const [key, item] of Object.entries(value)) {
    const attribute = attributes.get(key);
    if (attribute === undefined || item === null) continue;
    const next: FieldType = {
      type: attribute.type,
      format: attribute.format,
      quantity: QUANTITY_FIELDS.has(`${field.type}.${key}`),
    };
    checkValue(item, next, { struct, path: at.path === "" ? key : `${at.path}.${key}` });
  }
}

function checkValue(value: unknown, field: FieldType, at: Position): void {
  if (value === null) return;
  const array = /^Array<(.+)>$/.exec(field.type);
  if (array !== null) {
    if (!Array.isArray(value)) throw mismatch(value, field, at);
    const element = { ...field, type: array[1] ?? "any" };
    for (const item of value) checkValue(item, element, at);
    return;
  }
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(field.type);
  if (map !== null) {
    if (!isRecord(value)) throw mismatch(value, field, at);
    const element = { ...field, type: map[1] ?? "any" };
    for (const item of Object.values(value)) checkValue(item, element, at);
    return;
  }
  checkScalar(value, field, at);
}

/**
 * The decoding error of a built-in object under its model, as the part of upstream's message
 * after `<Kind> in version "v1" cannot be handled as a <Kind>: `; undefined when it decodes.
 */
export function builtinDecodeError(modelName: string, object: unknown): string | undefined {
  try {
    checkModel(object, { type: modelName, format: "", quantity: false }, { struct: "", path: "" });
    return undefined;
  } catch (error) {
    if (error instanceof DecodeError) return error.message;
    if (error instanceof ValidationError) return error.message;
    throw error;
  }
}
