// HTTP plumbing of the API server: bounded body reading (3 MiB, as kube-apiserver's
// MaxRequestBodyBytes), JSON/YAML/protobuf decoding with 400s that say what is wrong, and
// writing objects and Status responses in the negotiated format (negotiation.ts).

import type { IncomingMessage, ServerResponse } from "node:http";
import { parse as parseYaml } from "yaml";
import { errorMessage } from "../../base/index.ts";
import { mediaTypeOf, toYaml, type WireFormat } from "../encoding/negotiation.ts";
import {
  decodeProtobufObject,
  encodeProtobufObject,
  protobufType,
  PROTOBUF_MEDIA_TYPE,
} from "../encoding/protobuf.ts";
import { ApiError, badRequest, entityTooLarge, unsupportedMediaType, type Status } from "./status.ts";

export const MAX_BODY_BYTES = 3 * 1024 * 1024;

/** Reads the whole body, refusing more than `limit` bytes with 413. */
export async function readBody(request: IncomingMessage, limit = MAX_BODY_BYTES): Promise<Buffer> {
  const declared = Number(request.headers["content-length"] ?? NaN);
  if (Number.isFinite(declared) && declared > limit) {
    request.resume();
    throw entityTooLarge(limit);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    size += buffer.length;
    if (size > limit) {
      request.resume();
      throw entityTooLarge(limit);
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks);
}

/** The media type without parameters, lower-cased ("" when absent). */
export function mediaType(header: string | undefined): string {
  return (header ?? "").split(";")[0]!.trim().toLowerCase();
}

const BODY_TYPES = ["application/json", "application/yaml"];
const BUILTIN_BODY_TYPES = [...BODY_TYPES, PROTOBUF_MEDIA_TYPE];

export interface BodyOptions {
  /** Whether the endpoint takes protobuf bodies (built-in kinds; custom resources do not). */
  protobuf?: boolean;
  /** Filled with the paths of protobuf fields the message does not define. */
  unknownFields?: string[];
}

/**
 * Decodes a create/update body: JSON, YAML (kube-apiserver accepts it too), or the
 * Kubernetes protobuf encoding for built-in kinds (protobuf.ts). A media type the endpoint
 * does not take is 415 listing those it does, as upstream.
 */
export function decodeObjectBody(
  body: Buffer,
  contentType: string | undefined,
  options: BodyOptions = { protobuf: true },
): unknown {
  const type = mediaType(contentType);
  const accepted = options.protobuf === false ? BODY_TYPES : BUILTIN_BODY_TYPES;
  if (type !== "" && !accepted.includes(type)) throw unsupportedMediaType(accepted);
  if (type === PROTOBUF_MEDIA_TYPE) {
    const decoded = decodeProtobufObject(body, { unknownFields: options.unknownFields ?? [] });
    if (decoded === undefined) throw unsupportedMediaType(BODY_TYPES);
    return checkDecodedDepth(decoded);
  }
  if (body.length === 0) throw badRequest("the body of the request is empty; expected a JSON object");
  return type === "application/yaml" ? decodeYaml(body) : decodeJson(body);
}

/**
 * Nesting limit of request bodies and of patched objects. Upstream's decoder allows 10,000
 * levels (Go's stacks grow on demand); V8's structuredClone and JSON.stringify overflow their
 * fixed native stack between 1,500 and 5,000 levels, so csikit refuses deeper bodies with a
 * 400 instead of failing with a 500 half-way through a request. No Kubernetes object comes
 * near this depth.
 */
export const MAX_NESTING_DEPTH = 1_000;

function tooDeep(): ApiError {
  return badRequest(
    `the body of the request could not be decoded: exceeded max depth (${MAX_NESTING_DEPTH} levels of nesting)`,
  );
}

/**
 * Refuses a body nested deeper than MAX_NESTING_DEPTH before it is parsed: every later step
 * (cloning, defaulting, validation, encoding) walks objects recursively and would overflow the
 * stack. Brackets inside JSON strings are skipped; for YAML this counts flow collections only
 * (block nesting costs indentation, so a body under the size limit cannot go that deep).
 */
function checkNestingDepth(text: string): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > MAX_NESTING_DEPTH) throw tooDeep();
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
}

/**
 * Whether a decoded value nests deeper than MAX_NESTING_DEPTH, checked without recursion: a
 * patch can build a deeper object than its body (a JSON patch `copy` of a subtree into
 * itself doubles the depth), and YAML block nesting is not counted before parsing.
 */
export function nestedTooDeep(value: unknown): boolean {
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const { value: current, depth } = stack.pop()!;
    if (typeof current !== "object" || current === null) continue;
    if (depth + 1 > MAX_NESTING_DEPTH) return true;
    for (const child of Object.values(current)) stack.push({ value: child, depth: depth + 1 });
  }
  return false;
}

/** Throws the 400 of a too-deep body when `value` nests deeper than MAX_NESTING_DEPTH. */
export function checkDecodedDepth(value: unknown): unknown {
  if (nestedTooDeep(value)) throw tooDeep();
  return value;
}

export function decodeJson(body: Buffer): unknown {
  const text = body.toString("utf8");
  checkNestingDepth(text);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw badRequest(`the body of the request could not be decoded as JSON: ${errorMessage(error)}`);
  }
}

function decodeYaml(body: Buffer): unknown {
  const text = body.toString("utf8");
  checkNestingDepth(text);
  try {
    return checkDecodedDepth(parseYaml(text));
  } catch (error) {
    if (error instanceof ApiError) throw error;
    throw badRequest(`the body of the request could not be decoded as YAML: ${errorMessage(error)}`);
  }
}

export interface SendOptions {
  /** Default application/json. */
  contentType?: string;
  /** `Warning` headers (RFC 7234 form `299 - "text"`), as kube-apiserver sends them. */
  warnings?: readonly string[];
  /**
   * The body already encoded as JSON text, whole or as pieces to send one after the other (a
   * list spliced from stored texts): sent as is instead of encoding `body`.
   */
  encoded?: string | readonly string[];
  /** The body already encoded as protobuf (with protobuf negotiated): sent as is. */
  bytes?: Buffer;
  /** Cache-Control instead of "no-cache, private". */
  cacheControl?: string;
  /** An ETag header (quoted entity tag). */
  etag?: string;
}

/** JSON bodies from this many characters on are written a slice at a time, letting other requests run between slices. */
const STREAM_FROM_CHARS = 256 * 1024;
/** About this many characters per slice: one socket write (and TLS encryption) each. */
const SLICE_CHARS = 64 * 1024;

export function sendJson(
  response: ServerResponse,
  code: number,
  body: unknown,
  options: SendOptions = {},
): void {
  const encoded = options.encoded ?? JSON.stringify(body);
  const pieces = typeof encoded === "string" ? [encoded] : encoded;
  // UTF-16 code units never outnumber UTF-8 bytes, so the cheap count decides which bodies are
  // streamed; only the others pay for Buffer.byteLength (a scan of every character, 1.5 ms for
  // a list of 5,000 ConfigMaps).
  let chars = 0;
  for (const piece of pieces) chars += piece.length;
  const streamed = chars >= STREAM_FROM_CHARS;
  const headers: Record<string, string | number | string[]> = {
    "Content-Type": options.contentType ?? "application/json",
    "Cache-Control": options.cacheControl ?? "no-cache, private",
  };
  if (options.etag !== undefined) headers.ETag = options.etag;
  if (!streamed) {
    let length = 0;
    for (const piece of pieces) length += Buffer.byteLength(piece);
    headers["Content-Length"] = length;
  }
  if (options.warnings && options.warnings.length > 0) {
    headers.Warning = options.warnings.map((w) => `299 - ${JSON.stringify(w)}`);
  }
  response.writeHead(code, headers);
  if (!streamed) {
    response.end(pieces.length === 1 ? pieces[0] : pieces.join(""));
    return;
  }
  // A huge list or object written in one go would hold the event loop (encoding and TLS) for
  // as long as it takes, and every other client with it. It goes out chunked, as kube-apiserver
  // (Go's net/http) sends a body larger than its write buffer.
  writeSlices(response, pieces).catch(() => response.destroy());
}

/**
 * Writes the pieces in slices of about SLICE_CHARS, yielding to the event loop after each one
 * and waiting for the socket to drain when the client reads slower than we write.
 */
async function writeSlices(response: ServerResponse, pieces: readonly string[]): Promise<void> {
  let slice: string[] = [];
  let size = 0;
  const flush = async (): Promise<boolean> => {
    if (response.destroyed) return false;
    const written = response.write(slice.length === 1 ? slice[0]! : slice.join(""));
    slice = [];
    size = 0;
    if (written) await new Promise<void>((resolve) => setImmediate(resolve));
    else await drained(response);
    return !response.destroyed;
  };
  for (const piece of pieces) {
    let start = 0;
    while (piece.length - start > SLICE_CHARS - size) {
      let end = start + (SLICE_CHARS - size);
      // Never between the two halves of a surrogate pair: each slice is encoded on its own.
      const last = piece.charCodeAt(end - 1);
      if (last >= 0xd800 && last <= 0xdbff) end--;
      if (end > start) slice.push(piece.slice(start, end));
      start = end;
      if (!(await flush())) return;
    }
    if (start < piece.length) {
      slice.push(start === 0 ? piece : piece.slice(start));
      size += piece.length - start;
    }
  }
  response.end(slice.join(""));
}

function drained(response: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      response.off("drain", done);
      response.off("close", done);
      resolve();
    };
    response.on("drain", done);
    response.on("close", done);
  });
}

/**
 * Writes an object in the negotiated format. A body with no protobuf form (a Table) goes out
 * as JSON even when protobuf was negotiated; negotiation already refused kinds that have none.
 */
export function sendObject(
  response: ServerResponse,
  code: number,
  body: unknown,
  format: WireFormat,
  options: SendOptions = {},
): void {
  if (format === "json") return sendJson(response, code, body, options);
  const record = body as Record<string, unknown>;
  const apiVersion = typeof record.apiVersion === "string" ? record.apiVersion : "";
  const kind = typeof record.kind === "string" ? record.kind : "";
  if (format === "protobuf" && protobufType(apiVersion, kind)) {
    const bytes = options.bytes ?? encodeProtobufObject(record);
    writeBody(response, code, bytes, PROTOBUF_MEDIA_TYPE, options.warnings);
    return;
  }
  if (format === "yaml") {
    const encoded = typeof options.encoded === "string" ? options.encoded : options.encoded?.join("");
    const parsed: unknown = encoded !== undefined ? JSON.parse(encoded) : body;
    writeBody(response, code, Buffer.from(toYaml(parsed)), mediaTypeOf("yaml"), options.warnings);
    return;
  }
  sendJson(response, code, body, options);
}

function writeBody(
  response: ServerResponse,
  code: number,
  bytes: Buffer,
  contentType: string,
  warnings: readonly string[] | undefined,
): void {
  const headers: Record<string, string | number | string[]> = {
    "Content-Type": contentType,
    "Content-Length": bytes.length,
    "Cache-Control": "no-cache, private",
  };
  if (warnings && warnings.length > 0) headers.Warning = warnings.map((w) => `299 - ${JSON.stringify(w)}`);
  response.writeHead(code, headers);
  response.end(bytes);
}

export function sendStatus(response: ServerResponse, error: ApiError, format: WireFormat = "json"): void {
  const status: Status = error.toStatus();
  const headers: Record<string, string> = {};
  if (error.code === 401) headers["WWW-Authenticate"] = 'Bearer realm="csikit"';
  if (error.code === 429 || error.code === 503) headers["Retry-After"] = "1";
  const bytes =
    format === "protobuf" ? encodeProtobufObject({ ...status }) : Buffer.from(JSON.stringify(status));
  response.writeHead(error.code, {
    ...headers,
    "Content-Type": format === "protobuf" ? PROTOBUF_MEDIA_TYPE : "application/json",
    "Content-Length": bytes.length,
    "Cache-Control": "no-cache, private",
  });
  response.end(bytes);
}

export function sendText(response: ServerResponse, code: number, text: string): void {
  response.writeHead(code, {
    "Content-Type": "text/plain; charset=utf-8",
    "Content-Length": Buffer.byteLength(text),
  });
  response.end(text);
}
