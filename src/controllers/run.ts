// The composition root of `csikit controllers` (and of the control-plane part of `csikit up`):
// one process running the cluster's loops, as kube-controller-manager does.
//
// - The registry: each loop is ONE entry (KCM name, accepted aliases, start function). A start
//   function gets the shared client, informer factory and logger plus the knobs, requests its
//   informers synchronously, and resolves once it has fully stopped.
// - `--controllers` semantics are KCM's IsControllerEnabled: the first entry naming the loop
//   decides ("foo" on, "-foo" off); otherwise "*" enables every loop not disabled by default;
//   an unknown name is an error naming it. A loop whose required feature gates are off does
//   not start even when named (KCM's requiredFeatureGates), and the log says so.
// - With leader election, every loop and every informer runs only while this process holds
//   the Lease (kube-system/kube-controller-manager by default), as KCM; losing it rejects
//   with LeadershipLostError after the loops stopped (the CLI exits non-zero, as KCM does).
// - When one loop fails, the others are stopped and the failure is reported.

import type { FeatureGates } from "../migration/index.ts";
import { childController, errorMessage, silentLogger, type Logger, FlagError } from "../base/index.ts";
import { InformerFactory, runWithLeaderElection, type KubeClient } from "../kube/index.ts";
import { startAttachDetachController } from "./attachdetach/index.ts";
import { startGarbageCollector } from "./gc/index.ts";
import {
  startPersistentVolumeController,
  startPvProtectionController,
  startVacProtectionController,
  startPvcProtectionController,
} from "./pv/index.ts";
import { startClusterRoleAggregationController } from "./rbac/index.ts";
import { startScheduler } from "./scheduler/index.ts";
import { startStatefulSetController } from "./statefulset/index.ts";
import { startEphemeralVolumeController } from "./ephemeral/index.ts";
import type { ControllerVolumeMetrics } from "./metrics.ts";
import { startReplicaSetController } from "./replicaset/index.ts";
import { startDeploymentController } from "./deployment/index.ts";
import { startDaemonSetController } from "./daemonset/index.ts";
import { startJobController } from "./job/index.ts";
import { startSELinuxWarningController } from "./selinux-warning/index.ts";
import { gateEnabled } from "./common/index.ts";

/** What every loop's start function receives. */
export interface ControllerContext {
  client: KubeClient;
  informers: InformerFactory;
  logger: Logger;
  knobs: ControllerKnobs;
  /** kube-controller-manager's metrics the loops feed (the CLI's registry). Default none. */
  volumeMetrics?: ControllerVolumeMetrics;
}

/** Loop-specific settings from KCM's flags (each with KCM's default). */
export interface ControllerKnobs {
  /** --pvclaimbinder-sync-period. Default 15000 ms. */
  pvClaimBinderSyncPeriodMs?: number;
  /**
   * The PV binder's workers per queue (csikit's own --pv-binder-workers: KCM has no such flag
   * and runs one volume worker and one claim worker). Default 1.
   */
  pvBinderWorkers?: number;
  /** Resolved --feature-gates: the --kubernetes-version release's storage gates plus CSI migration's. Default: each loop's own. */
  featureGates?: FeatureGates;
  /** --concurrent-gc-syncs. Default 20. */
  concurrentGcSyncs?: number;
  /** How long a detach waits for an unresponsive node to unmount (KCM: a fixed 6 minutes). Default 360000 ms. */
  attachDetachMaxWaitForUnmountMs?: number;
  /** --concurrent-statefulset-syncs. Default 5. */
  concurrentStatefulSetSyncs?: number;
  /** --concurrent-ephemeralvolume-syncs. Default 5. */
  concurrentEphemeralVolumeSyncs?: number;
  /** --concurrent-replicaset-syncs. Default 5. */
  concurrentReplicaSetSyncs?: number;
  /** --concurrent-deployment-syncs. Default 5. */
  concurrentDeploymentSyncs?: number;
  /** --concurrent-daemonset-syncs. Default 2. */
  concurrentDaemonSetSyncs?: number;
  /** --concurrent-job-syncs. Default 5. */
  concurrentJobSyncs?: number;
  /** The Job loop's first pod-failure backoff (upstream: a fixed 10 s). Default 10000 ms. */
  jobPodFailureBackoffMs?: number;
}

export interface ControllerLoop {
  /** kube-controller-manager's name for the loop. */
  name: string;
  /** Older names `--controllers` also accepts. */
  aliases?: readonly string[];
  /** Not enabled by "*". Default false. */
  disabledByDefault?: boolean;
  /** Feature gates that must all be on for the loop to start. Default none. */
  requiredFeatureGates?: readonly string[];
  start(context: ControllerContext, signal: AbortSignal): Promise<void>;
}

export const CONTROLLER_LOOPS: readonly ControllerLoop[] = [
  {
    name: "persistentvolume-binder-controller",
    aliases: ["persistentvolume-binder"],
    start: ({ client, informers, logger, knobs }, signal) =>
      startPersistentVolumeController(
        {
          client,
          informers,
          logger,
          ...(knobs.pvClaimBinderSyncPeriodMs !== undefined
            ? { syncPeriodMs: knobs.pvClaimBinderSyncPeriodMs }
            : {}),
          ...(knobs.pvBinderWorkers !== undefined ? { workers: knobs.pvBinderWorkers } : {}),
          ...(knobs.featureGates !== undefined ? { featureGates: knobs.featureGates } : {}),
        },
        signal,
      ),
  },
  {
    name: "persistentvolumeclaim-protection-controller",
    aliases: ["pvc-protection"],
    start: ({ client, informers, logger, knobs }, signal) =>
      startPvcProtectionController(
        {
          client,
          informers,
          logger,
          ...(knobs.featureGates !== undefined ? { featureGates: knobs.featureGates } : {}),
        },
        signal,
      ),
  },
  {
    name: "persistentvolume-protection-controller",
    aliases: ["pv-protection"],
    start: ({ client, informers, logger }, signal) =>
      startPvProtectionController({ client, informers, logger }, signal),
  },
  {
    name: "volumeattributesclass-protection-controller",
    aliases: ["vac-protection"],
    requiredFeatureGates: ["VolumeAttributesClass"],
    start: ({ client, informers, logger }, signal) =>
      startVacProtectionController({ client, informers, logger }, signal),
  },
  {
    name: "garbage-collector-controller",
    aliases: ["garbagecollector"],
    start: ({ client, informers, logger, knobs }, signal) =>
      startGarbageCollector(
        {
          client,
          informers,
          logger,
          ...(knobs.concurrentGcSyncs !== undefined ? { workers: knobs.concurrentGcSyncs } : {}),
        },
        signal,
      ),
  },
  {
    name: "persistentvolume-attach-detach-controller",
    aliases: ["attachdetach"],
    start: ({ client, informers, logger, knobs }, signal) =>
      startAttachDetachController(
        {
          client,
          informers,
          logger,
          ...(knobs.attachDetachMaxWaitForUnmountMs !== undefined
            ? { maxWaitForUnmountMs: knobs.attachDetachMaxWaitForUnmountMs }
            : {}),
          ...(knobs.featureGates !== undefined ? { featureGates: knobs.featureGates } : {}),
        },
        signal,
      ),
  },
  {
    name: "clusterrole-aggregation-controller",
    aliases: ["clusterrole-aggregation"],
    start: ({ client, informers, logger }, signal) =>
      startClusterRoleAggregationController({ client, informers, logger }, signal),
  },
  {
    name: "statefulset-controller",
    aliases: ["statefulset"],
    start: ({ client, informers, logger, knobs }, signal) =>
      startStatefulSetController(
        {
          client,
          informers,
          logger,
          ...(knobs.concurrentStatefulSetSyncs !== undefined
            ? { workers: knobs.concurrentStatefulSetSyncs }
            : {}),
        },
        signal,
      ),
  },
  {
    name: "ephemeral-volume-controller",
    aliases: ["ephemeral-volume"],
    start: ({ client, informers, logger, knobs }, signal) =>
      startEphemeralVolumeController(
        {
          client,
          informers,
          logger,
          ...(knobs.concurrentEphemeralVolumeSyncs !== undefined
            ? { workers: knobs.concurrentEphemeralVolumeSyncs }
            : {}),
        },
        signal,
      ),
  },
  {
    // kube-scheduler is a process of its own upstream; here it is one more loop, so
    // `--controllers=-scheduler` leaves placement to a real kube-scheduler.
    name: "scheduler",
    aliases: ["kube-scheduler"],
    start: ({ client, informers, logger, knobs }, signal) =>
      startScheduler(
        {
          client,
          informers,
          logger,
          ...(knobs.featureGates !== undefined ? { featureGates: knobs.featureGates } : {}),
        },
        signal,
      ),
  },
  {
    name: "replicaset-controller",
    aliases: ["replicaset"],
    start: ({ client, informers, logger, knobs }, signal) =>
      startReplicaSetController(
        { client, informers, logger, ...optional("workers", knobs.concurrentReplicaSetSyncs) },
        signal,
      ),
  },
  {
    name: "deployment-controller",
    aliases: ["deployment"],
    start: ({ client, informers, logger, knobs }, signal) =>
      startDeploymentController(
        { client, informers, logger, ...optional("workers", knobs.concurrentDeploymentSyncs) },
        signal,
      ),
  },
  {
    name: "daemonset-controller",
    aliases: ["daemonset"],
    start: ({ client, informers, logger, knobs }, signal) =>
      startDaemonSetController(
        { client, informers, logger, ...optional("workers", knobs.concurrentDaemonSetSyncs) },
        signal,
      ),
  },
  {
    name: "job-controller",
    aliases: ["job"],
    start: ({ client, informers, logger, knobs }, signal) =>
      startJobController(
        {
          client,
          informers,
          logger,
          ...optional("workers", knobs.concurrentJobSyncs),
          ...optional("podFailureBackoffStartMs", knobs.jobPodFailureBackoffMs),
        },
        signal,
      ),
  },
  {
    // Off unless named; needs SELinuxChangePolicy (GA from 1.36), as KCM's descriptor.
    name: "selinux-warning-controller",
    disabledByDefault: true,
    requiredFeatureGates: ["SELinuxChangePolicy"],
    start: ({ client, informers, logger, knobs, volumeMetrics }, signal) =>
      startSELinuxWarningController(
        {
          client,
          informers,
          logger,
          ...(knobs.featureGates !== undefined ? { featureGates: knobs.featureGates } : {}),
          onCache: (cache) => volumeMetrics?.attachSELinuxConflicts(() => cache.conflicts()),
        },
        signal,
      ),
  },
];

/** `{ [key]: value }` when the knob is set, `{}` otherwise (exactOptionalPropertyTypes). */
function optional<K extends string>(key: K, value: number | undefined): { [P in K]?: number } {
  return value === undefined ? {} : ({ [key]: value } as { [P in K]?: number });
}

/** The loop a `--controllers` word names (its name or an alias, without a leading "-"). */
function loopNamed(loops: readonly ControllerLoop[], word: string): ControllerLoop | undefined {
  return loops.find((loop) => loop.name === word || (loop.aliases ?? []).includes(word));
}

/** Checks every `--controllers` word; throws naming the first unknown one. */
export function validateControllerNames(loops: readonly ControllerLoop[], words: readonly string[]): void {
  for (const word of words) {
    if (word === "*") continue;
    const name = word.startsWith("-") ? word.slice(1) : word;
    if (!loopNamed(loops, name)) {
      const known = loops.map((loop) => loop.name).join(", ");
      throw new FlagError(`"${name}" is not in the list of known controllers (${known})`);
    }
  }
}

/** KCM's IsControllerEnabled over names and aliases. */
export function isControllerEnabled(loop: ControllerLoop, words: readonly string[]): boolean {
  const names = new Set([loop.name, ...(loop.aliases ?? [])]);
  let star = false;
  for (const word of words) {
    if (names.has(word)) return true;
    if (word.startsWith("-") && names.has(word.slice(1))) return false;
    if (word === "*") star = true;
  }
  return star && loop.disabledByDefault !== true;
}

export interface LeaderElectConfig {
  /** --leader-elect. */
  enabled: boolean;
  /** --leader-elect-resource-name. Default "kube-controller-manager". */
  name?: string;
  /** --leader-elect-resource-namespace. Default "kube-system". */
  namespace?: string;
  /** --leader-elect-lease-duration. Default 15000. */
  leaseDurationMs?: number;
  /** --leader-elect-renew-deadline. Default 10000. */
  renewDeadlineMs?: number;
  /** --leader-elect-retry-period. Default 2000. */
  retryPeriodMs?: number;
  /** Default hostname_uuid. */
  identity?: string;
}

export interface RunControllersOptions {
  client: KubeClient;
  logger?: Logger;
  /** --controllers words. Default ["*"]. */
  controllers?: readonly string[];
  leaderElection?: LeaderElectConfig;
  knobs?: ControllerKnobs;
  /** The registry. Default CONTROLLER_LOOPS. */
  loops?: readonly ControllerLoop[];
  /** Deep-freeze cached objects so a loop mutating the cache throws (tests). Default false. */
  freezeCache?: boolean;
  /** Called with the names of the loops about to start (for logs and tests). */
  onStart?: (names: readonly string[]) => void;
  /** kube-controller-manager's volume metrics, fed from the loops' informers. Default none. */
  volumeMetrics?: ControllerVolumeMetrics;
}

export async function runControllers(options: RunControllersOptions, signal: AbortSignal): Promise<void> {
  const loops = options.loops ?? CONTROLLER_LOOPS;
  const words = options.controllers ?? ["*"];
  validateControllerNames(loops, words);
  const logger = options.logger ?? silentLogger;
  const enabled = loops.filter((loop) => {
    if (!isControllerEnabled(loop, words)) return false;
    const off = (loop.requiredFeatureGates ?? []).filter(
      (gate) => !gateEnabled(options.knobs?.featureGates, gate),
    );
    if (off.length > 0)
      logger.info(1, "controller is disabled by a feature gate", { controller: loop.name, gates: off });
    return off.length === 0;
  });
  const election = options.leaderElection ?? { enabled: false };

  const runAll = async (runSignal: AbortSignal): Promise<void> => {
    const { controller, dispose } = childController(runSignal);
    const informers = new InformerFactory({
      client: options.client,
      logger,
      freeze: options.freezeCache ?? false,
    });
    const context: ControllerContext = {
      client: options.client,
      informers,
      logger,
      knobs: options.knobs ?? {},
      ...(options.volumeMetrics !== undefined ? { volumeMetrics: options.volumeMetrics } : {}),
    };
    options.volumeMetrics?.attach(informers);
    logger.info(1, "starting controllers", { controllers: enabled.map((loop) => loop.name) });
    options.onStart?.(enabled.map((loop) => loop.name));
    let failure: unknown;
    const runs = enabled.map((loop) =>
      loop
        .start({ ...context, logger: logger.with({ loop: loop.name }) }, controller.signal)
        .catch((error: unknown) => {
          failure ??= error;
          logger.error("controller failed", { controller: loop.name, err: errorMessage(error) });
          controller.abort();
        }),
    );
    const informerRun = informers.start(controller.signal);
    try {
      await Promise.all([...runs, informerRun]);
    } finally {
      dispose();
    }
    if (failure !== undefined) throw failure instanceof Error ? failure : new Error(errorMessage(failure));
  };

  await runWithLeaderElection(
    {
      enabled: election.enabled,
      client: options.client,
      name: election.name ?? "kube-controller-manager",
      namespace: election.namespace ?? "kube-system",
      leaseDurationMs: election.leaseDurationMs ?? 15_000,
      renewDeadlineMs: election.renewDeadlineMs ?? 10_000,
      retryPeriodMs: election.retryPeriodMs ?? 2_000,
      ...(election.identity !== undefined ? { identity: election.identity } : {}),
      logger,
    },
    runAll,
    signal,
  );
}
