// The livenessprobe's lifecycle (upstream livenessprobe's main):
//   1. connect to the driver's socket with no time limit, so the probe does not crash-loop
//      while the driver starts, then GetPluginInfo once: its name labels the metrics; an error
//      there is fatal (the orchestrator restarts us);
//   2. serve /healthz (probe.ts) on --http-endpoint, or on all interfaces at --health-port;
//      metrics (`csi_sidecar_operations_seconds{driver_name,…}` for every CSI call, and the
//      process metrics) at --metrics-path on the same server when --http-endpoint is given, or
//      on the deprecated --metrics-address server;
//   3. stop when `signal` aborts: servers closed, connection closed.
// Unlike upstream, which dials the driver afresh for each request, one connection is kept: its
// channel reconnects by itself (backoff capped at 1s), and a request made while it is down
// fails at once with Unavailable, which is what a fresh dial would report.

import { CsikitError, errorMessage, realClock, silentLogger, whenAborted } from "../../base/index.ts";
import { CsiClient } from "../../csi/index.ts";
import {
  CsiOperationMetrics,
  Registry,
  collectDefaultMetrics,
  startHttpEndpoint,
  type HttpEndpoint,
} from "../../kube/diagnostics.ts";
import type { LivenessProbeOptions } from "./options.ts";
import { probeRoute } from "./probe.ts";

const DEFAULT_PROBE_TIMEOUT_MS = 1000;

/** Runs the livenessprobe until `signal` aborts. */
export async function startLivenessProbe(options: LivenessProbeOptions, signal: AbortSignal): Promise<void> {
  const logger = options.logger ?? silentLogger;
  const registry = new Registry();
  // process_* and nodejs_* metrics, as Go sidecars export process_* and go_* by default.
  collectDefaultMetrics({ register: registry });
  const csiMetrics = new CsiOperationMetrics({ registry });
  const client = CsiClient.connect(options.csiAddress, { logger, onCall: csiMetrics.observer() });
  const servers = new AbortController();
  const endpoints: HttpEndpoint[] = [];
  try {
    logger.info(1, "Connecting to CSI driver", { csiAddress: options.csiAddress });
    await client.waitForConnection({ signal, clock: options.clock ?? realClock });
    logger.info(0, "Calling CSI driver to discover driver name");
    let driverName: string;
    try {
      driverName = (await client.identity.getPluginInfo({}, { signal })).name;
    } catch (error) {
      signal.throwIfAborted();
      throw new CsikitError("CSIKIT_ERR_DRIVER", `failed to get CSI driver name: ${errorMessage(error)}`, {
        cause: error,
      });
    }
    logger.info(0, "CSI driver name", { driver: driverName });
    csiMetrics.setDriverName(driverName);
    const healthz = probeRoute({
      client,
      timeoutMs: options.probeTimeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS,
      driverName,
      logger,
    });
    const metricsPath = options.metricsPath ?? "/metrics";
    const main = await startHttpEndpoint(
      {
        address: options.address,
        metricsPath,
        ...(options.metricsOnAddress ? { registry } : {}),
        routes: { "/healthz": healthz },
        logger,
      },
      servers.signal,
    );
    endpoints.push(main);
    logger.info(0, "ServeMux listening", { address: options.address });
    let metricsUrl: string | undefined;
    if (options.metricsAddress) {
      const metricsOnly = await startHttpEndpoint(
        {
          address: options.metricsAddress,
          metricsPath,
          registry,
          // The metrics-only server of upstream has no health check.
          routes: { "/healthz": () => Promise.resolve({ status: 404, body: "404 page not found\n" }) },
          logger,
        },
        servers.signal,
      );
      endpoints.push(metricsOnly);
      metricsUrl = metricsOnly.url;
      logger.info(0, "Separate metrics ServeMux listening", { address: options.metricsAddress });
    }
    options.onServing?.({ driverName, url: main.url, ...(metricsUrl === undefined ? {} : { metricsUrl }) });
    await whenAborted(signal);
  } catch (error) {
    if (!signal.aborted) throw error;
  } finally {
    servers.abort();
    await Promise.all(endpoints.map((e) => e.stopped));
    client.close();
  }
}
