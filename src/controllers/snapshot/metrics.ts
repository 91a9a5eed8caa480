// The snapshot controller's operation metrics, as external-snapshotter's pkg/metrics: the
// histogram snapshot_controller_operation_total_seconds{driver_name, operation_name,
// snapshot_type, operation_status} timing CreateSnapshot (until creationTime is set),
// CreateSnapshotAndReady (until readyToUse) and DeleteSnapshot (until the object is gone), their
// group twins, a "cancel" sample for a create still pending when the delete completes, and the
// gauge snapshot_controller_operations_in_flight. An operation starts once (the first time it is
// seen) and is recorded once; a restart loses the pending starts, as upstream's in-memory cache.

import { Gauge, Histogram, type Registry } from "../../kube/index.ts";

export const OPERATIONS = {
  createSnapshot: "CreateSnapshot",
  createSnapshotAndReady: "CreateSnapshotAndReady",
  deleteSnapshot: "DeleteSnapshot",
  createGroupSnapshot: "CreateGroupSnapshot",
  createGroupSnapshotAndReady: "CreateGroupSnapshotAndReady",
  deleteGroupSnapshot: "DeleteGroupSnapshot",
} as const;

export type SnapshotType = "dynamic" | "pre-provisioned";

const BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30, 60, 120, 300, 600];
const UNKNOWN_DRIVER = "unknown";

interface Pending {
  driver: string;
  snapshotType: SnapshotType;
  startMs: number;
}

export class SnapshotOperationMetrics {
  readonly #pending = new Map<string, Pending>();
  readonly #latency: Histogram<"driver_name" | "operation_name" | "snapshot_type" | "operation_status">;
  readonly #inFlight: Gauge;
  readonly #now: () => number;

  constructor(registry: Registry, now: () => number = Date.now) {
    this.#now = now;
    this.#latency = new Histogram({
      name: "snapshot_controller_operation_total_seconds",
      help: "Total number of seconds spent by the controller on an operation",
      labelNames: ["driver_name", "operation_name", "snapshot_type", "operation_status"],
      buckets: BUCKETS,
      registers: [registry],
    });
    this.#inFlight = new Gauge({
      name: "snapshot_controller_operations_in_flight",
      help: "Total number of operations in flight",
      registers: [registry],
    });
  }

  /** Starts `operation` for the object with this UID unless it already runs. */
  start(operation: string, uid: string, driver: string, snapshotType: SnapshotType): void {
    const key = `${operation}/${uid}`;
    if (!this.#pending.has(key))
      this.#pending.set(key, { driver: driver || UNKNOWN_DRIVER, snapshotType, startMs: this.#now() });
    this.#inFlight.set(this.#pending.size);
  }

  /** Records a started operation as a success (no-op when it was never started). */
  succeeded(operation: string, uid: string, driver: string): void {
    const key = `${operation}/${uid}`;
    const pending = this.#pending.get(key);
    if (pending === undefined) return;
    const seconds = (this.#now() - pending.startMs) / 1000;
    const driverName = driver && driver !== UNKNOWN_DRIVER ? driver : pending.driver;
    this.#latency.observe(
      {
        driver_name: driverName,
        operation_name: operation,
        snapshot_type: pending.snapshotType,
        operation_status: "success",
      },
      seconds,
    );
    this.#pending.delete(key);
    // A delete that completes while a create never did cancels the create.
    const creates =
      operation === OPERATIONS.deleteSnapshot
        ? [OPERATIONS.createSnapshot, OPERATIONS.createSnapshotAndReady]
        : operation === OPERATIONS.deleteGroupSnapshot
          ? [OPERATIONS.createGroupSnapshot, OPERATIONS.createGroupSnapshotAndReady]
          : [];
    for (const create of creates) {
      const createKey = `${create}/${uid}`;
      const open = this.#pending.get(createKey);
      if (open === undefined) continue;
      this.#latency.observe(
        {
          driver_name: open.driver,
          operation_name: create,
          snapshot_type: open.snapshotType,
          operation_status: "cancel",
        },
        seconds,
      );
      this.#pending.delete(createKey);
    }
    this.#inFlight.set(this.#pending.size);
  }
}
