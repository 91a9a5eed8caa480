// The static protobuf codec of the CSI and plugin-registration messages: hand-written varint
// reading and writing driven by the table scripts/gen-proto.ts generates from the .proto files
// (generated/codec.ts). A process that serves or calls CSI loads no protobuf library, parses no
// descriptor and builds no reflection objects: on every node a driver, a registrar and a
// livenessprobe would otherwise pay that in memory (`npm run bench:rss`, docs/hostpath.md).
//
// The semantics are those of @grpc/proto-loader with LOADER_OPTIONS (protobufjs fromObject +
// encode, decode + toObject { longs: String, enums: String, defaults: true, oneofs: true }),
// which is what the generated types describe; src/csi/loader.test.ts compares both byte for
// byte and object for object. In short:
// - encode writes, in field-number order, every field the object has that is not null or
//   undefined (a zero written explicitly is sent); enum names unknown to the table are dropped,
//   numbers pass; int64 takes a decimal string, a number, a bigint or a Long-like {low, high}.
// - decode fills defaults ("" / false / 0 / "0" / the enum's zero name / [] / {} / null for a
//   message), int64 as a decimal string, enum numbers outside the table stay numbers, a oneof
//   member that is present sets the discriminator, unknown fields are skipped, a repeated
//   singular message field keeps the last one.
// Plans are built per message on first use, so a process only pays for what it touches.

import { CsikitError } from "../base/index.ts";
import { enumValues, messageFields } from "./generated/codec.ts";

const SCALAR_WIRE = {
  string: 2,
  bytes: 2,
  bool: 0,
  int32: 0,
  uint32: 0,
  int64: 0,
  uint64: 0,
} as const;
/**
 * The scalar types of the CSI protos: the only ones the codec reads and writes, and the only
 * ones scripts/gen-proto.ts lets into the table (it refuses any other at generation).
 */
type ScalarKind = keyof typeof SCALAR_WIRE;
type FieldKind = ScalarKind | "message" | "enum";

function isScalar(type: string): type is ScalarKind {
  return Object.hasOwn(SCALAR_WIRE, type);
}
const WIRE_VARINT = 0;
const WIRE_I64 = 1;
const WIRE_LEN = 2;
const WIRE_SGROUP = 3;
const WIRE_EGROUP = 4;
const WIRE_I32 = 5;
/** protoc's default recursion limit, as protobufjs enforces it. */
const MAX_DEPTH = 100;
const TWO_32 = 4294967296;

interface EnumPlan {
  readonly byName: ReadonlyMap<string, number>;
  readonly byNumber: ReadonlyMap<number, string>;
  /** The name decoded for an absent field (the first value's). */
  readonly defaultName: string | number;
}

interface FieldPlan {
  readonly name: string;
  readonly id: number;
  /** Scalar type name, or "message" / "enum" with `ref`. */
  readonly kind: FieldKind;
  readonly ref: string;
  readonly repeated: boolean;
  readonly map: boolean;
  readonly oneof: string | undefined;
  /** Varint-encoded (id << 3 | wire type) of the field as written. */
  readonly tag: number;
  /** Numeric scalars and enums are written packed when repeated (proto3). */
  readonly packed: boolean;
  readonly fullName: string;
}

interface MessagePlan {
  readonly name: string;
  /** Sorted by field number: the order encode writes and toObject fills. */
  readonly fields: readonly FieldPlan[];
  readonly byId: ReadonlyMap<number, FieldPlan>;
}

const messagePlans = new Map<string, MessagePlan>();
const enumPlans = new Map<string, EnumPlan>();

function protoError(message: string): CsikitError {
  return new CsikitError("CSIKIT_ERR_PROTO", message);
}

function enumPlan(name: string): EnumPlan {
  let plan = enumPlans.get(name);
  if (plan) return plan;
  const values = enumValues[name];
  if (values === undefined) throw protoError(`${name} is not an enum in src/csi/generated/codec.ts`);
  const byNumber = new Map<number, string>();
  // protobufjs keeps the last name of an aliased number for decoding.
  for (const [valueName, number] of values) byNumber.set(number, valueName);
  plan = {
    byName: new Map(values),
    byNumber,
    defaultName: values.length ? (byNumber.get(values[0]![1]) ?? values[0]![1]) : 0,
  };
  enumPlans.set(name, plan);
  return plan;
}

/** The plan of a message ("csi.v1.CreateVolumeRequest"); throws naming an unknown one. */
export function messagePlan(name: string): MessagePlan {
  let plan = messagePlans.get(name);
  if (plan) return plan;
  const rows = messageFields[name];
  if (rows === undefined) throw protoError(`${name} is not a message in src/csi/generated/codec.ts`);
  const fields: FieldPlan[] = rows.map(([fieldName, id, type, label, oneof]) => {
    const kind: FieldKind = isScalar(type) ? type : type in messageFields ? "message" : "enum";
    if (kind === "enum" && !(type in enumValues))
      throw protoError(`${name}.${fieldName}: unknown type ${type}`);
    const wire = kind === "message" ? WIRE_LEN : kind === "enum" ? WIRE_VARINT : SCALAR_WIRE[kind];
    const packed = label === 1 && wire === WIRE_VARINT;
    return {
      name: fieldName,
      id,
      kind,
      ref: type,
      repeated: label === 1,
      map: label === 2,
      oneof,
      tag: id * 8 + (label === 2 || packed ? WIRE_LEN : wire),
      packed,
      fullName: `.${name}.${fieldName}`,
    };
  });
  fields.sort((a, b) => a.id - b.id);
  plan = { name, fields, byId: new Map(fields.map((field) => [field.id, field])) };
  messagePlans.set(name, plan);
  return plan;
}

// ---------------------------------------------------------------------------------------------
// Encoding

/** A growable byte buffer; nested messages are written to their own and copied once. */
class Writer {
  buf: Buffer;
  pos = 0;
  constructor(size = 64) {
    this.buf = Buffer.allocUnsafe(size);
  }
  private ensure(extra: number): void {
    if (this.pos + extra <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + extra));
    this.buf.copy(grown, 0, 0, this.pos);
    this.buf = grown;
  }
  /** An unsigned varint of a value in [0, 2^53). */
  varint(value: number): void {
    this.ensure(10);
    while (value >= 0x80) {
      this.buf[this.pos++] = (value % 0x80) | 0x80;
      value = Math.floor(value / 0x80);
    }
    this.buf[this.pos++] = value;
  }
  /** A 64-bit two's complement varint (int32 negatives are sign-extended to 10 bytes). */
  varint64(lo: number, hi: number): void {
    this.ensure(10);
    lo >>>= 0;
    hi >>>= 0;
    while (hi > 0) {
      this.buf[this.pos++] = (lo & 0x7f) | 0x80;
      lo = ((lo >>> 7) | (hi << 25)) >>> 0;
      hi >>>= 7;
    }
    while (lo >= 0x80) {
      this.buf[this.pos++] = (lo & 0x7f) | 0x80;
      lo >>>= 7;
    }
    this.buf[this.pos++] = lo;
  }
  int32(value: number): void {
    if (value < 0) this.varint64(value, -1);
    else this.varint(value);
  }
  bytes(value: Uint8Array): void {
    this.varint(value.length);
    this.ensure(value.length);
    this.buf.set(value, this.pos);
    this.pos += value.length;
  }
  string(value: string): void {
    const length = Buffer.byteLength(value);
    this.varint(length);
    this.ensure(length);
    this.pos += this.buf.write(value, this.pos, length, "utf8");
  }
  finish(): Buffer {
    return this.buf.subarray(0, this.pos);
  }
}

/** Serializes a message object (the `FooInput` shapes) to protobuf bytes. */
export function encodeMessage(name: string, value: object): Buffer {
  const writer = new Writer();
  writeMessage(writer, messagePlan(name), value, 0);
  return writer.finish();
}

function writeMessage(writer: Writer, plan: MessagePlan, value: object, depth: number): void {
  if (depth > MAX_DEPTH) throw protoError("max depth exceeded");
  const object = value as Record<string, unknown>;
  for (const field of plan.fields) {
    const fieldValue = object[field.name];
    if (fieldValue === undefined || fieldValue === null) continue;
    if (field.map) writeMap(writer, field, fieldValue, depth);
    else if (field.repeated) writeRepeated(writer, field, fieldValue, depth);
    else writeSingular(writer, field, fieldValue, depth);
  }
}

function writeMap(writer: Writer, field: FieldPlan, value: unknown, depth: number): void {
  if (typeof value !== "object" || value === null) throw new TypeError(`${field.fullName}: object expected`);
  for (const [key, entry] of Object.entries(value as Record<string, unknown>)) {
    const converted = convert(field, entry);
    const inner = new Writer(key.length + 16);
    inner.varint(1 * 8 + WIRE_LEN);
    inner.string(key);
    if (field.kind === "message") {
      inner.varint(2 * 8 + WIRE_LEN);
      writeNested(inner, field, converted as object, depth);
    } else {
      // A map value is always written, even when it is the type's default (protobufjs does).
      inner.varint(2 * 8 + (isScalar(field.kind) ? SCALAR_WIRE[field.kind] : WIRE_VARINT));
      writeScalar(inner, field, converted === undefined ? scalarDefault(field) : converted);
    }
    writer.varint(field.tag);
    writer.bytes(inner.finish());
  }
}

function writeRepeated(writer: Writer, field: FieldPlan, value: unknown, depth: number): void {
  if (!Array.isArray(value)) throw new TypeError(`${field.fullName}: array expected`);
  const items: unknown[] = [];
  for (const item of value) {
    const converted = convert(field, item);
    // fromObject drops an enum name it does not know; in an array that leaves a hole, encoded
    // as 0 by protobufjs's writer.
    items.push(converted === undefined ? 0 : converted);
  }
  if (items.length === 0) return;
  if (field.packed) {
    const inner = new Writer();
    for (const item of items) writeScalar(inner, field, item);
    writer.varint(field.tag);
    writer.bytes(inner.finish());
    return;
  }
  for (const item of items) {
    writer.varint(field.tag);
    if (field.kind === "message") writeNested(writer, field, item as object, depth);
    else writeScalar(writer, field, item);
  }
}

function writeSingular(writer: Writer, field: FieldPlan, value: unknown, depth: number): void {
  const converted = convert(field, value);
  if (converted === undefined) return;
  writer.varint(field.tag);
  if (field.kind === "message") writeNested(writer, field, converted as object, depth);
  else writeScalar(writer, field, converted);
}

function writeNested(writer: Writer, field: FieldPlan, value: object, depth: number): void {
  const inner = new Writer();
  writeMessage(inner, messagePlan(field.ref), value, depth + 1);
  writer.bytes(inner.finish());
}

/** fromObject's conversion of one value; undefined when protobufjs would leave it unset. */
function convert(field: FieldPlan, value: unknown): unknown {
  switch (field.kind) {
    case "message":
      if (typeof value !== "object") throw new TypeError(`${field.fullName}: object expected`);
      return value;
    case "enum": {
      if (typeof value === "number") return value;
      if (typeof value === "string") return enumPlan(field.ref).byName.get(value);
      return undefined;
    }
    case "string":
      return String(value);
    case "bool":
      return Boolean(value);
    case "int32":
      return Number(value) | 0;
    case "uint32":
      return Number(value) >>> 0;
    case "int64":
    case "uint64":
      return toInt64(field, value);
    case "bytes":
      if (typeof value === "string") return Buffer.from(value, "base64");
      if (value instanceof Uint8Array) return value;
      if (Array.isArray(value)) return Uint8Array.from(value as number[]);
      throw new TypeError(`${field.fullName}: buffer expected`);
  }
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** An int64 as the unsigned 64-bit two's complement BigInt written on the wire. */
function toInt64(field: FieldPlan, value: unknown): bigint {
  let signed: bigint;
  if (typeof value === "bigint") signed = value;
  else if (typeof value === "number") {
    // Long.fromNumber: NaN and infinities are 0, out of range saturates, fractions truncate.
    if (Number.isNaN(value)) signed = 0n;
    else if (value <= -(2 ** 63)) signed = INT64_MIN;
    else if (value >= 2 ** 63) signed = INT64_MAX;
    else signed = BigInt(Math.trunc(value));
  } else if (typeof value === "string") {
    if (!/^-?\d+$/.test(value)) {
      throw protoError(`${field.fullName}: ${JSON.stringify(value)} is not a decimal integer`);
    }
    signed = BigInt(value);
  } else if (typeof value === "object" && value !== null && "low" in value && "high" in value) {
    const long = value as { low: number; high: number };
    signed = (BigInt(long.high >>> 0) << 32n) | BigInt(long.low >>> 0);
  } else {
    throw protoError(`${field.fullName}: an int64 must be a decimal string, a number or a bigint`);
  }
  return BigInt.asUintN(64, signed);
}

function scalarDefault(field: FieldPlan): unknown {
  if (field.kind === "string") return "";
  if (field.kind === "bool") return false;
  if (field.kind === "int64" || field.kind === "uint64") return 0n;
  if (field.kind === "bytes") return new Uint8Array(0);
  return 0;
}

function writeScalar(writer: Writer, field: FieldPlan, value: unknown): void {
  switch (field.kind) {
    case "string":
      writer.string(value as string);
      return;
    case "bytes":
      writer.bytes(value as Uint8Array);
      return;
    case "bool":
      writer.varint(value ? 1 : 0);
      return;
    case "uint32":
      writer.varint(value as number);
      return;
    case "int64":
    case "uint64": {
      const wide = value as bigint;
      writer.varint64(Number(wide & 0xffffffffn), Number(wide >> 32n));
      return;
    }
    default:
      // int32 and enums: negatives are sign-extended to 64 bits.
      writer.int32(value as number);
  }
}

// ---------------------------------------------------------------------------------------------
// Decoding

class Reader {
  readonly buf: Buffer;
  pos: number;
  end: number;
  constructor(buf: Buffer) {
    this.buf = buf;
    this.pos = 0;
    this.end = buf.length;
  }
  private outOfRange(): CsikitError {
    return protoError(`index out of range: ${this.pos} + 1 > ${this.end}`);
  }
  /** A varint as [low 32 bits, high 32 bits], both unsigned. */
  varint64(): [number, number] {
    let lo = 0;
    let hi = 0;
    for (let shift = 0; shift < 70; shift += 7) {
      if (this.pos >= this.end) throw this.outOfRange();
      const byte = this.buf[this.pos++]!;
      const bits = byte & 0x7f;
      if (shift < 28) lo |= bits << shift;
      else if (shift === 28) {
        lo |= bits << 28;
        hi |= bits >>> 4;
      } else hi |= bits << (shift - 32);
      if (byte < 0x80) return [lo >>> 0, hi >>> 0];
    }
    throw protoError("invalid varint encoding");
  }
  uint32(): number {
    return this.varint64()[0];
  }
  length(): number {
    const length = this.uint32();
    if (this.pos + length > this.end)
      throw protoError(`index out of range: ${this.pos} + ${length} > ${this.end}`);
    return length;
  }
  bytes(): Buffer {
    const length = this.length();
    const start = this.pos;
    this.pos += length;
    return this.buf.subarray(start, this.pos);
  }
  string(): string {
    const length = this.length();
    const start = this.pos;
    this.pos += length;
    return this.buf.toString("utf8", start, this.pos);
  }
  skip(length: number): void {
    if (this.pos + length > this.end)
      throw protoError(`index out of range: ${this.pos} + ${length} > ${this.end}`);
    this.pos += length;
  }
  skipType(wireType: number, depth: number): void {
    switch (wireType) {
      case WIRE_VARINT:
        this.varint64();
        return;
      case WIRE_I64:
        this.skip(8);
        return;
      case WIRE_LEN:
        this.skip(this.uint32());
        return;
      case WIRE_SGROUP:
        if (depth > MAX_DEPTH) throw protoError("maximum nesting depth exceeded");
        for (;;) {
          const tag = this.uint32();
          if ((tag & 7) === WIRE_EGROUP) return;
          this.skipType(tag & 7, depth + 1);
        }
      case WIRE_I32:
        this.skip(4);
        return;
      default:
        throw protoError(`invalid wire type ${wireType} at offset ${this.pos}`);
    }
  }
}

/** Deserializes protobuf bytes to the decoded object shape (the `Foo` types). */
export function decodeMessage(name: string, bytes: Buffer): object {
  const reader = new Reader(bytes);
  return readMessage(reader, messagePlan(name), reader.end, 0);
}

function readMessage(reader: Reader, plan: MessagePlan, end: number, depth: number): Record<string, unknown> {
  if (depth > MAX_DEPTH) throw protoError("maximum nesting depth exceeded");
  const out = defaults(plan);
  const saved = reader.end;
  reader.end = end;
  while (reader.pos < end) {
    const tag = reader.uint32();
    const field = plan.byId.get(tag >>> 3);
    if (field === undefined) {
      reader.skipType(tag & 7, depth);
      continue;
    }
    if (field.map) readMapEntry(reader, field, out[field.name] as Record<string, unknown>, depth);
    else if (field.repeated) {
      const list = out[field.name] as unknown[];
      if (field.packed && (tag & 7) === WIRE_LEN) {
        const length = reader.length();
        const packedEnd = reader.pos + length;
        while (reader.pos < packedEnd) list.push(readValue(reader, field, depth));
      } else list.push(readValue(reader, field, depth));
    } else {
      out[field.name] = readValue(reader, field, depth);
      if (field.oneof !== undefined) present(out, plan, field);
    }
  }
  if (reader.pos !== end) throw protoError(`index out of range: ${reader.pos} != ${end}`);
  reader.end = saved;
  return out;
}

/**
 * A oneof member was read: toObject sets the members present in field-number order, each
 * naming itself as the discriminator, so the highest-numbered present member wins.
 */
function present(out: Record<string, unknown>, plan: MessagePlan, field: FieldPlan): void {
  const current = out[field.oneof!];
  if (typeof current === "string") {
    const other = plan.fields.find((candidate) => candidate.name === current);
    if (other && other.id > field.id) return;
  }
  out[field.oneof!] = field.name;
}

/** toObject's defaults, in its key order: repeated fields, maps, then the singular ones. */
function defaults(plan: MessagePlan): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of plan.fields) if (field.repeated && field.oneof === undefined) out[field.name] = [];
  for (const field of plan.fields) if (field.map && field.oneof === undefined) out[field.name] = {};
  for (const field of plan.fields) {
    if (field.repeated || field.map || field.oneof !== undefined) continue;
    out[field.name] = defaultValue(field);
  }
  return out;
}

function defaultValue(field: FieldPlan): unknown {
  switch (field.kind) {
    case "message":
      return null;
    case "enum":
      return enumPlan(field.ref).defaultName;
    case "string":
      return "";
    case "bool":
      return false;
    case "int64":
    case "uint64":
      return "0";
    case "bytes":
      return Buffer.alloc(0);
    default:
      return 0;
  }
}

function readMapEntry(reader: Reader, field: FieldPlan, into: Record<string, unknown>, depth: number): void {
  const length = reader.length();
  const end = reader.pos + length;
  let key = "";
  let value: unknown = field.kind === "message" ? null : defaultValue(field);
  const saved = reader.end;
  reader.end = end;
  while (reader.pos < end) {
    const tag = reader.uint32();
    if (tag >>> 3 === 1) key = reader.string();
    else if (tag >>> 3 === 2) value = readValue(reader, field, depth);
    else reader.skipType(tag & 7, depth);
  }
  if (reader.pos !== end) throw protoError(`index out of range: ${reader.pos} != ${end}`);
  reader.end = saved;
  // A "__proto__" key is an own property, never the object's prototype.
  if (key === "__proto__")
    Object.defineProperty(into, key, { value, enumerable: true, writable: true, configurable: true });
  else into[key] = value;
}

function readValue(reader: Reader, field: FieldPlan, depth: number): unknown {
  switch (field.kind) {
    case "message": {
      const length = reader.length();
      return readMessage(reader, messagePlan(field.ref), reader.pos + length, depth + 1);
    }
    case "enum": {
      const number = reader.varint64()[0] | 0;
      return enumPlan(field.ref).byNumber.get(number) ?? number;
    }
    case "string":
      return reader.string();
    case "bytes":
      return reader.bytes();
    case "bool": {
      const [lo, hi] = reader.varint64();
      return lo !== 0 || hi !== 0;
    }
    case "int32":
      return reader.varint64()[0] | 0;
    case "uint32":
      return reader.varint64()[0];
    case "int64": {
      const [lo, hi] = reader.varint64();
      if (hi === 0) return String(lo);
      if (hi < 0x200000) return String(hi * TWO_32 + lo);
      return BigInt.asIntN(64, (BigInt(hi) << 32n) | BigInt(lo)).toString();
    }
    case "uint64": {
      const [lo, hi] = reader.varint64();
      if (hi < 0x200000) return String(hi * TWO_32 + lo);
      return ((BigInt(hi) << 32n) | BigInt(lo)).toString();
    }
  }
}
