// Volume stats as the kubelet exports them: NodeGetVolumeStats for every published
// PVC-backed volume of a driver with GET_VOLUME_STATS, every --volume-stats-agg-period,
// served as kubelet_volume_stats_{capacity,available,used}_bytes and
// kubelet_volume_stats_inodes{,_free,_used} with labels namespace and persistentvolumeclaim.
// With the CSIVolumeHealth gate and a driver with the node VOLUME_CONDITION capability, also the
// kubelet's volume health: the answer's volume_condition as
// kubelet_volume_stats_health_status_abnormal (1 abnormal, 0 healthy) and, while abnormal, a
// Warning VolumeConditionAbnormal event on the pod ("Volume <name>: <message>") every period.

import type { Registry } from "prom-client";
import { EVENT_REASONS, type Pod } from "../api/index.ts";
import { Gauge, type EventRecorder } from "../kube/index.ts";
import { errorMessage, type Clock, type Logger } from "../base/index.ts";
import type { ActualState, PublishedVolume } from "./actual-state.ts";
import type { DriverRegistry } from "./drivers.ts";

interface ClaimStats {
  namespace: string;
  claim: string;
  bytes?: { total: number; available: number; used: number };
  inodes?: { total: number; available: number; used: number };
  /** The volume's health (CSIVolumeHealth gate, driver with node VOLUME_CONDITION). */
  abnormal?: boolean;
}

/** The kubelet's volume health reporting (CSIVolumeHealth); absent: gate off. */
export interface VolumeHealthReporting {
  events: EventRecorder;
  /** The pod with this UID, from the node's pod cache. */
  podOf(uid: string): Pod | undefined;
}

export const VOLUME_STATS_METRICS = {
  capacityBytes: "kubelet_volume_stats_capacity_bytes",
  availableBytes: "kubelet_volume_stats_available_bytes",
  usedBytes: "kubelet_volume_stats_used_bytes",
  inodes: "kubelet_volume_stats_inodes",
  inodesFree: "kubelet_volume_stats_inodes_free",
  inodesUsed: "kubelet_volume_stats_inodes_used",
  healthStatusAbnormal: "kubelet_volume_stats_health_status_abnormal",
} as const;

/** The feature gate the kubelet reads volume_condition under (KEP-1432, alpha). */
export const CSI_VOLUME_HEALTH_GATE = "CSIVolumeHealth";

/** The kubelet's event reason for an abnormal volume condition on a pod. */
export const VOLUME_CONDITION_ABNORMAL = EVENT_REASONS.volumeConditionAbnormal.key;

/**
 * The pod's own name for the volume (the kubelet's outer volume spec name): the volume naming
 * the claim, or the generic ephemeral volume whose claim is <pod>-<volume>; the spec name (the
 * PV's name) when none matches.
 */
function outerVolumeName(pod: Pod, published: PublishedVolume): string {
  const claim = published.claim?.name;
  if (claim === undefined) return published.specName;
  const volume = (pod.spec?.volumes ?? []).find(
    (v) =>
      v.persistentVolumeClaim?.claimName === claim ||
      (v.ephemeral !== undefined && `${pod.metadata?.name}-${v.name}` === claim),
  );
  return volume?.name ?? published.specName;
}

export class VolumeStatsCollector {
  readonly #actual: ActualState;
  readonly #drivers: DriverRegistry;
  readonly #health: VolumeHealthReporting | undefined;
  #stats = new Map<string, ClaimStats>();

  constructor(
    actual: ActualState,
    drivers: DriverRegistry,
    registry: Registry,
    health?: VolumeHealthReporting,
  ) {
    this.#actual = actual;
    this.#drivers = drivers;
    this.#health = health;
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
    gauge(
      VOLUME_STATS_METRICS.healthStatusAbnormal,
      "[ALPHA] Abnormal volume health status. The count is either 1 or 0. 1 indicates the volume is unhealthy, 0 indicates volume is healthy",
      (s) => (s.abnormal === undefined ? undefined : s.abnormal ? 1 : 0),
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
        // As the kubelet: the condition is read only with the gate and the node capability.
        const condition = response.volumeCondition;
        if (this.#health && driver.nodeCapabilities.has("VOLUME_CONDITION") && condition) {
          entry.abnormal = condition.abnormal;
          if (condition.abnormal) this.#reportAbnormal(published, condition.message);
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

  #reportAbnormal(published: PublishedVolume, message: string): void {
    const pod = this.#health?.podOf(published.podUID);
    if (!pod?.metadata?.name) return;
    this.#health!.events.event(
      {
        kind: "Pod",
        apiVersion: "v1",
        namespace: pod.metadata.namespace ?? "",
        name: pod.metadata.name,
        uid: published.podUID,
      },
      "Warning",
      VOLUME_CONDITION_ABNORMAL,
      `Volume ${outerVolumeName(pod, published)}: ${message}`,
    );
  }

  async run(periodMs: number, clock: Clock, logger: Logger, signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.collectOnce(signal, logger).catch(() => undefined);
      await clock.sleep(periodMs, signal).catch(() => undefined);
    }
  }
}
