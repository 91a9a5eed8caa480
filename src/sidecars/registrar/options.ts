// What `startRegistrar` needs: the registrar's flags as typed options (flags.ts builds them).

import type { Clock, Logger } from "../../base/index.ts";

export interface RegistrarOptions {
  /** --csi-address: the driver's socket as this process sees it. Default "/run/csi/socket". */
  csiAddress: string;
  /**
   * --kubelet-registration-path (required): the driver's socket as the kubelet sees it, returned
   * to the kubelet as GetInfo's `endpoint`.
   */
  kubeletRegistrationPath: string;
  /** --plugin-registration-path: where the registration socket goes. Default "/registration". */
  pluginRegistrationPath: string;
  /** --timeout in ms: GetPluginInfo's deadline and the /healthz GetInfo's. Default 1000. */
  timeoutMs?: number;
  /** --http-endpoint (or ":<--health-port>"): "" (default) = no diagnostics server. */
  httpEndpoint?: string;
  /** --enable-pprof: profiles at /debug/pprof/ on the diagnostics server. Default false. */
  enablePprof?: boolean;
  logger?: Logger;
  /** Clock of the "still connecting" warnings. Default the real clock. */
  clock?: Clock;
  /** Called once the registration socket serves, with its path and the diagnostics URL if any. */
  onServing?: (info: { socketPath: string; driverName: string; httpUrl?: string }) => void;
}
