// A CSI message from hand-written JSON (`csikit csi --json`), checked against the generated
// field table. The codec itself is lenient as proto-loader is (unknown fields and unknown enum
// names are dropped silently), which is right on the wire and wrong for a person typing a
// request: a misspelt field would be sent as "not set". Here every field, enum name and value
// type is checked and a mistake is a ValidationError naming the field's path. Field names may be
// given as in the proto (snake_case) or as the decoded messages print them (camelCase).

import { ValidationError, isRecord } from "../base/index.ts";
import { enumValues, messageFields } from "./generated/codec.ts";

const LABEL_REPEATED = 1;
const LABEL_MAP = 2;
const INT_TYPES = new Set(["int32", "uint32", "int64", "uint64"]);

/** camelCase of a proto field name ("volume_capabilities" → "volumeCapabilities"). */
function camel(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  return typeof value === "object" ? "an object" : `${typeof value} ${JSON.stringify(value)}`;
}

/**
 * `value` as a message of `messageType` ("csi.v1.CreateVolumeRequest") with camelCase keys;
 * throws a ValidationError naming the first wrong field (`where` prefixes its path).
 */
export function messageFromJson(
  messageType: string,
  value: unknown,
  where = "request",
): Record<string, unknown> {
  const rows = messageFields[messageType];
  if (rows === undefined) throw new ValidationError(`${messageType} is not a CSI message`);
  if (!isRecord(value) || Array.isArray(value)) {
    throw new ValidationError(`${where}: want an object (${messageType}), got ${describe(value)}`);
  }
  const oneofs = new Set(rows.flatMap((row) => (row[4] === undefined ? [] : [row[4]])));
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    const name = camel(key);
    const row = rows.find((candidate) => candidate[0] === name);
    const path = `${where}.${key}`;
    if (row === undefined) {
      // proto-loader's virtual oneof discriminator: the member set says it already.
      if (oneofs.has(name)) continue;
      const known = rows.map((candidate) => candidate[0]).join(", ") || "none";
      throw new ValidationError(`${path}: no such field in ${messageType} (fields: ${known})`);
    }
    if (item === null || item === undefined) continue;
    const [, , type, label] = row;
    if (label === LABEL_MAP) out[name] = stringMap(item, path);
    else if (label === LABEL_REPEATED) {
      if (!Array.isArray(item)) throw new ValidationError(`${path}: want a list, got ${describe(item)}`);
      out[name] = item.map((element: unknown, i) => fieldValue(type, element, `${path}[${i}]`));
    } else out[name] = fieldValue(type, item, path);
  }
  return out;
}

function fieldValue(type: string, value: unknown, path: string): unknown {
  if (type in messageFields) return messageFromJson(type, value, path);
  const names = enumValues[type];
  if (names !== undefined) {
    if (typeof value === "string" && names.some(([name]) => name === value)) return value;
    if (typeof value === "number" && names.some(([, number]) => number === value)) return value;
    throw new ValidationError(
      `${path}: ${describe(value)} is not a ${type} (one of ${names.map(([name]) => name).join(", ")})`,
    );
  }
  if (type === "string") {
    if (typeof value !== "string")
      throw new ValidationError(`${path}: want a string, got ${describe(value)}`);
    return value;
  }
  if (type === "bool") {
    if (typeof value !== "boolean")
      throw new ValidationError(`${path}: want true or false, got ${describe(value)}`);
    return value;
  }
  if (INT_TYPES.has(type)) {
    const text = typeof value === "number" || typeof value === "string" ? String(value) : "";
    if (!/^-?\d+$/.test(text) || (type.startsWith("u") && text.startsWith("-"))) {
      throw new ValidationError(`${path}: want an integer (${type}), got ${describe(value)}`);
    }
    return type.endsWith("64") ? text : Number(text);
  }
  if (type === "bytes") {
    if (typeof value !== "string")
      throw new ValidationError(`${path}: want base64 text, got ${describe(value)}`);
    return Buffer.from(value, "base64");
  }
  throw new ValidationError(`${path}: fields of type ${type} cannot be given as JSON`);
}

function stringMap(value: unknown, path: string): Record<string, string> {
  if (!isRecord(value) || Array.isArray(value)) {
    throw new ValidationError(`${path}: want a map of strings, got ${describe(value)}`);
  }
  const out: Record<string, string> = {};
  for (const [key, item] of Object.entries(value)) {
    // The value stays out of the message: a map may hold secrets.
    if (typeof item !== "string")
      throw new ValidationError(`${path}.${key}: want a string, got ${typeof item}`);
    out[key] = item;
  }
  return out;
}
