// Capacity tracking of `csikit provisioner` (--enable-capacity): CSIStorageCapacity objects
// per (topology segment × storage class) from CSI GetCapacity, as upstream's pkg/capacity.
//
// Wiring (the provisioner's start): resolve the owner once with resolveCapacityOwner (from
// POD_NAME, NAMESPACE and --capacity-ownerref-level), then call startCapacityController
// synchronously before starting the shared informer factory — it requests its informers before
// its first await — and keep its promise: it resolves when the controller has stopped after
// the signal aborted (or rejects on bad options). Started later (e.g. on becoming leader, as
// upstream runs it), call `informers.start(signal)` once more afterwards: it starts only the
// informers requested since.

import type { OwnerReference } from "../../../api/index.ts";
import { CsikitError, type Clock, type Logger } from "../../../base/index.ts";
import type { InformerSource, KubeClient, WorkQueueMetricsRecorder } from "../../../kube/index.ts";
import type { Registry } from "prom-client";
import { CapacityController, type CapacityCsiClient } from "./controller.ts";
import { managedByID } from "./managed-by.ts";
import type { CapacityRefresh } from "./refresh.ts";
import { segmentOf, segmentString } from "./segment.ts";
import { FixedTopology, NodeTopology, type TopologySource } from "./topology.ts";

export { resolveCapacityOwner, type ResolveOwnerOptions } from "./owner.ts";
export { CapacityRefresh, type CapacityRefreshTarget } from "./refresh.ts";
export { managedByID, CENTRAL_MANAGED_BY } from "./managed-by.ts";
export { CAPACITY_METRICS } from "./metrics.ts";
export type { CapacityCsiClient } from "./controller.ts";

export interface CapacityControllerOptions {
  /** The provisioner's client (--kube-api-qps/burst); used for nothing but the default writer. */
  client: KubeClient;
  /** Writes CSIStorageCapacity objects: the --kube-api-capacity-qps/burst client (1/5). Default `client`. */
  capacityClient?: KubeClient;
  /** The process's shared factory; the caller starts it after this function was called. */
  informers: InformerSource;
  /** The driver's controller service (GetCapacity); a CsiClient fits. */
  csi: CapacityCsiClient;
  driverName: string;
  /** NAMESPACE: where the objects live (required). */
  namespace: string;
  /** From resolveCapacityOwner; null = no owner (--capacity-ownerref-level < 0). */
  ownerReference: OwnerReference | null;
  /** --capacity-poll-interval. Default 60000 (1m). */
  pollIntervalMs?: number;
  /** --capacity-threads. Default 1. */
  workers?: number;
  /** --capacity-for-immediate-binding. Default false. */
  immediateBinding?: boolean;
  /** --timeout for each GetCapacity. Default 10000. */
  timeoutMs?: number;
  /** --retry-interval-start for failed items. Default 1000. */
  retryIntervalStartMs?: number;
  /** --retry-interval-max. Default 300000. */
  retryIntervalMaxMs?: number;
  /**
   * --node-deployment: managed-by "external-provisioner-<node>" (NODE_NAME) and the one segment
   * of the local driver: accessible_topology.segments as its NodeGetInfo reported it (null:
   * none, one segment matching every node). No Node or CSINode is watched then.
   */
  nodeDeployment?: { nodeName: string; accessibleTopology: Record<string, string> | null };
  /** The csistoragecapacities_* gauges are registered here. Default: none. */
  registry?: Registry;
  /** workqueue_* metrics of the "csistoragecapacity" and "csitopology" queues. Default: none. */
  workQueueMetrics?: WorkQueueMetricsRecorder;
  /** Early refreshes after Provision/Delete (the provisioner calls it). Default: none. */
  refresh?: CapacityRefresh;
  logger?: Logger;
  clock?: Clock;
}

/**
 * Runs capacity tracking until `signal` aborts. Informers are requested synchronously, before
 * the first await; the caller runs `informers.start(signal)` afterwards.
 */
export async function startCapacityController(
  options: CapacityControllerOptions,
  signal: AbortSignal,
): Promise<void> {
  if (options.namespace === "") {
    throw new CsikitError(
      "CSIKIT_ERR_VALIDATION",
      "need NAMESPACE env variable for CSIStorageCapacity objects",
    );
  }
  const logger = options.logger;
  const node = options.nodeDeployment;
  const topology: TopologySource =
    node === undefined
      ? new NodeTopology({
          driverName: options.driverName,
          informers: options.informers,
          ...(options.clock ? { clock: options.clock } : {}),
          ...(logger ? { logger } : {}),
          ...(options.workQueueMetrics ? { workQueueMetrics: options.workQueueMetrics } : {}),
        })
      : new FixedTopology(segmentOf(node.accessibleTopology ?? {}));
  if (node !== undefined) {
    logger?.info(1, "producing CSIStorageCapacity objects with fixed topology segment", {
      segment: segmentString(segmentOf(node.accessibleTopology ?? {})),
    });
  }
  const controller = new CapacityController({
    writer: options.capacityClient ?? options.client,
    informers: options.informers,
    csi: options.csi,
    driverName: options.driverName,
    namespace: options.namespace,
    managedBy: managedByID(node?.nodeName),
    owner: options.ownerReference,
    topology,
    pollIntervalMs: options.pollIntervalMs ?? 60_000,
    workers: options.workers ?? 1,
    immediateBinding: options.immediateBinding ?? false,
    timeoutMs: options.timeoutMs ?? 10_000,
    retryIntervalStartMs: options.retryIntervalStartMs ?? 1000,
    retryIntervalMaxMs: options.retryIntervalMaxMs ?? 300_000,
    registry: options.registry,
    workQueueMetrics: options.workQueueMetrics,
    refresh: options.refresh,
    clock: options.clock,
    logger,
  });
  await controller.run(signal);
}
