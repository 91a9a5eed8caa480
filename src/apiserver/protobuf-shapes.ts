// The one place where the JSON shape of a Kubernetes object and its protobuf shape meet. Both
// directions walk the protobufjs reflection of the message (built from src/apiserver/proto,
// upstream's field names and numbers), so only what JSON spells differently is written here:
// - Go structs embedded with `json:",inline"` are a field of their own in protobuf but flat
//   in JSON (Volume.volumeSource, PersistentVolumeSpec.persistentVolumeSource, Probe.handler,
//   EphemeralContainer.ephemeralContainerCommon, every embedded LocalObjectReference);
// - meta/v1 Time is {seconds, nanos} in protobuf and RFC 3339 in whole seconds in JSON;
//   MicroTime the same with six fractional digits; a zero Time is an empty message (JSON null);
// - resource.Quantity is {string}; intstr.IntOrString is {type, intVal, strVal}; a number or a
//   string in JSON;
// - runtime.RawExtension {raw} and meta/v1 FieldsV1 {Raw} carry JSON bytes: the embedded
//   JSON value itself in JSON;
// - named slice types (authentication/authorization ExtraValue) are {items} in protobuf and a
//   plain array in JSON;
// - bytes are base64 strings in JSON, int64 are numbers.
// Go's generated marshalers write every non-pointer field, empty strings included, and JSON
// omits most of them (omitempty): an empty string read from the wire is dropped, except where
// the field is a Go pointer whose empty value means something (PVC spec.storageClassName "" asks
// for no class). Zero numbers and false are kept: pointer fields (replicas, allowVolumeExpansion,
// runAsUser...) set to zero are common and must survive; for the others zero equals absent —
// except metadata.generation, which every Go client writes as 0 and no JSON carries.

import protobuf from "protobufjs";
import { badRequest } from "./status.ts";

const META = "k8s.io.apimachinery.pkg.apis.meta.v1";
const TIME = `${META}.Time`;
const MICRO_TIME = `${META}.MicroTime`;
const FIELDS_V1 = `${META}.FieldsV1`;
const QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity";
const INT_OR_STRING = "k8s.io.apimachinery.pkg.util.intstr.IntOrString";
const RAW_EXTENSION = "k8s.io.apimachinery.pkg.runtime.RawExtension";
const ITEM_LISTS = new Set([
  "k8s.io.api.authentication.v1.ExtraValue",
  "k8s.io.api.authorization.v1.ExtraValue",
]);

/** Embedded Go structs (`json:",inline"`): their fields sit in the parent's JSON object. */
const INLINE = new Set([
  "k8s.io.api.core.v1.Volume.volumeSource",
  "k8s.io.api.core.v1.PersistentVolumeSpec.persistentVolumeSource",
  "k8s.io.api.core.v1.Probe.handler",
  "k8s.io.api.core.v1.EphemeralContainer.ephemeralContainerCommon",
]);
function isInline(field: protobuf.Field): boolean {
  return field.name === "localObjectReference" || INLINE.has(field.fullName.replace(/^\./, ""));
}

/** Go pointer strings whose empty value differs from unset: kept when read from the wire. */
const KEEP_EMPTY = new Set(["k8s.io.api.core.v1.PersistentVolumeClaimSpec.storageClassName"]);

/** Non-pointer omitempty numbers that every Go-encoded object carries as 0: dropped when 0. */
const DROP_ZERO = new Set([`${META}.ObjectMeta.generation`]);

type Json = Record<string, unknown>;

function typeName(type: protobuf.Type): string {
  return type.fullName.slice(1);
}

function isRecord(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// ---- JSON → protobuf message object (what protobufjs's Type.encode takes) ----------------------

/** The protobufjs message object for a JSON object of `type`; fields protobuf lacks are dropped. */
export function toMessage(type: protobuf.Type, json: unknown, path = ""): Json {
  if (!isRecord(json)) throw badRequest(`${path || "object"}: expected an object`);
  const out: Json = {};
  for (const field of type.fieldsArray) {
    if (isInline(field)) {
      const inner = toMessage(field.resolvedType as protobuf.Type, json, path);
      if (Object.keys(inner).length > 0) out[field.name] = inner;
      continue;
    }
    const value = json[field.name];
    if (value === undefined || value === null) continue;
    const at = path ? `${path}.${field.name}` : field.name;
    if (field.map) {
      if (!isRecord(value)) throw badRequest(`${at}: expected an object`);
      const map: Json = {};
      for (const [key, entry] of Object.entries(value)) {
        if (entry !== null && entry !== undefined) map[key] = toValue(field, entry, `${at}[${key}]`);
      }
      out[field.name] = map;
    } else if (field.repeated) {
      if (!Array.isArray(value)) throw badRequest(`${at}: expected an array`);
      out[field.name] = value.map((entry, i) => toValue(field, entry, `${at}[${i}]`));
    } else {
      out[field.name] = toValue(field, value, at);
    }
  }
  return out;
}

function toValue(field: protobuf.Field, value: unknown, at: string): unknown {
  const resolved = field.resolvedType;
  if (resolved instanceof protobuf.Type) return toSpecial(resolved, value, at);
  switch (field.type) {
    case "string":
      if (typeof value !== "string") throw badRequest(`${at}: expected a string`);
      return value;
    case "bytes":
      if (typeof value !== "string") throw badRequest(`${at}: expected a base64 string`);
      return Buffer.from(value, "base64");
    case "bool":
      if (typeof value !== "boolean") throw badRequest(`${at}: expected a boolean`);
      return value;
    default:
      if (typeof value !== "number" || !Number.isFinite(value)) throw badRequest(`${at}: expected a number`);
      return value;
  }
}

function toSpecial(type: protobuf.Type, value: unknown, at: string): unknown {
  switch (typeName(type)) {
    case TIME:
    case MICRO_TIME: {
      if (typeof value !== "string") throw badRequest(`${at}: expected an RFC 3339 time`);
      const ms = Date.parse(value);
      if (Number.isNaN(ms)) throw badRequest(`${at}: expected an RFC 3339 time, got "${value}"`);
      const seconds = Math.floor(ms / 1000);
      const fraction = /\.(\d+)/.exec(value)?.[1] ?? "";
      const nanos = Number((fraction + "000000000").slice(0, 9));
      return typeName(type) === TIME ? { seconds } : { seconds, nanos };
    }
    case QUANTITY:
      if (typeof value !== "string" && typeof value !== "number")
        throw badRequest(`${at}: expected a quantity`);
      return { string: String(value) };
    case INT_OR_STRING:
      if (typeof value === "number") return { type: 0, intVal: value };
      if (typeof value === "string") return { type: 1, strVal: value };
      throw badRequest(`${at}: expected an integer or a string`);
    case RAW_EXTENSION:
      return { raw: Buffer.from(JSON.stringify(value)) };
    case FIELDS_V1:
      return { Raw: Buffer.from(JSON.stringify(value)) };
    default:
      if (ITEM_LISTS.has(typeName(type))) {
        if (!Array.isArray(value)) throw badRequest(`${at}: expected an array`);
        return { items: value.map((item) => String(item)) };
      }
      return toMessage(type, value, at);
  }
}

// ---- protobuf message object (Type.decode's result) → JSON -------------------------------------

/** The JSON object of a decoded message of `type`. */
export function fromMessage(type: protobuf.Type, message: object): Json {
  const out: Json = {};
  for (const field of type.fieldsArray) {
    // Fields absent from the wire are only on the message prototype (their defaults).
    if (!Object.hasOwn(message, field.name)) continue;
    const value: unknown = Reflect.get(message, field.name);
    if (value === undefined || value === null) continue;
    if (isInline(field)) {
      Object.assign(out, fromMessage(field.resolvedType as protobuf.Type, value as Json));
      continue;
    }
    if (field.map) {
      const entries = Object.entries(value as Json);
      if (entries.length === 0) continue;
      const map: Json = {};
      for (const [key, entry] of entries) map[key] = fromValue(field, entry, true);
      out[field.name] = map;
    } else if (field.repeated) {
      const list = value as unknown[];
      if (list.length === 0) continue;
      out[field.name] = list.map((entry) => fromValue(field, entry, true));
    } else {
      const name = field.fullName.slice(1);
      const converted = fromValue(field, value, KEEP_EMPTY.has(name));
      if (converted === undefined || (converted === 0 && DROP_ZERO.has(name))) continue;
      out[field.name] = converted;
    }
  }
  return out;
}

function fromValue(field: protobuf.Field, value: unknown, keepEmpty: boolean): unknown {
  const resolved = field.resolvedType;
  if (resolved instanceof protobuf.Type) return fromSpecial(resolved, value as Json);
  switch (field.type) {
    case "string":
      return value === "" && !keepEmpty ? undefined : value;
    case "bytes":
      return Buffer.from(value as Uint8Array).toString("base64");
    case "bool":
      return value;
    default:
      return toNumber(value);
  }
}

function toNumber(value: unknown): number {
  if (typeof value === "number") return value;
  if (isRecord(value) && typeof value.toNumber === "function") return (value.toNumber as () => number)();
  return Number(value);
}

function fromSpecial(type: protobuf.Type, message: Json): unknown {
  switch (typeName(type)) {
    case TIME:
    case MICRO_TIME: {
      const seconds = toNumber(message.seconds ?? 0);
      const nanos = toNumber(message.nanos ?? 0);
      if (!Object.hasOwn(message, "seconds") && !Object.hasOwn(message, "nanos")) return undefined;
      const base = new Date(seconds * 1000).toISOString().slice(0, 19);
      // Time keeps whole seconds (upstream's Time drops nanos on decode as JSON has none).
      if (typeName(type) === TIME) return `${base}Z`;
      return `${base}.${String(Math.floor(nanos / 1000)).padStart(6, "0")}Z`;
    }
    case QUANTITY:
      return typeof message.string === "string" && message.string !== "" ? message.string : "0";
    case INT_OR_STRING:
      return toNumber(message.type ?? 0) === 1 ? (message.strVal ?? "") : toNumber(message.intVal ?? 0);
    case RAW_EXTENSION:
    case FIELDS_V1: {
      const raw = (typeName(type) === RAW_EXTENSION ? message.raw : message.Raw) as Uint8Array | undefined;
      if (!raw || raw.length === 0) return undefined;
      return parseRaw(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength));
    }
    default:
      if (ITEM_LISTS.has(typeName(type))) return [...((message.items as string[] | undefined) ?? [])];
      return fromMessage(type, message);
  }
}

function parseRaw(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString("utf8"));
  } catch {
    throw badRequest("a raw extension in the protobuf body does not hold JSON");
  }
}
