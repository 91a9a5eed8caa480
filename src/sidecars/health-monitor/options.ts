// The health monitor's options: what `csikit health-monitor` parses from upstream
// external-health-monitor-controller v0.18's flags (flags.ts) and what `csikit up` passes.
// Every field names its flag; defaults are upstream's (cmd/csi-external-health-monitor-controller).

import type { Clock, Logger } from "../../base/index.ts";
import type { SharedSidecarRuntime, CommonSidecarOptions } from "../../kube/index.ts";

export interface HealthMonitorOptions extends CommonSidecarOptions {
  /** --timeout (15s): deadline of every CSI call (ListVolumes, ControllerGetVolume, start-up). */
  timeoutMs: number;
  /** --resync (10m): informer resync period. 0 = off. */
  resyncPeriodMs: number;
  /** --monitor-interval (1m): pause of each ControllerGetVolume worker between volumes; the node watcher's pace too. */
  monitorIntervalMs: number;
  /** --list-volumes-interval (5m): how often ListVolumes checks every volume (drivers with LIST_VOLUMES). */
  listVolumesIntervalMs: number;
  /** --volume-list-add-interval (5m): how often every PV is queued again for ControllerGetVolume. */
  volumeListAddIntervalMs: number;
  /** --node-list-add-interval (5m): how often every Node is looked at again by the node watcher. */
  nodeListAddIntervalMs: number;
  /** --worker-threads (10): ControllerGetVolume workers. */
  workerThreads: number;
  /** --enable-node-watcher (false): report the claims of pods on deleted or long-NotReady nodes. */
  enableNodeWatcher: boolean;
  /**
   * How long a Node may stay NotReady before its pods' claims are reported (upstream's fixed
   * DefaultNodeNotReadyTimeDuration, 5m; no flag — tests shorten it).
   */
  nodeNotReadyTimeoutMs?: number;
  logger?: Logger;
  clock?: Clock;
  /** Called once the HTTP endpoint listens (tests use port 0). */
  onHttpEndpoint?: (url: string) => void;
  /** Set by `csikit sidecars`: the CSI connection, informers and endpoint shared in the process. */
  shared?: SharedSidecarRuntime;
}
