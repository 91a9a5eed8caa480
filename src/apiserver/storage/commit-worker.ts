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
import { receiveMessageOnPort, workerData } from "node:worker_threads";
import type { MessagePort } from "node:worker_threads";
import { CsikitError } from "../../base/index.ts";
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

/**
 * `epoch` counts the main thread's failed commits: a commit or close whose epoch is not newer
 * than a failed commit's was built on writes that were undone, and is refused unwritten.
 */
export type CommitRequest =
  | { id: number; op: "commit"; epoch: number; changes: LogChange[]; sync?: boolean }
  | { id: number; op: "compact"; from: number; to: number; sync?: boolean }
  | { id: number; op: "close"; epoch: number; changes: LogChange[]; sync: true };

/** `committedThrough` (close only): the newest commit request that was committed. */
export type CommitReply =
  | { id: number; ok: true; removedRows?: number; committedThrough?: number }
  | { id: number; ok: false; message: string; code?: string; committedThrough?: number };

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

  /** The epoch of the newest failed commit: later requests of that epoch or older are refused. */
  let failedEpoch = -1;
  let failedMessage = "";
  let committedThrough = 0;
  const refused = (epoch: number): string | undefined =>
    epoch <= failedEpoch
      ? `an earlier batch failed to commit (${failedMessage}); this one built on it`
      : undefined;

  /**
   * Commits consecutive commit requests in one transaction (one fsync): the batches the main
   * thread handed over while the previous COMMIT ran, so fsyncs never pile up behind each other.
   */
  const commitGroup = (group: Extract<CommitRequest, { op: "commit" }>[]): void => {
    const accepted: typeof group = [];
    for (const request of group) {
      const reason = refused(request.epoch);
      if (reason) reply({ id: request.id, ok: false, message: reason }, request.sync);
      else accepted.push(request);
    }
    if (accepted.length === 0) return;
    try {
      commit(accepted.flatMap((request) => request.changes));
    } catch (error) {
      failedEpoch = Math.max(...accepted.map((request) => request.epoch));
      failedMessage = error instanceof Error ? error.message : String(error);
      for (const request of accepted) reply(failure(request.id, error), request.sync);
      return;
    }
    committedThrough = accepted[accepted.length - 1]!.id;
    for (const request of accepted) reply({ id: request.id, ok: true }, request.sync);
  };

  const handleOther = (request: Exclude<CommitRequest, { op: "commit" }>): void => {
    switch (request.op) {
      case "compact": {
        try {
          const removedRows = transaction(() => compactLog(statements, request.from, request.to));
          reply({ id: request.id, ok: true, removedRows }, request.sync);
        } catch (error) {
          reply(failure(request.id, error), request.sync);
        }
        return;
      }
      case "close": {
        let outcome: CommitReply = { id: request.id, ok: true };
        try {
          const reason = refused(request.epoch);
          if (reason) throw new CsikitError("CSIKIT_ERR_STORE_WRITE", reason);
          commit(request.changes);
        } catch (error) {
          outcome = failure(request.id, error);
        }
        statements.clear();
        connection.close();
        lock?.close();
        data.requests.close();
        reply({ ...outcome, committedThrough }, true);
        return;
      }
    }
  };

  data.requests.on("message", (first: CommitRequest) => {
    // Everything already queued, in order: consecutive commits share one transaction.
    const queue: CommitRequest[] = [first];
    for (let next = receiveMessageOnPort(data.requests); next; next = receiveMessageOnPort(data.requests)) {
      queue.push(next.message as CommitRequest);
    }
    while (queue.length > 0) {
      const request = queue.shift()!;
      if (request.op !== "commit") {
        handleOther(request);
        if (request.op === "close") return;
        continue;
      }
      const group = [request];
      while (queue[0]?.op === "commit") group.push(queue.shift() as typeof request);
      commitGroup(group);
    }
  });
  reply({ id: 0, ok: true }, true);
}
