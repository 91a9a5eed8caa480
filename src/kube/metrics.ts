// The CSI call metric every sidecar exports, named and shaped exactly as csi-lib-utils'
// metrics manager does so existing dashboards work: histogram
// `csi_sidecar_operations_seconds{driver_name, method_name, grpc_status_code[, migrated]}`
// with the upstream buckets. `driver_name` is "unknown-driver" until `setDriverName` is called
// (after GetPluginInfo). `method_name` is the full gRPC path ("/csi.v1.Controller/CreateVolume");
// `grpc_status_code` is the Go name of the code ("OK", "DeadlineExceeded"), as Go's
// codes.Code.String() prints it. src/csi is a lower layer and cannot import this module; its
// client takes a plain `CsiCallObserver` function, which `observer()` returns.
// `migrated` (CSI migration) follows the call's async context: code that calls the driver for
// a migrated in-tree volume runs the call inside `withMigratedCalls(true, …)`, as upstream
// marks the call's context.Context; src/csi's client runs its observer in the caller's context.

import { AsyncLocalStorage } from "node:async_hooks";
import type { Registry } from "prom-client";
import { Histogram } from "./prom.ts";

const migratedContext = new AsyncLocalStorage<boolean>();

/**
 * Runs `fn` with every CSI call it makes (directly or through awaited promises) observed with
 * `migrated="<migrated>"` by a CsiOperationMetrics with the migrated label.
 */
export function withMigratedCalls<T>(migrated: boolean, fn: () => T): T {
  return migratedContext.run(migrated, fn);
}

export const CSI_OPERATIONS_METRIC = "csi_sidecar_operations_seconds";
export const CSI_OPERATIONS_HELP =
  "Container Storage Interface operation duration with gRPC error code status total";
export const CSI_OPERATIONS_BUCKETS: readonly number[] = [
  0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 25, 50, 120, 300, 600,
];
export const UNKNOWN_DRIVER_NAME = "unknown-driver";

/** Go's names of gRPC status codes, by number. */
export const GRPC_CODE_NAMES: readonly string[] = [
  "OK",
  "Canceled",
  "Unknown",
  "InvalidArgument",
  "DeadlineExceeded",
  "NotFound",
  "AlreadyExists",
  "PermissionDenied",
  "ResourceExhausted",
  "FailedPrecondition",
  "Aborted",
  "OutOfRange",
  "Unimplemented",
  "Internal",
  "Unavailable",
  "DataLoss",
  "Unauthenticated",
];

/** The Go name of a gRPC code given as number or name; unknown numbers print as Go does: Code(N). */
export function grpcCodeName(code: number | string): string {
  if (typeof code === "string") return code;
  return GRPC_CODE_NAMES[code] ?? `Code(${code})`;
}

/** What src/csi's client calls after every RPC: method path, status code, duration in seconds. */
export type CsiCallObserver = (method: string, code: number | string, seconds: number) => void;

export interface CsiMetricsOptions {
  registry: Registry;
  /** Add the `migrated` label (the provisioner/attacher/resizer with CSI migration). Default false. */
  migratedLabel?: boolean;
}

export class CsiOperationMetrics {
  #histogram: Histogram;
  #driverName = UNKNOWN_DRIVER_NAME;
  #migratedLabel: boolean;
  readonly #registry: Registry;

  constructor(options: CsiMetricsOptions) {
    this.#registry = options.registry;
    this.#migratedLabel = options.migratedLabel ?? false;
    this.#histogram = this.#newHistogram();
  }

  get histogram(): Histogram {
    return this.#histogram;
  }

  #newHistogram(): Histogram {
    const labelNames = ["driver_name", "method_name", "grpc_status_code"];
    if (this.#migratedLabel) labelNames.push("migrated");
    return new Histogram({
      name: CSI_OPERATIONS_METRIC,
      help: CSI_OPERATIONS_HELP,
      labelNames,
      buckets: [...CSI_OPERATIONS_BUCKETS],
      registers: [this.#registry],
    });
  }

  /**
   * Switches to the histogram with the `migrated` label, as upstream's provisioner, attacher and
   * resizer do (a new metrics manager WithMigration) once GetPluginInfo named a CSI migration
   * target driver; what was observed before (start-up probes) is dropped, as there.
   */
  enableMigratedLabel(): void {
    if (this.#migratedLabel) return;
    this.#migratedLabel = true;
    this.#registry.removeSingleMetric(CSI_OPERATIONS_METRIC);
    this.#histogram = this.#newHistogram();
  }

  get driverName(): string {
    return this.#driverName;
  }

  setDriverName(name: string): void {
    this.#driverName = name === "" ? UNKNOWN_DRIVER_NAME : name;
  }

  observeCsiCall(method: string, code: number | string, seconds: number, migrated = false): void {
    const labels: Record<string, string> = {
      driver_name: this.#driverName,
      method_name: method,
      grpc_status_code: grpcCodeName(code),
    };
    if (this.#migratedLabel) labels.migrated = migrated ? "true" : "false";
    this.#histogram.observe(labels, seconds);
  }

  /** A plain function for src/csi's client hook. */
  observer(): CsiCallObserver {
    return (method, code, seconds) =>
      this.observeCsiCall(method, code, seconds, migratedContext.getStore() ?? false);
  }
}
