// Work-queue metrics with client-go's names and labels (`workqueue_*{name}`), so the dashboards
// people use for Go controllers read csikit's queues too. Depth, unfinished work and the
// longest-running item are computed when scraped from a live snapshot of each queue; adds,
// retries and the two latency histograms are recorded as they happen. One gauge is csikit's
// own, not client-go's: workqueue_oldest_waiting_item_seconds, how long the item at the head
// of the backlog has waited for a worker — the number users of external-attacher asked for
// when attaches sat queued for half an hour with nothing showing it (external-attacher#706).

import type { Registry } from "prom-client";
import { Counter, Gauge, Histogram } from "./prom.ts";

/** What a WorkQueue reports; see WorkQueueOptions.metrics. */
export interface WorkQueueMetricsRecorder {
  added(queue: string): void;
  /** An item was handed to a worker after waiting `queuedSeconds` in the queue. */
  started(queue: string, queuedSeconds: number): void;
  /** A worker finished an item after `workSeconds`. */
  finished(queue: string, workSeconds: number): void;
  retried(queue: string): void;
  /** Registers a live view of a queue for the scrape-time gauges. */
  watch(queue: string, snapshot: () => WorkQueueSnapshot): void;
}

export interface WorkQueueSnapshot {
  depth: number;
  /** Seconds each in-flight item has been processing. */
  runningSeconds: number[];
  /** Seconds the longest-waiting ready item (added, not yet handed out) has waited; 0 if none. */
  oldestWaitingSeconds: number;
}

/** client-go's buckets: 10ns × 10^i, ten of them. */
const LATENCY_BUCKETS = Array.from({ length: 10 }, (_, i) => 10e-9 * 10 ** i);

export class WorkQueueMetrics implements WorkQueueMetricsRecorder {
  readonly #snapshots = new Map<string, () => WorkQueueSnapshot>();
  readonly #adds: Counter;
  readonly #retries: Counter;
  readonly #queueDuration: Histogram;
  readonly #workDuration: Histogram;

  constructor(options: { registry: Registry }) {
    const registers = [options.registry];
    const snapshots = this.#snapshots;
    new Gauge({
      name: "workqueue_depth",
      help: "Current depth of workqueue",
      labelNames: ["name"],
      registers,
      collect() {
        for (const [name, snapshot] of snapshots) this.set({ name }, snapshot().depth);
      },
    });
    new Gauge({
      name: "workqueue_unfinished_work_seconds",
      help: "How many seconds of work has done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
      labelNames: ["name"],
      registers,
      collect() {
        for (const [name, snapshot] of snapshots)
          this.set(
            { name },
            snapshot().runningSeconds.reduce((sum, s) => sum + s, 0),
          );
      },
    });
    new Gauge({
      name: "workqueue_longest_running_processor_seconds",
      help: "How many seconds has the longest running processor for workqueue been running.",
      labelNames: ["name"],
      registers,
      collect() {
        for (const [name, snapshot] of snapshots)
          this.set({ name }, Math.max(0, ...snapshot().runningSeconds));
      },
    });
    new Gauge({
      name: "workqueue_oldest_waiting_item_seconds",
      help: "How many seconds the oldest item waiting in the workqueue (added, not yet handed to a worker; delayed retries not counted) has been waiting. csikit's addition to client-go's set: a growing value is a backlog.",
      labelNames: ["name"],
      registers,
      collect() {
        for (const [name, snapshot] of snapshots) this.set({ name }, snapshot().oldestWaitingSeconds);
      },
    });
    this.#adds = new Counter({
      name: "workqueue_adds_total",
      help: "Total number of adds handled by workqueue",
      labelNames: ["name"],
      registers,
    });
    this.#retries = new Counter({
      name: "workqueue_retries_total",
      help: "Total number of retries handled by workqueue",
      labelNames: ["name"],
      registers,
    });
    this.#queueDuration = new Histogram({
      name: "workqueue_queue_duration_seconds",
      help: "How long in seconds an item stays in workqueue before being requested.",
      labelNames: ["name"],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.#workDuration = new Histogram({
      name: "workqueue_work_duration_seconds",
      help: "How long in seconds processing an item from workqueue takes.",
      labelNames: ["name"],
      buckets: LATENCY_BUCKETS,
      registers,
    });
  }

  added(queue: string): void {
    this.#adds.inc({ name: queue });
  }
  started(queue: string, queuedSeconds: number): void {
    this.#queueDuration.observe({ name: queue }, queuedSeconds);
  }
  finished(queue: string, workSeconds: number): void {
    this.#workDuration.observe({ name: queue }, workSeconds);
  }
  retried(queue: string): void {
    this.#retries.inc({ name: queue });
  }
  watch(queue: string, snapshot: () => WorkQueueSnapshot): void {
    this.#snapshots.set(queue, snapshot);
  }
}
