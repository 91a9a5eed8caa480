// The controller runner every csikit controller uses (CONVENTIONS §3, §7, §12): informers feed
// handlers that only filter and enqueue keys; workers reconcile keys from the cache.
//
// Contract of `runController(options, signal)`:
// - Workers start only after every listed informer has synced (so a reconcile never acts on a
//   half-filled cache); if the signal aborts first, nothing runs and it resolves.
// - Each key is reconciled by one worker at a time (the work queue's guarantee), with a
//   logger carrying `controller`, `key` and a fresh `reconcileID`; the same three are
//   available to any code the reconcile calls through `currentReconcile()`.
// - Outcomes follow WorkQueue.runWorkers: success forgets the key's backoff, `{ requeueAfterMs }`
//   looks again later, TerminalError is logged and dropped, any other error retries with backoff.
// - Resolves when the signal aborted and every in-flight reconcile has returned. Informers are
//   not started here: the factory's `start` owns them, so several controllers share them.
// `enqueueHandlers` builds the standard handlers: key of the object (or of a tombstone's last
// state) into the queue, after an optional filter. An update never gets a key past its
// backoff (the queue holds it); the start of a deletion does (`expedite`): it begins a
// different operation (cleanup), once per object, so it cannot become a retry storm.

import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import { silentLogger, type Logger } from "../base/index.ts";
import { deletedObject, type EventHandlers, type Tombstone } from "./informer.ts";
import { objectKey, type KubeObject } from "./types.ts";
import type { ProcessResult, WorkQueue } from "./workqueue.ts";

export interface ReconcileContext {
  /** Aborted when the controller stops: pass it to API and CSI calls. */
  signal: AbortSignal;
  /** Carries controller, key and reconcileID. */
  logger: Logger;
}

/** What `currentReconcile()` tells code running inside a reconcile (logs, metrics, events). */
export interface ReconcileInfo {
  controller: string;
  key: string;
  reconcileID: string;
}

const reconcileStorage = new AsyncLocalStorage<ReconcileInfo>();

/** The reconcile the calling code runs in, if any (carried across awaits). */
export function currentReconcile(): ReconcileInfo | undefined {
  return reconcileStorage.getStore();
}

export interface ControllerOptions {
  name: string;
  /** Informers whose caches must be synced before any reconcile. */
  informers: readonly { waitForSync(signal?: AbortSignal): Promise<void> }[];
  queue: WorkQueue<string>;
  /** Concurrent workers (e.g. --worker-threads). */
  workers: number;
  reconcile(key: string, context: ReconcileContext): Promise<ProcessResult | void>;
  logger?: Logger;
}

export async function runController(options: ControllerOptions, signal: AbortSignal): Promise<void> {
  const logger = (options.logger ?? silentLogger).with({ controller: options.name });
  try {
    await Promise.all(options.informers.map((informer) => informer.waitForSync(signal)));
  } catch {
    options.queue.shutDown();
    return;
  }
  if (signal.aborted) {
    options.queue.shutDown();
    return;
  }
  logger.info(1, "caches synced, starting workers", { workers: options.workers });
  await options.queue.runWorkers(
    {
      workers: options.workers,
      logger,
      process: (key, workerSignal) => {
        const info: ReconcileInfo = { controller: options.name, key, reconcileID: randomUUID() };
        return reconcileStorage.run(info, () =>
          options.reconcile(key, {
            signal: workerSignal,
            logger: logger.with({ key, reconcileID: info.reconcileID }),
          }),
        );
      },
    },
    signal,
  );
  logger.info(1, "workers stopped");
}

export interface EnqueueOptions<T> {
  /** Only objects passing the filter are enqueued (on delete: the last known state). */
  filter?: (object: T) => boolean;
  /** Key of an object. Default objectKey ("namespace/name" or "name"). */
  key?: (object: T) => string;
}

/** Handlers that put the key of every added, updated or deleted object on `queue`. */
export function enqueueHandlers<T extends KubeObject>(
  queue: WorkQueue<string>,
  options: EnqueueOptions<T> = {},
): EventHandlers<T> {
  const filter = options.filter ?? (() => true);
  const key = options.key ?? objectKey;
  return {
    onAdd: (object) => {
      if (filter(object)) queue.add(key(object));
    },
    onUpdate: (old, object) => {
      if (!filter(object)) return;
      if (startsDeletion(old, object)) queue.expedite(key(object));
      else queue.add(key(object));
    },
    onDelete: (object: T | Tombstone<T>) => {
      const last = deletedObject(object);
      if (filter(last)) queue.expedite(key(last));
    },
  };
}

/** Whether this update is the one that marked the object for deletion. */
export function startsDeletion(old: KubeObject, object: KubeObject): boolean {
  return !old.metadata?.deletionTimestamp && !!object.metadata?.deletionTimestamp;
}
