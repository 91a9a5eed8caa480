// SPDY/3.1 framing, the wire format of the kubelet's older streaming protocol (the
// `Upgrade: SPDY/3.1` connection kubectl opened for exec before WebSockets, and still opens when
// KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false or a WebSocket upgrade fails). No maintained npm
// library speaks it, so the frames are encoded here from the SPDY/3 draft: control frames
// (SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE) and data
// frames, and the name/value header blocks, compressed with one zlib context per direction
// primed with the SPDY/3 dictionary (a peer inflates every block of a connection with the same
// stream, so blocks are sync-flushed, never finished).

import { constants, createDeflate, createInflate, type Deflate, type Inflate } from "node:zlib";

export const SPDY_VERSION = 3;

export const FrameType = {
  SYN_STREAM: 1,
  SYN_REPLY: 2,
  RST_STREAM: 3,
  SETTINGS: 4,
  PING: 6,
  GOAWAY: 7,
  HEADERS: 8,
  WINDOW_UPDATE: 9,
} as const;

/** FLAG_FIN on data, SYN_STREAM, SYN_REPLY and HEADERS frames. */
export const FLAG_FIN = 0x01;
/** FLAG_UNIDIRECTIONAL on SYN_STREAM. */
export const FLAG_UNIDIRECTIONAL = 0x02;

/** RST_STREAM status codes the server sends. */
export const RstStatus = { PROTOCOL_ERROR: 1, INVALID_STREAM: 2, REFUSED_STREAM: 3, CANCEL: 5 } as const;

/** The largest payload a frame's 24-bit length can carry. */
export const MAX_FRAME_PAYLOAD = 0xffffff;

export type SpdyFrame =
  | { type: "data"; streamId: number; flags: number; data: Buffer }
  | {
      type: "syn_stream";
      streamId: number;
      associatedId: number;
      priority: number;
      flags: number;
      headerBlock: Buffer;
    }
  | { type: "syn_reply"; streamId: number; flags: number; headerBlock: Buffer }
  | { type: "headers"; streamId: number; flags: number; headerBlock: Buffer }
  | { type: "rst_stream"; streamId: number; status: number }
  | { type: "settings"; flags: number; entries: { flags: number; id: number; value: number }[] }
  | { type: "ping"; id: number }
  | { type: "goaway"; lastGoodStreamId: number; status: number }
  | { type: "window_update"; streamId: number; delta: number }
  | { type: "unknown"; version: number; frameType: number; flags: number; payload: Buffer };

export class SpdyProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SpdyProtocolError";
  }
}

/** The SPDY/3 header-compression dictionary: length-prefixed header names, then common values. */
export const SPDY3_DICTIONARY: Buffer = (() => {
  const names = [
    ...["options", "head", "post", "put", "delete", "trace", "accept", "accept-charset"],
    ...["accept-encoding", "accept-language", "accept-ranges", "age", "allow", "authorization"],
    ...["cache-control", "connection", "content-base", "content-encoding", "content-language"],
    ...["content-length", "content-location", "content-md5", "content-range", "content-type"],
    ...["date", "etag", "expect", "expires", "from", "host", "if-match", "if-modified-since"],
    ...["if-none-match", "if-range", "if-unmodified-since", "last-modified", "location"],
    ...["max-forwards", "pragma", "proxy-authenticate", "proxy-authorization", "range", "referer"],
    ...["retry-after", "server", "te", "trailer", "transfer-encoding", "upgrade", "user-agent"],
    ...["vary", "via", "warning", "www-authenticate", "method", "get", "status", "200 OK"],
    ...["version", "HTTP/1.1", "url", "public", "set-cookie", "keep-alive", "origin"],
  ];
  const tail =
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505" +
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request" +
    "401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented" +
    "503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 " +
    "Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif," +
    "application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age=" +
    "gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.";
  const parts: Buffer[] = [];
  for (const name of names) {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(name.length);
    parts.push(length, Buffer.from(name, "latin1"));
  }
  parts.push(Buffer.from(tail, "latin1"));
  return Buffer.concat(parts);
})();

const STREAM_ID_MASK = 0x7fffffff;

function control(type: number, flags: number, payload: Buffer): Buffer {
  if (payload.length > MAX_FRAME_PAYLOAD)
    throw new SpdyProtocolError(`frame payload too large: ${payload.length}`);
  const head = Buffer.alloc(8);
  head.writeUInt16BE(0x8000 | SPDY_VERSION, 0);
  head.writeUInt16BE(type, 2);
  head.writeUInt32BE(((flags & 0xff) << 24) | payload.length, 4);
  return Buffer.concat([head, payload]);
}

function u32(...values: number[]): Buffer {
  const out = Buffer.alloc(values.length * 4);
  values.forEach((value, i) => out.writeUInt32BE(value >>> 0, i * 4));
  return out;
}

/** The bytes of one frame. */
export function encodeFrame(frame: SpdyFrame): Buffer {
  switch (frame.type) {
    case "data": {
      if (frame.data.length > MAX_FRAME_PAYLOAD)
        throw new SpdyProtocolError(`frame payload too large: ${frame.data.length}`);
      const head = Buffer.alloc(8);
      head.writeUInt32BE(frame.streamId & STREAM_ID_MASK, 0);
      head.writeUInt32BE(((frame.flags & 0xff) << 24) | frame.data.length, 4);
      return Buffer.concat([head, frame.data]);
    }
    case "syn_stream": {
      const fixed = Buffer.alloc(10);
      fixed.writeUInt32BE(frame.streamId & STREAM_ID_MASK, 0);
      fixed.writeUInt32BE(frame.associatedId & STREAM_ID_MASK, 4);
      fixed.writeUInt8((frame.priority & 0x7) << 5, 8);
      return control(FrameType.SYN_STREAM, frame.flags, Buffer.concat([fixed, frame.headerBlock]));
    }
    case "syn_reply":
      return control(
        FrameType.SYN_REPLY,
        frame.flags,
        Buffer.concat([u32(frame.streamId & STREAM_ID_MASK), frame.headerBlock]),
      );
    case "headers":
      return control(
        FrameType.HEADERS,
        frame.flags,
        Buffer.concat([u32(frame.streamId & STREAM_ID_MASK), frame.headerBlock]),
      );
    case "rst_stream":
      return control(FrameType.RST_STREAM, 0, u32(frame.streamId & STREAM_ID_MASK, frame.status));
    case "settings": {
      const body = Buffer.alloc(4 + frame.entries.length * 8);
      body.writeUInt32BE(frame.entries.length, 0);
      frame.entries.forEach((entry, i) => {
        body.writeUInt32BE(((entry.flags & 0xff) << 24) | (entry.id & 0xffffff), 4 + i * 8);
        body.writeUInt32BE(entry.value >>> 0, 8 + i * 8);
      });
      return control(FrameType.SETTINGS, frame.flags, body);
    }
    case "ping":
      return control(FrameType.PING, 0, u32(frame.id));
    case "goaway":
      return control(FrameType.GOAWAY, 0, u32(frame.lastGoodStreamId & STREAM_ID_MASK, frame.status));
    case "window_update":
      return control(
        FrameType.WINDOW_UPDATE,
        0,
        u32(frame.streamId & STREAM_ID_MASK, frame.delta & STREAM_ID_MASK),
      );
    case "unknown":
      return control(frame.frameType, frame.flags, frame.payload);
  }
}

function need(payload: Buffer, bytes: number, what: string): void {
  if (payload.length < bytes)
    throw new SpdyProtocolError(`${what} frame too short (${payload.length} bytes)`);
}

function decodeControl(version: number, type: number, flags: number, payload: Buffer): SpdyFrame {
  if (version !== SPDY_VERSION) return { type: "unknown", version, frameType: type, flags, payload };
  switch (type) {
    case FrameType.SYN_STREAM:
      need(payload, 10, "SYN_STREAM");
      return {
        type: "syn_stream",
        streamId: payload.readUInt32BE(0) & STREAM_ID_MASK,
        associatedId: payload.readUInt32BE(4) & STREAM_ID_MASK,
        priority: payload.readUInt8(8) >> 5,
        flags,
        headerBlock: payload.subarray(10),
      };
    case FrameType.SYN_REPLY:
    case FrameType.HEADERS:
      need(payload, 4, type === FrameType.SYN_REPLY ? "SYN_REPLY" : "HEADERS");
      return {
        type: type === FrameType.SYN_REPLY ? "syn_reply" : "headers",
        streamId: payload.readUInt32BE(0) & STREAM_ID_MASK,
        flags,
        headerBlock: payload.subarray(4),
      };
    case FrameType.RST_STREAM:
      need(payload, 8, "RST_STREAM");
      return {
        type: "rst_stream",
        streamId: payload.readUInt32BE(0) & STREAM_ID_MASK,
        status: payload.readUInt32BE(4),
      };
    case FrameType.SETTINGS: {
      need(payload, 4, "SETTINGS");
      const count = payload.readUInt32BE(0);
      need(payload, 4 + count * 8, "SETTINGS");
      const entries = [];
      for (let i = 0; i < count; i++) {
        const word = payload.readUInt32BE(4 + i * 8);
        entries.push({ flags: word >>> 24, id: word & 0xffffff, value: payload.readUInt32BE(8 + i * 8) });
      }
      return { type: "settings", flags, entries };
    }
    case FrameType.PING:
      need(payload, 4, "PING");
      return { type: "ping", id: payload.readUInt32BE(0) };
    case FrameType.GOAWAY:
      need(payload, 4, "GOAWAY");
      return {
        type: "goaway",
        lastGoodStreamId: payload.readUInt32BE(0) & STREAM_ID_MASK,
        status: payload.length >= 8 ? payload.readUInt32BE(4) : 0,
      };
    case FrameType.WINDOW_UPDATE:
      need(payload, 8, "WINDOW_UPDATE");
      return {
        type: "window_update",
        streamId: payload.readUInt32BE(0) & STREAM_ID_MASK,
        delta: payload.readUInt32BE(4) & STREAM_ID_MASK,
      };
    default:
      return { type: "unknown", version, frameType: type, flags, payload };
  }
}

/** Splits a byte stream into frames; `push` returns every frame completed by the chunk. */
export class FrameReader {
  /** Received bytes not yet framed, kept as chunks until a whole frame is there. */
  #pending: Buffer[] = [];
  #size = 0;

  push(chunk: Buffer): SpdyFrame[] {
    if (chunk.length > 0) {
      this.#pending.push(chunk);
      this.#size += chunk.length;
    }
    const frames: SpdyFrame[] = [];
    while (this.#size >= 8) {
      const head = this.#peek(8);
      const length = head.readUInt32BE(4) & 0xffffff;
      if (this.#size < 8 + length) break;
      const bytes = this.#take(8 + length);
      const first = bytes.readUInt32BE(0);
      const flags = bytes.readUInt8(4);
      const payload = Buffer.from(bytes.subarray(8));
      if (first & 0x80000000)
        frames.push(decodeControl((first >>> 16) & 0x7fff, first & 0xffff, flags, payload));
      else frames.push({ type: "data", streamId: first & STREAM_ID_MASK, flags, data: payload });
    }
    return frames;
  }

  #peek(bytes: number): Buffer {
    if (this.#pending[0]!.length < bytes) this.#pending = [Buffer.concat(this.#pending)];
    return this.#pending[0]!;
  }

  #take(bytes: number): Buffer {
    const all = this.#pending.length === 1 ? this.#pending[0]! : Buffer.concat(this.#pending);
    const rest = all.subarray(bytes);
    this.#pending = rest.length > 0 ? [rest] : [];
    this.#size -= bytes;
    return all.subarray(0, bytes);
  }
}

/** Header names and values, lower-case names; a multi-valued header holds several values. */
export type HeaderList = readonly (readonly [name: string, values: readonly string[]])[];

/** The uncompressed name/value block: a count, then length-prefixed names and NUL-joined values. */
export function encodeHeaderBlock(headers: HeaderList): Buffer {
  const parts: Buffer[] = [u32(headers.length)];
  for (const [name, values] of headers) {
    const key = Buffer.from(name.toLowerCase(), "utf8");
    const value = Buffer.from(values.join("\0"), "utf8");
    parts.push(u32(key.length), key, u32(value.length), value);
  }
  return Buffer.concat(parts);
}

/** Reads an uncompressed name/value block into a map of lower-case names to values. */
export function decodeHeaderBlock(block: Buffer): Map<string, string[]> {
  const headers = new Map<string, string[]>();
  let at = 0;
  const take = (what: string): Buffer => {
    if (at + 4 > block.length) throw new SpdyProtocolError(`header block truncated at ${what}`);
    const length = block.readUInt32BE(at);
    at += 4;
    if (at + length > block.length) throw new SpdyProtocolError(`header block truncated in ${what}`);
    const bytes = block.subarray(at, at + length);
    at += length;
    return bytes;
  };
  if (block.length < 4) throw new SpdyProtocolError("header block truncated at its count");
  const count = block.readUInt32BE(0);
  at = 4;
  for (let i = 0; i < count; i++) {
    const name = take("a name").toString("utf8").toLowerCase();
    const values = take("a value").toString("utf8").split("\0");
    headers.set(name, [...(headers.get(name) ?? []), ...values]);
  }
  return headers;
}

/**
 * One direction's zlib context: every header block goes through the same deflate (or inflate)
 * stream and is sync-flushed, so the peer's context stays in step. Calls run one at a time in
 * the order made.
 */
class ZlibContext {
  readonly #zlib: Deflate | Inflate;
  #queue: Promise<unknown> = Promise.resolve();
  #failed: Error | undefined;

  constructor(zlib: Deflate | Inflate) {
    this.#zlib = zlib;
    zlib.on("error", (error) => (this.#failed = error));
  }

  run(input: Buffer): Promise<Buffer> {
    const job = this.#queue.then(
      () =>
        new Promise<Buffer>((resolve, reject) => {
          if (this.#failed) return reject(this.#failed);
          const chunks: Buffer[] = [];
          const onData = (chunk: Buffer) => chunks.push(chunk);
          const onError = (error: Error) => {
            this.#zlib.off("data", onData);
            reject(new SpdyProtocolError(`header block compression: ${error.message}`));
          };
          this.#zlib.on("data", onData);
          this.#zlib.once("error", onError);
          this.#zlib.write(input);
          this.#zlib.flush(constants.Z_SYNC_FLUSH, () => {
            this.#zlib.off("data", onData);
            this.#zlib.off("error", onError);
            if (this.#failed)
              reject(new SpdyProtocolError(`header block compression: ${this.#failed.message}`));
            else resolve(Buffer.concat(chunks));
          });
        }),
    );
    this.#queue = job.catch(() => undefined);
    return job;
  }

  close(): void {
    this.#zlib.destroy();
  }
}

/** Compresses this side's header blocks (one context per connection). */
export class HeaderCompressor {
  readonly #context = new ZlibContext(
    createDeflate({ dictionary: SPDY3_DICTIONARY, level: constants.Z_BEST_COMPRESSION }),
  );
  compress(headers: HeaderList): Promise<Buffer> {
    return this.#context.run(encodeHeaderBlock(headers));
  }
  close(): void {
    this.#context.close();
  }
}

/** Decompresses the peer's header blocks (one context per connection). */
export class HeaderDecompressor {
  readonly #context = new ZlibContext(createInflate({ dictionary: SPDY3_DICTIONARY }));
  async decompress(block: Buffer): Promise<Map<string, string[]>> {
    return decodeHeaderBlock(await this.#context.run(block));
  }
  close(): void {
    this.#context.close();
  }
}
