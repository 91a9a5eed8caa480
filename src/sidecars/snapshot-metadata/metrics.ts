// The sidecar's metrics, as external-snapshot-metadata's: csi-lib-utils' CSI metrics manager
// with the subsystem `snapshot_metadata_controller` and two extra labels, i.e. the histogram
// `snapshot_metadata_controller_operations_seconds{driver_name, method_name,
// grpc_status_code, target_snapshot, base_snapshot}` (csi-lib-utils' buckets and help). The
// driver's unary calls are observed with their gRPC path and empty snapshot labels; each served
// call once more as method "MetadataAllocated" or "MetadataDelta" with its snapshot names and
// the status it ended with. Process metrics come with the registry.

import {
  CSI_OPERATIONS_BUCKETS,
  CSI_OPERATIONS_HELP,
  Histogram,
  UNKNOWN_DRIVER_NAME,
  grpcCodeName,
  type CsiCallObserver,
  type Registry,
} from "../../kube/index.ts";

export const SNAPSHOT_METADATA_METRIC = "snapshot_metadata_controller_operations_seconds";
export const METADATA_ALLOCATED_OPERATION = "MetadataAllocated";
export const METADATA_DELTA_OPERATION = "MetadataDelta";

export class SnapshotMetadataMetrics {
  readonly #histogram: Histogram;
  #driverName = UNKNOWN_DRIVER_NAME;

  constructor(registry: Registry) {
    this.#histogram = new Histogram({
      name: SNAPSHOT_METADATA_METRIC,
      help: CSI_OPERATIONS_HELP,
      labelNames: ["driver_name", "method_name", "grpc_status_code", "target_snapshot", "base_snapshot"],
      buckets: [...CSI_OPERATIONS_BUCKETS],
      registers: [registry],
    });
  }

  setDriverName(name: string): void {
    this.#driverName = name === "" ? UNKNOWN_DRIVER_NAME : name;
  }

  /** Observes one served call (or one CSI call, with empty snapshot labels). */
  observe(
    method: string,
    code: number | string,
    seconds: number,
    snapshots: { target?: string; base?: string } = {},
  ): void {
    this.#histogram.observe(
      {
        driver_name: this.#driverName,
        method_name: method,
        grpc_status_code: grpcCodeName(code),
        target_snapshot: snapshots.target ?? "",
        base_snapshot: snapshots.base ?? "",
      },
      seconds,
    );
  }

  /** src/csi's client hook for the driver's unary calls. */
  observer(): CsiCallObserver {
    return (method, code, seconds) => this.observe(method, code, seconds);
  }
}
