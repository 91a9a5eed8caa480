// The capacity controller (--enable-capacity): keeps one CSIStorageCapacity object per
// (topology segment × storage class of this driver) in NAMESPACE, filled from CSI GetCapacity,
// as upstream's capacity.Controller.
//
// State: `#desired` maps each work item (segment, class) that should have an object to the
// object found for it (null until one is created or adopted). Informer handlers only change
// that map and enqueue keys; workers do the API and CSI calls:
// - a "sync" key polls GetCapacity for its item and creates or updates the object;
// - a "delete" key removes one obsolete object (its class or segment is gone, or it duplicates
//   another object of the same item).
// Items are added when a class of this driver appears (WaitForFirstConsumer classes; Immediate
// ones too with --capacity-for-immediate-binding) or a segment appears, removed when either
// goes; every item is re-polled each poll interval and early after a provision or delete in its
// segment or class (CapacityRefresh).
//
// Restart safety: workers start only after the class and segment caches are complete AND every
// existing object with our labels has been matched to its item (adopted) or scheduled for
// deletion, so a restarted instance never creates a second object for an item. A freshly
// created object is remembered at once (upstream waits for the watch), which also keeps a poll
// that races with the watch from creating a duplicate; should one appear anyway (another
// instance, a lost reply), the second object seen for an item is deleted.
//
// Objects are recognised by the drivername and managed-by labels (the informer watches only
// those); an object whose labels were changed by someone is forgotten and re-created, one that
// someone deleted is re-created.

import {
  GVR,
  LABELS,
  type CSIStorageCapacity,
  type OwnerReference,
  type StorageClass,
} from "../../../api/index.ts";
import {
  errorMessage,
  realClock,
  silentLogger,
  type Clock,
  type Logger,
  CsikitError,
} from "../../../base/index.ts";
import type { CallOptions, GetCapacityRequestInput, GetCapacityResponse } from "../../../csi/index.ts";
import {
  ItemExponentialRateLimiter,
  WorkQueue,
  deletedObject,
  isNotFound,
  type InformerSource,
  type KubeClient,
  type Informer,
  type WorkQueueMetricsRecorder,
} from "../../../kube/index.ts";
import type { Registry } from "prom-client";
import { registerCapacityMetrics, type CapacityCounts } from "./metrics.ts";
import type { CapacityRefresh } from "./refresh.ts";
import { selectorMatchesSegment, segmentString, type Segment } from "./segment.ts";
import { capacityRequest, planCapacity, reportedCapacity, type CapacityIdentity } from "./sync.ts";
import type { TopologySource } from "./topology.ts";

/** The part of a CSI client the controller calls (CsiClient fits). */
export interface CapacityCsiClient {
  controller: {
    getCapacity(request: GetCapacityRequestInput, options?: CallOptions): Promise<GetCapacityResponse>;
  };
}

export interface CapacityControllerConfig {
  /** Writes CSIStorageCapacity objects (upstream's separate --kube-api-capacity-qps/burst client). */
  writer: KubeClient;
  informers: InformerSource;
  csi: CapacityCsiClient;
  driverName: string;
  namespace: string;
  managedBy: string;
  owner: OwnerReference | null;
  topology: TopologySource;
  pollIntervalMs: number;
  workers: number;
  immediateBinding: boolean;
  timeoutMs: number;
  retryIntervalStartMs: number;
  retryIntervalMaxMs: number;
  registry?: Registry | undefined;
  workQueueMetrics?: WorkQueueMetricsRecorder | undefined;
  refresh?: CapacityRefresh | undefined;
  clock?: Clock | undefined;
  logger?: Logger | undefined;
}

interface Item {
  readonly key: string;
  readonly segment: Segment;
  readonly storageClassName: string;
  /** The object for this item, null while none is known. */
  object: CSIStorageCapacity | null;
}

const DRIVER_LABEL = LABELS.capacityDriverName.key;
const MANAGED_BY_LABEL = LABELS.capacityManagedBy.key;

const syncKey = (segment: Segment, storageClassName: string): string =>
  JSON.stringify(["sync", segment.id, storageClassName]);
const deleteKey = (object: CSIStorageCapacity): string =>
  JSON.stringify(["delete", object.metadata?.uid ?? "", object.metadata?.name ?? ""]);

export class CapacityController {
  readonly #config: CapacityControllerConfig;
  readonly #identity: CapacityIdentity;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #classes: Informer<StorageClass>;
  readonly #capacities: Informer<CSIStorageCapacity>;
  readonly #queue: WorkQueue<string>;
  readonly #desired = new Map<string, Item>();
  readonly #obsolete = new Map<string, CSIStorageCapacity>();

  /** Requests the informers and registers the class and topology handlers; no I/O. */
  constructor(config: CapacityControllerConfig) {
    this.#config = config;
    this.#identity = {
      driverName: config.driverName,
      managedBy: config.managedBy,
      namespace: config.namespace,
      owner: config.owner,
    };
    this.#clock = config.clock ?? realClock;
    this.#logger = (config.logger ?? silentLogger).with({ controller: "capacity" });
    this.#queue = new WorkQueue<string>({
      name: "csistoragecapacity",
      clock: this.#clock,
      rateLimiter: new ItemExponentialRateLimiter<string>({
        baseMs: config.retryIntervalStartMs,
        maxMs: config.retryIntervalMaxMs,
      }),
      ...(config.workQueueMetrics ? { metrics: config.workQueueMetrics } : {}),
    });
    this.#classes = config.informers.informer<StorageClass>(GVR.storageClasses);
    this.#capacities = config.informers.informer<CSIStorageCapacity>(GVR.csiStorageCapacities, {
      namespace: config.namespace,
      labelSelector: `${DRIVER_LABEL}=${config.driverName},${MANAGED_BY_LABEL}=${config.managedBy}`,
    });
    this.#classes.addEventHandler({
      onAdd: (sc) => this.#onClass(sc),
      onUpdate: (_old, sc) => this.#onClass(sc),
      onDelete: (sc) => this.#onClassDeleted(deletedObject(sc)),
    });
    config.topology.onChange((added, removed) => this.#onTopology(added, removed));
    if (config.registry) registerCapacityMetrics(config.registry, () => this.counts());
  }

  /** Runs until the signal aborts; resolves when workers, poller and topology have stopped. */
  async run(signal: AbortSignal): Promise<void> {
    const topologyRun = this.#config.topology.run(signal);
    try {
      await this.#prepare(signal);
    } catch (error) {
      if (!signal.aborted) throw error;
    }
    if (signal.aborted) {
      this.#queue.shutDown();
      await topologyRun;
      return;
    }
    const detach = this.#config.refresh?.attach({
      refreshSegment: (segment) => this.#refresh((item) => item.segment.id === segment.id),
      refreshStorageClass: (name) => this.#refresh((item) => item.storageClassName === name),
    });
    const stopPolling = this.#startPolling();
    this.#logger.info(1, "started controller", { items: this.#desired.size, workers: this.#config.workers });
    try {
      await this.#queue.runWorkers(
        { workers: this.#config.workers, logger: this.#logger, process: (key, s) => this.#process(key, s) },
        signal,
      );
    } finally {
      stopPolling();
      detach?.();
      await topologyRun;
      this.#logger.info(1, "shutting down controller");
    }
  }

  /** Live counts for the csistoragecapacities_* gauges. */
  counts(): CapacityCounts {
    let current = 0;
    for (const item of this.#desired.values()) if (item.object !== null) current++;
    let obsolete = 0;
    for (const object of this.#capacities.store.list()) {
      if (this.#isManaged(object) && this.#itemMatching(object) === undefined) obsolete++;
    }
    return { goal: this.#desired.size, current, obsolete };
  }

  /** Upstream's prepare(): the desired items, then adoption of what exists, then workers. */
  async #prepare(signal: AbortSignal): Promise<void> {
    await Promise.all([
      this.#config.topology.waitForSync(signal),
      this.#classes.waitForSync(signal),
      this.#capacities.waitForSync(signal),
    ]);
    this.#onTopology(this.#config.topology.list(), []);
    this.#logger.info(3, "initial state", {
      segments: this.#config.topology.list().length,
      items: this.#desired.size,
    });
    // Registering replays every cached object as an add: each is adopted or deleted here.
    this.#capacities.addEventHandler({
      onAdd: (object) => this.#onCapacity(object),
      onUpdate: (_old, object) => this.#onCapacity(object),
      onDelete: (object) => this.#onCapacityDeleted(deletedObject(object)),
    });
  }

  #startPolling(): () => void {
    let cancel = (): void => {};
    const tick = (): void => {
      for (const key of this.#desired.keys()) this.#queue.add(key);
      cancel = this.#clock.setTimer(this.#config.pollIntervalMs, tick);
    };
    tick();
    return () => cancel();
  }

  #refresh(matches: (item: Item) => boolean): void {
    for (const item of this.#desired.values()) if (matches(item)) this.#queue.add(item.key);
  }

  #qualifies(sc: StorageClass): boolean {
    if (sc.provisioner !== this.#config.driverName) return false;
    return this.#config.immediateBinding || sc.volumeBindingMode !== "Immediate";
  }

  #onClass(sc: StorageClass): void {
    if (sc.provisioner !== this.#config.driverName) return;
    const name = sc.metadata?.name ?? "";
    if (!this.#qualifies(sc)) {
      // Upstream keeps objects of a class that switched to Immediate; they are obsolete.
      this.#logger.info(3, "ignoring storage class because it uses immediate binding", {
        storageClass: name,
      });
      this.#removeItems((item) => item.storageClassName === name);
      return;
    }
    for (const segment of this.#config.topology.list()) this.#addItem(segment, name);
  }

  #onClassDeleted(sc: StorageClass): void {
    if (sc.provisioner !== this.#config.driverName) return;
    const name = sc.metadata?.name ?? "";
    this.#logger.info(3, "storage class removed", { storageClass: name });
    this.#removeItems((item) => item.storageClassName === name);
  }

  #onTopology(added: readonly Segment[], removed: readonly Segment[]): void {
    const removedIds = new Set(removed.map((s) => s.id));
    this.#removeItems((item) => removedIds.has(item.segment.id));
    for (const sc of this.#classes.store.list()) {
      if (!this.#qualifies(sc)) continue;
      for (const segment of added) this.#addItem(segment, sc.metadata?.name ?? "");
    }
  }

  #addItem(segment: Segment, storageClassName: string): void {
    const key = syncKey(segment, storageClassName);
    if (!this.#desired.has(key)) this.#desired.set(key, { key, segment, storageClassName, object: null });
    this.#queue.add(key);
  }

  #removeItems(matches: (item: Item) => boolean): void {
    for (const item of [...this.#desired.values()]) {
      if (!matches(item)) continue;
      // Dropping the item stops any queued sync of it from writing.
      this.#desired.delete(item.key);
      if (item.object !== null) this.#scheduleDelete(item.object);
    }
  }

  #scheduleDelete(object: CSIStorageCapacity): void {
    const key = deleteKey(object);
    this.#obsolete.set(key, object);
    this.#queue.add(key);
  }

  #isManaged(object: CSIStorageCapacity): boolean {
    const labels = object.metadata?.labels ?? {};
    return (
      labels[DRIVER_LABEL] === this.#config.driverName && labels[MANAGED_BY_LABEL] === this.#config.managedBy
    );
  }

  #itemMatching(object: CSIStorageCapacity): Item | undefined {
    for (const item of this.#desired.values()) {
      if (
        item.storageClassName === object.storageClassName &&
        selectorMatchesSegment(object.nodeTopology, item.segment)
      ) {
        return item;
      }
    }
    return undefined;
  }

  #itemHolding(uid: string | undefined): Item | undefined {
    if (uid === undefined) return undefined;
    for (const item of this.#desired.values()) if (item.object?.metadata?.uid === uid) return item;
    return undefined;
  }

  #onCapacity(object: CSIStorageCapacity): void {
    const uid = object.metadata?.uid;
    const holder = this.#itemHolding(uid);
    if (!this.#isManaged(object)) {
      // Someone took our labels off: forget it and make a new one.
      if (holder !== undefined) {
        holder.object = null;
        this.#queue.add(holder.key);
      }
      return;
    }
    if (holder !== undefined) {
      // Newer revision of a known object: keep it so the next update does not conflict.
      holder.object = object;
      return;
    }
    const item = this.#itemMatching(object);
    if (item !== undefined && item.object === null) {
      this.#logger.info(5, "adopted existing object", {
        capacity: object.metadata?.name,
        storageClass: item.storageClassName,
        segment: segmentString(item.segment),
      });
      item.object = object;
      this.#queue.add(item.key);
      return;
    }
    this.#logger.info(5, "CSIStorageCapacity obsolete, enqueue for removal", {
      capacity: object.metadata?.name,
    });
    this.#scheduleDelete(object);
  }

  #onCapacityDeleted(object: CSIStorageCapacity): void {
    const holder = this.#itemHolding(object.metadata?.uid);
    if (holder === undefined) return;
    // Still needed: someone else removed it.
    this.#logger.info(5, "CSIStorageCapacity removed by someone, enqueue for re-creation", {
      capacity: object.metadata?.name,
    });
    holder.object = null;
    this.#queue.add(holder.key);
  }

  async #process(key: string, signal: AbortSignal): Promise<void> {
    const obsolete = this.#obsolete.get(key);
    if (obsolete !== undefined) {
      await this.#deleteObject(obsolete, signal);
      if (this.#obsolete.get(key) === obsolete) this.#obsolete.delete(key);
      return;
    }
    const item = this.#desired.get(key);
    if (item === undefined) return; // became obsolete meanwhile
    await this.#syncItem(item, signal);
  }

  async #deleteObject(object: CSIStorageCapacity, signal: AbortSignal): Promise<void> {
    this.#logger.info(5, "removing CSIStorageCapacity", { capacity: object.metadata?.name });
    try {
      await this.#config.writer.delete(
        GVR.csiStorageCapacities,
        object.metadata?.name ?? "",
        { namespace: object.metadata?.namespace ?? this.#config.namespace },
        signal,
      );
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }

  async #syncItem(item: Item, signal: AbortSignal): Promise<void> {
    const storageClass = this.#classes.store.get(item.storageClassName);
    if (storageClass === undefined) return; // class gone: its delete event removes the item
    const what = `${item.storageClassName} in segment {${segmentString(item.segment)}}`;
    let response: GetCapacityResponse;
    try {
      response = await this.#config.csi.controller.getCapacity(capacityRequest(storageClass, item.segment), {
        timeoutMs: this.#config.timeoutMs,
        signal,
      });
    } catch (error) {
      throw new CsikitError("CSIKIT_ERR_CAPACITY", `CSI GetCapacity for ${what}: ${errorMessage(error)}`, {
        cause: error,
      });
    }
    const existing = item.object;
    const plan = planCapacity(this.#identity, item, reportedCapacity(response), existing);
    if (plan.action === "none") {
      this.#logger.info(5, "no need to update", { capacity: existing?.metadata?.name, item: what });
      return;
    }
    if (plan.action === "create") {
      let created: CSIStorageCapacity;
      try {
        created = await this.#config.writer.create(GVR.csiStorageCapacities, plan.object, signal);
      } catch (error) {
        throw new CsikitError(
          "CSIKIT_ERR_CAPACITY",
          `create CSIStorageCapacity for ${what}: ${errorMessage(error)}`,
          { cause: error },
        );
      }
      this.#logger.info(5, "created object", {
        capacity: created.metadata?.name,
        item: what,
        quantity: created.capacity,
      });
      // Still wanted and still without an object: this is it. Otherwise the watch will show
      // it to #onCapacity, which deletes it as obsolete or duplicate.
      if (this.#desired.get(item.key) === item && item.object === null) item.object = created;
      return;
    }
    let updated: CSIStorageCapacity;
    try {
      updated = await this.#config.writer.update(GVR.csiStorageCapacities, plan.object, {}, signal);
    } catch (error) {
      throw new CsikitError(
        "CSIKIT_ERR_CAPACITY",
        `update CSIStorageCapacity for ${what}: ${errorMessage(error)}`,
        { cause: error },
      );
    }
    this.#logger.info(5, "updated object", { capacity: updated.metadata?.name, item: what });
    if (item.object?.metadata?.uid === updated.metadata?.uid) item.object = updated;
  }
}
