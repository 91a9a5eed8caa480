// The storage contract of the embedded API server: a revision log in the style of kine.
// Every successful write gets the next global revision; that number, as a decimal string, is
// the object's metadata.resourceVersion. Keys are "/<group>/<resource>/<namespace>/<name>"
// (group "core" for the legacy group, namespace "" for cluster-scoped objects, so the key has
// an empty segment). Values are whole JSON objects; the store writes `resourceVersion` into
// `metadata` itself and never otherwise interprets them.
//
// Guarantees: a write that returned is durable (survives kill -9; with the default
// synchronous=FULL also power loss); revisions strictly increase across restarts and
// compaction and are never reused; watch delivers every change after `fromRevision` in
// revision order with no gap and no duplicate, or fails with StoreError("Gone") once that
// revision was compacted (or when the watcher fell too far behind to be buffered).
// All methods except watch iteration and whenDurable are synchronous, so nothing interleaves
// with a read-check-write inside the process. A write may be durable only later (group commit):
// whenDurable(revision) says when, and nothing may be acknowledged to a client before.
//
// Objects returned by get/list/create/update/delete are fresh copies the caller may change.
// Objects inside watch events are shared by every watcher of that change: treat them as
// read-only (copy before changing).

export type KubeObject = Record<string, unknown> & { metadata?: Record<string, unknown> };

export interface StoredObject {
  key: string;
  revision: number;
  /** Revision at which this key was (last) created. */
  createRevision: number;
  object: KubeObject;
  /**
   * The stored JSON text of `object` (resourceVersion included), when the store has it at hand:
   * a list answer can splice it instead of encoding the object again. Absent on converted views.
   */
  json?: string;
}

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED";

export interface StoreEvent {
  type: WatchEventType;
  key: string;
  revision: number;
  /** The object after the change; for DELETED, the last state with resourceVersion = deletion revision. */
  object: KubeObject;
  /** The object before the change (MODIFIED, DELETED). */
  previous?: KubeObject;
  /**
   * The stored JSON text of `object`, when the store has it at hand: a watch may send it instead
   * of encoding the object again. Absent on converted views.
   */
  json?: string;
}

export interface ListOptions {
  /** Only keys starting with this prefix. */
  prefix: string;
  /** Max items; 0 or undefined = all. */
  limit?: number;
  /** Exclusive start key (from a previous page's `continueKey`). */
  startAfter?: string;
  /** Read at this revision (for consistent pagination); undefined = latest. StoreError("Gone") if compacted. */
  revision?: number;
}

export interface ListResult {
  items: StoredObject[];
  /** The revision the list reflects. */
  revision: number;
  /** Last key returned when more remain, else undefined. */
  continueKey?: string;
  /** How many items remain after this page, when limit cut it. */
  remaining?: number;
}

export interface Watch {
  /**
   * Events in revision order; ends (done) when closed or when the store closes. Rejects once with
   * StoreError("Gone") if fromRevision is compacted, if compaction overtook a replay in progress, or
   * if the consumer fell more than the store's watch buffer limit behind; after that it is done.
   * One consumer per watch.
   */
  [Symbol.asyncIterator](): AsyncIterator<StoreEvent>;
  /**
   * Every change under the prefix with revision <= this number has already been yielded: the
   * revision a BOOKMARK event may carry. Never decreases; at least fromRevision.
   */
  progressRevision(): number;
  /**
   * True while the events yielded come from stored history (read lazily, so the consumer may
   * take its time); false once they are live changes, which pile up while the consumer waits.
   */
  replaying(): boolean;
  /** Ends the iterator (a pending next() resolves done) and frees its buffer. Idempotent. */
  close(): void;
  /**
   * Once replay is over and every buffered event was yielded, hands each later live event to
   * `listener` synchronously as it is published (no buffer, no promise per event: the cost of a
   * watcher is then one call per change) and returns a promise that settles when the watch ends
   * (rejecting as next() would). Returns undefined, changing nothing, while events remain to be
   * read through the iterator. The iterator must not be read after a successful call.
   */
  follow?(listener: (event: StoreEvent) => void): Promise<void> | undefined;
}

export interface Store {
  currentRevision(): number;
  /** The oldest revision still watchable (compaction boundary). */
  compactedRevision(): number;
  /**
   * Resolves once every write with a revision <= `revision` is durable and published to
   * watchers; rejects if the write that would make it durable failed. A caller answers a client
   * only after this resolved for what the answer shows (the write it made, or the state it read).
   */
  whenDurable(revision: number): Promise<void>;
  get(key: string): StoredObject | undefined;
  /** StoreError("AlreadyExists") if the key exists. */
  create(key: string, object: KubeObject): StoredObject;
  /**
   * Replace the object. With `expectedRevision`, StoreError("Conflict") if the current revision differs.
   * StoreError("NotFound") if absent.
   */
  update(key: string, object: KubeObject, expectedRevision?: number): StoredObject;
  /**
   * Remove the object; returns its last state with resourceVersion (and `revision`) = the
   * deletion revision, as the DELETED watch event carries it. StoreError("NotFound") if absent,
   * StoreError("Conflict") on a revision mismatch.
   */
  delete(key: string, expectedRevision?: number): StoredObject;
  /**
   * Keys in ascending (UTF-8 byte) order. With `revision` < currentRevision() the list is the
   * state as of that revision (StoreError("Gone") if it is below compactedRevision()); a
   * revision above currentRevision() reads the latest state.
   */
  list(options: ListOptions): ListResult;
  /**
   * Events for keys under `prefix` with revision > fromRevision: first the stored history, then
   * live changes, with no gap or duplicate between the two.
   */
  watch(prefix: string, fromRevision: number): Watch;
  /**
   * Drop history older than the newest `keep` revisions: afterwards compactedRevision() is
   * currentRevision() - keep, and list/watch at any revision >= that still answer exactly.
   */
  compact(keep: number): void;
  /** Ends every watch and closes the database. Idempotent; other calls afterwards throw. */
  close(): void;
}

export class StoreError extends Error {
  readonly reason: "NotFound" | "AlreadyExists" | "Conflict" | "Gone";
  constructor(reason: StoreError["reason"], message: string) {
    super(message);
    this.name = "StoreError";
    this.reason = reason;
  }
}
