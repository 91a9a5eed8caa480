// The one place where the JSON shape of a Kubernetes object and its protobuf shape meet. Both
// directions walk the protobufjs reflection of the message (built from src/apiserver/encoding/proto,
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
import { ApiError, badRequest } from "../transport/status.ts";
import { errorMessage, isRecord } from "../../base/index.ts";

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

// ---- per-type plans -----------------------------------------------------------------------------

/** How one field maps, resolved once per message type (protobufjs's getters are not cheap). */
interface FieldPlan {
  name: string;
  field: protobuf.Field;
  shape: "inline" | "map" | "repeated" | "single";
  /** The message type of the value, when it is a message. */
  type: protobuf.Type | undefined;
  /** The special JSON spelling of that message type, if any. */
  special: string | undefined;
  scalar: string;
  keepEmpty: boolean;
  dropZero: boolean;
}

const SPECIALS = new Set([
  TIME,
  MICRO_TIME,
  FIELDS_V1,
  QUANTITY,
  INT_OR_STRING,
  RAW_EXTENSION,
  ...ITEM_LISTS,
]);
const plans = new WeakMap<protobuf.Type, FieldPlan[]>();

function planOf(type: protobuf.Type): FieldPlan[] {
  let plan = plans.get(type);
  if (plan) return plan;
  plan = type.fieldsArray.map((field) => {
    const fullName = field.fullName.slice(1);
    const resolved = field.resolvedType instanceof protobuf.Type ? field.resolvedType : undefined;
    const special = resolved && SPECIALS.has(typeName(resolved)) ? typeName(resolved) : undefined;
    return {
      name: field.name,
      field,
      shape: isInline(field) ? "inline" : field.map ? "map" : field.repeated ? "repeated" : "single",
      type: resolved,
      special,
      scalar: field.type,
      keepEmpty: KEEP_EMPTY.has(fullName),
      dropZero: DROP_ZERO.has(fullName),
    };
  });
  plans.set(type, plan);
  return plan;
}

// ---- JSON → protobuf message object (what protobufjs's Type.encode takes) ----------------------

/** The protobufjs message object for a JSON object of `type`; fields protobuf lacks are dropped. */
export function toMessage(type: protobuf.Type, json: unknown, path = ""): Json {
  if (!isRecord(json)) throw badRequest(`${path || "object"}: expected an object`);
  const out: Json = {};
  for (const plan of planOf(type)) {
    if (plan.shape === "inline") {
      const inner = toMessage(plan.type!, json, path);
      for (const _ in inner) {
        out[plan.name] = inner;
        break;
      }
      continue;
    }
    const value = json[plan.name];
    if (value === undefined || value === null) continue;
    const at = path ? `${path}.${plan.name}` : plan.name;
    if (plan.shape === "map") {
      if (!isRecord(value)) throw badRequest(`${at}: expected an object`);
      const map: Json = {};
      for (const key in value) {
        const entry = value[key];
        if (entry !== null && entry !== undefined) map[key] = toValue(plan, entry, at);
      }
      out[plan.name] = map;
    } else if (plan.shape === "repeated") {
      if (!Array.isArray(value)) throw badRequest(`${at}: expected an array`);
      const list: unknown[] = new Array(value.length);
      for (let i = 0; i < value.length; i++) list[i] = toValue(plan, value[i], at);
      out[plan.name] = list;
    } else {
      out[plan.name] = toValue(plan, value, at);
    }
  }
  return out;
}

function toValue(plan: FieldPlan, value: unknown, at: string): unknown {
  if (plan.type) return plan.special ? toSpecial(plan.special, value, at) : toMessage(plan.type, value, at);
  switch (plan.scalar) {
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

function toSpecial(special: string, value: unknown, at: string): unknown {
  switch (special) {
    case TIME:
    case MICRO_TIME: {
      if (typeof value !== "string") throw badRequest(`${at}: expected an RFC 3339 time`);
      const ms = Date.parse(value);
      if (Number.isNaN(ms)) throw badRequest(`${at}: expected an RFC 3339 time, got "${value}"`);
      const seconds = Math.floor(ms / 1000);
      if (special === TIME) return { seconds };
      const fraction = /\.(\d+)/.exec(value)?.[1] ?? "";
      return { seconds, nanos: Number((fraction + "000000000").slice(0, 9)) };
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
      // The named slice types.
      if (!Array.isArray(value)) throw badRequest(`${at}: expected an array`);
      return { items: value.map((item) => String(item)) };
  }
}

// ---- protobuf message object (Type.decode's result) → JSON -------------------------------------
// Bodies come from clients: every value that cannot become JSON is a 400 naming its field,
// never an exception of its own (a 500).

/** The JSON object of a decoded message of `type`; `path` names its fields in errors. */
export function fromMessage(type: protobuf.Type, message: object, path = ""): Json {
  const out: Json = {};
  for (const plan of planOf(type)) {
    // Fields absent from the wire are only on the message prototype (their defaults).
    if (!Object.hasOwn(message, plan.name)) continue;
    const value: unknown = Reflect.get(message, plan.name);
    if (value === undefined || value === null) continue;
    const at = path ? `${path}.${plan.name}` : plan.name;
    try {
      if (plan.shape === "inline") {
        Object.assign(out, fromMessage(plan.type!, value, path));
      } else if (plan.shape === "map") {
        const entries = Object.entries(value);
        if (entries.length === 0) continue;
        const map: Json = {};
        for (const [key, entry] of entries)
          map[key] = fromEntry(plan, entry, `${at}[${JSON.stringify(key)}]`);
        out[plan.name] = map;
      } else if (plan.shape === "repeated") {
        const list = value as unknown[];
        if (list.length === 0) continue;
        out[plan.name] = list.map((entry, i) => fromValue(plan, entry, true, `${at}[${i}]`));
      } else {
        const converted = fromValue(plan, value, plan.keepEmpty, at);
        if (converted === undefined || (converted === 0 && plan.dropZero)) continue;
        out[plan.name] = converted;
      }
    } catch (error) {
      if (error instanceof ApiError) throw error;
      throw badRequest(`${at}: ${errorMessage(error)}`);
    }
  }
  return out;
}

/**
 * A map entry's value. An entry without one (only its key on the wire) holds the value type's
 * zero value, as Go's generated Unmarshal gives it: "" for strings and bytes, an empty message
 * (a zero Quantity is "0").
 */
function fromEntry(plan: FieldPlan, value: unknown, at: string): unknown {
  if (value === null || value === undefined) {
    if (!plan.type) return plan.scalar === "string" || plan.scalar === "bytes" ? "" : 0;
    return fromValue(plan, {}, true, at);
  }
  return fromValue(plan, value, true, at);
}

function fromValue(plan: FieldPlan, value: unknown, keepEmpty: boolean, at: string): unknown {
  if (plan.type)
    return plan.special
      ? fromSpecial(plan.special, value as Json, at)
      : fromMessage(plan.type, value as Json, at);
  switch (plan.scalar) {
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

/** Seconds of 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z: the years JSON (RFC 3339) can spell. */
const MIN_SECONDS = -62167219200;
const MAX_SECONDS = 253402300799;

function fromSpecial(special: string, message: Json, at: string): unknown {
  switch (special) {
    case TIME:
    case MICRO_TIME: {
      if (!Object.hasOwn(message, "seconds") && !Object.hasOwn(message, "nanos")) return undefined;
      const nanos = toNumber(message.nanos ?? 0);
      // Go's time.Unix normalizes nanoseconds outside [0, 1e9) into the seconds.
      const seconds = toNumber(message.seconds ?? 0) + Math.floor(nanos / 1e9);
      const micros = Math.floor((((nanos % 1e9) + 1e9) % 1e9) / 1000);
      if (!(seconds >= MIN_SECONDS && seconds <= MAX_SECONDS))
        throw badRequest(`${at}: the time (${seconds} seconds) is outside the years 0000 to 9999`);
      const base = new Date(seconds * 1000).toISOString().slice(0, 19);
      // Time keeps whole seconds (upstream's Time drops nanos on decode as JSON has none).
      if (special === TIME) return `${base}Z`;
      return `${base}.${String(micros).padStart(6, "0")}Z`;
    }
    case QUANTITY:
      return typeof message.string === "string" && message.string !== "" ? message.string : "0";
    case INT_OR_STRING:
      return toNumber(message.type ?? 0) === 1 ? (message.strVal ?? "") : toNumber(message.intVal ?? 0);
    case RAW_EXTENSION:
    case FIELDS_V1: {
      const raw = (special === RAW_EXTENSION ? message.raw : message.Raw) as Uint8Array | undefined;
      if (!raw || raw.length === 0) return undefined;
      return parseRaw(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength), at);
    }
    default:
      return [...((message.items as string[] | undefined) ?? [])];
  }
}

function parseRaw(raw: Buffer, at: string): unknown {
  try {
    return JSON.parse(raw.toString("utf8"));
  } catch (error) {
    throw badRequest(`${at}: the raw extension does not hold JSON: ${errorMessage(error)}`);
  }
}
