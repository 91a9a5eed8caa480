// The API server's storage: a kine-style revision log in SQLite with an in-process watch hub.
// The REST layer imports storage only from here.

export * from "./types.ts";
export { openSqliteStore, DEFAULT_COMPACTION_WINDOW, DEFAULT_WATCH_BUFFER_LIMIT } from "./sqlite-store.ts";
export type { SqliteStore, SqliteStoreOptions, CompactionResult } from "./sqlite-store.ts";
export { DEFAULT_COMPACTION_INTERVAL_MS } from "./compaction.ts";
export { CommitFaults } from "./commit-faults.ts";
