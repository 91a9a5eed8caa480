// The start-up every controller sidecar shares (external-attacher, -provisioner, -resizer run
// the same main): a metrics registry with process metrics, the CSI connection with its
// operation metrics, driver discovery (fatal on error, as upstream), the `migrated` label for
// a CSI migration target, the Kubernetes client, the optional leader election with its own
// client, the diagnostics endpoint, then the sidecar's controllers — under the lease when
// election is on. Resolves once everything has stopped after `signal` aborts; rejects with
// LeadershipLostError when the lease is lost; closes the CSI and Kubernetes connections
// either way.
//
// In `csikit sidecars` (one process for several sidecars) the process hands each run a
// `SharedSidecarRuntime`: the one CSI connection and its metrics, the one registry and
// diagnostics endpoint, and the one informer factory (under the shared-read identity). The
// sidecar still builds its OWN Kubernetes client from its own kubeconfig for every write and
// live read, its own Lease (or runs under the process's one Lease), and its own queues.

import { realClock, silentLogger, type Clock, type Logger } from "../base/index.ts";
import { CsiClient } from "../csi/index.ts";
import { kubeClientFromOptions, type KubeClient } from "./client.ts";
import type { CommonSidecarOptions } from "./flags.ts";
import {
  startHttpEndpoint,
  type HealthCheck,
  type HttpEndpoint,
  type RouteHandler,
} from "./http-endpoint.ts";
import { InformerFactory } from "./informer.ts";
import { InformerScope, type InformerSource } from "./informer-scope.ts";
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
  /** Set by `csikit sidecars`: what this sidecar shares with the others in the process. */
  shared?: SharedSidecarRuntime;
}

/** What the sidecars of one `csikit sidecars` process share (see the header). */
export interface SharedSidecarRuntime {
  /** The one CSI connection; the process closes it. */
  csi: CsiClient;
  csiMetrics: CsiOperationMetrics;
  registry: Registry;
  queueMetrics: WorkQueueMetrics;
  /** The one informer factory, under the shared-read identity. */
  factory: InformerFactory;
  /** The process's signal: shared informers run until it aborts. */
  processSignal: AbortSignal;
  /** Adds checks to the process's diagnostics endpoint (/healthz/<name>). */
  addHealthChecks(checks: Record<string, HealthCheck>): void;
  /** With one Lease for all (--single-lease): runs the work while the process leads. */
  runElected?: (work: (signal: AbortSignal) => Promise<void>, signal: AbortSignal) => Promise<void>;
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
  /**
   * The informers for this run: a factory of the sidecar's own over `client`, or, in
   * `csikit sidecars`, a scope of the process's shared factory. `resyncPeriodMs` is the
   * sidecar's resync of its own handlers (0 = off).
   */
  informers(options: { resyncPeriodMs?: number }): InformerSource;
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
  const shared = options.shared;
  const registry = shared?.registry ?? new Registry();
  // process_* and nodejs_* metrics, as Go sidecars export process_* and go_* by default.
  if (!shared) collectDefaultMetrics({ register: registry });
  const csiMetrics = shared?.csiMetrics ?? new CsiOperationMetrics({ registry });
  const csi =
    shared?.csi ??
    CsiClient.connect(options.csiAddress, {
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
    const own = kubeClientFromOptions({ ...options, userAgent, clock });
    client = own;
    const queueMetrics = shared?.queueMetrics ?? new WorkQueueMetrics({ registry });
    const informers = (request: { resyncPeriodMs?: number }): InformerSource =>
      shared
        ? new InformerScope({
            factory: shared.factory,
            processSignal: shared.processSignal,
            resyncPeriodMs: request.resyncPeriodMs ?? 0,
            clock,
          })
        : new InformerFactory({
            client: own,
            clock,
            logger,
            defaultResyncPeriodMs: request.resyncPeriodMs ?? 0,
          });
    const work = await spec.prepare(
      { driver, client, csi, registry, queueMetrics, logger, clock, informers },
      signal,
    );
    const elector =
      spec.leaderElection && !shared?.runElected
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
    if (shared) {
      // One endpoint for the process: this sidecar's check at /healthz/leader-election-<component>.
      if (elector) shared.addHealthChecks({ [`leader-election-${spec.component}`]: elector.healthCheck() });
    } else if (options.httpEndpoint !== "") {
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
    else if (spec.leaderElection && shared?.runElected) await shared.runElected(work, signal);
    else await work(signal);
    await endpoint?.stopped;
  } finally {
    if (!shared) csi.close();
    client?.close();
  }
}
