// An EventRecorder writing core/v1 Events the way client-go's record package does, so
// `kubectl describe` shows csikit's events exactly as it shows upstream sidecars'.
//
// Contract:
// - `event(ref, type, reason, message)` never throws and never waits: it puts the event on a
//   bounded queue (default 1000, as client-go's broadcaster) and returns; when the queue is
//   full the event is dropped and counted (`dropped`).
// - One writer (`start(signal)`) drains the queue in order and correlates as client-go's
//   EventCorrelator:
//   * spam filter: per (source, involved object) a token bucket of 25, refilled one per 5
//     minutes; events beyond it are dropped (`filtered`).
//   * aggregation: when 10 or more events with the same source, object, type and reason but
//     different messages arrive within 10 minutes, later ones are folded into one event whose
//     message starts "(combined from similar events): ".
//   * dedup: a repeat of an identical event (same object, type, reason, message, source) is a
//     merge PATCH of `count` and `lastTimestamp` on the Event already written, not a new one;
//     if that Event is gone (404) a new one is created.
// - Names are `<object name>.<hex nanoseconds>` in the object's namespace ("default" for
//   cluster-scoped objects), with source {component, host}, reportingComponent and
//   reportingInstance set from the same values.
// - Write failures: API errors (the server answered) are logged and not retried; transport
//   errors are retried up to 12 times, 10s apart (client-go's maxTriesPerEvent/sleepDuration).
// - `flush()` resolves when everything queued so far has been handled (tests, shutdown).

import { errorMessage, realClock, silentLogger, type Clock, type Logger } from "../base/index.ts";
import type { KubeClient } from "./client.ts";
import { KubeApiError, isNotFound } from "./errors.ts";
import { TokenBucket } from "./ratelimit.ts";
import type { GroupVersionResource, KubeObject } from "./types.ts";

export const CORE_EVENTS: GroupVersionResource = {
  group: "",
  version: "v1",
  resource: "events",
  namespaced: true,
};

export type EventType = "Normal" | "Warning";

export interface ObjectReference {
  kind?: string;
  apiVersion?: string;
  namespace?: string;
  name?: string;
  uid?: string;
  resourceVersion?: string;
  fieldPath?: string;
}

export interface CoreEvent extends KubeObject {
  involvedObject: ObjectReference;
  reason: string;
  message: string;
  type: EventType;
  source: { component: string; host?: string };
  firstTimestamp: string;
  lastTimestamp: string;
  count: number;
  reportingComponent: string;
  reportingInstance: string;
}

/** A reference to `object`; kind/apiVersion from the object or from `typeMeta` (list items lack them). */
export function objectReference(
  object: KubeObject,
  typeMeta: { kind?: string; apiVersion?: string } = {},
): ObjectReference {
  const ref: ObjectReference = {};
  const kind = object.kind ?? typeMeta.kind;
  const apiVersion = object.apiVersion ?? typeMeta.apiVersion;
  if (kind) ref.kind = kind;
  if (apiVersion) ref.apiVersion = apiVersion;
  if (object.metadata?.namespace) ref.namespace = object.metadata.namespace;
  if (object.metadata?.name) ref.name = object.metadata.name;
  if (object.metadata?.uid) ref.uid = object.metadata.uid;
  if (object.metadata?.resourceVersion) ref.resourceVersion = object.metadata.resourceVersion;
  return ref;
}

export interface EventRecorderOptions {
  client: KubeClient;
  /** source.component / reportingComponent, e.g. "csi-provisioner" or "external-attacher". */
  component: string;
  /** source.host / reportingInstance. Default "" (host omitted), as sidecars leave it. */
  host?: string;
  /** Default 1000. */
  queueSize?: number;
  /** Default 12. */
  maxTries?: number;
  /** Default 10000. */
  retryIntervalMs?: number;
  clock?: Clock;
  logger?: Logger;
}

interface Pending {
  ref: ObjectReference;
  type: EventType;
  reason: string;
  message: string;
  at: number;
}

interface Written {
  namespace: string;
  name: string;
  count: number;
  firstTimestamp: string;
}

interface Similar {
  messages: Set<string>;
  since: number;
}

const MAX_LRU = 4096;
const AGGREGATE_WINDOW_MS = 600_000;
const MAX_SIMILAR = 10;
const SPAM_BURST = 25;
const SPAM_QPS = 1 / 300;

/** A Map used as a small LRU: reads move entries to the end; the oldest are evicted. */
class Lru<V> {
  readonly #map = new Map<string, V>();
  get(key: string): V | undefined {
    const value = this.#map.get(key);
    if (value !== undefined) {
      this.#map.delete(key);
      this.#map.set(key, value);
    }
    return value;
  }
  set(key: string, value: V): void {
    this.#map.delete(key);
    this.#map.set(key, value);
    if (this.#map.size > MAX_LRU) this.#map.delete(this.#map.keys().next().value!);
  }
}

function time(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

export class EventRecorder {
  readonly component: string;
  readonly host: string;
  readonly #client: KubeClient;
  readonly #queueSize: number;
  readonly #maxTries: number;
  readonly #retryIntervalMs: number;
  readonly #clock: Clock;
  readonly #logger: Logger;
  #queue: Pending[] = [];
  #wake: (() => void) | undefined;
  #idle: (() => void)[] = [];
  #busy = false;
  #seq = 0;
  readonly #written = new Lru<Written>();
  readonly #similar = new Lru<Similar>();
  readonly #spam = new Lru<TokenBucket>();
  /** Events dropped because the queue was full. */
  dropped = 0;
  /** Events dropped by the spam filter. */
  filtered = 0;
  /** Events (creates and patches) written. */
  written = 0;

  constructor(options: EventRecorderOptions) {
    this.#client = options.client;
    this.component = options.component;
    this.host = options.host ?? "";
    this.#queueSize = options.queueSize ?? 1000;
    this.#maxTries = options.maxTries ?? 12;
    this.#retryIntervalMs = options.retryIntervalMs ?? 10_000;
    this.#clock = options.clock ?? realClock;
    this.#logger = (options.logger ?? silentLogger).with({ component: "event-recorder" });
  }

  /** Records an event about `object` (an ObjectReference or the object itself). Never throws. */
  event(object: ObjectReference | KubeObject, type: EventType, reason: string, message: string): void {
    try {
      const ref: ObjectReference =
        "metadata" in object ? objectReference(object) : { ...(object as ObjectReference) };
      if (this.#queue.length >= this.#queueSize) {
        this.dropped++;
        this.#logger.info(2, "event queue full, dropping event", { reason, object: ref.name });
        return;
      }
      this.#queue.push({ ref, type, reason, message, at: this.#clock.now() });
      this.#wake?.();
    } catch (error) {
      this.#logger.error("cannot record event", { err: errorMessage(error) });
    }
  }

  /** Resolves once every event queued before the call has been written or given up on. */
  flush(): Promise<void> {
    if (this.#queue.length === 0 && !this.#busy) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /** Writes queued events until the signal aborts; resolves when stopped. */
  async start(signal: AbortSignal): Promise<void> {
    const onAbort = (): void => this.#wake?.();
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      while (!signal.aborted) {
        const next = this.#queue.shift();
        if (!next) {
          this.#notifyIdle();
          await new Promise<void>((resolve) => (this.#wake = resolve));
          this.#wake = undefined;
          continue;
        }
        this.#busy = true;
        try {
          await this.#record(next, signal);
        } finally {
          this.#busy = false;
        }
      }
    } finally {
      signal.removeEventListener("abort", onAbort);
      this.#notifyIdle(true);
    }
  }

  #notifyIdle(force = false): void {
    if (!force && (this.#queue.length > 0 || this.#busy)) return;
    const idle = this.#idle;
    this.#idle = [];
    for (const resolve of idle) resolve();
  }

  async #record(pending: Pending, signal: AbortSignal): Promise<void> {
    const { ref, type, reason } = pending;
    const objectKey = JSON.stringify([
      this.component,
      this.host,
      ref.kind,
      ref.namespace,
      ref.name,
      ref.uid,
      ref.apiVersion,
    ]);
    // Spam filter.
    let bucket = this.#spam.get(objectKey);
    if (!bucket) {
      bucket = new TokenBucket({ qps: SPAM_QPS, burst: SPAM_BURST, clock: this.#clock });
      this.#spam.set(objectKey, bucket);
    }
    if (!bucket.tryAccept()) {
      this.filtered++;
      return;
    }
    // Aggregation of similar events with differing messages.
    let message = pending.message;
    const similarKey = JSON.stringify([objectKey, type, reason]);
    let similar = this.#similar.get(similarKey);
    if (!similar || pending.at - similar.since > AGGREGATE_WINDOW_MS) {
      similar = { messages: new Set(), since: pending.at };
      this.#similar.set(similarKey, similar);
    }
    similar.messages.add(message);
    if (similar.messages.size >= MAX_SIMILAR) message = `(combined from similar events): ${message}`;
    const dedupKey = JSON.stringify([
      similarKey,
      similar.messages.size >= MAX_SIMILAR ? "(combined)" : message,
    ]);
    await this.#write(dedupKey, { ...pending, message }, signal);
  }

  async #write(dedupKey: string, pending: Pending, signal: AbortSignal): Promise<void> {
    const now = time(pending.at);
    for (let attempt = 1; attempt <= this.#maxTries && !signal.aborted; attempt++) {
      try {
        const previous = this.#written.get(dedupKey);
        if (previous) {
          try {
            await this.#client.patch<CoreEvent>(
              CORE_EVENTS,
              previous.name,
              { count: previous.count + 1, lastTimestamp: now, message: pending.message },
              { namespace: previous.namespace },
              signal,
            );
            previous.count++;
            this.written++;
            return;
          } catch (error) {
            if (!isNotFound(error)) throw error;
          }
        }
        const event = this.#newEvent(pending, now);
        const created = await this.#client.create<CoreEvent>(CORE_EVENTS, event, signal);
        this.#written.set(dedupKey, {
          namespace: created.metadata?.namespace ?? event.metadata!.namespace!,
          name: created.metadata?.name ?? event.metadata!.name!,
          count: 1,
          firstTimestamp: now,
        });
        this.written++;
        return;
      } catch (error) {
        if (signal.aborted) return;
        if (error instanceof KubeApiError && error.statusCode > 0) {
          this.#logger.error("server rejected event (will not retry)", {
            reason: pending.reason,
            err: errorMessage(error),
          });
          return;
        }
        this.#logger.warn("unable to write event, will retry", { attempt, err: errorMessage(error) });
        if (attempt === this.#maxTries) return;
        try {
          await this.#clock.sleep(this.#retryIntervalMs, signal);
        } catch {
          return;
        }
      }
    }
  }

  #newEvent(pending: Pending, now: string): CoreEvent {
    const nanos = BigInt(pending.at) * 1_000_000n + BigInt(this.#seq++ % 1_000_000);
    return {
      apiVersion: "v1",
      kind: "Event",
      metadata: {
        name: `${pending.ref.name ?? "unknown"}.${nanos.toString(16)}`,
        namespace: pending.ref.namespace || "default",
      },
      involvedObject: pending.ref,
      reason: pending.reason,
      message: pending.message,
      type: pending.type,
      source: this.host ? { component: this.component, host: this.host } : { component: this.component },
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
      reportingComponent: this.component,
      reportingInstance: this.host,
    };
  }
}
