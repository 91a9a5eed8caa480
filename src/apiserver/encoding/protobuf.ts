// The Kubernetes protobuf wire format (`application/vnd.kubernetes.protobuf`) of built-in
// kinds: the 4 magic bytes "k8s\0", then a runtime.Unknown {typeMeta {apiVersion, kind}, raw,
// contentEncoding, contentType} whose `raw` is the object in its k8s.io/api message. The
// messages come from the generated descriptor (scripts/gen-proto.ts over src/apiserver/encoding/proto),
// the JSON ⇄ protobuf shape mapping from protobuf-shapes.ts. Watch events are framed as
// upstream frames them: a 4-byte big-endian length, then the bare meta/v1 WatchEvent (no
// magic, no envelope) whose object is a RawExtension holding the object's own envelope.
//
// A body that is not a well-formed envelope of a served kind is a 400 (or 415 for a kind that
// has no protobuf form, as custom resources), never a 500: truncation, a wrong magic, a type the
// path does not serve, wrong wire types, unknown fields under fieldValidation=Strict, JSON
// nested too deep inside raw extensions; the size bound is readBody's 413.

import protobuf from "protobufjs";
import { kubeDescriptor } from "./generated/kube-descriptor.ts";
import { fromMessage, toMessage } from "./protobuf-shapes.ts";
export { PROTOBUF_MEDIA_TYPE, PROTOBUF_WATCH_MEDIA_TYPE } from "./negotiation.ts";
import { ApiError, badRequest } from "../transport/status.ts";
import { CsikitError, errorMessage } from "../../base/index.ts";

const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

const root = protobuf.Root.fromJSON(kubeDescriptor);
const META = "k8s.io.apimachinery.pkg.apis.meta.v1";
const UNKNOWN = root.lookupType("k8s.io.apimachinery.pkg.runtime.Unknown");
const WATCH_EVENT = root.lookupType(`${META}.WatchEvent`);

/** meta/v1 kinds every group version carries (options, Status, WatchEvent) under its own apiVersion. */
const META_KINDS = new Set([
  "Status",
  "WatchEvent",
  "DeleteOptions",
  "CreateOptions",
  "UpdateOptions",
  "PatchOptions",
  "PartialObjectMetadata",
  "PartialObjectMetadataList",
]);

/** The proto package of an API group version: "storage.k8s.io/v1" → k8s.io.api.storage.v1. */
function packageOf(apiVersion: string): string | undefined {
  const slash = apiVersion.indexOf("/");
  if (slash < 0) return apiVersion === "" ? undefined : `k8s.io.api.core.${apiVersion}`;
  const group = apiVersion.slice(0, slash);
  const version = apiVersion.slice(slash + 1);
  if (group === "meta.k8s.io") return `k8s.io.apimachinery.pkg.apis.meta.${version}`;
  return `k8s.io.api.${group.split(".")[0]}.${version}`;
}

const typeCache = new Map<string, protobuf.Type | null>();

/** The message type of apiVersion/kind, or undefined when the kind has no protobuf form. */
export function protobufType(apiVersion: string, kind: string): protobuf.Type | undefined {
  const key = `${apiVersion}/${kind}`;
  let type = typeCache.get(key);
  if (type === undefined) {
    const pkg = META_KINDS.has(kind) ? META : packageOf(apiVersion);
    const found = pkg ? root.lookup(`${pkg}.${kind}`) : null;
    type = found instanceof protobuf.Type ? found : null;
    typeCache.set(key, type);
  }
  return type ?? undefined;
}

// ---- encoding -----------------------------------------------------------------------------------

/** The protobuf envelope of a JSON object (its apiVersion and kind pick the message). */
export function encodeProtobufObject(object: Record<string, unknown>): Buffer {
  const apiVersion = typeof object.apiVersion === "string" ? object.apiVersion : "";
  const kind = typeof object.kind === "string" ? object.kind : "";
  const type = protobufType(apiVersion, kind);
  if (!type) throw new CsikitError("CSIKIT_ERR_PROTO", `no protobuf message for ${apiVersion}/${kind}`);
  const raw = type.encode(toMessage(type, object)).finish();
  const unknown = UNKNOWN.encode({ typeMeta: { apiVersion, kind }, raw }).finish();
  return Buffer.concat([MAGIC, unknown]);
}

/**
 * List items of stored objects — the message bytes framed as a List's field 2 (tag and length
 * in front) — by their stored JSON text (which includes the resourceVersion, so a text names
 * one version): a list re-sends mostly unchanged objects, and protobufjs's encoder costs far
 * more than splicing stored JSON. Bounded by bytes; the oldest entries go first.
 */
const itemCache = new Map<string, Uint8Array>();
let itemCacheBytes = 0;
const ITEM_CACHE_MAX_BYTES = 64 * 1024 * 1024;

function cachedItem(type: protobuf.Type, text: string): Uint8Array {
  let bytes = itemCache.get(text);
  if (bytes) return bytes;
  const message = type.encode(toMessage(type, JSON.parse(text))).finish();
  bytes = Buffer.concat([fieldHeader(18, message.length), message]);
  itemCache.set(text, bytes);
  itemCacheBytes += bytes.length + text.length;
  while (itemCacheBytes > ITEM_CACHE_MAX_BYTES) {
    const [oldest, value] = itemCache.entries().next().value!;
    itemCache.delete(oldest);
    itemCacheBytes -= value.length + oldest.length;
  }
  return bytes;
}

const TYPE_META = root.lookupType("k8s.io.apimachinery.pkg.runtime.TypeMeta");

/** The tag byte and varint length that precede a length-delimited field. */
function fieldHeader(tag: number, length: number): Buffer {
  const header = Buffer.allocUnsafe(6);
  header[0] = tag;
  let at = 1;
  let rest = length;
  while (rest > 0x7f) {
    header[at++] = (rest & 0x7f) | 0x80;
    rest >>>= 7;
  }
  header[at++] = rest;
  return header.subarray(0, at);
}

/**
 * A list in protobuf from the stored JSON texts of its items (rest-read's spliced form): the
 * List message is ListMeta (field 1) and the items (field 2), each item's bytes cached.
 */
export function encodeProtobufList(
  apiVersion: string,
  listKind: string,
  listMeta: Record<string, unknown>,
  itemTexts: readonly string[],
): Buffer {
  const listType = protobufType(apiVersion, listKind);
  const itemType = listType?.fields.items?.resolvedType;
  const metaType = listType?.fields.metadata?.resolvedType;
  if (!listType || !(itemType instanceof protobuf.Type) || !(metaType instanceof protobuf.Type))
    throw new CsikitError("CSIKIT_ERR_PROTO", `no protobuf list message for ${apiVersion}/${listKind}`);
  // Framed by hand so that the item bytes are copied once, into the answer itself (the writer
  // of protobufjs would copy them into the List, then the List into the envelope, then that
  // behind the magic): the List is field 1 ListMeta and repeated field 2 items; the envelope is
  // runtime.Unknown field 1 typeMeta and field 2 raw (the List).
  const parts: Uint8Array[] = [];
  let rawLength = 0;
  const field = (tag: number, bytes: Uint8Array): void => {
    const header = fieldHeader(tag, bytes.length);
    parts.push(header, bytes);
    rawLength += header.length + bytes.length;
  };
  field(10, metaType.encode(toMessage(metaType, listMeta)).finish());
  for (const text of itemTexts) {
    const item = cachedItem(itemType, text);
    parts.push(item);
    rawLength += item.length;
  }
  const typeMeta = TYPE_META.encode({ apiVersion, kind: listKind }).finish();
  return Buffer.concat([
    MAGIC,
    fieldHeader(10, typeMeta.length),
    typeMeta,
    fieldHeader(18, rawLength),
    ...parts,
  ]);
}

/**
 * One watch frame as kube-apiserver's protobuf stream serializer writes it (apimachinery's
 * RawSerializer behind the LengthDelimitedFramer): a 4-byte big-endian length, then the bare
 * meta/v1 WatchEvent message — no "k8s\0" magic and no runtime.Unknown around the event; only
 * the object inside (`object.raw`) is a full envelope. client-go reads exactly this.
 */
export function encodeProtobufWatchEvent(type: string, object: Record<string, unknown>): Buffer {
  const event = WATCH_EVENT.encode({ type, object: { raw: encodeProtobufObject(object) } }).finish();
  const frame = Buffer.allocUnsafe(4 + event.length);
  frame.writeUInt32BE(event.length, 0);
  frame.set(event, 4);
  return frame;
}

// ---- decoding -----------------------------------------------------------------------------------

export interface DecodedEnvelope {
  apiVersion: string;
  kind: string;
  raw: Uint8Array;
}

function malformed(what: string, error?: unknown): ApiError {
  const reason = error instanceof Error ? `: ${error.message}` : "";
  return badRequest(`the body of the request could not be decoded as protobuf: ${what}${reason}`);
}

/** The runtime.Unknown of a protobuf body: 400 without the magic or when it does not parse. */
export function decodeEnvelope(body: Buffer): DecodedEnvelope {
  if (body.length < MAGIC.length || !body.subarray(0, MAGIC.length).equals(MAGIC)) {
    throw malformed('the body does not start with the "k8s\\x00" magic of the Kubernetes protobuf encoding');
  }
  let unknown: Record<string, unknown>;
  try {
    scanFields(UNKNOWN, body.subarray(MAGIC.length), "", [], 0);
    unknown = { ...UNKNOWN.decode(body.subarray(MAGIC.length)) };
  } catch (error) {
    if (error instanceof ApiError) throw error;
    throw malformed("the runtime.Unknown envelope is truncated or malformed", error);
  }
  const typeMeta = (unknown.typeMeta ?? {}) as { apiVersion?: string; kind?: string };
  const encoding = typeof unknown.contentEncoding === "string" ? unknown.contentEncoding : "";
  if (encoding !== "") throw malformed(`content encoding "${encoding}" is not supported`);
  return {
    apiVersion: typeMeta.apiVersion ?? "",
    kind: typeMeta.kind ?? "",
    raw: (unknown.raw as Uint8Array | undefined) ?? new Uint8Array(),
  };
}

export interface DecodeOptions {
  /** Paths of fields the message does not define, for fieldValidation; dropped from the object. */
  unknownFields?: string[];
}

/**
 * The JSON object a protobuf request body stands for. `undefined` when the envelope names a
 * kind without a protobuf form (the caller answers 415 as for an unknown media type).
 */
export function decodeProtobufObject(
  body: Buffer,
  options: DecodeOptions = {},
): Record<string, unknown> | undefined {
  const envelope = decodeEnvelope(body);
  if (envelope.kind === "" || envelope.apiVersion === "")
    throw malformed("the envelope's typeMeta has no apiVersion and kind");
  const type = protobufType(envelope.apiVersion, envelope.kind);
  if (!type) return undefined;
  let message: object;
  try {
    scanFields(type, envelope.raw, "", options.unknownFields ?? [], 0);
    message = type.decode(envelope.raw);
  } catch (error) {
    if (error instanceof ApiError) throw error;
    throw malformed(`the ${envelope.apiVersion} ${envelope.kind} is truncated or malformed`, error);
  }
  // The caller bounds the nesting of JSON carried in raw extensions (http.ts checkDecodedDepth).
  let object: Record<string, unknown>;
  try {
    object = fromMessage(type, message);
  } catch (error) {
    // protobuf-shapes names the field; anything it did not foresee is still the body's fault.
    throw malformed(`the ${envelope.apiVersion} ${envelope.kind}'s field ${errorMessage(error)}`);
  }
  return { apiVersion: envelope.apiVersion, kind: envelope.kind, ...object };
}

/** The wire type a field's values use (2 for messages, maps, strings and bytes). */
function expectedWireType(field: protobuf.Field): number {
  if (field.map) return 2;
  return valueWireType(field);
}

/** The wire type of one value of a field (of a map's values, for a map). */
function valueWireType(field: protobuf.Field): number {
  if (field.resolvedType instanceof protobuf.Type) return 2;
  if (field.resolvedType instanceof protobuf.Enum) return 0;
  return basicWireType(field.type);
}

function basicWireType(type: string): number {
  return (protobuf.types.basic as Record<string, number | undefined>)[type] ?? 2;
}

/** Protobuf nesting csikit follows before refusing a body (upstream's decoder stops at 100 too). */
export const MAX_PROTOBUF_DEPTH = 100;

/**
 * Walks the wire form before protobufjs decodes it, so that every fault is a 400 naming the
 * field where it is: wire types that do not fit the field (protobufjs would misread them),
 * invalid wire types, groups, tags and lengths cut short, map entries whose key or value does
 * not fit. It also names the fields the message does not define, as `spec.<field N>`
 * (protobufjs skips them silently), and bounds nesting, including unknown groups that a
 * skipping reader would recurse into.
 */
function scanFields(
  type: protobuf.Type,
  bytes: Uint8Array,
  path: string,
  out: string[],
  depth: number,
): void {
  if (depth > MAX_PROTOBUF_DEPTH)
    throw malformed(`exceeded max depth (${MAX_PROTOBUF_DEPTH} levels of nested messages)`);
  const reader = protobuf.Reader.create(bytes);
  while (reader.pos < reader.len) {
    let tag: number;
    try {
      tag = reader.uint32();
    } catch (error) {
      throw malformed(`a field tag of ${path || type.name} is truncated or malformed`, error);
    }
    const id = tag >>> 3;
    const wireType = tag & 7;
    const field = id === 0 ? undefined : type.fieldsById[id];
    const at = `${path}${path ? "." : ""}${field ? field.name : `<field ${id}>`}`;
    const where = `field ${at} (number ${id}) of ${type.name}`;
    if (id === 0) throw malformed(`${where}: 0 is not a field number`);
    if (wireType === 3 || wireType === 4) throw malformed(`${where} uses protobuf groups`);
    if (wireType > 5) throw malformed(`${where} has the invalid wire type ${wireType}`);
    const expected = field ? expectedWireType(field) : wireType;
    const packed = field?.repeated === true && expected !== 2 && wireType === 2;
    if (wireType !== expected && !packed)
      throw malformed(`${where} has wire type ${wireType}, expected ${expected}`);
    if (!field) out.push(at);
    try {
      const resolved = field?.resolvedType;
      if (field?.map) scanMapEntry(field, reader.bytes(), at, out, depth + 1);
      else if (resolved instanceof protobuf.Type) scanFields(resolved, reader.bytes(), at, out, depth + 1);
      else if (packed) scanPacked(reader.bytes(), expected);
      else skipValue(reader, wireType);
    } catch (error) {
      if (error instanceof ApiError) throw error;
      throw malformed(`${where} is truncated or malformed`, error);
    }
  }
}

/** One map entry: key 1 and value 2 of the map's types (other fields are skipped, as Go does). */
function scanMapEntry(
  field: protobuf.Field,
  bytes: Uint8Array,
  at: string,
  out: string[],
  depth: number,
): void {
  const keyType = field instanceof protobuf.MapField ? field.keyType : "string";
  const reader = protobuf.Reader.create(bytes);
  while (reader.pos < reader.len) {
    const tag = reader.uint32();
    const id = tag >>> 3;
    const wireType = tag & 7;
    const expected = id === 1 ? basicWireType(keyType) : id === 2 ? valueWireType(field) : wireType;
    if (wireType !== expected || wireType > 5 || wireType === 3 || wireType === 4)
      throw malformed(
        `the ${id === 1 ? "key" : id === 2 ? "value" : `field ${id}`} of a ${at} entry has wire type ${wireType}, expected ${expected}`,
      );
    const resolved = field.resolvedType;
    if (id === 2 && resolved instanceof protobuf.Type)
      scanFields(resolved, reader.bytes(), `${at}[value]`, out, depth);
    else skipValue(reader, wireType);
  }
}

/** A packed repeated scalar: whole values up to the end of its bytes. */
function scanPacked(bytes: Uint8Array, wireType: number): void {
  const reader = protobuf.Reader.create(bytes);
  while (reader.pos < reader.len) skipValue(reader, wireType);
}

/** Skips one value; a varint is read whole, so that one longer than 10 bytes is refused here. */
function skipValue(reader: protobuf.Reader, wireType: number): void {
  if (wireType === 0) reader.int64();
  else reader.skipType(wireType);
}

/** The type and object of one watch frame (the bare WatchEvent after the length prefix). */
export function decodeProtobufWatchEvent(frame: Buffer): {
  type: string;
  object: Record<string, unknown>;
} {
  let event: object;
  try {
    scanFields(WATCH_EVENT, frame, "", [], 0);
    event = WATCH_EVENT.decode(frame);
  } catch (error) {
    if (error instanceof ApiError) throw error;
    throw malformed("the WatchEvent is truncated or malformed", error);
  }
  const type = String(Reflect.get(event, "type") ?? "");
  const raw: unknown = Reflect.get(Reflect.get(event, "object") ?? {}, "raw");
  const object = raw instanceof Uint8Array ? decodeProtobufObject(Buffer.from(raw)) : undefined;
  if (!object) throw malformed("the WatchEvent carries no object of a known kind");
  return { type, object };
}
