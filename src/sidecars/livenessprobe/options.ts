// What `startLivenessProbe` needs: the livenessprobe's flags as typed options (flags.ts).

import type { Clock, Logger } from "../../base/index.ts";

export interface LivenessProbeOptions {
  /** --csi-address: the driver's socket. Default "/run/csi/socket". */
  csiAddress: string;
  /** --probe-timeout in ms: the deadline of each Probe. Default 1000. */
  probeTimeoutMs?: number;
  /**
   * Where /healthz listens: --http-endpoint, else "0.0.0.0:<--health-port>" (default port 9808),
   * as upstream. Metrics are served here too only when --http-endpoint was given.
   */
  address: string;
  /** --http-endpoint was given: serve metrics at metricsPath on `address`. Default false. */
  metricsOnAddress?: boolean;
  /** --metrics-address (deprecated): a second server for metrics only. Default none. */
  metricsAddress?: string;
  /** --metrics-path. Default "/metrics". */
  metricsPath?: string;
  logger?: Logger;
  /** Clock of the "still connecting" warnings. Default the real clock. */
  clock?: Clock;
  /** Called once serving, with the driver's name and the servers' URLs. */
  onServing?: (info: { driverName: string; url: string; metricsUrl?: string }) => void;
}
