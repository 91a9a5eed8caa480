// The embedded API server's storage: a kine-style revision log in SQLite (node:sqlite).
//
// Tables: `log` holds one row per change (revision, key, created/deleted flags,
// create_revision, prev_revision = the key's previous row, the whole JSON value);
// `current` maps each live key to its newest log row, so get/list never scan history; `meta`
// holds the compaction boundary. `log.revision` is AUTOINCREMENT, so SQLite remembers the
// highest revision ever used (sqlite_sequence) even after compaction removed its row:
// revisions are never reused, across restarts too.
//
// Invariants:
// - Without group commit, one write = one `BEGIN IMMEDIATE … COMMIT` transaction on this thread;
//   the next revision is assigned in it and the write returns after COMMIT.
// - With group commit (the API server's mode), the write connection lives in a worker thread
//   (commit-worker.ts), so no fsync ever runs on the event loop. A write is checked against and
//   applied to the in-memory state at once (so read-check-write stays atomic) and returns with
//   its revision; the writes of one event-loop turn form a batch that the worker commits in one
//   transaction (one fsync), as etcd batches its raft log. Batches go to the worker in order
//   at the end of each turn; the worker merges those that queued behind a COMMIT into the next
//   one, so batches grow with the load while this thread keeps serving during every fsync.
//   `whenDurable(revision)` resolves once the worker reported the batch holding it committed,
//   and the caller acknowledges nothing before that; watchers hear of a change only then, in
//   revision order. `currentRevision()` is the newest applied revision. A failed COMMIT undoes
//   its batch and every later write in memory (they were checked against its state), puts the
//   revision counter back to the last durable one, and rejects their whenDurable callers; the
//   batches already handed over carry the old epoch, so the worker refuses them unwritten.
// - Durability: WAL journal. With synchronous=FULL (the default) COMMIT returns only after the
//   WAL is fsynced, so an acknowledged write survives kill -9 and power loss, as an etcd write
//   does. synchronous=NORMAL still survives kill -9 (the WAL write reached the kernel before
//   COMMIT returned) but may lose the newest commits on power loss or an OS crash.
// - One process owns the file: a store holds the EXCLUSIVE owner lock on "<database>-lock"
//   (log-sql.ts), so a second store on the same file fails at open instead of silently forking
//   the revision sequence (the in-process watch hub would never see the other's writes).
// - Reads of the latest state never touch the database: every live key's newest row (its JSON
//   text) is kept in memory, in key order, as kube-apiserver's watch cache keeps it. Reads at a
//   past revision and watch replays read the log: with group commit through a read-only
//   connection of this thread, which WAL lets read while the worker commits, and which sees
//   every durable revision (the worker reports a batch only after its COMMIT returned).
// - Compaction at C removes only rows no read at a revision >= C can need: rows superseded by a
//   newer row of the same key at or below C, and deletion tombstones at or below C. With group
//   commit, C never passes the durable revision, and the in-memory boundary moves before the
//   worker deletes anything, so no read of this thread sees a half-compacted log.

import { DatabaseSync } from "node:sqlite";
import type { SQLInputValue, SQLOutputValue } from "node:sqlite";
import { CsikitError, realClock, silentLogger, isRecord } from "../../base/index.ts";
import type { Clock, Logger } from "../../base/index.ts";
import type { CommitFaults } from "./commit-faults.ts";
import { CommitPipeline } from "./commit-pipeline.ts";
import { runCompactionLoop } from "./compaction.ts";
import type { CompactionLoopOptions } from "./compaction.ts";
import { compareKeys, keyRange } from "./key-range.ts";
import { SortedKeys } from "./sorted-keys.ts";
import {
  acquireOwnerLock,
  applyChange,
  compactLog,
  configure,
  migrate,
  openError,
  readInteger,
  readRevisions,
  StatementCache,
} from "./log-sql.ts";
import type { LogChange } from "./log-sql.ts";
import type { KeyRange } from "./key-range.ts";
import { StoreError } from "./types.ts";
import type {
  KubeObject,
  ListOptions,
  ListResult,
  Store,
  StoredObject,
  StoreEvent,
  Watch,
  WatchEventType,
} from "./types.ts";
import { WatchHub } from "./watch-hub.ts";

/** Revisions of history kept by default: how far behind a watch may resume or a paginated list may read. */
export const DEFAULT_COMPACTION_WINDOW = 10_000;
/** Undelivered live events one watch may hold before it is ended with Gone. */
export const DEFAULT_WATCH_BUFFER_LIMIT = 10_000;

export interface SqliteStoreOptions {
  /** Database file, or ":memory:" (no durability; for tests and benchmarks). */
  path: string;
  /** Revisions of history `compact()` keeps by default. Default 10000. */
  compactionWindow?: number;
  /** "FULL" (default): acknowledged writes survive power loss. "NORMAL": they survive kill -9 only. */
  synchronous?: "FULL" | "NORMAL";
  /** Undelivered live events per watch before it is ended with Gone. Default 10000. */
  watchBufferLimit?: number;
  /** Stored events a replaying watch reads per query (bounds its memory). Default 500. */
  watchReplayPageSize?: number;
  /**
   * Commit in a worker thread, the writes of one event-loop turn together (one transaction, one
   * fsync); each write is durable once `whenDurable(revision)` resolves. Needs a file. Default
   * false: every write commits on this thread before it returns.
   */
  groupCommit?: boolean;
  /** Test hooks of the commit worker (hold or fail COMMITs); group commit only. */
  commitFaults?: CommitFaults;
  /** How long open waits for another process to release the file, in ms. Default 2000. */
  lockTimeoutMs?: number;
  logger?: Logger;
  /** Clock for the periodic compaction loop. */
  clock?: Clock;
}

export interface CompactionResult {
  /** The compaction boundary afterwards. */
  compactedRevision: number;
  /** Log rows removed by this call. */
  removedRows: number;
}

export interface SqliteStore extends Store {
  readonly path: string;
  readonly compactionWindow: number;
  /** Write transactions committed since open; with group commit, batches reported durable (a COMMIT may cover several). */
  readonly commitCount: number;
  /** Like Store.compact; `keep` defaults to the store's compaction window. */
  compact(keep?: number): CompactionResult;
  /**
   * Compacts to the store's window every `intervalMs` (kube-apiserver's default is 5m) until
   * `signal` aborts or the store closes; resolves then. A failed compaction is logged and retried
   * at the next tick.
   */
  runCompaction(options: { intervalMs: number; keep?: number }, signal: AbortSignal): Promise<void>;
}

/** Opens (creating if needed) the store at `options.path`. */
export function openSqliteStore(options: SqliteStoreOptions): SqliteStore {
  const logger = options.logger ?? silentLogger;
  const compactionWindow = options.compactionWindow ?? DEFAULT_COMPACTION_WINDOW;
  if (!Number.isInteger(compactionWindow) || compactionWindow < 0) {
    throw new RangeError(`compactionWindow must be a non-negative integer, got ${compactionWindow}`);
  }
  const watchBufferLimit = options.watchBufferLimit ?? DEFAULT_WATCH_BUFFER_LIMIT;
  if (!Number.isInteger(watchBufferLimit) || watchBufferLimit < 1) {
    throw new RangeError(`watchBufferLimit must be a positive integer, got ${watchBufferLimit}`);
  }
  const inMemory = options.path === ":memory:";
  const groupCommit = options.groupCommit ?? false;
  if (groupCommit && inMemory) {
    throw new RangeError("groupCommit needs a database file: its commit worker cannot share :memory:");
  }
  const synchronous = options.synchronous ?? "FULL";
  const lockTimeoutMs = options.lockTimeoutMs ?? 2000;
  let lock: DatabaseSync | undefined;
  let pipeline: CommitPipeline | undefined;
  let db: DatabaseSync | undefined;
  try {
    if (groupCommit) {
      // The worker owns the lock and the write connection; this thread reads past revisions.
      pipeline = new CommitPipeline({
        path: options.path,
        synchronous,
        lockTimeoutMs,
        ...(options.commitFaults ? { faults: options.commitFaults } : {}),
      });
      db = new DatabaseSync(options.path, { readOnly: true, timeout: lockTimeoutMs });
    } else {
      if (!inMemory) lock = acquireOwnerLock(options.path, lockTimeoutMs);
      db = new DatabaseSync(options.path, { timeout: lockTimeoutMs });
      configure(db, { sharing: inMemory ? "memory" : "exclusive", synchronous });
      migrate(db, options.path);
    }
    const { revision, compacted } = readRevisions(db);
    logger.info(1, "opened state database", {
      path: options.path,
      revision,
      compactedRevision: compacted,
      ...(groupCommit ? { writer: "commit worker thread" } : {}),
    });
    return new SqliteStoreImpl({
      db,
      ...(lock ? { lock } : {}),
      ...(pipeline ? { pipeline } : {}),
      path: options.path,
      revision,
      compacted,
      compactionWindow,
      watchBufferLimit,
      ...(options.watchReplayPageSize === undefined
        ? {}
        : { watchReplayPageSize: options.watchReplayPageSize }),
      logger,
      clock: options.clock ?? realClock,
    });
  } catch (error) {
    db?.close();
    pipeline?.close([], 0);
    lock?.close();
    throw openError(options.path, error);
  }
}

interface StoreInit {
  /** In-thread mode: the read-write connection; group commit: this thread's read-only one. */
  db: DatabaseSync;
  /** The owner lock, held here in in-thread mode (the worker holds it with group commit). */
  lock?: DatabaseSync;
  /** Group commit: the commit worker. */
  pipeline?: CommitPipeline;
  path: string;
  revision: number;
  compacted: number;
  compactionWindow: number;
  watchBufferLimit: number;
  watchReplayPageSize?: number;
  logger: Logger;
  clock: Clock;
}

/** A write applied in memory whose batch is not durable yet (group commit only). */
interface PendingWrite {
  change: LogChange;
  type: WatchEventType;
  /** The key's row before this write: restored if the batch fails. */
  previous: CurrentRow | undefined;
}

interface InFlightBatch {
  id: number;
  writes: PendingWrite[];
}

interface DurableWaiter {
  revision: number;
  resolve: () => void;
  reject: (error: Error) => void;
}

interface CurrentRow {
  revision: number;
  createRevision: number;
  value: string;
}

class SqliteStoreImpl implements SqliteStore {
  readonly path: string;
  readonly compactionWindow: number;
  readonly #db: DatabaseSync;
  readonly #lock: DatabaseSync | undefined;
  readonly #pipeline: CommitPipeline | undefined;
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #hub: WatchHub;
  readonly #statements: StatementCache;
  /** The newest applied revision (durable, or in a batch on its way to the disk). */
  #revision: number;
  /** The newest durable revision: what watchers have been told about. */
  #durable: number;
  #compacted: number;
  #closed = false;
  /** Group commit: writes applied since the last batch was handed to the worker. */
  #pending: PendingWrite[] = [];
  /** Group commit: batches handed to the worker and not yet reported, oldest first. */
  #inFlight: InFlightBatch[] = [];
  /** Group commit: failed commits so far; batches of an older epoch are refused by the worker. */
  #epoch = 0;
  #flushScheduled = false;
  #commits = 0;
  /** whenDurable callers, in ascending revision order (revisions only grow). */
  #waiters: DurableWaiter[] = [];
  /** Every live key's newest row. */
  readonly #live = new Map<string, CurrentRow>();
  /** The keys of #live in compareKeys (UTF-8 byte) order. */
  #sortedKeys = new SortedKeys();

  constructor(init: StoreInit) {
    this.#db = init.db;
    this.#lock = init.lock;
    this.#pipeline = init.pipeline;
    this.#statements = new StatementCache(init.db);
    this.path = init.path;
    this.#revision = init.revision;
    this.#durable = init.revision;
    this.#compacted = init.compacted;
    this.compactionWindow = init.compactionWindow;
    this.#logger = init.logger;
    this.#clock = init.clock;
    this.#loadLive();
    this.#hub = new WatchHub({
      source: {
        history: (prefix, after, until, limit) => this.#history(prefix, after, until, limit),
        compactedRevision: () => this.#compacted,
        // Replay stops at the durable revision; later changes arrive live once durable.
        currentRevision: () => this.#durable,
      },
      bufferLimit: init.watchBufferLimit,
      ...(init.watchReplayPageSize === undefined ? {} : { replayPageSize: init.watchReplayPageSize }),
      logger: init.logger,
    });
  }

  currentRevision(): number {
    return this.#revision;
  }

  get commitCount(): number {
    return this.#commits;
  }

  compactedRevision(): number {
    return this.#compacted;
  }

  whenDurable(revision: number): Promise<void> {
    if (revision <= this.#durable) return Promise.resolve();
    if (this.#closed) return Promise.reject(closedError(this.path));
    return new Promise((resolve, reject) => this.#waiters.push({ revision, resolve, reject }));
  }

  get(key: string): StoredObject | undefined {
    this.#assertOpen();
    const row = this.#live.get(key);
    // Decoded only if read: a GET may send the stored text as is.
    return row && liveItem(key, row);
  }

  #loadLive(): void {
    this.#live.clear();
    const rows = this.#db
      .prepare(
        "SELECT c.key, c.revision, c.create_revision, l.value FROM current c JOIN log l ON l.revision = c.revision",
      )
      .all();
    for (const row of rows) {
      this.#live.set(readString(row, "key"), {
        revision: readInteger(row, "revision"),
        createRevision: readInteger(row, "create_revision"),
        value: readString(row, "value"),
      });
    }
    this.#sortedKeys = SortedKeys.of(this.#live.keys());
  }

  /** Sets (row) or removes (undefined) a key's newest row in memory. */
  #setLive(key: string, row: CurrentRow | undefined): void {
    if (row === undefined) {
      if (!this.#live.delete(key)) return;
      this.#sortedKeys.delete(key);
      return;
    }
    if (!this.#live.has(key)) this.#sortedKeys.insert(key);
    this.#live.set(key, row);
  }

  /** The latest state under `range` from memory. */
  #listLive(range: KeyRange, limit: number): ListResult {
    const keys = this.#sortedKeys;
    const start = keys.lowerBound(range.lo, range.loInclusive);
    const end = range.hi === undefined ? keys.length : keys.lowerBound(range.hi, true);
    const stop = limit > 0 ? Math.min(end, start + limit) : end;
    const items: StoredObject[] = [];
    for (const key of keys.slice(start, stop)) items.push(liveItem(key, this.#live.get(key)!));
    const result: ListResult = { items, revision: this.#revision };
    if (limit > 0 && stop < end && items.length > 0) {
      result.continueKey = items[items.length - 1]!.key;
      result.remaining = end - stop;
    }
    return result;
  }

  create(key: string, object: KubeObject): StoredObject {
    this.#assertOpen();
    assertKey(key);
    if (this.#live.has(key)) throw new StoreError("AlreadyExists", `${key} already exists`);
    const revision = this.#revision + 1;
    const value = serialize(object, revision);
    this.#write("ADDED", undefined, {
      revision,
      key,
      created: 1,
      deleted: 0,
      createRevision: revision,
      prevRevision: 0,
      value,
    });
    return liveItem(key, { revision, createRevision: revision, value });
  }

  update(key: string, object: KubeObject, expectedRevision?: number): StoredObject {
    this.#assertOpen();
    assertKey(key);
    const current = this.#existing(key, expectedRevision);
    const revision = this.#revision + 1;
    const value = serialize(object, revision);
    this.#write("MODIFIED", current, {
      revision,
      key,
      created: 0,
      deleted: 0,
      createRevision: current.createRevision,
      prevRevision: current.revision,
      value,
    });
    return liveItem(key, { revision, createRevision: current.createRevision, value });
  }

  delete(key: string, expectedRevision?: number): StoredObject {
    this.#assertOpen();
    const current = this.#existing(key, expectedRevision);
    const revision = this.#revision + 1;
    // The tombstone is the last state stamped with the deletion revision, as kube reports it.
    const tombstone = serialize(parseObject(current.value), revision);
    this.#write("DELETED", current, {
      revision,
      key,
      created: 0,
      deleted: 1,
      createRevision: current.createRevision,
      prevRevision: current.revision,
      value: tombstone,
    });
    return liveItem(key, { revision, createRevision: current.createRevision, value: tombstone });
  }

  list(options: ListOptions): ListResult {
    this.#assertOpen();
    const limit = options.limit ?? 0;
    if (!Number.isInteger(limit) || limit < 0)
      throw new RangeError(`limit must be a non-negative integer, got ${limit}`);
    const range = keyRange(options.prefix, options.startAfter);
    const atRevision = options.revision;
    const historical = atRevision !== undefined && atRevision < this.#revision;
    if (historical && atRevision < this.#compacted) {
      throw new StoreError(
        "Gone",
        `revision ${atRevision} has been compacted (oldest readable revision is ${this.#compacted})`,
      );
    }
    if (!historical) return this.#listLive(range, limit);
    // With group commit this reads through this thread's read-only connection, which sees every
    // durable revision: a reader is never blocked by the worker's COMMIT (WAL).
    const revision = atRevision;
    const rows = this.#statements.get(listAtRevisionSql(range)).all({
      ...rangeParams(range),
      rev: revision,
      limit: limit || -1,
    });
    const items = rows.map((row): StoredObject =>
      liveItem(readString(row, "key"), {
        revision: readInteger(row, "revision"),
        createRevision: readInteger(row, "create_revision"),
        value: readString(row, "value"),
      }),
    );
    const result: ListResult = { items, revision };
    const last = items[items.length - 1];
    if (limit > 0 && items.length === limit && last) {
      const after: KeyRange = { lo: last.key, loInclusive: false, hi: range.hi };
      const remaining = this.#countAtRevision(after, revision);
      if (remaining > 0) {
        result.continueKey = last.key;
        result.remaining = remaining;
      }
    }
    return result;
  }

  /**
   * Live keys in `range` as of `revision`: the count in memory now, corrected for each key of the
   * range changed after that revision (durable changes from the log, the rest from the writes
   * not yet durable). Costs the changes since `revision`, not the size of the range: counting
   * the range in the log took tens of ms of this thread for 5,000 objects.
   */
  #countAtRevision(range: KeyRange, revision: number): number {
    const keys = this.#sortedKeys;
    const start = keys.lowerBound(range.lo, range.loInclusive);
    const end = range.hi === undefined ? keys.length : keys.lowerBound(range.hi, true);
    let count = end - start;
    const changed = new Set<string>();
    for (const row of this.#statements
      .get(`SELECT DISTINCT key FROM log WHERE revision > :rev AND ${rangeWhere("key", range)}`)
      .all({ ...rangeParams(range), rev: revision })) {
      changed.add(readString(row, "key"));
    }
    for (const write of [...this.#inFlight.flatMap((batch) => batch.writes), ...this.#pending]) {
      if (inRange(write.change.key, range)) changed.add(write.change.key);
    }
    const then = this.#statements.get(
      "SELECT deleted FROM log WHERE key = ? AND revision <= ? ORDER BY revision DESC LIMIT 1",
    );
    for (const key of changed) {
      const row = then.get(key, revision);
      const liveThen = row !== undefined && readInteger(row, "deleted") === 0;
      count += (liveThen ? 1 : 0) - (this.#live.has(key) ? 1 : 0);
    }
    return count;
  }

  watch(prefix: string, fromRevision: number): Watch {
    this.#assertOpen();
    if (!Number.isInteger(fromRevision) || fromRevision < 0) {
      throw new RangeError(`fromRevision must be a non-negative integer, got ${fromRevision}`);
    }
    if (fromRevision < this.#compacted) {
      return this.#hub.failed(
        prefix,
        fromRevision,
        new StoreError(
          "Gone",
          `revision ${fromRevision} has been compacted (oldest watchable revision is ${this.#compacted})`,
        ),
      );
    }
    return this.#hub.open(prefix, fromRevision);
  }

  compact(keep: number = this.compactionWindow): CompactionResult {
    const bounds = this.#compactionBounds(keep);
    if (!bounds) return { compactedRevision: this.#compacted, removedRows: 0 };
    const { from, to } = bounds;
    let removedRows: number;
    if (this.#pipeline) {
      // Readers below the new boundary get Gone from now on, so none reads a half-compacted log.
      this.#compacted = to;
      try {
        removedRows = this.#pipeline.compactSync(from, to);
      } catch (error) {
        this.#compacted = from;
        throw error;
      }
    } else {
      removedRows = this.#transaction(() => compactLog(this.#statements, from, to));
      this.#compacted = to;
    }
    this.#logger.info(2, "compacted revision log", { compactedRevision: to, removedRows });
    return { compactedRevision: to, removedRows };
  }

  /** Like compact, but with group commit the event loop goes on while the worker compacts. */
  async #compactInBackground(keep: number): Promise<void> {
    if (!this.#pipeline) {
      this.compact(keep);
      return;
    }
    const bounds = this.#compactionBounds(keep);
    if (!bounds) return;
    this.#compacted = bounds.to;
    let removedRows: number;
    try {
      removedRows = await this.#pipeline.compact(bounds.from, bounds.to);
    } catch (error) {
      // Rolled back: the rows are all there, and the next round must start from the old boundary.
      if (this.#compacted === bounds.to) this.#compacted = bounds.from;
      throw error;
    }
    this.#logger.info(2, "compacted revision log", { compactedRevision: bounds.to, removedRows });
  }

  /**
   * The next compaction's bounds, or undefined if there is nothing to do. With group commit the
   * boundary never passes the durable revision: the worker compacts only committed rows.
   */
  #compactionBounds(keep: number): { from: number; to: number } | undefined {
    this.#assertOpen();
    if (!Number.isInteger(keep) || keep < 0)
      throw new RangeError(`keep must be a non-negative integer, got ${keep}`);
    const from = this.#compacted;
    const to = Math.min(this.#revision - keep, this.#durable);
    return to <= from ? undefined : { from, to };
  }

  runCompaction(options: { intervalMs: number; keep?: number }, signal: AbortSignal): Promise<void> {
    const loop: CompactionLoopOptions = {
      intervalMs: options.intervalMs,
      compact: () => this.#compactInBackground(options.keep ?? this.compactionWindow),
      isClosed: () => this.#closed,
      clock: this.#clock,
      logger: this.#logger,
    };
    return runCompactionLoop(loop, signal);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#pipeline) {
      // Writes applied but not yet durable are committed, not dropped: the batch in flight (the
      // worker takes requests in order) and then the ones not handed over yet.
      const inFlight = this.#inFlight;
      const pending = this.#pending;
      this.#inFlight = [];
      this.#pending = [];
      this.#statements.clear();
      this.#db.close();
      const { error, committedThrough } = this.#pipeline.close(
        pending.map((write) => write.change),
        this.#epoch,
      );
      // The worker answered in order: batches up to committedThrough are durable.
      const made = inFlight.filter((batch) => batch.id <= committedThrough).flatMap((b) => b.writes);
      const rest = inFlight.filter((batch) => batch.id > committedThrough).flatMap((b) => b.writes);
      this.#made(made);
      if (error) this.#failWrites([...rest, ...pending], error);
      else this.#made([...rest, ...pending]);
    } else {
      this.#statements.clear();
      this.#db.close();
      this.#lock?.close();
    }
    for (const waiter of this.#waiters.splice(0)) waiter.reject(closedError(this.path));
    this.#hub.closeAll();
  }

  #assertOpen(): void {
    if (this.#closed) throw closedError(this.path);
  }

  /**
   * Applies one checked write. In-thread mode it is committed before this returns; with group
   * commit it is applied in memory and joins the next batch for the worker, and is durable once
   * whenDurable(its revision) resolved.
   */
  #write(type: WatchEventType, previous: CurrentRow | undefined, change: LogChange): void {
    if (!this.#pipeline) this.#transaction(() => applyChange(this.#statements, change));
    this.#setLive(
      change.key,
      change.deleted === 1
        ? undefined
        : { revision: change.revision, createRevision: change.createRevision, value: change.value },
    );
    this.#revision = change.revision;
    const write: PendingWrite = { change, type, previous };
    if (!this.#pipeline) {
      this.#made([write]);
      return;
    }
    this.#pending.push(write);
    if (!this.#flushScheduled) {
      this.#flushScheduled = true;
      // After this turn's I/O callbacks: every request read in this turn joins the batch.
      setImmediate(() => {
        this.#flushScheduled = false;
        this.#flush();
      });
    }
  }

  /**
   * Hands the pending writes to the worker as one batch. The worker commits batches in order and
   * merges those that wait behind a COMMIT into the next one, so fsyncs never pile up, and this
   * thread goes on serving (and batching) while a COMMIT runs.
   */
  #flush(): void {
    const pipeline = this.#pipeline;
    if (!pipeline || this.#closed || this.#pending.length === 0) return;
    const writes = this.#pending;
    this.#pending = [];
    const { id, done } = pipeline.commit(
      writes.map((write) => write.change),
      this.#epoch,
    );
    const batch: InFlightBatch = { id, writes };
    this.#inFlight.push(batch);
    done.then(
      () => {
        // Answers come in order; a batch no longer queued was undone by a failure before it.
        if (this.#closed || this.#inFlight[0] !== batch) return;
        this.#inFlight.shift();
        this.#made(writes);
      },
      (error: unknown) => {
        if (this.#closed || this.#inFlight[0] !== batch) return;
        // Every later write was checked against this batch's state: none of them may stand. The
        // worker refuses the batches already handed over (their epoch is not newer).
        const undone = [...this.#inFlight.flatMap((b) => b.writes), ...this.#pending];
        this.#inFlight = [];
        this.#pending = [];
        this.#epoch++;
        this.#failWrites(undone, error instanceof Error ? error : new Error(String(error)));
      },
    );
  }

  /** Writes became durable: count the COMMIT, tell the watchers, then the whenDurable callers. */
  #made(writes: readonly PendingWrite[]): void {
    if (writes.length === 0) return;
    this.#commits++;
    for (const write of writes) this.#publish(write);
    this.#durable = writes[writes.length - 1]!.change.revision;
    let done = 0;
    while (done < this.#waiters.length && this.#waiters[done]!.revision <= this.#durable) done++;
    resolveInSlices(this.#waiters.splice(0, done));
  }

  /**
   * A COMMIT failed: its writes were never acknowledged. Memory goes back to the last durable
   * state (undone newest first) and the revision counter with it; every caller waiting for one
   * of them gets the error.
   */
  #failWrites(writes: readonly PendingWrite[], cause: Error): void {
    for (let i = writes.length - 1; i >= 0; i--) {
      const write = writes[i]!;
      this.#setLive(write.change.key, write.previous);
    }
    this.#revision = this.#durable;
    this.#logger.error("committing a batch of writes failed; none of them was acknowledged", {
      writes: writes.length,
      error: cause.message,
    });
    const failure = new CsikitError(
      "CSIKIT_ERR_STORE_WRITE",
      `state database ${this.path}: commit failed: ${cause.message}`,
      { cause },
    );
    for (const waiter of this.#waiters.splice(0)) waiter.reject(failure);
  }

  #transaction<T>(work: () => T): T {
    this.#statements.get("BEGIN IMMEDIATE").run();
    try {
      const result = work();
      this.#statements.get("COMMIT").run();
      this.#commits++;
      return result;
    } catch (error) {
      if (this.#db.isTransaction) this.#statements.get("ROLLBACK").run();
      throw error;
    }
  }

  #existing(key: string, expectedRevision: number | undefined): CurrentRow {
    const current = this.#live.get(key);
    if (!current) throw new StoreError("NotFound", `${key} not found`);
    if (expectedRevision !== undefined && expectedRevision !== current.revision) {
      throw new StoreError(
        "Conflict",
        `${key} is at revision ${current.revision}, not the expected revision ${expectedRevision}`,
      );
    }
    return current;
  }

  #publish(write: PendingWrite): void {
    const { change } = write;
    if (!this.#hub.wants(change.key)) return;
    this.#hub.publish(
      storeEvent(write.type, change.key, change.revision, change.value, write.previous?.value),
    );
  }

  #history(prefix: string, after: number, until: number, limit: number): StoreEvent[] {
    if (this.#closed) return [];
    const range = keyRange(prefix);
    const rows = this.#statements.get(historySql(range)).all({ ...rangeParams(range), after, until, limit });
    return rows.map((row): StoreEvent => {
      const type: WatchEventType =
        readInteger(row, "created") === 1
          ? "ADDED"
          : readInteger(row, "deleted") === 1
            ? "DELETED"
            : "MODIFIED";
      const previous = row["prev_value"];
      return storeEvent(
        type,
        readString(row, "key"),
        readInteger(row, "revision"),
        readString(row, "value"),
        type !== "ADDED" && typeof previous === "string" ? previous : undefined,
      );
    });
  }
}

function rangeWhere(column: string, range: KeyRange): string {
  const lower = `${column} ${range.loInclusive ? ">=" : ">"} :lo`;
  return range.hi === undefined ? lower : `${lower} AND ${column} < :hi`;
}

function rangeParams(range: KeyRange): Record<string, SQLInputValue> {
  return range.hi === undefined ? { lo: range.lo } : { lo: range.lo, hi: range.hi };
}

// SQLite guarantees that bare columns next to max() come from the row holding the maximum, so
// this is "each key's newest row at or below :rev", read off the (key, revision) index in key
// order. It leaves out the row's value so that only the rows a page returns are read whole.
function newestAtRevisionSql(range: KeyRange): string {
  return (
    "SELECT key, max(revision) AS revision, deleted FROM log " +
    `WHERE ${rangeWhere("key", range)} AND revision <= :rev GROUP BY key ORDER BY key`
  );
}

// The ordered subquery lets SQLite stream keys and stop at :limit instead of grouping the whole
// rest of the range into a temporary B-tree first: a page costs its own rows, not the
// collection's (0.3 ms instead of 28 ms for a page of 100 out of 5,000, measured).
function listAtRevisionSql(range: KeyRange): string {
  return (
    `SELECT l.key, l.revision, l.create_revision, l.value FROM (${newestAtRevisionSql(range)}) g ` +
    "JOIN log l ON l.revision = g.revision WHERE g.deleted = 0 ORDER BY g.key LIMIT :limit"
  );
}

function inRange(key: string, range: KeyRange): boolean {
  const order = compareKeys(key, range.lo);
  if (order < 0 || (order === 0 && !range.loInclusive)) return false;
  return range.hi === undefined || compareKeys(key, range.hi) < 0;
}

function historySql(range: KeyRange): string {
  return (
    "SELECT l.revision, l.key, l.created, l.deleted, l.value, p.value AS prev_value " +
    "FROM log l LEFT JOIN log p ON p.revision = l.prev_revision " +
    `WHERE l.revision > :after AND l.revision <= :until AND ${rangeWhere("l.key", range)} ` +
    "ORDER BY l.revision LIMIT :limit"
  );
}

/** Callers told per turn of the event loop that their writes are durable. */
const RESOLVE_SLICE = 8;

/**
 * Tells the callers of a batch that their writes are durable, RESOLVE_SLICE per turn: each one
 * goes on to send its answer (encoding, a TLS write), and a batch of a hundred answered in one
 * go would hold every other request (a GET) back for as long. They are all durable already,
 * so the order in which they hear it does not matter.
 */
function resolveInSlices(waiters: readonly DurableWaiter[], from = 0): void {
  const to = Math.min(waiters.length, from + RESOLVE_SLICE);
  for (let i = from; i < to; i++) waiters[i]!.resolve();
  if (to < waiters.length) setImmediate(resolveInSlices, waiters, to);
}

/**
 * A stored object (list item, get or write result) whose object is parsed from the stored text
 * only when someone reads it: an answer may send the text as is. A class rather than an object
 * literal with accessors: a list of 5,000 makes 5,000 of them, and a literal with get/set is
 * made (two closures each) and read (dictionary mode) several times slower.
 */
class LiveItem implements StoredObject {
  readonly key: string;
  readonly revision: number;
  readonly createRevision: number;
  readonly json: string;
  #object: KubeObject | undefined;

  constructor(key: string, row: CurrentRow) {
    this.key = key;
    this.revision = row.revision;
    this.createRevision = row.createRevision;
    this.json = row.value;
  }

  get object(): KubeObject {
    return (this.#object ??= parseObject(this.json));
  }

  set object(value: KubeObject) {
    this.#object = value;
  }
}

function liveItem(key: string, row: CurrentRow): StoredObject {
  return new LiveItem(key, row);
}

/**
 * A watch event over stored texts, its objects decoded only if a watcher reads them (a selector,
 * a Table, protobuf): a JSON watch without selectors sends `json` as is.
 */
function storeEvent(
  type: WatchEventType,
  key: string,
  revision: number,
  value: string,
  previousValue: string | undefined,
): StoreEvent {
  let object: KubeObject | undefined;
  let previous: KubeObject | undefined;
  const event: StoreEvent = {
    type,
    key,
    revision,
    json: value,
    get object(): KubeObject {
      return (object ??= parseObject(value));
    },
  };
  if (previousValue !== undefined)
    Object.defineProperty(event, "previous", {
      enumerable: true,
      get: (): KubeObject => (previous ??= parseObject(previousValue)),
    });
  return event;
}

function closedError(path: string): CsikitError {
  return new CsikitError("CSIKIT_ERR_STORE_CLOSED", `state database ${path} is closed`);
}

function assertKey(key: string): void {
  if (typeof key !== "string" || key.length === 0)
    throw new TypeError("store key must be a non-empty string");
}

/**
 * The stored JSON: the object with metadata.resourceVersion set to the revision, apiVersion and
 * kind first (absent ones are left out), as an object is served: a read can then send the stored
 * text as is (a list splices it) instead of decoding and encoding the object again.
 */
function serialize(object: KubeObject, revision: number): string {
  const metadata = isRecord(object.metadata) ? object.metadata : {};
  return JSON.stringify({
    apiVersion: object.apiVersion,
    kind: object.kind,
    ...object,
    metadata: { ...metadata, resourceVersion: String(revision) },
  });
}

function parseObject(text: string): KubeObject {
  const value: unknown = JSON.parse(text);
  if (!isRecord(value))
    throw new CsikitError(
      "CSIKIT_ERR_STORE_CORRUPT",
      "state database holds a value that is not a JSON object",
    );
  return value;
}

function readString(row: Record<string, SQLOutputValue>, column: string): string {
  const value = row[column];
  if (typeof value !== "string")
    throw new CsikitError(
      "CSIKIT_ERR_STORE_CORRUPT",
      `state database column ${column} holds ${typeof value}, expected text`,
    );
  return value;
}
