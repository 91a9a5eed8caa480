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
// - Without group commit, one write = one `BEGIN IMMEDIATE … COMMIT` transaction; the next
//   revision is assigned in it and the write returns after COMMIT.
// - With group commit (the API server's mode), writes that arrive in one turn of the event loop
//   share a transaction (one SAVEPOINT each, so a failed write undoes only itself) and one
//   fsync, committed at the next setImmediate: as etcd batches its raft log. A write returns
//   once applied, with its revision; `whenDurable(revision)` resolves after the COMMIT that
//   made it durable, and the caller acknowledges nothing before that. Reads inside the open
//   batch see its writes (so read-check-write stays atomic), and `currentRevision()` is the
//   newest applied revision; watchers hear of a change only after its COMMIT, and anything a
//   reader learned is acknowledged only after `whenDurable` of what it read.
// - Durability: WAL journal. With synchronous=FULL (the default) COMMIT returns only after the
//   WAL is fsynced, so an acknowledged write survives kill -9 and power loss, as an etcd write
//   does. synchronous=NORMAL still survives kill -9 (the WAL write reached the kernel before
//   COMMIT returned) but may lose the newest commits on power loss or an OS crash.
// - One process owns the file: the database is opened with locking_mode=EXCLUSIVE, so a second
//   store on the same file fails at open instead of silently forking the revision sequence (the
//   in-process watch hub would never see the other process's writes).
// - Watchers are told about a change after its COMMIT, synchronously and in revision order.
// - Reads of the latest state never touch the database: every live key's newest row (its JSON
//   text) is kept in memory, in key order, as kube-apiserver's watch cache keeps it. It changes
//   with each write (the open batch included) and is reloaded if a COMMIT fails. Reads at a past
//   revision and watch replays read the log.
// - Compaction at C removes only rows no read at a revision >= C can need: rows superseded by a
//   newer row of the same key at or below C, and deletion tombstones at or below C.

import { DatabaseSync } from "node:sqlite";
import type { SQLInputValue, SQLOutputValue, StatementSync } from "node:sqlite";
import { CsikitError, errorMessage, realClock, silentLogger } from "../../base/index.ts";
import type { Clock, Logger } from "../../base/index.ts";
import { runCompactionLoop } from "./compaction.ts";
import type { CompactionLoopOptions } from "./compaction.ts";
import { compareKeys, keyRange } from "./key-range.ts";
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

const SCHEMA_VERSION = 1;

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
   * Commit the writes of one event-loop turn together (one transaction, one fsync); each write
   * is durable once `whenDurable(revision)` resolves. Default false: every write commits
   * before it returns.
   */
  groupCommit?: boolean;
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
  /** Write transactions committed since open: with group commit, one per batch (one fsync each). */
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
  let db: DatabaseSync;
  try {
    db = new DatabaseSync(options.path, { timeout: options.lockTimeoutMs ?? 2000 });
  } catch (error) {
    throw new CsikitError(
      "CSIKIT_ERR_STORE_OPEN",
      `cannot open state database ${options.path}: ${errorMessage(error)}`,
      {
        cause: error,
      },
    );
  }
  try {
    configure(db, { inMemory, synchronous: options.synchronous ?? "FULL" });
    migrate(db, options.path);
    const revision = readInteger(
      db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'log'").get(),
      "seq",
    );
    const compacted = readInteger(
      db.prepare("SELECT value FROM meta WHERE name = 'compacted_revision'").get(),
      "value",
    );
    logger.info(1, "opened state database", { path: options.path, revision, compactedRevision: compacted });
    return new SqliteStoreImpl({
      db,
      path: options.path,
      revision,
      compacted,
      compactionWindow,
      watchBufferLimit,
      groupCommit: options.groupCommit ?? false,
      ...(options.watchReplayPageSize === undefined
        ? {}
        : { watchReplayPageSize: options.watchReplayPageSize }),
      logger,
      clock: options.clock ?? realClock,
    });
  } catch (error) {
    db.close();
    if (error instanceof CsikitError) throw error;
    const detail = /locked|busy/i.test(errorMessage(error))
      ? "it is in use by another process (one csikit API server per state directory)"
      : errorMessage(error);
    throw new CsikitError("CSIKIT_ERR_STORE_OPEN", `cannot open state database ${options.path}: ${detail}`, {
      cause: error,
    });
  }
}

function configure(db: DatabaseSync, options: { inMemory: boolean; synchronous: "FULL" | "NORMAL" }): void {
  if (!options.inMemory) {
    // Must precede the switch to WAL so no shared-memory index is used and the lock is held.
    db.exec("PRAGMA locking_mode = EXCLUSIVE");
    const mode = db.prepare("PRAGMA journal_mode = WAL").get();
    if (mode?.["journal_mode"] !== "wal") {
      throw new CsikitError(
        "CSIKIT_ERR_STORE_OPEN",
        `the file system refused WAL mode (got ${String(mode?.["journal_mode"])})`,
      );
    }
  }
  db.exec(`PRAGMA synchronous = ${options.synchronous}`);
}

function migrate(db: DatabaseSync, path: string): void {
  const version = readInteger(db.prepare("PRAGMA user_version").get(), "user_version");
  if (version === SCHEMA_VERSION) return;
  if (version !== 0) {
    throw new CsikitError(
      "CSIKIT_ERR_STORE_OPEN",
      `cannot open state database ${path}: schema version ${version} is not supported (this csikit writes ${SCHEMA_VERSION})`,
    );
  }
  db.exec(`
    BEGIN IMMEDIATE;
    CREATE TABLE log (
      revision INTEGER PRIMARY KEY AUTOINCREMENT,
      key TEXT NOT NULL,
      created INTEGER NOT NULL,
      deleted INTEGER NOT NULL,
      create_revision INTEGER NOT NULL,
      prev_revision INTEGER NOT NULL,
      value TEXT NOT NULL
    );
    CREATE INDEX log_key_revision ON log (key, revision);
    CREATE TABLE current (
      key TEXT PRIMARY KEY,
      revision INTEGER NOT NULL,
      create_revision INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
    INSERT INTO meta (name, value) VALUES ('compacted_revision', 0);
    PRAGMA user_version = ${SCHEMA_VERSION};
    COMMIT;
  `);
}

interface StoreInit {
  db: DatabaseSync;
  path: string;
  revision: number;
  compacted: number;
  compactionWindow: number;
  watchBufferLimit: number;
  groupCommit: boolean;
  watchReplayPageSize?: number;
  logger: Logger;
  clock: Clock;
}

/** A change applied in the open batch, published to watchers once the batch commits. */
interface UnpublishedChange {
  revision: number;
  type: WatchEventType;
  key: string;
  value: string;
  previous: string | undefined;
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
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #hub: WatchHub;
  /** Statements by SQL text: each is prepared once per store. */
  readonly #statements = new Map<string, StatementSync>();
  /** The newest applied revision (committed, or in the open batch). */
  #revision: number;
  /** The newest committed revision: what watchers have been told about. */
  #durable: number;
  #compacted: number;
  #closed = false;
  readonly #groupCommit: boolean;
  /** A batch transaction is open (group commit only). */
  #batchOpen = false;
  #unpublished: UnpublishedChange[] = [];
  #commits = 0;
  /** whenDurable callers, in ascending revision order (revisions only grow). */
  #waiters: DurableWaiter[] = [];
  /** Every live key's newest row. */
  readonly #live = new Map<string, CurrentRow>();
  /** The keys of #live in compareKeys (UTF-8 byte) order. */
  #sortedKeys: string[] = [];

  constructor(init: StoreInit) {
    this.#db = init.db;
    this.path = init.path;
    this.#revision = init.revision;
    this.#durable = init.revision;
    this.#groupCommit = init.groupCommit;
    this.#compacted = init.compacted;
    this.compactionWindow = init.compactionWindow;
    this.#logger = init.logger;
    this.#clock = init.clock;
    this.#loadLive();
    this.#hub = new WatchHub({
      source: {
        history: (prefix, after, until, limit) => this.#history(prefix, after, until, limit),
        compactedRevision: () => this.#compacted,
        // Replay stops at the committed revision; later changes arrive live after their COMMIT.
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
    const row = this.#current(key);
    if (!row) return undefined;
    return {
      key,
      revision: row.revision,
      createRevision: row.createRevision,
      object: parseObject(row.value),
    };
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
    this.#sortedKeys = [...this.#live.keys()].sort(compareKeys);
  }

  /** Records a key's new newest row; called last in a write, once its SQL succeeded. */
  #setLive(key: string, row: CurrentRow): void {
    if (!this.#live.has(key)) this.#sortedKeys.splice(lowerBound(this.#sortedKeys, key, true), 0, key);
    this.#live.set(key, row);
  }

  #removeLive(key: string): void {
    if (!this.#live.delete(key)) return;
    const index = lowerBound(this.#sortedKeys, key, true);
    if (this.#sortedKeys[index] === key) this.#sortedKeys.splice(index, 1);
  }

  /** The latest state under `range` from memory. */
  #listLive(range: KeyRange, limit: number): ListResult {
    const keys = this.#sortedKeys;
    const start = lowerBound(keys, range.lo, range.loInclusive);
    const end = range.hi === undefined ? keys.length : lowerBound(keys, range.hi, true);
    const stop = limit > 0 ? Math.min(end, start + limit) : end;
    const items: StoredObject[] = [];
    for (let i = start; i < stop; i++) {
      const key = keys[i]!;
      items.push(liveItem(key, this.#live.get(key)!));
    }
    const result: ListResult = { items, revision: this.#revision };
    if (limit > 0 && stop < end && items.length > 0) {
      result.continueKey = keys[stop - 1]!;
      result.remaining = end - stop;
    }
    return result;
  }

  create(key: string, object: KubeObject): StoredObject {
    this.#assertOpen();
    assertKey(key);
    const revision = this.#revision + 1;
    const value = serialize(object, revision);
    this.#write(() => {
      if (this.#current(key)) throw new StoreError("AlreadyExists", `${key} already exists`);
      this.#appendLog({
        revision,
        key,
        created: 1,
        deleted: 0,
        createRevision: revision,
        prevRevision: 0,
        value,
      });
      this.#statement(UPSERT_CURRENT).run(key, revision, revision);
      this.#setLive(key, { revision, createRevision: revision, value });
    });
    this.#committed(revision, "ADDED", key, value, undefined);
    return { key, revision, createRevision: revision, object: parseObject(value) };
  }

  update(key: string, object: KubeObject, expectedRevision?: number): StoredObject {
    this.#assertOpen();
    assertKey(key);
    const revision = this.#revision + 1;
    const value = serialize(object, revision);
    const previous = this.#write(() => {
      const current = this.#existing(key, expectedRevision);
      this.#appendLog({
        revision,
        key,
        created: 0,
        deleted: 0,
        createRevision: current.createRevision,
        prevRevision: current.revision,
        value,
      });
      this.#statement(UPSERT_CURRENT).run(key, revision, current.createRevision);
      this.#setLive(key, { revision, createRevision: current.createRevision, value });
      return current;
    });
    this.#committed(revision, "MODIFIED", key, value, previous.value);
    return { key, revision, createRevision: previous.createRevision, object: parseObject(value) };
  }

  delete(key: string, expectedRevision?: number): StoredObject {
    this.#assertOpen();
    const revision = this.#revision + 1;
    let tombstone = "";
    const previous = this.#write(() => {
      const current = this.#existing(key, expectedRevision);
      // The tombstone is the last state stamped with the deletion revision, as kube reports it.
      tombstone = serialize(parseObject(current.value), revision);
      this.#appendLog({
        revision,
        key,
        created: 0,
        deleted: 1,
        createRevision: current.createRevision,
        prevRevision: current.revision,
        value: tombstone,
      });
      this.#statement("DELETE FROM current WHERE key = ?").run(key);
      this.#removeLive(key);
      return current;
    });
    this.#committed(revision, "DELETED", key, tombstone, previous.value);
    return { key, revision, createRevision: previous.createRevision, object: parseObject(tombstone) };
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
    const revision = atRevision;
    const rows = this.#statement(listAtRevisionSql(range)).all({
      ...rangeParams(range),
      rev: revision,
      limit: limit || -1,
    });
    const items = rows.map((row): StoredObject => {
      const key = readString(row, "key");
      return {
        key,
        revision: readInteger(row, "revision"),
        createRevision: readInteger(row, "create_revision"),
        object: parseObject(readString(row, "value")),
      };
    });
    const result: ListResult = { items, revision };
    const last = items[items.length - 1];
    if (limit > 0 && items.length === limit && last) {
      const after: KeyRange = { lo: last.key, loInclusive: false, hi: range.hi };
      const countRow = this.#statement(countAtRevisionSql(after)).get({
        ...rangeParams(after),
        rev: revision,
      });
      const remaining = readInteger(countRow, "n");
      if (remaining > 0) {
        result.continueKey = last.key;
        result.remaining = remaining;
      }
    }
    return result;
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
    this.#assertOpen();
    if (!Number.isInteger(keep) || keep < 0)
      throw new RangeError(`keep must be a non-negative integer, got ${keep}`);
    const from = this.#compacted;
    // Compaction is its own transaction: commit the open batch first.
    this.#commitBatch();
    const to = this.#revision - keep;
    if (to <= from) return { compactedRevision: from, removedRows: 0 };
    const removedRows = this.#transaction(() => {
      const bounds = { from, to };
      const superseded = this.#statement(COMPACT_SUPERSEDED).run(bounds).changes;
      const tombstones = this.#statement(COMPACT_TOMBSTONES).run(bounds).changes;
      this.#statement("UPDATE meta SET value = ? WHERE name = 'compacted_revision'").run(to);
      return Number(superseded) + Number(tombstones);
    });
    this.#compacted = to;
    this.#logger.info(2, "compacted revision log", { compactedRevision: to, removedRows });
    return { compactedRevision: to, removedRows };
  }

  runCompaction(options: { intervalMs: number; keep?: number }, signal: AbortSignal): Promise<void> {
    const loop: CompactionLoopOptions = {
      intervalMs: options.intervalMs,
      compact: () => this.compact(options.keep ?? this.compactionWindow),
      isClosed: () => this.#closed,
      clock: this.#clock,
      logger: this.#logger,
    };
    return runCompactionLoop(loop, signal);
  }

  close(): void {
    if (this.#closed) return;
    // Acknowledged-to-be writes of the open batch are committed, not dropped.
    this.#commitBatch();
    this.#closed = true;
    for (const waiter of this.#waiters.splice(0)) waiter.reject(closedError(this.path));
    this.#hub.closeAll();
    this.#statements.clear();
    this.#db.close();
  }

  #assertOpen(): void {
    if (this.#closed) throw closedError(this.path);
  }

  /** Runs one write: its own transaction, or (group commit) a savepoint in the open batch. */
  #write<T>(work: () => T): T {
    if (!this.#groupCommit) return this.#transaction(work);
    if (!this.#batchOpen) {
      this.#statement("BEGIN IMMEDIATE").run();
      this.#batchOpen = true;
      // After this turn's I/O callbacks: every request read in this turn joins the batch.
      setImmediate(() => this.#commitBatch());
    }
    this.#statement("SAVEPOINT write").run();
    try {
      const result = work();
      this.#statement("RELEASE write").run();
      return result;
    } catch (error) {
      this.#statement("ROLLBACK TO write").run();
      this.#statement("RELEASE write").run();
      throw error;
    }
  }

  /**
   * Commits the open batch (one fsync), then tells the watchers and the whenDurable callers. A
   * failed COMMIT rolls the batch back: its writes were never acknowledged, so their callers get
   * the error and the revision counter returns to the last durable one.
   */
  #commitBatch(): void {
    if (!this.#batchOpen || this.#closed) return;
    this.#batchOpen = false;
    const changes = this.#unpublished;
    this.#unpublished = [];
    try {
      this.#statement("COMMIT").run();
    } catch (error) {
      if (this.#db.isTransaction) this.#statement("ROLLBACK").run();
      this.#revision = this.#durable;
      this.#loadLive();
      this.#logger.error("committing a batch of writes failed; none of them was acknowledged", {
        writes: changes.length,
        error: errorMessage(error),
      });
      const failure = new CsikitError(
        "CSIKIT_ERR_STORE_WRITE",
        `state database ${this.path}: commit failed: ${errorMessage(error)}`,
        { cause: error },
      );
      for (const waiter of this.#waiters.splice(0)) waiter.reject(failure);
      return;
    }
    this.#commits++;
    for (const change of changes) this.#publish(change);
    this.#durable = this.#revision;
    let done = 0;
    while (done < this.#waiters.length && this.#waiters[done]!.revision <= this.#durable) done++;
    for (const waiter of this.#waiters.splice(0, done)) waiter.resolve();
  }

  #statement(sql: string): StatementSync {
    let statement = this.#statements.get(sql);
    if (!statement) {
      statement = this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  #transaction<T>(work: () => T): T {
    this.#statement("BEGIN IMMEDIATE").run();
    try {
      const result = work();
      this.#statement("COMMIT").run();
      this.#commits++;
      return result;
    } catch (error) {
      if (this.#db.isTransaction) {
        this.#statement("ROLLBACK").run();
        // A refusal (StoreError) comes before any change; anything else may follow one.
        if (!(error instanceof StoreError)) this.#loadLive();
      }
      throw error;
    }
  }

  #current(key: string): CurrentRow | undefined {
    return this.#live.get(key);
  }

  #existing(key: string, expectedRevision: number | undefined): CurrentRow {
    const current = this.#current(key);
    if (!current) throw new StoreError("NotFound", `${key} not found`);
    if (expectedRevision !== undefined && expectedRevision !== current.revision) {
      throw new StoreError(
        "Conflict",
        `${key} is at revision ${current.revision}, not the expected revision ${expectedRevision}`,
      );
    }
    return current;
  }

  #appendLog(row: {
    revision: number;
    key: string;
    created: 0 | 1;
    deleted: 0 | 1;
    createRevision: number;
    prevRevision: number;
    value: string;
  }): void {
    this.#statement(
      "INSERT INTO log (revision, key, created, deleted, create_revision, prev_revision, value) VALUES (?, ?, ?, ?, ?, ?, ?)",
    ).run(row.revision, row.key, row.created, row.deleted, row.createRevision, row.prevRevision, row.value);
  }

  /**
   * After a write applied: advance the revision; without group commit (the write is committed)
   * tell the watchers now, else once its batch commits.
   */
  #committed(
    revision: number,
    type: WatchEventType,
    key: string,
    value: string,
    previous: string | undefined,
  ): void {
    this.#revision = revision;
    const change: UnpublishedChange = { revision, type, key, value, previous };
    if (this.#groupCommit) {
      this.#unpublished.push(change);
      return;
    }
    this.#durable = revision;
    this.#publish(change);
  }

  #publish(change: UnpublishedChange): void {
    this.#durable = change.revision;
    if (!this.#hub.wants(change.key)) return;
    const event: StoreEvent = {
      type: change.type,
      key: change.key,
      revision: change.revision,
      object: parseObject(change.value),
    };
    if (change.previous !== undefined) event.previous = parseObject(change.previous);
    this.#hub.publish(event);
  }

  #history(prefix: string, after: number, until: number, limit: number): StoreEvent[] {
    if (this.#closed) return [];
    const range = keyRange(prefix);
    const rows = this.#statement(historySql(range)).all({ ...rangeParams(range), after, until, limit });
    return rows.map((row): StoreEvent => {
      const type: WatchEventType =
        readInteger(row, "created") === 1
          ? "ADDED"
          : readInteger(row, "deleted") === 1
            ? "DELETED"
            : "MODIFIED";
      const event: StoreEvent = {
        type,
        key: readString(row, "key"),
        revision: readInteger(row, "revision"),
        object: parseObject(readString(row, "value")),
      };
      const previous = row["prev_value"];
      if (type !== "ADDED" && typeof previous === "string") event.previous = parseObject(previous);
      return event;
    });
  }
}

const UPSERT_CURRENT =
  "INSERT INTO current (key, revision, create_revision) VALUES (?, ?, ?) " +
  "ON CONFLICT (key) DO UPDATE SET revision = excluded.revision, create_revision = excluded.create_revision";

// A row is superseded when the key's next row is at or below the boundary; each row is the
// `prev_revision` of at most one row, so this finds exactly those. Rows up to the previous
// boundary were handled by earlier compactions.
const COMPACT_SUPERSEDED =
  "DELETE FROM log WHERE revision IN " +
  "(SELECT prev_revision FROM log WHERE revision > :from AND revision <= :to AND prev_revision > 0)";
const COMPACT_TOMBSTONES = "DELETE FROM log WHERE revision > :from AND revision <= :to AND deleted = 1";

function rangeWhere(column: string, range: KeyRange): string {
  const lower = `${column} ${range.loInclusive ? ">=" : ">"} :lo`;
  return range.hi === undefined ? lower : `${lower} AND ${column} < :hi`;
}

function rangeParams(range: KeyRange): Record<string, SQLInputValue> {
  return range.hi === undefined ? { lo: range.lo } : { lo: range.lo, hi: range.hi };
}

// SQLite guarantees that bare columns next to max() come from the row holding the maximum, so
// this is "each key's newest row at or below :rev", read off the (key, revision) index.
function newestAtRevisionSql(range: KeyRange): string {
  return (
    "SELECT key, max(revision) AS revision, create_revision, value, deleted FROM log " +
    `WHERE ${rangeWhere("key", range)} AND revision <= :rev GROUP BY key`
  );
}

function listAtRevisionSql(range: KeyRange): string {
  return (
    `SELECT key, revision, create_revision, value FROM (${newestAtRevisionSql(range)}) ` +
    "WHERE deleted = 0 ORDER BY key LIMIT :limit"
  );
}

function countAtRevisionSql(range: KeyRange): string {
  return `SELECT count(*) AS n FROM (${newestAtRevisionSql(range)}) WHERE deleted = 0`;
}

function historySql(range: KeyRange): string {
  return (
    "SELECT l.revision, l.key, l.created, l.deleted, l.value, p.value AS prev_value " +
    "FROM log l LEFT JOIN log p ON p.revision = l.prev_revision " +
    `WHERE l.revision > :after AND l.revision <= :until AND ${rangeWhere("l.key", range)} ` +
    "ORDER BY l.revision LIMIT :limit"
  );
}

/** First index whose key is >= `key` (inclusive) or > `key` (exclusive). */
function lowerBound(keys: readonly string[], key: string, inclusive: boolean): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const order = compareKeys(keys[mid]!, key);
    if (order < 0 || (order === 0 && !inclusive)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** A list item whose object is parsed from the stored text only when someone reads it. */
function liveItem(key: string, row: CurrentRow): StoredObject {
  let object: KubeObject | undefined;
  return {
    key,
    revision: row.revision,
    createRevision: row.createRevision,
    json: row.value,
    get object(): KubeObject {
      return (object ??= parseObject(row.value));
    },
    set object(value: KubeObject) {
      object = value;
    },
  };
}

function closedError(path: string): CsikitError {
  return new CsikitError("CSIKIT_ERR_STORE_CLOSED", `state database ${path} is closed`);
}

function assertKey(key: string): void {
  if (typeof key !== "string" || key.length === 0)
    throw new TypeError("store key must be a non-empty string");
}

/** The stored JSON: the object with metadata.resourceVersion set to the revision. */
function serialize(object: KubeObject, revision: number): string {
  const metadata = isRecord(object.metadata) ? object.metadata : {};
  return JSON.stringify({ ...object, metadata: { ...metadata, resourceVersion: String(revision) } });
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

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function readInteger(row: Record<string, SQLOutputValue> | undefined, column: string): number {
  const value = row?.[column];
  if (value === undefined || value === null) return 0;
  if (typeof value === "number") return value;
  if (typeof value === "bigint") return Number(value);
  throw new CsikitError(
    "CSIKIT_ERR_STORE_CORRUPT",
    `state database column ${column} holds ${typeof value}, expected an integer`,
  );
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
