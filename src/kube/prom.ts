// prom-client's metric classes and default metrics, loaded without prom-client's index. The
// index also loads its default-metrics module, whose CPU collector requires @opentelemetry/api
// (for exemplars, which csikit never records): about 9 MiB of RSS in every process that imports
// prom-client, the node DaemonSet's livenessprobe included (`npm run bench:rss`). The classes
// here are the very objects the index exports (prom.test.ts checks it, so an upgrade that moves
// a file fails there); package-lock.json pins the version. Import types from "prom-client" and
// values from here.

import { createRequire } from "node:module";
import type * as PromClient from "prom-client";

const load = createRequire(import.meta.url);

export const Registry = load("prom-client/lib/registry") as typeof PromClient.Registry;
export const Counter = load("prom-client/lib/counter") as typeof PromClient.Counter;
export const Gauge = load("prom-client/lib/gauge") as typeof PromClient.Gauge;
export const Histogram = load("prom-client/lib/histogram") as typeof PromClient.Histogram;
export type Registry = PromClient.Registry;
export type Counter<T extends string = string> = PromClient.Counter<T>;
export type Gauge<T extends string = string> = PromClient.Gauge<T>;
export type Histogram<T extends string = string> = PromClient.Histogram<T>;

type DefaultMetric = (registry: PromClient.Registry, config: object) => void;

/** prom-client's default collectors (lib/defaultMetrics.js) but the CPU one, replaced below. */
const DEFAULT_COLLECTORS = [
  "processStartTime",
  "osMemoryHeap",
  "processOpenFileDescriptors",
  "processMaxFileDescriptors",
  "eventLoopLag",
  "processResources",
  "processHandles",
  "processRequests",
  "heapSizeAndUsed",
  "heapSpacesSizeAndUsed",
  "version",
  "gc",
] as const;

/**
 * What prom-client's `collectDefaultMetrics({ register })` registers, with the same names, help
 * and values: `process_cpu_*_seconds_total`, `process_start_time_seconds`,
 * `process_resident_memory_bytes`, `process_open_fds`, `nodejs_*`.
 */
export function collectDefaultMetrics({ register: registry }: { register: PromClient.Registry }): void {
  const config = { register: registry, eventLoopMonitoringPrecision: 10 };
  registerCpuCounters(registry);
  for (const name of DEFAULT_COLLECTORS) {
    (load(`prom-client/lib/metrics/${name}`) as DefaultMetric)(registry, config);
  }
}

/** process_cpu_{user,system}_seconds_total and their sum, as prom-client's processCpuTotal. */
function registerCpuCounters(registry: PromClient.Registry): void {
  let last = process.cpuUsage();
  const registers = [registry];
  // Registered first, as prom-client does: a scrape collects in order, and this collect sets all three.
  new Counter({
    name: "process_cpu_user_seconds_total",
    help: "Total user CPU time spent in seconds.",
    registers,
    collect() {
      const now = process.cpuUsage();
      const user = (now.user - last.user) / 1e6;
      const sys = (now.system - last.system) / 1e6;
      last = now;
      this.inc(user);
      system.inc(sys);
      total.inc(user + sys);
    },
  });
  const system = new Counter({
    name: "process_cpu_system_seconds_total",
    help: "Total system CPU time spent in seconds.",
    registers,
  });
  const total = new Counter({
    name: "process_cpu_seconds_total",
    help: "Total user and system CPU time spent in seconds.",
    registers,
  });
}
