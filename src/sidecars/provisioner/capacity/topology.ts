// Where capacity is tracked: the set of topology segments, as upstream's topology informers.
//
// NodeTopology (central provisioning) derives the segments from every CSINode on which the
// driver is registered (its topologyKeys) and the labels of the Node of the same name. Node and
// CSINode events only mark the set dirty on a one-item queue ("csitopology"); one worker then
// recomputes it from the caches, so a burst of node updates costs one recompute, and listeners
// learn the segments added and removed. A Node update that leaves labels alone, or a CSINode
// update that leaves this driver's keys alone, is ignored.
//
// FixedTopology (--node-deployment) is the one segment the local driver reports in
// NodeGetInfo, known at start-up and never changing: no Node or CSINode is watched.
//
// Both: `waitForSync` resolves once the first set is known; listeners registered before that
// hear nothing until the controller lists the segments itself (as upstream's prepare()).

import { GVR, type CSINode, type Node } from "../../../api/index.ts";
import { silentLogger, type Clock, type Logger } from "../../../base/index.ts";
import {
  type InformerSource,
  WorkQueue,
  type Informer,
  type WorkQueueMetricsRecorder,
} from "../../../kube/index.ts";
import { driverTopologyKeys, nodeSegment, segmentString, type Segment } from "./segment.ts";

export type TopologyListener = (added: readonly Segment[], removed: readonly Segment[]) => void;

export interface TopologySource {
  /** The segments known now, in no particular order. */
  list(): Segment[];
  /** Called after each change of the set. */
  onChange(listener: TopologyListener): void;
  waitForSync(signal: AbortSignal): Promise<void>;
  /** Keeps the set current until the signal aborts. */
  run(signal: AbortSignal): Promise<void>;
}

export class FixedTopology implements TopologySource {
  readonly #segment: Segment;
  constructor(segment: Segment) {
    this.#segment = segment;
  }
  list(): Segment[] {
    return [this.#segment];
  }
  onChange(): void {}
  waitForSync(): Promise<void> {
    return Promise.resolve();
  }
  async run(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
  }
}

export interface NodeTopologyOptions {
  driverName: string;
  informers: InformerSource;
  clock?: Clock;
  logger?: Logger;
  /** workqueue_* metrics of the "csitopology" queue. */
  workQueueMetrics?: WorkQueueMetricsRecorder;
}

const SYNC_KEY = "";

export class NodeTopology implements TopologySource {
  readonly #driverName: string;
  readonly #nodes: Informer<Node>;
  readonly #csiNodes: Informer<CSINode>;
  readonly #queue: WorkQueue<string>;
  readonly #logger: Logger;
  readonly #listeners: TopologyListener[] = [];
  #segments = new Map<string, Segment>();
  #synced = false;
  #syncWaiters: (() => void)[] = [];

  /** Requests the Node and CSINode informers at once (before the factory starts); no I/O. */
  constructor(options: NodeTopologyOptions) {
    this.#driverName = options.driverName;
    this.#logger = (options.logger ?? silentLogger).with({ component: "capacity-topology" });
    this.#queue = new WorkQueue<string>({
      name: "csitopology",
      ...(options.clock ? { clock: options.clock } : {}),
      ...(options.workQueueMetrics ? { metrics: options.workQueueMetrics } : {}),
    });
    this.#nodes = options.informers.informer<Node>(GVR.nodes);
    this.#csiNodes = options.informers.informer<CSINode>(GVR.csiNodes);
    const dirty = (): void => this.#queue.add(SYNC_KEY);
    this.#nodes.addEventHandler({
      onAdd: dirty,
      onUpdate: (before, after) => {
        if (!sameLabels(before.metadata?.labels, after.metadata?.labels)) dirty();
      },
      onDelete: dirty,
    });
    this.#csiNodes.addEventHandler({
      onAdd: dirty,
      onUpdate: (before, after) => {
        const a = driverTopologyKeys(before, this.#driverName);
        const b = driverTopologyKeys(after, this.#driverName);
        if (JSON.stringify(a) !== JSON.stringify(b)) dirty();
      },
      onDelete: dirty,
    });
  }

  list(): Segment[] {
    return [...this.#segments.values()];
  }

  onChange(listener: TopologyListener): void {
    this.#listeners.push(listener);
  }

  waitForSync(signal: AbortSignal): Promise<void> {
    if (this.#synced) return Promise.resolve();
    if (signal.aborted) return Promise.reject(new Error("capacity topology: stopped before it synced"));
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => reject(new Error("capacity topology: stopped before it synced"));
      signal.addEventListener("abort", onAbort, { once: true });
      this.#syncWaiters.push(() => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      });
    });
  }

  async run(signal: AbortSignal): Promise<void> {
    const workers = this.#queue.runWorkers(
      { workers: 1, logger: this.#logger, process: () => Promise.resolve(this.#sync()) },
      signal,
    );
    try {
      await Promise.all([this.#nodes.waitForSync(signal), this.#csiNodes.waitForSync(signal)]);
      // The caches are complete: compute the first set even if no event is queued.
      this.#queue.add(SYNC_KEY);
    } catch {
      // Stopped before the caches synced.
    }
    await workers;
  }

  /** Recomputes the set from the caches and tells listeners what changed. */
  #sync(): void {
    if (!this.#nodes.hasSynced() || !this.#csiNodes.hasSynced()) return;
    const next = new Map<string, Segment>();
    for (const csiNode of this.#csiNodes.store.list()) {
      const keys = driverTopologyKeys(csiNode, this.#driverName);
      if (keys === undefined) continue; // driver not on this node
      const node = this.#nodes.store.get(csiNode.metadata?.name ?? "");
      if (node === undefined) continue; // CSINode of a deleted node
      const segment = nodeSegment(keys, node);
      if (segment === undefined) continue; // labels not there yet
      // Keep the old object for an unchanged segment so identities stay stable.
      next.set(segment.id, this.#segments.get(segment.id) ?? segment);
    }
    const added = [...next.values()].filter((s) => !this.#segments.has(s.id));
    const removed = [...this.#segments.values()].filter((s) => !next.has(s.id));
    this.#segments = next;
    if (!this.#synced) {
      this.#synced = true;
      for (const wake of this.#syncWaiters.splice(0)) wake();
    }
    if (added.length === 0 && removed.length === 0) {
      this.#logger.info(5, "topology unchanged");
      return;
    }
    this.#logger.info(3, "topology changed", {
      added: added.map(segmentString),
      removed: removed.map(segmentString),
    });
    for (const listener of this.#listeners) listener(added, removed);
  }
}

function sameLabels(a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean {
  const left = a ?? {};
  const right = b ?? {};
  const keys = Object.keys(left);
  return keys.length === Object.keys(right).length && keys.every((k) => left[k] === right[k]);
}
