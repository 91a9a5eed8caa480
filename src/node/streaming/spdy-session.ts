// The server side of one SPDY/3.1 connection, as the kubelet runs it after an `Upgrade: SPDY/3.1`
// answer: the client opens the streams (SYN_STREAM, odd ids, a `streamtype` header each), the
// server accepts each with a SYN_REPLY and both sides exchange DATA frames until each half is
// closed with FLAG_FIN; PINGs are echoed, RST_STREAM ends a stream, GOAWAY the connection.
// Frames are written in the order they are made (a reply before the stream's data), because
// header compression is asynchronous. SPDY flow control is not enforced, as the Go library
// kubectl uses (spdystream) does not enforce it either.

import type { Duplex } from "node:stream";
import { PassThrough, Writable } from "node:stream";
import { errorMessage, type Logger } from "../../base/index.ts";
import {
  FLAG_FIN,
  FrameReader,
  HeaderCompressor,
  HeaderDecompressor,
  RstStatus,
  encodeFrame,
  type SpdyFrame,
} from "./spdy-frames.ts";

/** The largest data frame sent (the Go library's own frames are no larger). */
const MAX_DATA_FRAME = 32 * 1024;

/** One client-opened stream: what the client sends is `incoming`, what we send goes to `outgoing`. */
export interface SpdyStream {
  readonly id: number;
  readonly headers: ReadonlyMap<string, string[]>;
  /** Data from the client; ends when the client half-closes (FLAG_FIN) or resets the stream. */
  readonly incoming: PassThrough;
  /** Data to the client; ending it sends FLAG_FIN. */
  readonly outgoing: Writable;
}

export interface SpdySessionOptions {
  /** Called for each stream the client opens, after its SYN_REPLY was queued. */
  onStream: (stream: SpdyStream) => void;
  logger: Logger;
}

export class SpdyServerSession {
  readonly #socket: Duplex;
  readonly #options: SpdySessionOptions;
  readonly #reader = new FrameReader();
  readonly #compressor = new HeaderCompressor();
  readonly #decompressor = new HeaderDecompressor();
  readonly #streams = new Map<number, SpdyStream>();
  #lastStreamId = 0;
  /** Incoming frames are handled one at a time (header blocks decompress asynchronously). */
  #inbound: Promise<void> = Promise.resolve();
  /** Outgoing frames are written in the order they were queued. */
  #outbound: Promise<void> = Promise.resolve();
  #closed = false;
  readonly #done: Promise<void>;
  #resolveDone!: () => void;

  constructor(socket: Duplex, head: Buffer, options: SpdySessionOptions) {
    this.#socket = socket;
    this.#options = options;
    this.#done = new Promise((resolve) => (this.#resolveDone = resolve));
    socket.on("data", (chunk: Buffer) => this.#receive(chunk));
    socket.on("error", (error) => {
      options.logger.info(4, "spdy connection error", { err: error.message });
      this.#teardown();
    });
    socket.on("close", () => this.#teardown());
    socket.on("end", () => this.#teardown());
    if (head.length > 0) this.#receive(head);
  }

  /** Resolves when the connection is gone. */
  get done(): Promise<void> {
    return this.#done;
  }

  /** Sends GOAWAY after everything queued, then closes our side of the connection. */
  async close(): Promise<void> {
    if (this.#closed) return;
    await this.#queue(async () =>
      encodeFrame({ type: "goaway", lastGoodStreamId: this.#lastStreamId, status: 0 }),
    );
    await this.#outbound;
    this.#socket.end();
    this.#teardown();
  }

  #receive(chunk: Buffer): void {
    let frames: SpdyFrame[];
    try {
      frames = this.#reader.push(chunk);
    } catch (error) {
      this.#options.logger.warn("spdy framing error", { err: errorMessage(error) });
      this.#socket.destroy();
      return;
    }
    for (const frame of frames)
      this.#inbound = this.#inbound
        .then(() => this.#handle(frame))
        .catch((error: unknown) => {
          this.#options.logger.warn("spdy protocol error", { err: errorMessage(error) });
          this.#socket.destroy();
        });
  }

  async #handle(frame: SpdyFrame): Promise<void> {
    if (this.#closed) return;
    switch (frame.type) {
      case "syn_stream": {
        const headers = await this.#decompressor.decompress(frame.headerBlock);
        if (frame.streamId % 2 === 0 || frame.streamId <= this.#lastStreamId) {
          await this.#queue(async () =>
            encodeFrame({ type: "rst_stream", streamId: frame.streamId, status: RstStatus.PROTOCOL_ERROR }),
          );
          return;
        }
        this.#lastStreamId = frame.streamId;
        const stream = this.#open(frame.streamId, headers);
        const reply = this.#queue(async () =>
          encodeFrame({
            type: "syn_reply",
            streamId: frame.streamId,
            flags: 0,
            headerBlock: await this.#compressor.compress([]),
          }),
        );
        if (frame.flags & FLAG_FIN) stream.incoming.end();
        await reply;
        this.#options.onStream(stream);
        return;
      }
      case "data": {
        const stream = this.#streams.get(frame.streamId);
        if (!stream) {
          await this.#queue(async () =>
            encodeFrame({ type: "rst_stream", streamId: frame.streamId, status: RstStatus.INVALID_STREAM }),
          );
          return;
        }
        if (frame.data.length > 0 && !stream.incoming.writableEnded) stream.incoming.write(frame.data);
        if (frame.flags & FLAG_FIN) stream.incoming.end();
        return;
      }
      case "rst_stream": {
        const stream = this.#streams.get(frame.streamId);
        if (stream) {
          stream.incoming.end();
          stream.outgoing.destroy();
          this.#streams.delete(frame.streamId);
        }
        return;
      }
      case "ping":
        await this.#queue(async () => encodeFrame({ type: "ping", id: frame.id }));
        return;
      case "goaway":
        for (const stream of this.#streams.values()) stream.incoming.end();
        return;
      case "headers":
        // Extra headers on an open stream carry nothing the streaming protocols use.
        await this.#decompressor.decompress(frame.headerBlock);
        return;
      default:
        // SETTINGS and WINDOW_UPDATE (no flow control, as the peer) and unknown frames.
        return;
    }
  }

  #open(id: number, headers: Map<string, string[]>): SpdyStream {
    const send = (data: Buffer, fin: boolean) => this.#sendData(id, data, fin);
    const outgoing = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        send(chunk, false).then(() => callback(), callback);
      },
      final(callback) {
        send(Buffer.alloc(0), true).then(() => callback(), callback);
      },
    });
    outgoing.on("error", () => undefined);
    const stream: SpdyStream = { id, headers, incoming: new PassThrough(), outgoing };
    this.#streams.set(id, stream);
    return stream;
  }

  async #sendData(streamId: number, data: Buffer, fin: boolean): Promise<void> {
    if (this.#closed) throw new Error("connection closed");
    let at = 0;
    do {
      const piece = data.subarray(at, at + MAX_DATA_FRAME);
      at += piece.length;
      const last = at >= data.length;
      await this.#queue(async () =>
        encodeFrame({ type: "data", streamId, flags: fin && last ? FLAG_FIN : 0, data: piece }),
      );
    } while (at < data.length);
  }

  /** Queues one frame (made when its turn comes); resolves once it is handed to the socket. */
  #queue(make: () => Promise<Buffer>): Promise<void> {
    const job = this.#outbound.then(async () => {
      if (this.#closed) return;
      const bytes = await make();
      await new Promise<void>((resolve) => {
        if (this.#socket.write(bytes)) return resolve();
        const done = () => {
          this.#socket.off("drain", done);
          this.#socket.off("close", done);
          resolve();
        };
        this.#socket.on("drain", done);
        this.#socket.on("close", done);
      });
    });
    this.#outbound = job.catch(() => undefined);
    return job;
  }

  #teardown(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const stream of this.#streams.values()) {
      stream.incoming.end();
      stream.outgoing.destroy();
    }
    this.#streams.clear();
    this.#compressor.close();
    this.#decompressor.close();
    if (!this.#socket.writableEnded) this.#socket.end();
    this.#resolveDone();
  }
}
