// The capacity controller's own gauges, with upstream's names and help texts (component-base
// prints ALPHA metrics' help with an "[ALPHA] " prefix), computed when scraped from the
// controller's live state, as upstream's StableCollector does:
// - csistoragecapacities_desired_goal: objects that are supposed to exist (segment × class);
// - csistoragecapacities_desired_current: of those, the ones that exist;
// - csistoragecapacities_obsolete: managed objects that exist and will be deleted.
// The work queue's own metrics come from the shared workqueue_* recorder under the name
// "csistoragecapacity" (and "csitopology" for the topology queue).

import type { Registry } from "prom-client";
import { Gauge } from "../../../kube/index.ts";

export const CAPACITY_METRICS = Object.freeze({
  goal: "csistoragecapacities_desired_goal",
  current: "csistoragecapacities_desired_current",
  obsolete: "csistoragecapacities_obsolete",
});

export interface CapacityCounts {
  goal: number;
  current: number;
  obsolete: number;
}

/** Registers the three gauges; `counts` is called at each scrape. */
export function registerCapacityMetrics(registry: Registry, counts: () => CapacityCounts): void {
  const gauge = (name: string, help: string, pick: (c: CapacityCounts) => number): void => {
    new Gauge({
      name,
      help: `[ALPHA] ${help}`,
      registers: [registry],
      collect() {
        this.set(pick(counts()));
      },
    });
  };
  gauge(
    CAPACITY_METRICS.goal,
    "Number of CSIStorageCapacity objects that are supposed to be managed automatically.",
    (c) => c.goal,
  );
  gauge(
    CAPACITY_METRICS.current,
    "Number of CSIStorageCapacity objects that exist and are supposed to be managed automatically.",
    (c) => c.current,
  );
  gauge(
    CAPACITY_METRICS.obsolete,
    "Number of CSIStorageCapacity objects that exist and will be deleted automatically. Objects that exist and may need an update are not considered obsolete and therefore not included in this value.",
    (c) => c.obsolete,
  );
}
