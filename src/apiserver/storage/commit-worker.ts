// The commit worker: a worker thread that owns the state database's write connection, so the
// fsync of every COMMIT happens off the main thread's event loop. It takes batches of changes,
// one transaction (one fsync) per batch, in the order sent, and answers each with ok or the
// failure; a failed batch is rolled back whole. It also runs compaction rounds and the final
// commit at close. It holds the owner lock (log-sql.ts) for as long as it runs.
//
// Protocol (commit-pipeline.ts is the other side): requests arrive on `requests`; the answer to
// a request marked `sync` goes to `replies` and bumps `signal[0]` (the main thread waits on it
// with Atomics.wait), any other answer goes back on `requests`. The first sync answer (id 0)
// reports the open.

import { DatabaseSync } from "node:sqlite";
import { workerData } from "node:worker_threads";
import type { MessagePort } from "node:worker_threads";
import { beforeCommit } from "./commit-faults.ts";
import {
  acquireOwnerLock,
  applyChange,
  compactLog,
  configure,
  migrate,
  openError,
  StatementCache,
} from "./log-sql.ts";
import type { LogChange, Synchronous } from "./log-sql.ts";

export interface CommitWorkerData {
  path: string;
  synchronous: Synchronous;
  lockTimeoutMs: number;
  signal: Int32Array<SharedArrayBuffer>;
  faults?: Int32Array<SharedArrayBuffer>;
  requests: MessagePort;
  replies: MessagePort;
}

export type CommitRequest =
  | { id: number; op: "commit"; changes: LogChange[]; sync?: boolean }
  | { id: number; op: "compact"; from: number; to: number; sync?: boolean }
  /** `after`: the commit still outstanding when closing; if it failed, `changes` build on it. */
  | { id: number; op: "close"; changes: LogChange[]; after: number; sync: true };

export type CommitReply =
  { id: number; ok: true; removedRows?: number } | { id: number; ok: false; message: string; code?: string };

/** How long a held COMMIT (fault hook) may wait for its release. */
const MAX_HOLD_MS = 120_000;

const data = workerData as CommitWorkerData;

function reply(message: CommitReply, sync: boolean | undefined): void {
  if (!sync) {
    data.requests.postMessage(message);
    return;
  }
  data.replies.postMessage(message);
  Atomics.add(data.signal, 0, 1);
  Atomics.notify(data.signal, 0);
}

function failure(id: number, error: unknown): CommitReply {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" ? { id, ok: false, message, code } : { id, ok: false, message };
}

let lock: DatabaseSync | undefined;
let db: DatabaseSync | undefined;
try {
  lock = acquireOwnerLock(data.path, data.lockTimeoutMs);
  db = new DatabaseSync(data.path, { timeout: data.lockTimeoutMs });
  configure(db, { sharing: "shared", synchronous: data.synchronous });
  migrate(db, data.path);
} catch (error) {
  db?.close();
  lock?.close();
  db = undefined;
  reply(failure(0, openError(data.path, error)), true);
  data.requests.close();
}

if (db) {
  const connection = db;
  const statements = new StatementCache(connection);

  const transaction = <T>(work: () => T): T => {
    statements.get("BEGIN IMMEDIATE").run();
    try {
      const result = work();
      if (data.faults) beforeCommit(data.faults, MAX_HOLD_MS);
      statements.get("COMMIT").run();
      return result;
    } catch (error) {
      if (connection.isTransaction) statements.get("ROLLBACK").run();
      throw error;
    }
  };

  const commit = (changes: readonly LogChange[]): void => {
    if (changes.length === 0) return;
    transaction(() => {
      for (const change of changes) applyChange(statements, change);
    });
  };

  /** The newest commit request that failed. */
  let lastFailed = 0;

  data.requests.on("message", (request: CommitRequest) => {
    try {
      switch (request.op) {
        case "commit":
          try {
            commit(request.changes);
          } catch (error) {
            lastFailed = request.id;
            throw error;
          }
          reply({ id: request.id, ok: true }, request.sync);
          return;
        case "compact": {
          const removedRows = transaction(() => compactLog(statements, request.from, request.to));
          reply({ id: request.id, ok: true, removedRows }, request.sync);
          return;
        }
        case "close": {
          let outcome: CommitReply = { id: request.id, ok: true };
          try {
            if (request.after !== 0 && request.after === lastFailed) {
              throw new Error("the batch before the last one failed to commit; the last one built on it");
            }
            commit(request.changes);
          } catch (error) {
            outcome = failure(request.id, error);
          }
          statements.clear();
          connection.close();
          lock?.close();
          data.requests.close();
          reply(outcome, true);
          return;
        }
      }
    } catch (error) {
      reply(failure(request.id, error), request.sync);
    }
  });
  reply({ id: 0, ok: true }, true);
}
