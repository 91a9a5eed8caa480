// The wiring the workload loops share (statefulset, replicaset, deployment, daemonset, job),
// apart from their sync logic, as pv/controller.ts keeps its wiring apart from sync-*.ts:
// the loop's logger, clock, queue of owner keys and event recorder (component = the loop's
// name, as kube-controller-manager reports it); the owner informer's handlers; the pod
// handlers of a pod-owning kind; a reconcile that turns a key into the cached owner; and one
// shutdown order for every loop: workers drained, queues shut, handlers removed, the recorder
// flushed. Each controller.ts keeps only what is its own: which informers it reads, its other
// handlers, and the sync it calls.

import type { Pod } from "../../api/index.ts";
import { realClock, silentLogger, type Clock, type Logger } from "../../base/index.ts";
import {
  EventRecorder,
  WorkQueue,
  controllerRateLimiter,
  deletedObject,
  isNotFound,
  objectKey,
  runController,
  type ControllerOptions,
  type EventHandlers,
  type KubeClient,
  type KubeObject,
  type ReconcileContext,
  type SharedInformer,
} from "../../kube/index.ts";
import type { ProcessResult } from "../../kube/index.ts";
import type { LabelSelector } from "../../api/index.ts";
import type { ControllerExpectations } from "./expectations.ts";
import { registerPodOwnerHandlers } from "./pod-events.ts";
import { selectorMatches } from "./selectors.ts";

export interface WorkloadLoopOptions {
  /** "replicaset-controller": the logger's controller, the runner's name and the events' source. */
  name: string;
  /** The work queue's name, as upstream names it ("replicaset"). */
  queueName: string;
  client: KubeClient;
  /** Default silent. */
  logger?: Logger | undefined;
  /** Default the real clock. */
  clock?: Clock | undefined;
  /** Per-key retry backoff of the queue; default controllerRateLimiter's (1 s to 5 min). */
  retryIntervalStartMs?: number;
  retryIntervalMaxMs?: number;
  /** The loop's pod expectations, when it creates pods: forgotten when an owner goes. */
  expectations?: ControllerExpectations | undefined;
}

/** What a sync is handed besides its owner. */
export interface WorkloadSyncTools {
  recorder: EventRecorder;
  logger: Logger;
  signal: AbortSignal;
}

/** An owner kind with a LabelSelector over its pods. */
type SelectingOwner = KubeObject & { spec?: { selector?: LabelSelector } };

export class WorkloadLoop {
  readonly name: string;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly queue: WorkQueue<string>;
  readonly recorder: EventRecorder;
  readonly expectations: ControllerExpectations | undefined;
  readonly #removers: (() => void)[] = [];

  constructor(options: WorkloadLoopOptions) {
    this.name = options.name;
    this.logger = (options.logger ?? silentLogger).with({ controller: options.name });
    this.clock = options.clock ?? realClock;
    this.queue = new WorkQueue<string>({
      name: options.queueName,
      rateLimiter: controllerRateLimiter<string>({
        ...(options.retryIntervalStartMs !== undefined
          ? { retryIntervalStartMs: options.retryIntervalStartMs }
          : {}),
        ...(options.retryIntervalMaxMs !== undefined
          ? { retryIntervalMaxMs: options.retryIntervalMaxMs }
          : {}),
        clock: this.clock,
      }),
      clock: this.clock,
    });
    this.recorder = new EventRecorder({
      client: options.client,
      component: options.name,
      logger: this.logger,
      clock: this.clock,
    });
    this.expectations = options.expectations;
  }

  /** Registers handlers (their removers) to be removed when the loop stops. */
  handle(...removers: (() => void)[]): void {
    this.#removers.push(...removers);
  }

  /**
   * The owner informer's handlers: every add and update enqueues the owner; a delete forgets
   * its expectations and enqueues it (unless `onDelete` says otherwise: the job loop lets go
   * of the pods instead).
   */
  ownerHandlers<O extends KubeObject>(onDelete?: (owner: O) => void): EventHandlers<O> {
    return {
      onAdd: (owner) => this.queue.add(objectKey(owner)),
      onUpdate: (_old, owner) => this.queue.add(objectKey(owner)),
      onDelete: (value) => {
        const owner = deletedObject(value);
        const key = objectKey(owner);
        this.expectations?.forget(key);
        if (onDelete) onDelete(owner);
        else this.queue.add(key);
      },
    };
  }

  /**
   * The pod handlers of a kind that controls pods (registerPodOwnerHandlers): an orphan pod
   * enqueues every owner in its namespace whose selector matches it.
   */
  podOwnerHandlers<O extends SelectingOwner>(
    pods: SharedInformer<Pod>,
    kind: string,
    owners: SharedInformer<O>,
  ): () => void {
    const expectations = this.expectations;
    if (expectations === undefined)
      throw new Error(`${this.name}: pod handlers need the loop's expectations`);
    return registerPodOwnerHandlers(pods, {
      kind,
      owners,
      expectations,
      enqueue: (key) => this.queue.add(key),
      matchingOwners: (pod) =>
        owners.store
          .listByNamespace(pod.metadata?.namespace ?? "")
          .filter((owner) => selectorMatches(owner.spec?.selector, pod.metadata?.labels)),
    });
  }

  /**
   * The reconcile of an owner key: the cached owner (gone: its expectations are forgotten and
   * nothing is done), then the sync, whose NotFound (the owner deleted meanwhile) ends it.
   */
  reconcileOwner<O>(
    get: (key: string) => O | undefined,
    sync: (owner: O, tools: WorkloadSyncTools) => Promise<ProcessResult | void>,
  ): ControllerOptions["reconcile"] {
    return async (key: string, { signal, logger }: ReconcileContext) => {
      const owner = get(key);
      if (owner === undefined) {
        this.expectations?.forget(key);
        return;
      }
      try {
        return await sync(owner, { recorder: this.recorder, logger, signal });
      } catch (error) {
        if (isNotFound(error)) return;
        throw error;
      }
    };
  }

  /**
   * Runs the loop's runners (the first drains this.queue) until `signal`; resolves once every
   * worker has finished, each runner's queue is shut, the handlers are removed and the recorder
   * has flushed.
   */
  async run(runners: readonly Omit<ControllerOptions, "logger">[], signal: AbortSignal): Promise<void> {
    const recorderRun = this.recorder.start(signal);
    try {
      await Promise.all(runners.map((runner) => runController({ ...runner, logger: this.logger }, signal)));
    } finally {
      this.queue.shutDown();
      for (const runner of runners) runner.queue.shutDown();
      for (const remove of this.#removers.splice(0)) remove();
      await recorderRun;
    }
  }
}
