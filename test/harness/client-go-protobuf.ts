// A reader of Kubernetes protobuf bodies that does what client-go does with them and shares
// nothing with csikit's codec (src/apiserver/encoding/protobuf*.ts and its generated
// descriptor), so that a test can see what an upstream client sees:
// - the message schemas are loaded straight from the .proto files (upstream's names, numbers and
//   types, src/apiserver/encoding/proto) with protobufjs's own parser;
// - the framing layers are read by hand from the wire facts of apimachinery: a watch stream is
//   LengthDelimitedFramer frames (a 4-byte big-endian length) each holding a bare meta/v1
//   WatchEvent (RawSerializer: no magic, no runtime.Unknown), whose object (RawExtension.raw,
//   field 2 → field 1) is what every other body is — "k8s\0" then runtime.Unknown {typeMeta 1
//   {apiVersion 1, kind 2}, raw 2, contentEncoding 3, contentType 4} around the object's message;
// - every field is checked as Go's generated Unmarshal checks it: a wire type that does not fit
//   the field ("proto: wrong wireType"), wire types 6 and 7 ("proto: illegal wireType"), a length
//   past the end ("unexpected EOF"); and, stricter than Go (which skips them), a field number
//   the schema does not define, since csikit writing one means a wrong number;
// - the JSON comparison knows the JSON spellings (Time, Quantity, IntOrString, raw extensions,
//   inline structs) from the Kubernetes API conventions, not from csikit's shape mapping.

import { readdirSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import protobuf from "protobufjs";

const PROTO_DIR = resolve(import.meta.dirname, "../../src/apiserver/encoding/proto");
export const K8S_MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

function protoFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? protoFiles(join(dir, entry.name))
      : entry.name.endsWith(".proto")
        ? [join(dir, entry.name)]
        : [],
  );
}

let loaded: protobuf.Root | undefined;

/** The Kubernetes messages, parsed from the .proto files (imports resolved under PROTO_DIR). */
export function kubeProtoRoot(): protobuf.Root {
  if (!loaded) {
    const root = new protobuf.Root();
    root.resolvePath = (_origin, target) => (isAbsolute(target) ? target : join(PROTO_DIR, target));
    root.loadSync(protoFiles(PROTO_DIR), { keepCase: true });
    root.resolveAll();
    loaded = root;
  }
  return loaded;
}

// ---- the wire, as Go's generated Unmarshal walks it -------------------------------------------

export interface WireField {
  number: number;
  wireType: number;
  /** Varint fields. */
  varint?: bigint;
  /** Length-delimited fields. */
  bytes?: Uint8Array;
}

/** The fields of one message on the wire, in order; throws Go's errors for what Go refuses. */
export function wireFields(bytes: Uint8Array): WireField[] {
  let at = 0;
  const varint = (): bigint => {
    let value = 0n;
    for (let shift = 0n; shift < 70n; shift += 7n) {
      if (at >= bytes.length) throw new Error("unexpected EOF");
      const byte = bytes[at++]!;
      value |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return value;
    }
    throw new Error("proto: integer overflow");
  };
  const skip = (n: number): void => {
    if (at + n > bytes.length) throw new Error("unexpected EOF");
    at += n;
  };
  const out: WireField[] = [];
  while (at < bytes.length) {
    const key = varint();
    const wireType = Number(key & 7n);
    const number = Number(key >> 3n);
    if (wireType === 6 || wireType === 7) throw new Error(`proto: illegal wireType ${wireType}`);
    if (wireType === 3 || wireType === 4)
      throw new Error(`proto: group (wire type ${wireType}) in field ${number}; Kubernetes has none`);
    if (number <= 0) throw new Error(`proto: illegal tag ${number} (wire type ${wireType})`);
    if (wireType === 0) out.push({ number, wireType, varint: varint() });
    else if (wireType === 1) skip(8);
    else if (wireType === 5) skip(4);
    else {
      const length = Number(varint());
      const start = at;
      skip(length);
      out.push({ number, wireType, bytes: bytes.subarray(start, at) });
    }
  }
  return out;
}

const VARINT_TYPES = new Set(["int32", "int64", "uint32", "uint64", "sint32", "sint64", "bool"]);

function wireTypeOf(type: string): number {
  if (VARINT_TYPES.has(type)) return 0;
  if (type === "double" || type === "fixed64" || type === "sfixed64") return 1;
  if (type === "float" || type === "fixed32" || type === "sfixed32") return 5;
  return 2;
}

/** Checks a message's bytes against its schema, recursively; throws naming the field. */
export function checkMessage(type: protobuf.Type, bytes: Uint8Array, path = ""): void {
  let fields: WireField[];
  try {
    fields = wireFields(bytes);
  } catch (error) {
    throw new Error(`${path || type.name}: ${(error as Error).message}`, { cause: error });
  }
  for (const wire of fields) {
    const field = type.fieldsById[wire.number];
    const at = `${path ? `${path}.` : ""}${field?.name ?? `<field ${wire.number}>`}`;
    if (!field) throw new Error(`${at}: field number ${wire.number} is not in ${type.fullName}`);
    const resolved = field.resolvedType instanceof protobuf.Type ? field.resolvedType : undefined;
    const expected = field.map || resolved ? 2 : wireTypeOf(field.type);
    const packed = field.repeated && expected !== 2 && wire.wireType === 2;
    if (wire.wireType !== expected && !packed)
      throw new Error(`${at}: proto: wrong wireType = ${wire.wireType} for field ${field.name}`);
    if (field.map) {
      const entry = wireFields(wire.bytes!);
      for (const part of entry) {
        if (
          part.number === 1 &&
          part.wireType !== wireTypeOf(field instanceof protobuf.MapField ? field.keyType : "string")
        )
          throw new Error(`${at}: map key has wire type ${part.wireType}`);
        if (part.number === 2 && part.wireType !== (resolved ? 2 : wireTypeOf(field.type)))
          throw new Error(`${at}: map value has wire type ${part.wireType}`);
        if (part.number === 2 && resolved) checkMessage(resolved, part.bytes!, `${at}[value]`);
      }
    } else if (resolved) {
      checkMessage(resolved, wire.bytes!, at);
    }
  }
}

// ---- bodies, as client-go's protobuf Serializer reads them -------------------------------------

export interface Envelope {
  apiVersion: string;
  kind: string;
  raw: Uint8Array;
  contentEncoding: string;
  contentType: string;
}

const text = (bytes: Uint8Array | undefined): string => Buffer.from(bytes ?? []).toString("utf8");

/** The "k8s\0" magic and the runtime.Unknown after it. */
export function readEnvelope(body: Uint8Array): Envelope {
  if (!Buffer.from(body.subarray(0, 4)).equals(K8S_MAGIC))
    throw new Error(
      `the body does not start with "k8s\\0" (${Buffer.from(body.subarray(0, 8)).toString("hex")})`,
    );
  const envelope: Envelope = {
    apiVersion: "",
    kind: "",
    raw: new Uint8Array(),
    contentEncoding: "",
    contentType: "",
  };
  for (const field of wireFields(body.subarray(4))) {
    if (field.wireType !== 2)
      throw new Error(`runtime.Unknown field ${field.number}: wire type ${field.wireType}`);
    if (field.number === 1) {
      for (const meta of wireFields(field.bytes!)) {
        if (meta.number === 1) envelope.apiVersion = text(meta.bytes);
        else if (meta.number === 2) envelope.kind = text(meta.bytes);
        else throw new Error(`runtime.TypeMeta has no field ${meta.number}`);
      }
    } else if (field.number === 2) envelope.raw = field.bytes!;
    else if (field.number === 3) envelope.contentEncoding = text(field.bytes);
    else if (field.number === 4) envelope.contentType = text(field.bytes);
    else throw new Error(`runtime.Unknown has no field ${field.number}`);
  }
  return envelope;
}

/** Proto packages of the API groups (k8s.io/api/<dir>/<version>). */
const GROUP_PACKAGES: Record<string, string> = {
  "": "k8s.io.api.core",
  apps: "k8s.io.api.apps",
  "authentication.k8s.io": "k8s.io.api.authentication",
  "authorization.k8s.io": "k8s.io.api.authorization",
  "coordination.k8s.io": "k8s.io.api.coordination",
  "events.k8s.io": "k8s.io.api.events",
  "rbac.authorization.k8s.io": "k8s.io.api.rbac",
  "storage.k8s.io": "k8s.io.api.storage",
  "meta.k8s.io": "k8s.io.apimachinery.pkg.apis.meta",
};
/** meta/v1 kinds registered in every group version (Status is "v1" everywhere). */
const META_KINDS = new Set(["Status", "WatchEvent", "DeleteOptions", "CreateOptions", "UpdateOptions"]);

/** The message type client-go's scheme would pick for apiVersion/kind. */
export function messageType(apiVersion: string, kind: string): protobuf.Type {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  const pkg = META_KINDS.has(kind) ? "k8s.io.apimachinery.pkg.apis.meta" : GROUP_PACKAGES[group!];
  if (!pkg) throw new Error(`no protobuf package for group "${group}"`);
  return kubeProtoRoot().lookupType(`${pkg}.${version}.${kind}`);
}

export interface ReadObject {
  apiVersion: string;
  kind: string;
  type: protobuf.Type;
  /** The message as plain values (int64 as numbers, bytes as Buffers). */
  message: Record<string, unknown>;
}

function toPlain(type: protobuf.Type, raw: Uint8Array): Record<string, unknown> {
  return type.toObject(type.decode(raw), { longs: Number });
}

/** A whole protobuf body (object, list or Status), envelope and message checked. */
export function readObject(body: Uint8Array): ReadObject {
  const envelope = readEnvelope(body);
  if (envelope.contentEncoding !== "") throw new Error(`content encoding "${envelope.contentEncoding}"`);
  if (envelope.contentType !== "") throw new Error(`inner content type "${envelope.contentType}"`);
  if (!envelope.apiVersion || !envelope.kind) throw new Error("runtime.Unknown without apiVersion and kind");
  const type = messageType(envelope.apiVersion, envelope.kind);
  checkMessage(type, envelope.raw);
  return { apiVersion: envelope.apiVersion, kind: envelope.kind, type, message: toPlain(type, envelope.raw) };
}

/** An object's body as a client-go client sends it: magic, Unknown, the message. */
export function writeObject(apiVersion: string, kind: string, message: Record<string, unknown>): Buffer {
  const type = messageType(apiVersion, kind);
  const problem = type.verify(message);
  if (problem) throw new Error(`${kind}: ${problem}`);
  const raw = type.encode(type.fromObject(message)).finish();
  const unknown = protobuf.Writer.create();
  unknown.uint32(10).fork().uint32(10).string(apiVersion).uint32(18).string(kind).ldelim();
  unknown.uint32(18).bytes(raw);
  return Buffer.concat([K8S_MAGIC, unknown.finish()]);
}

// ---- watch streams ---------------------------------------------------------------------------

/** LengthDelimitedFramer: the whole frames at the start of `pending` and what is left. */
export function splitFrames(pending: Buffer): { frames: Buffer[]; rest: Buffer } {
  const frames: Buffer[] = [];
  let at = 0;
  while (pending.length - at >= 4) {
    const length = pending.readUInt32BE(at);
    if (pending.length - at - 4 < length) break;
    frames.push(pending.subarray(at + 4, at + 4 + length));
    at += 4 + length;
  }
  return { frames, rest: pending.subarray(at) };
}

export interface ReadEvent {
  type: string;
  object: ReadObject;
}

const EVENT_TYPES = new Set(["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"]);

/** One frame as RawSerializer decodes it into meta/v1 WatchEvent, then its embedded object. */
export function readWatchEvent(frame: Uint8Array): ReadEvent {
  if (Buffer.from(frame.subarray(0, 4)).equals(K8S_MAGIC))
    throw new Error('the watch frame starts with "k8s\\0": an enveloped event, which client-go cannot read');
  let type: string | undefined;
  let raw: Uint8Array | undefined;
  for (const field of wireFields(frame)) {
    if (field.wireType !== 2)
      throw new Error(`WatchEvent: proto: wrong wireType = ${field.wireType} for field ${field.number}`);
    if (field.number === 1) type = text(field.bytes);
    else if (field.number === 2) {
      for (const inner of wireFields(field.bytes!)) if (inner.number === 1) raw = inner.bytes;
    } else throw new Error(`WatchEvent has no field ${field.number}`);
  }
  if (!type || !EVENT_TYPES.has(type)) throw new Error(`WatchEvent type "${type}"`);
  if (!raw) throw new Error("WatchEvent without object.raw");
  return { type, object: readObject(raw) };
}

// ---- the JSON an object stands for -----------------------------------------------------------

const META = ".k8s.io.apimachinery.pkg.apis.meta.v1";
const TIME = `${META}.Time`;
const MICRO_TIME = `${META}.MicroTime`;
const FIELDS_V1 = `${META}.FieldsV1`;
const QUANTITY = ".k8s.io.apimachinery.pkg.api.resource.Quantity";
const INT_OR_STRING = ".k8s.io.apimachinery.pkg.util.intstr.IntOrString";
const RAW_EXTENSION = ".k8s.io.apimachinery.pkg.runtime.RawExtension";
const SPECIALS = new Set([TIME, MICRO_TIME, FIELDS_V1, QUANTITY, INT_OR_STRING, RAW_EXTENSION]);

type Json = Record<string, unknown>;
/** The JSON paths a comparison met on the wire. */
interface Coverage {
  /** Values and messages present on the wire. */
  exact: Set<string>;
  /** Values carried on the wire as JSON bytes (raw extensions, fieldsV1): their whole subtree. */
  subtree: Set<string>;
}
const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * Where a decoded message and a JSON object disagree, as readable lines (empty when they agree):
 * every value on the wire must be in the JSON with its JSON spelling, and every JSON leaf must
 * come from the wire. Zero values Go omits from JSON (omitempty) may be on the wire alone.
 * `ignore` skips JSON leaves by path (list items' apiVersion/kind, which only JSON has).
 */
export function differences(
  read: ReadObject,
  json: Json,
  ignore: (path: string) => boolean = () => false,
): string[] {
  const problems: string[] = [];
  const covered: Coverage = { exact: new Set(["apiVersion", "kind"]), subtree: new Set() };
  if (json.apiVersion !== undefined && json.apiVersion !== read.apiVersion)
    problems.push(`apiVersion: wire ${read.apiVersion}, JSON ${JSON.stringify(json.apiVersion)}`);
  if (json.kind !== undefined && json.kind !== read.kind)
    problems.push(`kind: wire ${read.kind}, JSON ${JSON.stringify(json.kind)}`);
  compareMessage(read.type, read.message, json, "", covered, problems);
  for (const leaf of jsonLeaves(json, "")) {
    if (ignore(leaf) || covered.exact.has(leaf)) continue;
    // Leaves inside a value carried as JSON on the wire (raw extensions, fieldsV1).
    let prefix = leaf;
    let found = false;
    while (!found && /[.[]/.test(prefix)) {
      prefix = prefix.slice(0, Math.max(prefix.lastIndexOf("."), prefix.lastIndexOf("[")));
      found = covered.subtree.has(prefix);
    }
    if (!found) problems.push(`${leaf}: in the JSON but not on the wire`);
  }
  return problems;
}

function jsonLeaves(value: unknown, path: string): string[] {
  if (Array.isArray(value))
    return value.length === 0 ? [path] : value.flatMap((item, i) => jsonLeaves(item, `${path}[${i}]`));
  if (isObject(value)) {
    const entries = Object.entries(value).filter(([, v]) => v !== null);
    if (entries.length === 0) return [path];
    return entries.flatMap(([key, item]) => jsonLeaves(item, path ? `${path}.${key}` : key));
  }
  return value === null ? [] : [path];
}

function compareMessage(
  type: protobuf.Type,
  message: Json,
  json: unknown,
  path: string,
  covered: Coverage,
  problems: string[],
): void {
  for (const field of type.fieldsArray) {
    const value = message[field.name];
    if (value === undefined || value === null) continue;
    const at = path ? `${path}.${field.name}` : field.name;
    const resolved = field.resolvedType instanceof protobuf.Type ? field.resolvedType : undefined;
    const inJson = isObject(json) && json[field.name] !== undefined && json[field.name] !== null;
    if (resolved && !field.map && !field.repeated && !inJson && !SPECIALS.has(resolved.fullName)) {
      // A Go struct embedded with `json:",inline"` (Volume's VolumeSource, Probe's handler...)
      // sits flat in its parent's JSON; an empty one is on the wire only.
      compareMessage(resolved, value as Json, json, path, covered, problems);
      continue;
    }
    const jsonValue = isObject(json) ? json[field.name] : undefined;
    if (field.map) {
      const entries = Object.entries(value as Json);
      if (entries.length > 0 && !isObject(jsonValue)) {
        problems.push(`${at}: a map on the wire, ${JSON.stringify(jsonValue)} in JSON`);
        continue;
      }
      for (const [key, entry] of entries)
        compareValue(field, resolved, entry, (jsonValue as Json)[key], `${at}.${key}`, covered, problems);
    } else if (field.repeated) {
      const list = value as unknown[];
      if (list.length === 0) continue;
      if (!Array.isArray(jsonValue) || jsonValue.length !== list.length) {
        problems.push(`${at}: ${list.length} items on the wire, JSON has ${JSON.stringify(jsonValue)}`);
        continue;
      }
      list.forEach((item, i) =>
        compareValue(field, resolved, item, jsonValue[i], `${at}[${i}]`, covered, problems),
      );
    } else {
      compareValue(field, resolved, value, jsonValue, at, covered, problems);
    }
  }
}

function compareValue(
  field: protobuf.Field,
  resolved: protobuf.Type | undefined,
  value: unknown,
  json: unknown,
  at: string,
  covered: Coverage,
  problems: string[],
): void {
  covered.exact.add(at);
  const differ = (wire: unknown): void => {
    problems.push(`${at}: wire ${JSON.stringify(wire)}, JSON ${JSON.stringify(json)}`);
  };
  if (resolved) {
    const message = value as Json;
    switch (resolved.fullName) {
      case TIME:
      case MICRO_TIME: {
        const seconds = Number(message.seconds ?? 0);
        const nanos = Number(message.nanos ?? 0);
        if (json === undefined && seconds === 0 && nanos === 0) return;
        const ms = typeof json === "string" ? Date.parse(json) : NaN;
        const micros = typeof json === "string" ? Number(/\.(\d{6})Z$/.exec(json)?.[1] ?? "0") : NaN;
        const same =
          Math.floor(ms / 1000) === seconds &&
          (resolved.fullName === TIME || micros === Math.floor(nanos / 1000));
        if (!same) differ({ seconds, nanos });
        return;
      }
      case QUANTITY:
        if (json !== message.string && !(typeof json === "number" && String(json) === message.string))
          differ(message);
        return;
      case INT_OR_STRING: {
        const wire = Number(message.type ?? 0) === 1 ? (message.strVal ?? "") : Number(message.intVal ?? 0);
        if (wire !== json) differ(wire);
        return;
      }
      case RAW_EXTENSION:
      case FIELDS_V1: {
        const raw = (resolved.fullName === FIELDS_V1 ? message.Raw : message.raw) as Uint8Array | undefined;
        if (!raw || raw.length === 0) {
          if (json !== undefined) differ("");
          return;
        }
        covered.subtree.add(at);
        const parsed: unknown = JSON.parse(Buffer.from(raw).toString("utf8"));
        if (JSON.stringify(sortKeys(parsed)) !== JSON.stringify(sortKeys(json))) differ(parsed);
        return;
      }
    }
    if (resolved.fullName.endsWith(".ExtraValue")) {
      covered.subtree.add(at);
      if (JSON.stringify(message.items ?? []) !== JSON.stringify(json ?? [])) differ(message.items);
      return;
    }
    if (json === undefined) {
      if (Object.keys(message).length > 0) differ(message);
      return;
    }
    compareMessage(resolved, message, json, at, covered, problems);
    return;
  }
  if (field.type === "bytes") {
    const base64 = Buffer.from(value as Uint8Array).toString("base64");
    if (!(base64 === "" && json === undefined) && base64 !== json) differ(base64);
    return;
  }
  const zero = value === "" || value === 0 || value === false;
  if (zero && json === undefined) return;
  if (value !== json) differ(value);
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (!isObject(value)) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortKeys(value[key])]),
  );
}
