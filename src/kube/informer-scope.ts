// One process, many sidecars, one watch per resource (`csikit sidecars`, KEP-4958's
// all-in-one form): the process builds ONE InformerFactory under the identity holding the
// union of the sidecars' read rights, and each sidecar gets an `InformerScope` of it in place
// of a factory of its own. A scope hands out the shared informers behind a thin view that
//   - keeps the sidecar's own resync period (`onUpdate(obj, obj)` to ITS handlers only, as
//     client-go's AddEventHandlerWithResyncPeriod), so one sidecar's resync never wakes another;
//   - removes the sidecar's handlers and stops its resync timers when its run ends;
//   - starts the shared informers under the PROCESS's signal, never the sidecar's: one sidecar
//     stopping (or losing its lease) never stops a watch the others read.
// Both the factory and a scope satisfy `InformerSource`, which is all a sidecar's controllers ask for.

import { realClock, type Clock } from "../base/index.ts";
import type { EventHandlers, InformerFactory, InformerRequest } from "./informer.ts";
import type { IndexFunc, Store } from "./store.ts";
import type { GroupVersionResource, KubeObject } from "./types.ts";

/** The part of a shared informer a controller uses. */
export interface Informer<T extends KubeObject> {
  readonly name: string;
  readonly store: Store<T>;
  addIndexer(name: string, fn: IndexFunc<T>): void;
  /** Registers handlers; returns a function that removes them. */
  addEventHandler(handlers: EventHandlers<T>): () => void;
  hasSynced(): boolean;
  waitForSync(signal?: AbortSignal): Promise<void>;
}

/** Where a controller gets its informers: a factory of its own, or a scope of the process's. */
export interface InformerSource {
  informer<T extends KubeObject>(gvr: GroupVersionResource, request?: InformerRequest): Informer<T>;
  /** Runs the informers requested so far until `signal` aborts. */
  start(signal: AbortSignal): Promise<void>;
  /** Resolves when every informer requested so far has synced. */
  waitForCacheSync(signal?: AbortSignal): Promise<void>;
}

export interface InformerScopeOptions {
  /** The process's factory (built under the shared-read identity). */
  factory: InformerFactory;
  /** The process's signal: the shared informers run until it aborts. */
  processSignal: AbortSignal;
  /** This sidecar's resync period for its own handlers; 0 = off. Default 0. */
  resyncPeriodMs?: number;
  clock?: Clock;
}

export class InformerScope implements InformerSource {
  readonly #options: InformerScopeOptions;
  readonly #requested = new Set<{ waitForSync(signal?: AbortSignal): Promise<void> }>();
  /** Handler removals and timer cancels, run when this scope's run ends. */
  readonly #cleanups = new Set<() => void>();

  constructor(options: InformerScopeOptions) {
    this.#options = options;
  }

  informer<T extends KubeObject>(gvr: GroupVersionResource, request: InformerRequest = {}): Informer<T> {
    const { resyncPeriodMs, ...selectors } = request;
    // The shared informer itself never resyncs: each scope resyncs its own handlers.
    const shared = this.#options.factory.informer<T>(gvr, { ...selectors, resyncPeriodMs: 0 });
    this.#requested.add(shared);
    const period = resyncPeriodMs ?? this.#options.resyncPeriodMs ?? 0;
    const clock = this.#options.clock ?? realClock;
    const cleanups = this.#cleanups;
    return {
      name: shared.name,
      store: shared.store,
      addIndexer: (name, fn) => shared.addIndexer(name, fn),
      hasSynced: () => shared.hasSynced(),
      waitForSync: (signal) => shared.waitForSync(signal),
      addEventHandler(handlers) {
        const remove = shared.addEventHandler(handlers);
        let cancel = (): void => {};
        const schedule = (): void => {
          if (period <= 0) return;
          cancel = clock.setTimer(period, () => {
            if (shared.hasSynced())
              for (const object of shared.store.list()) handlers.onUpdate?.(object, object);
            schedule();
          });
        };
        schedule();
        const cleanup = (): void => {
          remove();
          cancel();
          cleanups.delete(cleanup);
        };
        cleanups.add(cleanup);
        return cleanup;
      },
    };
  }

  /**
   * Starts the shared informers not running yet under the process's signal, then holds until
   * `signal` (this sidecar's run) aborts and drops this sidecar's handlers and timers.
   */
  async start(signal: AbortSignal): Promise<void> {
    const running = this.#options.factory.start(this.#options.processSignal);
    // Never awaited here (it ends with the process); observed so it cannot be unhandled.
    running.catch(() => undefined);
    if (!signal.aborted)
      await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
    for (const cleanup of [...this.#cleanups]) cleanup();
  }

  async waitForCacheSync(signal?: AbortSignal): Promise<void> {
    await Promise.all([...this.#requested].map((informer) => informer.waitForSync(signal)));
  }
}
