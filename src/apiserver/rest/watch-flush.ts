// Coalesced writes of live watch events. With N watchers every change costs N socket writes
// (chunk framing, TLS record, writev syscall: ~20-40 µs each), which is what made the write rate
// fall with each watcher. Here a live event only appends its shared bytes to the watch's pending
// list; one shared timer later writes each watch's pending events as one chunk. The timer's delay
// adapts to what the last flush cost (FLUSH_SHARE), so flushing takes a bounded share of the event
// loop however many watchers there are: with few watchers events leave within ~1 ms, with
// hundreds they leave in batches every few tens of ms and each write carries many events.
//
// Order is kept: a watch's own writes (initial state, replay, bookmarks, errors) flush its pending
// events first (writeNow). Watches that received the same events since the last flush (the usual
// case: no selector) share one concatenated buffer, so the copy is made once per flush, not per
// watcher. Large events are not held back (EARLY_FLUSH_BYTES). pendingBytes() counts both the unflushed events and what the socket holds, so the
// per-watch bound stays exact.

import type { ServerResponse } from "node:http";

/** Flushing may take at most 1/FLUSH_SHARE of wall time on average (delay = (FLUSH_SHARE-1)×cost). */
const FLUSH_SHARE = 10;
const MIN_DELAY_MS = 1;
/**
 * The cap of the delay. Each flush costs one socket write (TLS record, loopback send) per dirty
 * watch, which is most of a fan-out's cost; with hundreds of watchers a lower cap made flushing
 * take far more than its share (100 ms: a third of the loop with 500 watchers on 2 cores).
 */
const MAX_DELAY_MS = 400;
/** Watches written per turn of the event loop. */
const FLUSH_SLICE = 64;
/**
 * A watch holding this much is flushed at once: per-write overhead is already small against its
 * size, and holding large events back would only make a healthy watch look like a stalled one.
 */
const EARLY_FLUSH_BYTES = 256 * 1024;

const dirty = new Set<CoalescedWriter>();
/**
 * Joined buffers of early flushes in this turn: the watchers of one change cross the early-flush
 * size at the same event, and share one copy of the same events as a timer flush does.
 */
let earlyJoined: Map<Buffer, { parts: Buffer[]; bytes: Buffer }[]> | undefined;
let timer: NodeJS.Timeout | undefined;
let lastFlushMs = 0;

function schedule(): void {
  if (timer !== undefined) return;
  const delay = Math.min(MAX_DELAY_MS, Math.max(MIN_DELAY_MS, (FLUSH_SHARE - 1) * lastFlushMs));
  timer = setTimeout(flushAll, delay);
}

/**
 * Writes every dirty watch's pending events, sharing the joined bytes among equal sequences, in
 * slices of FLUSH_SLICE watches with the event loop free in between, so a request that arrives
 * meanwhile (a writer's next PUT) waits for one slice, not for the whole fan-out.
 */
function flushAll(): void {
  timer = undefined;
  const writers = [...dirty];
  dirty.clear();
  const joined = new Map<Buffer, { parts: Buffer[]; bytes: Buffer }[]>();
  let spentMs = 0;
  const slice = (from: number): void => {
    const started = performance.now();
    const to = Math.min(writers.length, from + FLUSH_SLICE);
    for (let i = from; i < to; i++) writers[i]!.flush(joined);
    // The socket writes themselves happen when http uncorks each response, on process.nextTick;
    // a tick queued now runs after all of them, so the cost measured includes them.
    process.nextTick(() => {
      spentMs += performance.now() - started;
      if (to < writers.length) setImmediate(slice, to);
      else lastFlushMs = spentMs;
    });
  };
  slice(0);
}

function sameParts(a: readonly Buffer[], b: readonly Buffer[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** One watch response's coalescing buffer. */
export class CoalescedWriter {
  readonly #response: ServerResponse;
  #parts: Buffer[] = [];
  #bytes = 0;
  /**
   * The response's writableLength when last read. Only this writer's writes make it grow, and it
   * is read again after each of them, so it is never below the real figure between writes.
   */
  #socketBytes = 0;

  constructor(response: ServerResponse) {
    this.#response = response;
  }

  /** Bytes this watch holds and the client has not read: unflushed events plus the socket's queue. */
  pendingBytes(): number {
    return this.#bytes + this.#response.writableLength;
  }

  /**
   * pendingBytes() > limit, exactly, without reading the response's queue (a chain of getters)
   * for each event while the cheap upper bound stays within the limit.
   */
  exceeds(limit: number): boolean {
    if (this.#bytes + this.#socketBytes <= limit) return false;
    this.#socketBytes = this.#response.writableLength;
    return this.#bytes + this.#socketBytes > limit;
  }

  #write(bytes: Buffer): boolean {
    const written = this.#response.write(bytes);
    this.#socketBytes = this.#response.writableLength;
    return written;
  }

  /** Queues a live event's bytes (often shared with other watchers; never modified). */
  enqueue(bytes: Buffer): void {
    this.#parts.push(bytes);
    this.#bytes += bytes.length;
    if (this.#bytes >= EARLY_FLUSH_BYTES) {
      if (!earlyJoined) {
        earlyJoined = new Map();
        process.nextTick(() => (earlyJoined = undefined));
      }
      this.flush(earlyJoined);
      return;
    }
    dirty.add(this);
    schedule();
  }

  /**
   * Writes pending events, then `bytes`, now; returns response.write's answer (false: wait for
   * 'drain'). Used for everything that is not a live event, so nothing overtakes what is queued.
   */
  writeNow(bytes: Buffer): boolean {
    this.flush();
    return this.#write(bytes);
  }

  /** Writes the pending events as one chunk. */
  flush(joined?: Map<Buffer, { parts: Buffer[]; bytes: Buffer }[]>): void {
    const parts = this.#parts;
    if (parts.length === 0) return;
    this.#parts = [];
    this.#bytes = 0;
    dirty.delete(this);
    if (this.#response.destroyed || this.#response.writableEnded) return;
    if (parts.length === 1) {
      this.#write(parts[0]!);
      return;
    }
    let bytes: Buffer | undefined;
    if (joined) {
      const candidates = joined.get(parts[0]!);
      bytes = candidates?.find((c) => sameParts(c.parts, parts))?.bytes;
      if (!bytes) {
        bytes = Buffer.concat(parts);
        if (candidates) candidates.push({ parts, bytes });
        else joined.set(parts[0]!, [{ parts, bytes }]);
      }
    } else bytes = Buffer.concat(parts);
    this.#write(bytes);
  }

  /** Drops pending events (the watch is being cut or has ended). */
  discard(): void {
    this.#parts = [];
    this.#bytes = 0;
    dirty.delete(this);
  }
}
