// The storage contract of the embedded API server: a revision log in the style of kine.
// Every successful write gets the next global revision; that number, as a decimal string, is
// the object's metadata.resourceVersion. Keys are "/<group>/<resource>/<namespace>/<name>"
// (group "core" for the legacy group, namespace "" for cluster-scoped objects, so the key has
// an empty segment). Values are whole JSON objects; the store writes `resourceVersion` into
// `metadata` itself and never otherwise interprets them.
//
// Guarantees: a write that resolved is durable (survives kill -9); revisions strictly
// increase across restarts; watch delivers every change after `fromRevision` in revision
// order, or fails with StoreError("Gone") once that revision was compacted.

export type KubeObject = Record<string, unknown> & { metadata?: Record<string, unknown> };

export interface StoredObject {
  key: string;
  revision: number;
  /** Revision at which this key was (last) created. */
  createRevision: number;
  object: KubeObject;
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
  /** Events in revision order; ends when closed. Throws StoreError("Gone") if fromRevision is compacted. */
  [Symbol.asyncIterator](): AsyncIterator<StoreEvent>;
  close(): void;
}

export interface Store {
  currentRevision(): number;
  /** The oldest revision still watchable (compaction boundary). */
  compactedRevision(): number;
  get(key: string): StoredObject | undefined;
  /** StoreError("AlreadyExists") if the key exists. */
  create(key: string, object: KubeObject): StoredObject;
  /**
   * Replace the object. With `expectedRevision`, StoreError("Conflict") if the current revision differs.
   * StoreError("NotFound") if absent.
   */
  update(key: string, object: KubeObject, expectedRevision?: number): StoredObject;
  /** Remove the object; returns its last state. StoreError("NotFound") if absent. ConflictError on revision mismatch. */
  delete(key: string, expectedRevision?: number): StoredObject;
  list(options: ListOptions): ListResult;
  /** Events for keys under `prefix` with revision > fromRevision. */
  watch(prefix: string, fromRevision: number): Watch;
  /** Drop history older than the newest `keep` revisions. */
  compact(keep: number): void;
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
