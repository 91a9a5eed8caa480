// Volume stats as the kubelet exports them: NodeGetVolumeStats for every published
// PVC-backed volume of a driver with GET_VOLUME_STATS, every --volume-stats-agg-period,
// served as kubelet_volume_stats_{capacity,available,used}_bytes and
// kubelet_volume_stats_inodes{,_free,_used} with labels namespace and persistentvolumeclaim.

import type { Registry } from "prom-client";
import { Gauge } from "../kube/index.ts";
import { errorMessage, type Clock, type Logger } from "../base/index.ts";
import type { ActualState } from "./actual-state.ts";
import type { DriverRegistry } from "./drivers.ts";

interface ClaimStats {
  namespace: string;
  claim: string;
  bytes?: { total: number; available: number; used: number };
  inodes?: { total: number; available: number; used: number };
}

export const VOLUME_STATS_METRICS = {
  capacityBytes: "kubelet_volume_stats_capacity_bytes",
  availableBytes: "kubelet_volume_stats_available_bytes",
  usedBytes: "kubelet_volume_stats_used_bytes",
  inodes: "kubelet_volume_stats_inodes",
  inodesFree: "kubelet_volume_stats_inodes_free",
  inodesUsed: "kubelet_volume_stats_inodes_used",
} as const;

export class VolumeStatsCollector {
  readonly #actual: ActualState;
  readonly #drivers: DriverRegistry;
  #stats = new Map<string, ClaimStats>();

  constructor(actual: ActualState, drivers: DriverRegistry, registry: Registry) {
    this.#actual = actual;
    this.#drivers = drivers;
    const stats = () => this.#stats.values();
    const gauge = (name: string, help: string, pick: (s: ClaimStats) => number | undefined) =>
      new Gauge({
        name,
        help,
        labelNames: ["namespace", "persistentvolumeclaim"],
        registers: [registry],
        collect() {
          this.reset();
          for (const s of stats()) {
            const value = pick(s);
            if (value !== undefined)
              this.set({ namespace: s.namespace, persistentvolumeclaim: s.claim }, value);
          }
        },
      });
    gauge(
      VOLUME_STATS_METRICS.capacityBytes,
      "[ALPHA] Capacity in bytes of the volume",
      (s) => s.bytes?.total,
    );
    gauge(
      VOLUME_STATS_METRICS.availableBytes,
      "[ALPHA] Number of available bytes in the volume",
      (s) => s.bytes?.available,
    );
    gauge(VOLUME_STATS_METRICS.usedBytes, "[ALPHA] Number of used bytes in the volume", (s) => s.bytes?.used);
    gauge(
      VOLUME_STATS_METRICS.inodes,
      "[ALPHA] Maximum number of inodes in the volume",
      (s) => s.inodes?.total,
    );
    gauge(
      VOLUME_STATS_METRICS.inodesFree,
      "[ALPHA] Number of free inodes in the volume",
      (s) => s.inodes?.available,
    );
    gauge(
      VOLUME_STATS_METRICS.inodesUsed,
      "[ALPHA] Number of used inodes in the volume",
      (s) => s.inodes?.used,
    );
  }

  /** One round of NodeGetVolumeStats over the published PVC-backed volumes. */
  async collectOnce(signal: AbortSignal, logger: Logger): Promise<void> {
    const next = new Map<string, ClaimStats>();
    for (const published of this.#actual.published.values()) {
      if (published.state !== "mounted" || !published.claim) continue;
      const driver = this.#drivers.get(published.driver);
      if (!driver?.nodeCapabilities.has("GET_VOLUME_STATS")) continue;
      const key = `${published.claim.namespace}/${published.claim.name}`;
      if (next.has(key)) continue;
      try {
        const response = await driver.client.node.nodeGetVolumeStats(
          {
            volumeId: published.handle,
            volumePath: published.targetPath,
            ...(driver.nodeCapabilities.has("STAGE_UNSTAGE_VOLUME")
              ? { stagingTargetPath: published.stagingPath }
              : {}),
          },
          { signal },
        );
        const entry: ClaimStats = { namespace: published.claim.namespace, claim: published.claim.name };
        for (const usage of response.usage) {
          const values = {
            total: Number(usage.total),
            available: Number(usage.available),
            used: Number(usage.used),
          };
          if (usage.unit === "BYTES") entry.bytes = values;
          else if (usage.unit === "INODES") entry.inodes = values;
        }
        next.set(key, entry);
      } catch (error) {
        logger.info(4, "NodeGetVolumeStats failed", {
          volume: published.uniqueName,
          err: errorMessage(error),
        });
      }
    }
    this.#stats = next;
  }

  async run(periodMs: number, clock: Clock, logger: Logger, signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.collectOnce(signal, logger).catch(() => undefined);
      await clock.sleep(periodMs, signal).catch(() => undefined);
    }
  }
}
