// KEP-4876 (MutableCSINodeAllocatableCount) on the node: for each registered driver whose
// CSIDriver sets nodeAllocatableUpdatePeriodSeconds, NodeGetInfo is called again every that
// period and CSINode spec.drivers[].allocatable.count follows max_volumes_per_node — written
// only when it changed. A VolumeAttachment of this node failing with errorCode
// ResourceExhausted asks for a refresh at once (the kubelet's VerifyExhaustedResource), also
// only for a driver with a period: without one the count stays static, as upstream.
//
// Like the kubelet's csiNodeUpdater: the first periodic refresh comes one period after the
// driver is seen with a period; a changed period restarts the count; a driver deregistered or
// a period removed stops it; a failed refresh is logged and the next period tries again.

import type { CSIDriver } from "../api/index.ts";
import { errorMessage } from "../base/index.ts";
import type { DriverRegistry } from "./drivers.ts";
import type { NodeInfoManager } from "./node-info.ts";
import type { NodeContext } from "./options.ts";

export interface AllocatableUpdaterOptions {
  context: NodeContext;
  drivers: DriverRegistry;
  nodeInfo: NodeInfoManager;
  csiDriver: (name: string) => CSIDriver | undefined;
  /** The MutableCSINodeAllocatableCount gate: off, nothing is ever refreshed. */
  enabled: boolean;
}

interface DriverSchedule {
  periodMs: number;
  nextAt: number;
}

/** The period a CSIDriver asks for in ms, or undefined (no updates). */
export function allocatableUpdatePeriodMs(csiDriver: CSIDriver | undefined): number | undefined {
  const seconds = csiDriver?.spec.nodeAllocatableUpdatePeriodSeconds;
  return typeof seconds === "number" && seconds > 0 ? seconds * 1000 : undefined;
}

export class AllocatableUpdater {
  readonly #o: AllocatableUpdaterOptions;
  readonly #schedules = new Map<string, DriverSchedule>();
  /** One refresh per driver at a time; a request while one runs is folded into it. */
  readonly #running = new Map<string, Promise<void>>();

  constructor(options: AllocatableUpdaterOptions) {
    this.#o = options;
  }

  /** Brings the schedules in line with the registered drivers and CSIDrivers; starts what is due. */
  tick(signal: AbortSignal): void {
    const { drivers, csiDriver, context, enabled } = this.#o;
    const registered = new Set(enabled ? drivers.names() : []);
    for (const name of this.#schedules.keys()) if (!registered.has(name)) this.#schedules.delete(name);
    const now = context.clock.now();
    for (const name of registered) {
      const periodMs = allocatableUpdatePeriodMs(csiDriver(name));
      if (periodMs === undefined) {
        this.#schedules.delete(name);
        continue;
      }
      const schedule = this.#schedules.get(name);
      if (schedule === undefined || schedule.periodMs !== periodMs) {
        this.#schedules.set(name, { periodMs, nextAt: now + periodMs });
        continue;
      }
      if (now < schedule.nextAt) continue;
      schedule.nextAt = now + periodMs;
      this.#refresh(name, "period", signal);
    }
  }

  /**
   * An attach of a volume of `driverName` failed with ResourceExhausted: the driver's count is
   * refreshed now if its CSIDriver has a period (true), else nothing happens (false).
   */
  resourceExhausted(driverName: string, signal: AbortSignal): boolean {
    const { enabled, csiDriver, drivers } = this.#o;
    if (!enabled || allocatableUpdatePeriodMs(csiDriver(driverName)) === undefined) return false;
    if (drivers.get(driverName) === undefined) return false;
    this.#refresh(driverName, "ResourceExhausted", signal);
    return true;
  }

  /** Resolves once no refresh runs. */
  async waitIdle(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running.values()]);
  }

  #refresh(driverName: string, why: string, signal: AbortSignal): void {
    if (this.#running.has(driverName)) return;
    const { drivers, nodeInfo, context } = this.#o;
    const run = (async () => {
      const driver = drivers.get(driverName);
      if (driver === undefined) return;
      const info = await driver.client.node.nodeGetInfo({}, { signal });
      const written = await nodeInfo.updateAllocatable(
        driverName,
        Number(info.maxVolumesPerNode || 0),
        signal,
      );
      context.logger.info(4, "refreshed CSINode allocatable count", {
        driver: driverName,
        trigger: why,
        maxVolumesPerNode: String(info.maxVolumesPerNode || 0),
        written,
      });
    })()
      .catch((error: unknown) => {
        if (signal.aborted) return;
        context.logger.error("Failed to update CSIDriver", { driver: driverName, err: errorMessage(error) });
      })
      .finally(() => this.#running.delete(driverName));
    this.#running.set(driverName, run);
  }
}
