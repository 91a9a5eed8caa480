// The main thread's side of the commit worker (commit-worker.ts): starts it, hands it batches of
// changes and settles a promise per batch when the worker answers, so the event loop never waits
// for an fsync. The few calls that must stay synchronous (open, a compaction asked for by a
// caller, close) block on Atomics.wait for the worker's answer: they run at startup, shutdown, or
// rarely, and the Store contract makes them synchronous.
//
// The worker's message port is referenced only while a batch is in flight, so an idle store does
// not keep the process alive but a pending whenDurable does.

import { MessageChannel, receiveMessageOnPort, Worker } from "node:worker_threads";
import type { MessagePort } from "node:worker_threads";
import { CsikitError } from "../../base/index.ts";
import type { CommitFaults } from "./commit-faults.ts";
import type { CommitReply, CommitRequest, CommitWorkerData } from "./commit-worker.ts";
import type { LogChange, Synchronous } from "./log-sql.ts";

export interface CommitPipelineOptions {
  path: string;
  synchronous: Synchronous;
  lockTimeoutMs: number;
  faults?: CommitFaults;
}

/** How long a synchronous request may wait for the worker beyond the lock timeout. */
const SYNC_WAIT_MS = 60_000;

type Outstanding = { resolve: (reply: CommitReply) => void };

export class CommitPipeline {
  readonly #path: string;
  readonly #worker: Worker;
  readonly #requests: MessagePort;
  readonly #replies: MessagePort;
  readonly #signal = new Int32Array(new SharedArrayBuffer(4));
  readonly #outstanding = new Map<number, Outstanding>();
  readonly #waitMs: number;
  #nextId = 1;
  #closed = false;

  /** Starts the worker and waits until it opened the database; throws its open error. */
  constructor(options: CommitPipelineOptions) {
    this.#path = options.path;
    this.#waitMs = options.lockTimeoutMs + SYNC_WAIT_MS;
    const requests = new MessageChannel();
    const replies = new MessageChannel();
    this.#requests = requests.port1;
    this.#replies = replies.port1;
    const workerData: CommitWorkerData = {
      path: options.path,
      synchronous: options.synchronous,
      lockTimeoutMs: options.lockTimeoutMs,
      signal: this.#signal,
      requests: requests.port2,
      replies: replies.port2,
      ...(options.faults ? { faults: options.faults.state } : {}),
    };
    this.#worker = new Worker(new URL("./commit-worker.ts", import.meta.url), {
      workerData,
      transferList: [requests.port2, replies.port2],
      name: "csikit-commit",
    });
    this.#worker.unref();
    // A worker that died answers nothing: fail what waits on it rather than hang.
    const died = (error: unknown): void => {
      const message = `the commit worker stopped: ${error instanceof Error ? error.message : String(error)}`;
      for (const id of [...this.#outstanding.keys()]) this.#settle({ id, ok: false, message });
    };
    this.#worker.on("error", died);
    this.#worker.on("exit", (code) => died(new Error(`exit code ${code}`)));
    this.#requests.on("message", (reply: CommitReply) => this.#settle(reply));
    this.#requests.unref();
    const opened = this.#await(0, "open");
    if (!opened.ok) {
      this.#shutDown();
      throw new CsikitError(opened.code ?? "CSIKIT_ERR_STORE_OPEN", opened.message);
    }
  }

  /**
   * Hands `changes` over as one batch; `done` resolves once they are durable and rejects if
   * their COMMIT failed or was refused (an earlier batch of an epoch not older failed). Batches
   * commit in the order handed over; those that wait behind a COMMIT share the next one.
   */
  commit(changes: LogChange[], epoch: number): { id: number; done: Promise<void> } {
    const id = this.#nextId++;
    const done = this.#send({ id, op: "commit", epoch, changes }).then((reply) => {
      if (!reply.ok) throw new CsikitError("CSIKIT_ERR_STORE_WRITE", reply.message);
    });
    return { id, done };
  }

  /** One compaction round in the worker, without blocking the event loop. */
  compact(from: number, to: number): Promise<number> {
    return this.#send({ id: this.#nextId++, op: "compact", from, to }).then((reply) => {
      if (!reply.ok) throw new CsikitError("CSIKIT_ERR_STORE_COMPACT", reply.message);
      return reply.removedRows ?? 0;
    });
  }

  /** Like compact, blocking until done (after any batch already handed over). */
  compactSync(from: number, to: number): number {
    const id = this.#nextId++;
    this.#post({ id, op: "compact", from, to, sync: true });
    const reply = this.#await(id, "compaction");
    if (!reply.ok) throw new CsikitError("CSIKIT_ERR_STORE_COMPACT", reply.message);
    return reply.removedRows ?? 0;
  }

  /**
   * Commits the last `changes` after every batch handed over, closes the database and stops the
   * worker. Returns the final commit's error, if any, and the newest batch id committed. Batches
   * still in flight never settle: the caller learns their fate from `committedThrough`.
   */
  close(changes: LogChange[], epoch: number): { error?: Error; committedThrough: number } {
    if (this.#closed) return { committedThrough: 0 };
    const id = this.#nextId++;
    let result: { error?: Error; committedThrough: number };
    try {
      this.#post({ id, op: "close", epoch, changes, sync: true });
      const reply = this.#await(id, "close");
      const committedThrough = reply.committedThrough ?? 0;
      result = reply.ok ? { committedThrough } : { error: new Error(reply.message), committedThrough };
    } catch (error) {
      result = { error: error instanceof Error ? error : new Error(String(error)), committedThrough: 0 };
    }
    this.#shutDown();
    return result;
  }

  #send(request: CommitRequest): Promise<CommitReply> {
    if (this.#closed) return Promise.reject(new Error("the commit worker has stopped"));
    return new Promise((resolve) => {
      this.#outstanding.set(request.id, { resolve });
      if (this.#outstanding.size === 1) this.#requests.ref();
      this.#requests.postMessage(request);
    });
  }

  #post(request: CommitRequest): void {
    if (this.#closed) throw new CsikitError("CSIKIT_ERR_STORE_CLOSED", "the commit worker has stopped");
    this.#requests.postMessage(request);
  }

  #settle(reply: CommitReply): void {
    const outstanding = this.#outstanding.get(reply.id);
    if (!outstanding) return;
    this.#outstanding.delete(reply.id);
    if (this.#outstanding.size === 0) this.#requests.unref();
    outstanding.resolve(reply);
  }

  /** Blocks until the worker's synchronous answer to request `id` (bounded). */
  #await(id: number, what: string): CommitReply {
    const deadline = Date.now() + this.#waitMs;
    for (;;) {
      const seen = Atomics.load(this.#signal, 0);
      const received = receiveMessageOnPort(this.#replies);
      if (received) {
        const reply = received.message as CommitReply;
        if (reply.id === id) return reply;
        continue;
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new CsikitError(
          "CSIKIT_ERR_STORE_WRITE",
          `state database ${this.#path}: the commit worker did not answer the ${what} within ${this.#waitMs} ms`,
        );
      }
      Atomics.wait(this.#signal, 0, seen, Math.min(left, 1000));
    }
  }

  #shutDown(): void {
    this.#closed = true;
    this.#requests.close();
    this.#replies.close();
    // The worker exits by itself once its port closed; terminate covers a stuck one.
    void this.#worker.terminate().catch(() => {});
  }
}
