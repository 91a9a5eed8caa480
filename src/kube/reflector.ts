// The reflector: keeps a sink in step with the API server by list + watch, as client-go's
// Reflector does, and never stops on its own (CONVENTIONS §11 — client-node's ListWatch gives
// up on any non-410 error; this is the gap it closes).
//
// Loop, until the signal aborts:
// 1. List (paged, `pageSize` per page; an expired continue token falls back to one unpaged
//    list) and hand the whole set to `sink.replace` with the list's resourceVersion.
// 2. Watch from the last seen resourceVersion with bookmarks on and a random server-side
//    timeout of 5–10 minutes (spreads re-watches of many clients). Every event moves the last
//    seen resourceVersion forward; BOOKMARK events only move it.
// 3. When a watch ends normally, or its connection drops, watch again from the last seen
//    resourceVersion — no relist, no missed or repeated events.
// 4. 410 Gone (HTTP status or an ERROR event: the revision was compacted) → relist at once;
//    so does 504 "Too large resource version" (the server's storage is behind our revision).
// 5. Any other error → log, wait with exponential backoff (800ms doubling to 30s, jittered,
//    reset after a watch that delivered events) and retry the step that failed.
// `run` resolves only after the signal aborts; it never rejects.

import { Backoff, errorMessage, realClock, silentLogger, type Clock, type Logger } from "../base/index.ts";
import type { KubeClient } from "./client.ts";
import { KubeApiError, isGone, isTooLargeResourceVersion } from "./errors.ts";
import type { GroupVersionResource, KubeList, KubeObject, WatchEvent } from "./types.ts";

export interface ListerWatcher<T> {
  list(
    options: { resourceVersion?: string; limit?: number; continue?: string },
    signal: AbortSignal,
  ): Promise<KubeList<T>>;
  watch(
    options: { resourceVersion: string; allowWatchBookmarks: boolean; timeoutSeconds: number },
    signal: AbortSignal,
  ): AsyncIterable<WatchEvent<T>>;
}

export interface SelectorOptions {
  /** Watch one namespace; absent = all namespaces (or a cluster-scoped resource). */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

/** A ListerWatcher over the generic transport of a KubeClient. */
export function clientListerWatcher<T extends KubeObject>(
  client: KubeClient,
  gvr: GroupVersionResource,
  selectors: SelectorOptions = {},
): ListerWatcher<T> {
  return {
    list: (options, signal) => client.list<T>(gvr, { ...selectors, ...options }, signal),
    watch: (options, signal) => client.watch<T>(gvr, { ...selectors, ...options }, signal),
  };
}

export interface ReflectorSink<T> {
  /** The complete current set, after a (re)list. */
  replace(items: T[], resourceVersion: string): void;
  add(object: T): void;
  update(object: T): void;
  /** `object` is the final state the server reported. */
  delete(object: T): void;
}

export interface ReflectorOptions<T> {
  /** For logs, e.g. "v1/persistentvolumeclaims". */
  name: string;
  listerWatcher: ListerWatcher<T>;
  sink: ReflectorSink<T>;
  /** Items per list page; 0 = unpaged. Default 500. */
  pageSize?: number;
  clock?: Clock;
  logger?: Logger;
  /** Server-side watch timeout in seconds. Default random in [300, 600). */
  watchTimeoutSeconds?: () => number;
  /** Retry pacing. Default 800ms doubling to 30s, jittered. */
  backoff?: Backoff;
}

function statusCodeOf(status: unknown): number {
  if (typeof status === "object" && status !== null && "code" in status && typeof status.code === "number")
    return status.code;
  return 0;
}

function statusText(status: unknown, field: "reason" | "message"): string {
  if (typeof status === "object" && status !== null && field in status) {
    const value = (status as Record<string, unknown>)[field];
    if (typeof value === "string") return value;
  }
  return "";
}

export class Reflector<T extends KubeObject> {
  readonly name: string;
  readonly #lw: ListerWatcher<T>;
  readonly #sink: ReflectorSink<T>;
  readonly #pageSize: number;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #timeout: () => number;
  readonly #backoff: Backoff;
  #lastResourceVersion = "";
  /** Counters for observability and tests. */
  readonly stats = { lists: 0, watches: 0, errors: 0 };

  constructor(options: ReflectorOptions<T>) {
    this.name = options.name;
    this.#lw = options.listerWatcher;
    this.#sink = options.sink;
    this.#pageSize = options.pageSize ?? 500;
    this.#clock = options.clock ?? realClock;
    this.#logger = (options.logger ?? silentLogger).with({ reflector: options.name });
    this.#timeout = options.watchTimeoutSeconds ?? (() => 300 + Math.floor(Math.random() * 300));
    this.#backoff = options.backoff ?? new Backoff({ initial: 800, max: 30_000, factor: 2, jitter: 1 });
  }

  /** The resourceVersion of the last list, event or bookmark seen. */
  get lastSyncResourceVersion(): string {
    return this.#lastResourceVersion;
  }

  async run(signal: AbortSignal): Promise<void> {
    let needList = true;
    while (!signal.aborted) {
      try {
        if (needList) {
          await this.#listAll(signal);
          needList = false;
        }
        const started = this.#clock.now();
        const delivered = await this.#watchOnce(signal);
        if (delivered > 0) this.#backoff.reset();
        else if (this.#clock.now() - started < 1000) {
          // A watch the server ends at once with nothing in it: do not spin on it.
          await this.#clock.sleep(this.#backoff.next(), signal);
        }
        continue;
      } catch (error) {
        if (signal.aborted) break;
        if (isGone(error)) {
          this.#logger.info(2, "resource version too old, relisting", { rv: this.#lastResourceVersion });
          needList = true;
          continue;
        }
        if (isTooLargeResourceVersion(error)) {
          // The server is behind our revision (its storage was reset): only a fresh list helps.
          this.#logger.warn("resource version ahead of the server, relisting", {
            rv: this.#lastResourceVersion,
          });
          needList = true;
          continue;
        }
        this.stats.errors++;
        const delay = this.#backoff.next();
        this.#logger.warn(needList ? "list failed, will retry" : "watch failed, will resume", {
          err: errorMessage(error),
          retryInMs: Math.round(delay),
        });
        try {
          await this.#clock.sleep(delay, signal);
        } catch {
          break;
        }
      }
    }
  }

  async #listAll(signal: AbortSignal): Promise<void> {
    this.stats.lists++;
    const items: T[] = [];
    let resourceVersion = "";
    let token: string | undefined;
    let paged = this.#pageSize > 0;
    for (;;) {
      let page: KubeList<T>;
      try {
        page = await this.#lw.list(
          paged ? { limit: this.#pageSize, ...(token ? { continue: token } : {}) } : {},
          signal,
        );
      } catch (error) {
        if (token && isGone(error)) {
          // The continue token expired mid-way: start over with one unpaged list.
          items.length = 0;
          token = undefined;
          paged = false;
          continue;
        }
        throw error;
      }
      items.push(...page.items);
      resourceVersion = page.metadata?.resourceVersion ?? "";
      token = page.metadata?.continue || undefined;
      if (!paged || !token) break;
    }
    this.#sink.replace(items, resourceVersion);
    this.#lastResourceVersion = resourceVersion;
    this.#logger.info(4, "listed", { items: items.length, rv: resourceVersion });
  }

  /** One watch from the last resourceVersion; returns the number of object events delivered. */
  async #watchOnce(signal: AbortSignal): Promise<number> {
    this.stats.watches++;
    let delivered = 0;
    const events = this.#lw.watch(
      {
        resourceVersion: this.#lastResourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds: this.#timeout(),
      },
      signal,
    );
    for await (const event of events) {
      if (signal.aborted) break;
      switch (event.type) {
        case "ADDED":
          this.#sink.add(event.object);
          break;
        case "MODIFIED":
          this.#sink.update(event.object);
          break;
        case "DELETED":
          this.#sink.delete(event.object);
          break;
        case "BOOKMARK":
          break;
        case "ERROR": {
          const code = statusCodeOf(event.object);
          throw new KubeApiError(
            code,
            statusText(event.object, "reason"),
            `watch ${this.name}: ${statusText(event.object, "message") || "error event"}`,
          );
        }
        default:
          throw new KubeApiError(
            0,
            "",
            `watch ${this.name}: unknown event type ${JSON.stringify(event.type)}`,
          );
      }
      const rv = event.object.metadata?.resourceVersion;
      if (rv) this.#lastResourceVersion = rv;
      if (event.type !== "BOOKMARK") delivered++;
    }
    return delivered;
  }
}
