// The start-up every controller sidecar shares (external-attacher, -provisioner, -resizer run
// the same main): a metrics registry with process metrics, the CSI connection with its
// operation metrics, driver discovery (fatal on error, as upstream), the `migrated` label for
// a CSI migration target, the Kubernetes client, the optional leader election with its own
// client, the diagnostics endpoint, then the sidecar's controllers — under the lease when
// election is on. Resolves once everything has stopped after `signal` aborts; rejects with
// LeadershipLostError when the lease is lost; closes the CSI and Kubernetes connections
// either way.

import { realClock, silentLogger, type Clock, type Logger } from "../base/index.ts";
import { CsiClient } from "../csi/index.ts";
import { kubeClientFromOptions, type KubeClient } from "./client.ts";
import type { CommonSidecarOptions } from "./flags.ts";
import { startHttpEndpoint, type HttpEndpoint, type RouteHandler } from "./http-endpoint.ts";
import { leaseName, type LeaseComponent } from "./lease-name.ts";
import { LeaderElector, leaderElectionOptions, runElected } from "./leaderelection.ts";
import { CsiOperationMetrics } from "./metrics.ts";
import { Registry, collectDefaultMetrics } from "./prom.ts";
import { WorkQueueMetrics } from "./workqueue-metrics.ts";

/** The options of a sidecar that the shared start-up reads. */
export interface SidecarShellOptions extends CommonSidecarOptions {
  timeoutMs: number;
  /** --max-grpc-log-length where the sidecar has it. */
  maxGrpcLogLength?: number;
  logger?: Logger;
  clock?: Clock;
  /** Called with the diagnostics endpoint's URL once it listens (tests, `csikit up`). */
  onHttpEndpoint?: (url: string) => void;
}

/** What the shared start-up hands a sidecar's own code. */
export interface SidecarParts<D> {
  driver: D;
  client: KubeClient;
  csi: CsiClient;
  registry: Registry;
  queueMetrics: WorkQueueMetrics;
  logger: Logger;
  clock: Clock;
}

export interface SidecarSpec<D extends { name: string }> {
  /** Names the Lease (leaseName) and, as `csi-<component>`, the user agents. */
  component: LeaseComponent;
  discover(csi: CsiClient, signal: AbortSignal): Promise<D>;
  /** Fields of the "driver ready" log line. */
  describe(driver: D): Record<string, unknown>;
  /** A CSI migration target's calls carry `migrated`, as upstream's WithMigration. */
  isMigrationTarget(driverName: string): boolean;
  /** Whether to run under leader election (the flag, after any sidecar-specific override). */
  leaderElection: boolean;
  /** Give the lease up on exit (--leader-election-release-on-cancel where the sidecar has it). */
  releaseLeaseOnExit?: boolean;
  /** Extra routes on the diagnostics endpoint (pprof). */
  routes?: Record<string, RouteHandler>;
  /**
   * The sidecar's start-up checks that run before any election, as upstream's main does them
   * (a fatal misconfiguration must fail every replica, not only the leader); returns the work
   * to run while leading.
   */
  prepare(parts: SidecarParts<D>, signal: AbortSignal): Promise<(signal: AbortSignal) => Promise<void>>;
}

export async function runSidecar<D extends { name: string }>(
  options: SidecarShellOptions,
  spec: SidecarSpec<D>,
  signal: AbortSignal,
): Promise<void> {
  const logger = options.logger ?? silentLogger;
  const clock = options.clock ?? realClock;
  const userAgent = `csi-${spec.component}`;
  const registry = new Registry();
  // process_* and nodejs_* metrics, as Go sidecars export process_* and go_* by default.
  collectDefaultMetrics({ register: registry });
  const csiMetrics = new CsiOperationMetrics({ registry });
  const csi = CsiClient.connect(options.csiAddress, {
    logger,
    timeoutMs: options.timeoutMs,
    ...(options.maxGrpcLogLength !== undefined ? { maxLogLength: options.maxGrpcLogLength } : {}),
    onCall: csiMetrics.observer(),
  });
  let client: KubeClient | undefined;
  try {
    const driver = await spec.discover(csi, signal);
    csiMetrics.setDriverName(driver.name);
    if (spec.isMigrationTarget(driver.name)) csiMetrics.enableMigratedLabel();
    logger.info(1, "driver ready", { driver: driver.name, ...spec.describe(driver) });
    client = kubeClientFromOptions({ ...options, userAgent, clock });
    const queueMetrics = new WorkQueueMetrics({ registry });
    const work = await spec.prepare({ driver, client, csi, registry, queueMetrics, logger, clock }, signal);
    const elector = spec.leaderElection
      ? new LeaderElector({
          ...leaderElectionOptions(options.leaderElection, {
            // Its own token bucket, so a busy main client never starves lease renewal.
            client: kubeClientFromOptions({ ...options, userAgent: `${userAgent}-leader-election`, clock }),
            leaseName: leaseName(spec.component, driver.name),
            logger,
            clock,
          }),
          ...(spec.releaseLeaseOnExit !== undefined ? { releaseOnCancel: spec.releaseLeaseOnExit } : {}),
        })
      : undefined;
    let endpoint: HttpEndpoint | undefined;
    if (options.httpEndpoint !== "") {
      endpoint = await startHttpEndpoint(
        {
          address: options.httpEndpoint,
          metricsPath: options.metricsPath,
          registry,
          healthChecks: elector ? { "leader-election": elector.healthCheck() } : {},
          routes: spec.routes ?? {},
          logger,
        },
        signal,
      );
      options.onHttpEndpoint?.(endpoint.url);
    }
    if (elector) await runElected(elector, work, signal);
    else await work(signal);
    await endpoint?.stopped;
  } finally {
    csi.close();
    client?.close();
  }
}
