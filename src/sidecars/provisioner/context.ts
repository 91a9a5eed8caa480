// What every provisioner reconcile shares: clients, the cluster view, what the driver said at
// start-up, the options, the event recorder, metrics, and the small in-memory state that only
// speeds things up (everything needed for correctness after a crash is in the API server: the
// in-flight finalizer on claims, the PVs themselves).

import type { Clock, Logger } from "../../base/index.ts";
import type { PersistentVolume } from "../../api/index.ts";
import type { CsiClient } from "../../csi/index.ts";
import type { EventRecorder, KubeClient } from "../../kube/index.ts";
import type { CapacityRefresh } from "./capacity/index.ts";
import type { DriverInfo } from "./driver.ts";
import type { ProvisionerMetrics } from "./metrics.ts";
import type { ProvisionerOptions } from "./options.ts";
import type { PreparedProvision } from "./request.ts";
import type { ClusterView } from "./view.ts";
import type { InFlightLedger } from "./ledger.ts";

export interface ProvisionerState {
  /** PVs whose create failed after CreateVolume succeeded, by claim UID: retried, never dropped. */
  unsaved: Map<string, PersistentVolume>;
  /**
   * Claim UID → the CreateVolume request this process last sent for it while its in-flight mark
   * is on. A retry whose selected node has gone meanwhile re-sends it as it was (the topology
   * cannot be rebuilt without the node), instead of stranding the claim (claim-sync.ts).
   */
  inFlightRequests: Map<string, PreparedProvision>;
  /** Claim UID → PV name created by this process but perhaps not yet in the informer cache. */
  provisioned: Map<string, string>;
  /**
   * Claim UIDs whose in-flight mark this process removed while the informer may still show it:
   * a stale cached copy then sends no removal that would change nothing (dropped once the
   * cache shows the claim unmarked, or when this process marks it again).
   */
  unmarked: Set<string>;
  /** PV name → UID of PVs whose DeleteVolume succeeded (skip repeating it on stale caches). */
  deletedVolumes: Map<string, string>;
  /** Node deployment: failed attempts to own an immediate claim, by claim key. */
  ownAttempts: Map<string, number>;
  /** Node deployment: when the pending random delay of a claim ends (clock ms). */
  ownNotBefore: Map<string, number>;
}

export interface ProvisionerContext {
  client: KubeClient;
  csi: CsiClient;
  view: ClusterView;
  driver: DriverInfo;
  options: ProvisionerOptions;
  /** csiProvisionerIdentity stamped into PVs. */
  identity: string;
  events: EventRecorder;
  metrics: ProvisionerMetrics;
  logger: Logger;
  clock: Clock;
  random: () => number;
  state: ProvisionerState;
  /** Early capacity re-polls after a provision or delete (a no-op without --enable-capacity). */
  capacityRefresh: CapacityRefresh;
  /** --in-flight-record=ledger: the group-committed intents (ledger.ts); else undefined. */
  ledger?: InFlightLedger;
}

export function newProvisionerState(): ProvisionerState {
  return {
    unsaved: new Map(),
    inFlightRequests: new Map(),
    provisioned: new Map(),
    unmarked: new Set(),
    deletedVolumes: new Map(),
    ownAttempts: new Map(),
    ownNotBefore: new Map(),
  };
}
