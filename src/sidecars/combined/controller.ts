// `csikit sidecars`: the controller-side sidecars of one driver in one process (upstream
// KEP-4958's all-in-one form). What is shared and what is not:
//   - ONE CSI connection (--csi-address) with one csi_sidecar_operations_seconds histogram;
//   - ONE informer factory under the shared-read identity (--kubeconfig), so each resource is
//     listed and watched once however many sidecars read it; each sidecar sees it through an
//     InformerScope (its own handlers, its own resync, its own work queues and workers);
//   - ONE diagnostics endpoint (--http-endpoint): every sidecar's metrics under the names and
//     labels upstream uses, and per sidecar /healthz/leader-election-<component>;
//   - per sidecar: its OWN Kubernetes client from its own kubeconfig (--<component>.kubeconfig,
//     default --kubeconfig) for every write and live read, so the cluster still enforces each
//     sidecar's Role; its own Lease with upstream's name (default), or with --single-lease one
//     Lease `csikit-sidecars-<driver>` for all, held under the shared identity.
// Each sidecar runs its usual start-up (driver discovery, fatal on error). One sidecar failing
// (or losing its Lease) stops the others and the process exits non-zero, as the separate
// containers of one pod would be restarted.

import {
  CsikitError,
  childController,
  realClock,
  silentLogger,
  whenAborted,
  type Clock,
  type Logger,
} from "../../base/index.ts";
import { CsiClient } from "../../csi/index.ts";
import {
  CsiOperationMetrics,
  InformerFactory,
  LeaderElector,
  LeadershipLostError,
  Registry,
  WorkQueueMetrics,
  collectDefaultMetrics,
  kubeClientFromOptions,
  leaderElectionOptions,
  sanitizeLeaseName,
  startHttpEndpoint,
  type CommonSidecarOptions,
  type HealthCheck,
  type SharedSidecarRuntime,
} from "../../kube/index.ts";

/** The five controller-side sidecars `csikit sidecars` can run. */
export const SIDECAR_COMPONENTS = [
  "provisioner",
  "attacher",
  "resizer",
  "snapshotter",
  "health-monitor",
] as const;
export type SidecarComponent = (typeof SIDECAR_COMPONENTS)[number];

/** One enabled sidecar: its name and how to run it with the shared runtime. */
export interface SidecarRun {
  component: SidecarComponent;
  run(shared: SharedSidecarRuntime, signal: AbortSignal): Promise<void>;
}

export interface SidecarsOptions {
  /** The shared flags: CSI address, endpoint, shared-read kubeconfig and QPS, leader election. */
  shared: CommonSidecarOptions;
  sidecars: readonly SidecarRun[];
  /** One Lease `csikit-sidecars-<driver>` for all instead of one per sidecar. Default false. */
  singleLease?: boolean;
  /** Default timeout of CSI calls that set none (each sidecar sets its own). Default 15 s. */
  csiTimeoutMs?: number;
  logger?: Logger;
  clock?: Clock;
  /** Called with the diagnostics endpoint's URL once it listens (tests, `csikit up`). */
  onHttpEndpoint?: (url: string) => void;
}

/** Runs the sidecars until `signal` aborts; rejects when any of them fails. */
export async function runSidecars(options: SidecarsOptions, signal: AbortSignal): Promise<void> {
  if (options.sidecars.length === 0)
    throw new CsikitError(
      "CSIKIT_ERR_CONFIG",
      `no sidecar enabled: give one or more of ${SIDECAR_COMPONENTS.map((c) => `--${c}`).join(", ")}`,
    );
  const logger = options.logger ?? silentLogger;
  const clock = options.clock ?? realClock;
  const { shared: flags } = options;
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const csiMetrics = new CsiOperationMetrics({ registry });
  const csi = CsiClient.connect(flags.csiAddress, {
    logger,
    timeoutMs: options.csiTimeoutMs ?? 15_000,
    onCall: csiMetrics.observer(),
  });
  // The shared-read identity: lists and watches for every sidecar, nothing else (and the one
  // Lease with --single-lease).
  const reader = kubeClientFromOptions({ ...flags, userAgent: "csikit-sidecars", clock });
  const { controller: stop, dispose } = childController(signal);
  const checks: Record<string, HealthCheck> = {};
  try {
    const endpoint =
      flags.httpEndpoint !== ""
        ? await startHttpEndpoint(
            {
              address: flags.httpEndpoint,
              metricsPath: flags.metricsPath,
              registry,
              healthChecks: checks,
              logger,
            },
            stop.signal,
          )
        : undefined;
    if (endpoint) options.onHttpEndpoint?.(endpoint.url);
    const runtime: SharedSidecarRuntime = {
      csi,
      csiMetrics,
      registry,
      queueMetrics: new WorkQueueMetrics({ registry }),
      factory: new InformerFactory({ client: reader, clock, logger: logger.with({ informers: "shared" }) }),
      processSignal: stop.signal,
      addHealthChecks: (more) => Object.assign(checks, more),
    };
    if (options.singleLease && flags.leaderElection.enabled) {
      const name = await driverNameOf(csi, stop.signal);
      const elector = new LeaderElector(
        leaderElectionOptions(flags.leaderElection, {
          client: kubeClientFromOptions({ ...flags, userAgent: "csikit-sidecars-leader-election", clock }),
          leaseName: sanitizeLeaseName(`csikit-sidecars-${name}`),
          logger,
          clock,
        }),
      );
      checks["leader-election"] = elector.healthCheck();
      runtime.runElected = oneLease(elector, stop.signal);
    }
    let failure: Error | undefined;
    await Promise.all(
      options.sidecars.map(async (sidecar) => {
        try {
          await sidecar.run(runtime, stop.signal);
        } catch (error) {
          failure ??= error instanceof Error ? error : new Error(String(error));
          logger.error("sidecar failed: stopping the others", {
            sidecar: sidecar.component,
            err: String(error),
          });
        } finally {
          // Any sidecar ending (failed or not) ends the process: a pod's container exits as a whole.
          stop.abort();
        }
      }),
    );
    await endpoint?.stopped;
    if (failure !== undefined) throw failure;
  } finally {
    stop.abort();
    dispose();
    csi.close();
    reader.close();
  }
}

async function driverNameOf(csi: CsiClient, signal: AbortSignal): Promise<string> {
  await csi.waitForReady({ signal });
  const info = await csi.identity.getPluginInfo({}, { signal });
  if (info.name === "")
    throw new CsikitError("CSIKIT_ERR_DRIVER", "driver returned an empty name from GetPluginInfo");
  return info.name;
}

/**
 * One elector for every sidecar: each one's work starts once the process leads and stops when
 * the lease is lost (then that sidecar's run rejects with LeadershipLostError, as alone).
 */
function oneLease(
  elector: LeaderElector,
  signal: AbortSignal,
): NonNullable<SharedSidecarRuntime["runElected"]> {
  let lead: (leadSignal: AbortSignal) => void = () => {};
  const leading = new Promise<AbortSignal>((resolve) => (lead = resolve));
  const electing = elector.run(async (leadSignal) => {
    lead(leadSignal);
    await whenAborted(leadSignal);
  }, signal);
  electing.catch(() => undefined);
  return async (work, workSignal) => {
    const leadSignal = await Promise.race([leading, whenAborted(workSignal).then(() => undefined)]);
    if (!leadSignal) return;
    await work(AbortSignal.any([workSignal, leadSignal]));
    if (leadSignal.aborted && !workSignal.aborted)
      throw new LeadershipLostError(`lost leadership of lease ${elector.namespace}/${elector.name}`);
  };
}
