// In-process watch fan-out for the revision log. Each watch first replays stored history in
// pages (revisions in (fromRevision, R0], where R0 is the store's revision when the watch was
// opened) and then yields live events (revisions > R0) that the store published after each
// commit. Why no gap and no duplicate: the store is synchronous, so opening a watch (reading R0
// and subscribing) happens in one turn of the event loop with no commit in between; every
// commit with revision > R0 is therefore published to the watch, and replay stops at R0.
//
// Slow consumers never block writers or other watchers: publishing only appends to each
// watch's queue. A queue holding `bufferLimit` undelivered live events ends its watch with
// StoreError("Gone"), so the client relists (kube-apiserver's cacher likewise drops watchers
// that cannot keep up). Replay reads history lazily from the database, so replaying a long
// window costs one page of memory, not the whole window; if compaction overtakes a replay in
// progress the watch ends with Gone too.

import type { Logger } from "../../base/index.ts";
import { StoreError } from "./types.ts";
import type { StoreEvent, Watch } from "./types.ts";

/** Where a watch reads history: the store, synchronously and consistently per call. */
export interface HistorySource {
  /** Stored events under `prefix` with after < revision <= until, ascending, at most `limit`. */
  history(prefix: string, after: number, until: number, limit: number): StoreEvent[];
  compactedRevision(): number;
  currentRevision(): number;
}

export interface WatchHubOptions {
  source: HistorySource;
  /** Undelivered live events one watch may hold before it is ended with Gone. */
  bufferLimit: number;
  /** Stored events read per history query during replay. */
  replayPageSize?: number;
  logger: Logger;
}

const DEFAULT_REPLAY_PAGE_SIZE = 500;

export class WatchHub {
  /** Open watches by prefix: a change is matched once per distinct prefix, not once per watch. */
  readonly #byPrefix = new Map<string, Set<WatchStream>>();
  #size = 0;
  readonly #options: Required<WatchHubOptions>;

  constructor(options: WatchHubOptions) {
    this.#options = { replayPageSize: DEFAULT_REPLAY_PAGE_SIZE, ...options };
    if (!Number.isInteger(this.#options.replayPageSize) || this.#options.replayPageSize < 1) {
      throw new RangeError(
        `watch replay page size must be a positive integer, got ${this.#options.replayPageSize}`,
      );
    }
  }

  /** Open watches. */
  get size(): number {
    return this.#size;
  }

  /** True when some open watch covers `key`: lets the store skip building events nobody reads. */
  wants(key: string): boolean {
    for (const prefix of this.#byPrefix.keys()) if (key.startsWith(prefix)) return true;
    return false;
  }

  /** Hands a committed change to every watch whose prefix covers it. Never blocks. */
  publish(event: StoreEvent): void {
    for (const [prefix, streams] of this.#byPrefix) {
      if (event.key.startsWith(prefix)) for (const stream of streams) stream.push(event);
    }
  }

  /** A watch replaying (fromRevision, currentRevision] and then following live events. */
  open(prefix: string, fromRevision: number): Watch {
    const stream = new WatchStream({
      prefix,
      fromRevision,
      replayUntil: this.#options.source.currentRevision(),
      hub: this,
      options: this.#options,
    });
    let streams = this.#byPrefix.get(prefix);
    if (!streams) this.#byPrefix.set(prefix, (streams = new Set()));
    streams.add(stream);
    this.#size++;
    return stream;
  }

  /** A watch that fails with `error` on its first read. */
  failed(prefix: string, fromRevision: number, error: StoreError): Watch {
    const stream = new WatchStream({
      prefix,
      fromRevision,
      replayUntil: fromRevision,
      hub: this,
      options: this.#options,
    });
    stream.fail(error);
    return stream;
  }

  /** Ends every watch (their iterators finish). */
  closeAll(): void {
    for (const streams of [...this.#byPrefix.values()]) for (const stream of [...streams]) stream.close();
  }

  /** Called by a stream that ended. */
  remove(stream: WatchStream): void {
    const streams = this.#byPrefix.get(stream.prefix);
    if (!streams?.delete(stream)) return;
    this.#size--;
    if (streams.size === 0) this.#byPrefix.delete(stream.prefix);
  }
}

interface WatchStreamInit {
  prefix: string;
  fromRevision: number;
  replayUntil: number;
  hub: WatchHub;
  options: Required<WatchHubOptions>;
}

class WatchStream implements Watch, AsyncIterator<StoreEvent> {
  readonly prefix: string;
  readonly #hub: WatchHub;
  readonly #options: Required<WatchHubOptions>;
  /** Every matching event with revision <= cursor has been yielded. */
  #cursor: number;
  /** Replay covers (fromRevision, replayUntil]; live events start above it. */
  readonly #replayUntil: number;
  #page: StoreEvent[] = [];
  #pageIndex = 0;
  /** The cursor once the current page is fully yielded. */
  #pageEnd = 0;
  /** Live events not yet yielded: queue[head..]. */
  #queue: (StoreEvent | undefined)[] = [];
  #head = 0;
  #waiters: (() => void)[] = [];
  #failure: StoreError | undefined;
  #ended = false;
  /** Set by follow(): live events go straight to it. */
  #listener: ((event: StoreEvent) => void) | undefined;
  #whenEnded:
    { promise: Promise<void>; resolve: () => void; reject: (error: StoreError) => void } | undefined;

  constructor(init: WatchStreamInit) {
    this.prefix = init.prefix;
    this.#cursor = init.fromRevision;
    this.#replayUntil = init.replayUntil;
    this.#hub = init.hub;
    this.#options = init.options;
  }

  [Symbol.asyncIterator](): AsyncIterator<StoreEvent> {
    return this;
  }

  progressRevision(): number {
    const replayDone = this.#cursor >= this.#replayUntil && this.#pageIndex >= this.#page.length;
    if (this.#ended || !replayDone || this.#head < this.#queue.length) return this.#cursor;
    // Nothing buffered and replay finished: every commit so far was either yielded or not ours.
    return Math.max(this.#cursor, this.#options.source.currentRevision());
  }

  replaying(): boolean {
    return !this.#ended && (this.#cursor < this.#replayUntil || this.#pageIndex < this.#page.length);
  }

  push(event: StoreEvent): void {
    if (this.#ended || event.revision <= this.#replayUntil || event.revision <= this.#cursor) return;
    if (this.#listener) {
      this.#cursor = event.revision;
      this.#listener(event);
      return;
    }
    if (this.#queue.length - this.#head >= this.#options.bufferLimit) {
      this.#options.logger.warn("watch fell too far behind; ending it with Gone so the client relists", {
        prefix: this.prefix,
        bufferLimit: this.#options.bufferLimit,
        deliveredRevision: this.#cursor,
      });
      this.fail(
        new StoreError(
          "Gone",
          `watch on ${JSON.stringify(this.prefix)} fell more than ${this.#options.bufferLimit} events behind at revision ${this.#cursor}; relist`,
        ),
      );
      return;
    }
    this.#queue.push(event);
    this.#wake();
  }

  async next(): Promise<IteratorResult<StoreEvent>> {
    for (;;) {
      if (this.#failure) {
        const failure = this.#failure;
        this.#failure = undefined;
        throw failure;
      }
      if (this.#ended) return { done: true, value: undefined };
      const replayed = this.#page[this.#pageIndex];
      if (replayed) {
        this.#pageIndex++;
        this.#cursor = this.#pageIndex === this.#page.length ? this.#pageEnd : replayed.revision;
        return { done: false, value: replayed };
      }
      if (this.#cursor < this.#replayUntil) {
        this.#readHistoryPage();
        continue;
      }
      const live = this.#queue[this.#head];
      if (live) {
        this.#queue[this.#head++] = undefined;
        if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
          this.#queue = this.#queue.slice(this.#head);
          this.#head = 0;
        }
        this.#cursor = live.revision;
        return { done: false, value: live };
      }
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }

  follow(listener: (event: StoreEvent) => void): Promise<void> | undefined {
    if (this.#ended || this.replaying() || this.#head < this.#queue.length || this.#failure) return undefined;
    this.#listener = listener;
    const { promise, resolve, reject } = Promise.withResolvers<void>();
    this.#whenEnded = { promise, resolve, reject };
    return promise;
  }

  async return(): Promise<IteratorResult<StoreEvent>> {
    this.close();
    return { done: true, value: undefined };
  }

  close(): void {
    this.#failure = undefined;
    this.#end();
  }

  /** Ends the watch; the next read rejects with `error`, reads after that are done. */
  fail(error: StoreError): void {
    if (this.#ended) return;
    this.#failure = error;
    this.#end();
  }

  #end(): void {
    this.#ended = true;
    this.#listener = undefined;
    if (this.#whenEnded) {
      if (this.#failure) {
        this.#whenEnded.reject(this.#failure);
        this.#failure = undefined;
      } else this.#whenEnded.resolve();
    }
    this.#page = [];
    this.#pageIndex = 0;
    this.#queue = [];
    this.#head = 0;
    this.#hub.remove(this);
    this.#wake();
  }

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const resolve of waiters) resolve();
  }

  #readHistoryPage(): void {
    const source = this.#options.source;
    const compacted = source.compactedRevision();
    if (this.#cursor < compacted) {
      // Rows in (cursor, compacted] may have been removed: continuing could skip changes.
      this.fail(
        new StoreError(
          "Gone",
          `revision ${this.#cursor} has been compacted (oldest watchable revision is ${compacted})`,
        ),
      );
      return;
    }
    const page = source.history(this.prefix, this.#cursor, this.#replayUntil, this.#options.replayPageSize);
    if (page.length === 0) {
      this.#cursor = this.#replayUntil;
      return;
    }
    this.#page = page;
    this.#pageIndex = 0;
    // A short page is the rest of the replay: once it is yielded, everything up to replayUntil is.
    this.#pageEnd =
      page.length < this.#options.replayPageSize ? this.#replayUntil : page[page.length - 1]!.revision;
  }
}
