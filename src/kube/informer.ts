// Shared informers: one reflector per (resource, namespace, selectors) per process feeding a
// read-only cache and any number of event handlers (CONVENTIONS §11), as client-go's
// sharedIndexInformer.
//
// Guarantees:
// - Handlers see `onAdd(obj)` for new objects, `onUpdate(old, new)` for changes (also, with
//   old === new content, after a relist and on each periodic resync — as client-go), and
//   `onDelete(obj)` with the final state the server reported, or a `Tombstone` carrying the
//   last known state when the delete was missed (seen only as absence at a relist).
// - The cache is updated before handlers run, so a handler reading the cache sees at least
//   the object it was told about. Handlers run synchronously in registration order; a handler
//   that throws is logged and does not affect others (handlers should only enqueue keys).
// - A handler added after the cache has data first gets `onAdd` for every cached object.
// - `hasSynced()` turns true once the first list has been delivered; `waitForSync(signal)`
//   resolves then (rejects if the signal aborts first).
// - `run(signal)` never rejects and resolves only after the signal aborts.
// `InformerFactory` hands out ONE SharedInformer per (GVR, namespace, label selector, field
// selector) and starts them together.

import {
  errorMessage,
  realClock,
  silentLogger,
  type Clock,
  type Logger,
  CsikitError,
} from "../base/index.ts";
import type { KubeClient } from "./client.ts";
import { Reflector, clientListerWatcher, type ListerWatcher, type SelectorOptions } from "./reflector.ts";
import { Store, type IndexFunc } from "./store.ts";
import { gvrString, objectKey, type GroupVersionResource, type KubeObject } from "./types.ts";

/** What onDelete gets when the object vanished while no watch was looking. */
export class Tombstone<T> {
  readonly key: string;
  /** The last state the cache had. */
  readonly object: T;
  constructor(key: string, object: T) {
    this.key = key;
    this.object = object;
  }
}

export function isTombstone<T>(value: T | Tombstone<T>): value is Tombstone<T> {
  return value instanceof Tombstone;
}

/** The object of an onDelete argument, unwrapping a tombstone. */
export function deletedObject<T>(value: T | Tombstone<T>): T {
  return value instanceof Tombstone ? value.object : value;
}

export interface EventHandlers<T> {
  onAdd?(object: T): void;
  onUpdate?(oldObject: T, newObject: T): void;
  onDelete?(object: T | Tombstone<T>): void;
}

export interface SharedInformerOptions<T> {
  listerWatcher: ListerWatcher<T>;
  /** For logs. */
  name: string;
  /** Periodic resync (onUpdate(obj, obj) for every cached object); 0 = off. Default 0. */
  resyncPeriodMs?: number;
  /** Deep-freeze cached objects (tests). Default false. */
  freeze?: boolean;
  pageSize?: number;
  /** Server-side watch timeout in seconds. Default random in [300, 600). */
  watchTimeoutSeconds?: number;
  clock?: Clock;
  logger?: Logger;
}

export class SharedInformer<T extends KubeObject> {
  readonly name: string;
  readonly store: Store<T>;
  readonly reflector: Reflector<T>;
  readonly #handlers = new Set<EventHandlers<T>>();
  readonly #resyncPeriodMs: number;
  readonly #clock: Clock;
  readonly #logger: Logger;
  #synced = false;
  #syncWaiters: (() => void)[] = [];
  #started = false;

  constructor(options: SharedInformerOptions<T>) {
    this.name = options.name;
    this.store = new Store<T>({ freeze: options.freeze ?? false });
    this.#resyncPeriodMs = options.resyncPeriodMs ?? 0;
    this.#clock = options.clock ?? realClock;
    this.#logger = (options.logger ?? silentLogger).with({ informer: options.name });
    this.reflector = new Reflector<T>({
      name: options.name,
      listerWatcher: options.listerWatcher,
      clock: this.#clock,
      logger: options.logger ?? silentLogger,
      ...(options.pageSize !== undefined ? { pageSize: options.pageSize } : {}),
      ...(options.watchTimeoutSeconds !== undefined
        ? {
            watchTimeoutSeconds: (
              (seconds: number) => () =>
                seconds
            )(options.watchTimeoutSeconds),
          }
        : {}),
      sink: {
        replace: (items) => this.#replace(items),
        add: (object) => this.#upsert(object),
        update: (object) => this.#upsert(object),
        delete: (object) => this.#delete(object),
      },
    });
  }

  get started(): boolean {
    return this.#started;
  }

  addIndexer(name: string, fn: IndexFunc<T>): void {
    this.store.addIndexer(name, fn);
  }

  /** Registers handlers; returns a function that removes them. */
  addEventHandler(handlers: EventHandlers<T>): () => void {
    this.#handlers.add(handlers);
    for (const object of this.store.list()) this.#call(handlers, "onAdd", () => handlers.onAdd?.(object));
    return () => this.#handlers.delete(handlers);
  }

  hasSynced(): boolean {
    return this.#synced;
  }

  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.#synced) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => reject(new Error(`informer ${this.name}: stopped before its cache synced`));
      if (signal?.aborted) {
        onAbort();
        return;
      }
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#syncWaiters.push(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      });
    });
  }

  get lastSyncResourceVersion(): string {
    return this.reflector.lastSyncResourceVersion;
  }

  /** Runs list/watch (and resync) until the signal aborts. Never rejects. Call once. */
  async run(signal: AbortSignal): Promise<void> {
    if (this.#started) throw new CsikitError("CSIKIT_ERR_INFORMER", `informer ${this.name} already started`);
    this.#started = true;
    let cancelResync = (): void => {};
    const scheduleResync = (): void => {
      if (this.#resyncPeriodMs <= 0 || signal.aborted) return;
      cancelResync = this.#clock.setTimer(this.#resyncPeriodMs, () => {
        this.#resync();
        scheduleResync();
      });
    };
    scheduleResync();
    try {
      await this.reflector.run(signal);
    } finally {
      cancelResync();
    }
  }

  #resync(): void {
    if (!this.#synced) return;
    for (const object of this.store.list()) this.#emit("onUpdate", (h) => h.onUpdate?.(object, object));
  }

  #replace(items: T[]): void {
    const seen = new Set<string>();
    for (const object of items) {
      seen.add(objectKey(object));
      this.#upsert(object);
    }
    for (const key of this.store.keys()) {
      if (seen.has(key)) continue;
      const old = this.store.delete(key)!;
      const tombstone = new Tombstone(key, old);
      this.#emit("onDelete", (h) => h.onDelete?.(tombstone));
    }
    if (!this.#synced) {
      this.#synced = true;
      const waiters = this.#syncWaiters;
      this.#syncWaiters = [];
      for (const resolve of waiters) resolve();
      this.#logger.info(2, "cache synced", { objects: this.store.size });
    }
  }

  #upsert(object: T): void {
    const old = this.store.upsert(object);
    const stored = this.store.get(objectKey(object))!;
    if (old) this.#emit("onUpdate", (h) => h.onUpdate?.(old, stored));
    else this.#emit("onAdd", (h) => h.onAdd?.(stored));
  }

  #delete(object: T): void {
    this.store.delete(objectKey(object));
    this.#emit("onDelete", (h) => h.onDelete?.(object));
  }

  #emit(kind: keyof EventHandlers<T>, call: (handlers: EventHandlers<T>) => void): void {
    for (const handlers of this.#handlers) this.#call(handlers, kind, () => call(handlers));
  }

  #call(_handlers: EventHandlers<T>, kind: string, fn: () => void): void {
    try {
      fn();
    } catch (error) {
      this.#logger.error("event handler failed", { handler: kind, err: errorMessage(error) });
    }
  }
}

export interface InformerFactoryOptions {
  client: KubeClient;
  /** Default resync for informers that do not set one; 0 = off. Default 0. */
  defaultResyncPeriodMs?: number;
  /** Deep-freeze cached objects (tests). Default false. */
  freeze?: boolean;
  clock?: Clock;
  logger?: Logger;
}

export interface InformerRequest extends SelectorOptions {
  /** Only used by the first request for this key (the informer is shared). */
  resyncPeriodMs?: number;
}

/**
 * Hands out one shared informer per (resource, namespace, label selector, field selector). Like
 * client-go's SharedInformerFactory, sharing is per factory: a process builds exactly one (its
 * composition root, e.g. a sidecar's start() or `csikit up`) and passes it to every controller,
 * so each resource is listed and watched once per process.
 */
export class InformerFactory {
  readonly #options: InformerFactoryOptions;
  readonly #informers = new Map<string, unknown>();
  readonly #all: {
    readonly started: boolean;
    run(signal: AbortSignal): Promise<void>;
    waitForSync(signal?: AbortSignal): Promise<void>;
  }[] = [];

  constructor(options: InformerFactoryOptions) {
    this.#options = options;
  }

  /** The shared informer for this resource and selectors, created on first request. */
  informer<T extends KubeObject>(
    gvr: GroupVersionResource,
    request: InformerRequest = {},
  ): SharedInformer<T> {
    const { resyncPeriodMs, ...selectors } = request;
    const key = JSON.stringify([
      gvrString(gvr),
      selectors.namespace ?? "",
      selectors.labelSelector ?? "",
      selectors.fieldSelector ?? "",
    ]);
    const existing = this.#informers.get(key);
    if (existing) return existing as SharedInformer<T>;
    const where = [selectors.namespace, selectors.labelSelector, selectors.fieldSelector]
      .filter(Boolean)
      .join(",");
    const informer = new SharedInformer<T>({
      name: gvrString(gvr) + (where ? `[${where}]` : ""),
      listerWatcher: clientListerWatcher<T>(this.#options.client, gvr, selectors),
      resyncPeriodMs: resyncPeriodMs ?? this.#options.defaultResyncPeriodMs ?? 0,
      freeze: this.#options.freeze ?? false,
      clock: this.#options.clock ?? realClock,
      logger: this.#options.logger ?? silentLogger,
    });
    this.#informers.set(key, informer);
    this.#all.push(informer);
    return informer;
  }

  /**
   * Starts every informer not started yet (call again for informers requested later);
   * resolves when all of them have stopped, after the signal aborts.
   */
  async start(signal: AbortSignal): Promise<void> {
    const runs = this.#all.filter((informer) => !informer.started).map((informer) => informer.run(signal));
    await Promise.all(runs);
  }

  /** Resolves when every informer handed out so far has synced. */
  async waitForCacheSync(signal?: AbortSignal): Promise<void> {
    await Promise.all(this.#all.map((informer) => informer.waitForSync(signal)));
  }
}
