// The revision log's SQL, shared by the two writers of a state database: the store itself when
// it commits in-thread (no group commit) and the commit worker (group commit). Schema creation,
// connection settings, the owner lock, and applying one change or one compaction round.
//
// Why an owner lock file: the group-commit store reads past revisions through a second, read-only
// connection on the main thread while the worker writes, which SQLite allows only in WAL's
// shared-memory mode, not with locking_mode=EXCLUSIVE on the database itself. So ownership
// ("one process per state database") is a held EXCLUSIVE lock on "<database>-lock" instead: a
// second store, in this process or another, fails at open rather than forking the revision
// sequence. The lock is an fcntl lock: the kernel drops it when the process dies, even by kill -9.

import { chmodSync, closeSync, constants, openSync } from "node:fs";
import { DatabaseSync } from "node:sqlite";
import type { SQLOutputValue, StatementSync } from "node:sqlite";
import { CsikitError } from "../../base/index.ts";

export const SCHEMA_VERSION = 1;

/** One change to persist: a new log row and the `current` table's matching update. */
export interface LogChange {
  revision: number;
  key: string;
  created: 0 | 1;
  deleted: 0 | 1;
  createRevision: number;
  prevRevision: number;
  value: string;
}

export type Synchronous = "FULL" | "NORMAL";

/** Prepares each SQL text once per connection. */
export class StatementCache {
  readonly #db: DatabaseSync;
  readonly #statements = new Map<string, StatementSync>();

  constructor(db: DatabaseSync) {
    this.#db = db;
  }

  get(sql: string): StatementSync {
    let statement = this.#statements.get(sql);
    if (!statement) {
      statement = this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  clear(): void {
    this.#statements.clear();
  }
}

/**
 * Takes the owner lock of the database at `path` (see the header); the caller closes the returned
 * connection to release it. Throws a CsikitError naming `path` when another store holds it.
 */
export function acquireOwnerLock(path: string, timeoutMs: number): DatabaseSync {
  let lock: DatabaseSync | undefined;
  try {
    // Private like the database (no data in it, but nothing in a state directory is for others).
    const lockPath = `${path}-lock`;
    closeSync(openSync(lockPath, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o600));
    chmodSync(lockPath, 0o600);
    lock = new DatabaseSync(lockPath, { timeout: timeoutMs });
    lock.exec("PRAGMA locking_mode = EXCLUSIVE");
    // No journal file next to it: the write below only takes the lock.
    lock.exec("PRAGMA journal_mode = MEMORY");
    // A write takes the EXCLUSIVE file lock; in this locking mode it is kept until close.
    lock.exec("BEGIN EXCLUSIVE; PRAGMA user_version = 1; COMMIT");
    return lock;
  } catch (error) {
    lock?.close();
    throw openError(path, error);
  }
}

/**
 * WAL journal and the durability level. "exclusive": the connection is the file's only user (no
 * shared-memory index); "shared": other connections of this process may read alongside;
 * "memory": an in-memory database (no journal to set).
 */
export function configure(
  db: DatabaseSync,
  options: { sharing: "exclusive" | "shared" | "memory"; synchronous: Synchronous },
): void {
  if (options.sharing !== "memory") {
    // Must precede the switch to WAL so no shared-memory index is used and the lock is held.
    if (options.sharing === "exclusive") db.exec("PRAGMA locking_mode = EXCLUSIVE");
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

export function migrate(db: DatabaseSync, path: string): void {
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

/** The newest revision ever assigned and the compaction boundary, as stored. */
export function readRevisions(db: DatabaseSync): { revision: number; compacted: number } {
  return {
    revision: readInteger(db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'log'").get(), "seq"),
    compacted: readInteger(
      db.prepare("SELECT value FROM meta WHERE name = 'compacted_revision'").get(),
      "value",
    ),
  };
}

const INSERT_LOG =
  "INSERT INTO log (revision, key, created, deleted, create_revision, prev_revision, value) VALUES (?, ?, ?, ?, ?, ?, ?)";
const UPSERT_CURRENT =
  "INSERT INTO current (key, revision, create_revision) VALUES (?, ?, ?) " +
  "ON CONFLICT (key) DO UPDATE SET revision = excluded.revision, create_revision = excluded.create_revision";
const DELETE_CURRENT = "DELETE FROM current WHERE key = ?";

/** Applies one change inside the caller's transaction. */
export function applyChange(statements: StatementCache, change: LogChange): void {
  statements
    .get(INSERT_LOG)
    .run(
      change.revision,
      change.key,
      change.created,
      change.deleted,
      change.createRevision,
      change.prevRevision,
      change.value,
    );
  if (change.deleted === 1) statements.get(DELETE_CURRENT).run(change.key);
  else statements.get(UPSERT_CURRENT).run(change.key, change.revision, change.createRevision);
}

// A row is superseded when the key's next row is at or below the boundary; each row is the
// `prev_revision` of at most one row, so this finds exactly those. Rows up to the previous
// boundary were handled by earlier compactions.
const COMPACT_SUPERSEDED =
  "DELETE FROM log WHERE revision IN " +
  "(SELECT prev_revision FROM log WHERE revision > :from AND revision <= :to AND prev_revision > 0)";
const COMPACT_TOMBSTONES = "DELETE FROM log WHERE revision > :from AND revision <= :to AND deleted = 1";

/**
 * Compaction from boundary `from` to `to` inside the caller's transaction: removes only rows no
 * read at a revision >= `to` can need. Returns the rows removed.
 */
export function compactLog(statements: StatementCache, from: number, to: number): number {
  const bounds = { from, to };
  const superseded = statements.get(COMPACT_SUPERSEDED).run(bounds).changes;
  const tombstones = statements.get(COMPACT_TOMBSTONES).run(bounds).changes;
  statements.get("UPDATE meta SET value = ? WHERE name = 'compacted_revision'").run(to);
  return Number(superseded) + Number(tombstones);
}

/** An open failure as a CsikitError naming the database path. */
export function openError(path: string, error: unknown): CsikitError {
  if (error instanceof CsikitError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const detail = /locked|busy/i.test(message)
    ? "it is in use by another process (one csikit API server per state directory)"
    : message;
  return new CsikitError("CSIKIT_ERR_STORE_OPEN", `cannot open state database ${path}: ${detail}`, {
    cause: error,
  });
}

export function readInteger(row: Record<string, SQLOutputValue> | undefined, column: string): number {
  const value = row?.[column];
  if (value === undefined || value === null) return 0;
  if (typeof value === "number") return value;
  if (typeof value === "bigint") return Number(value);
  throw new CsikitError(
    "CSIKIT_ERR_STORE_CORRUPT",
    `state database column ${column} holds ${typeof value}, expected an integer`,
  );
}
