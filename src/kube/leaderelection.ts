// Leader election over a coordination.k8s.io/v1 Lease, with client-go's leaderelection
// semantics so csikit replicas and upstream replicas of a sidecar can share one Lease.
//
// State machine (one LeaderElector, driven by `run`):
//   CANDIDATE --tryAcquireOrRenew ok--> LEADER --renew fails for renewDeadline--> LOST
//       ^  every retryPeriod (+ up to 1.2× jitter)      | signal aborts
//       +-- held by someone else, or conflict           v
//                                                    RELEASING (holderIdentity cleared) → STOPPED
// - A lease is "held by someone else" while its holder is not us and the local time since we
//   last SAW the record change is below leaseDurationSeconds. Like client-go, expiry is judged
//   by our own clock from when we observed the record, never by the renewTime written in it,
//   so clock skew between replicas cannot steal a lease.
// - Every write is an update with the resourceVersion we read: a Conflict means someone
//   else wrote first and this attempt fails (retried on the next period).
// - The leader renews every retryPeriod; each renew keeps retrying every retryPeriod until
//   renewDeadline has passed since the attempt began (an in-flight request is cancelled at the
//   deadline). If it never succeeds the leader stops leading: the work's signal aborts,
//   `onStoppedLeading` runs, and `runWithLeaderElection` rejects with LeadershipLostError
//   once the work has returned (upstream sidecars exit; so does csikit's CLI).
// - On shutdown (signal aborts) the work is stopped first, then the lease is released as
//   client-go's ReleaseOnCancel: holderIdentity "", leaseDurationSeconds 1, so a standby
//   takes over at once rather than after a full lease duration.
// - `healthCheck()` fails while we lead but have not renewed for leaseDuration + tolerance
//   (client-go's HealthzAdaptor; csi-lib-utils uses 20s), for /healthz/leader-election.

import { hostname } from "node:os";
import { randomUUID } from "node:crypto";
import {
  CsikitError,
  childController,
  errorMessage,
  realClock,
  silentLogger,
  type Clock,
  type Logger,
} from "../base/index.ts";
import { podNamespace, type KubeClient } from "./client.ts";
import type { LeaderElectionFlagOptions } from "./flags.ts";
import { isConflict, isNotFound } from "./errors.ts";
import { GVR, type LeaseSpec } from "../api/index.ts";
import type { GroupVersionResource, KubeObject } from "./types.ts";

export const LEASES: GroupVersionResource = GVR.leases;

export type { LeaseSpec };

export interface Lease extends KubeObject {
  spec?: LeaseSpec;
}

export class LeadershipLostError extends CsikitError {
  constructor(message: string) {
    super("CSIKIT_ERR_LEADERSHIP_LOST", message);
    this.name = "LeadershipLostError";
  }
}

export interface LeaderElectorOptions {
  client: KubeClient;
  /** Lease name (see leaseName()). */
  name: string;
  namespace: string;
  /** Default hostname + "_" + random UUID, as upstream. */
  identity?: string;
  /** Default 15000. */
  leaseDurationMs?: number;
  /** Default 10000. */
  renewDeadlineMs?: number;
  /** Default 5000. */
  retryPeriodMs?: number;
  /** Labels set on the Lease when this elector creates it. */
  labels?: Record<string, string>;
  /** Tolerance of the health check beyond the lease duration. Default 20000, as csi-lib-utils. */
  healthTimeoutMs?: number;
  clock?: Clock;
  logger?: Logger;
  /** Jitter source in [0,1). Default Math.random. */
  random?: () => number;
  /** Clear holderIdentity when stopped by the signal (client-go ReleaseOnCancel). Default true. */
  releaseOnCancel?: boolean;
}

export interface LeaderCallbacks {
  /** Someone (maybe us) is now seen holding the lease. */
  onNewLeader?(identity: string): void;
  /** Called once when leading ends, for whatever reason. */
  onStoppedLeading?(): void;
}

/** Kubernetes MicroTime: RFC 3339 with microseconds. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

export function defaultIdentity(): string {
  return `${hostname()}_${randomUUID()}`;
}

export class LeaderElector {
  readonly name: string;
  readonly namespace: string;
  readonly identity: string;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  readonly #client: KubeClient;
  readonly #labels: Record<string, string>;
  readonly #healthTimeoutMs: number;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #random: () => number;
  #observed: LeaseSpec | undefined;
  #observedKey = "";
  #observedTime = 0;
  #reportedLeader = "";
  #leading = false;
  readonly #releaseOnCancel: boolean;
  /** Completed acquire/renew attempts, successful or not: for observability and tests. */
  readonly stats = { attempts: 0 };

  constructor(options: LeaderElectorOptions) {
    this.#client = options.client;
    this.name = options.name;
    this.namespace = options.namespace;
    this.identity = options.identity ?? defaultIdentity();
    this.leaseDurationMs = options.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = options.retryPeriodMs ?? 5_000;
    if (this.leaseDurationMs <= this.renewDeadlineMs)
      throw new RangeError("leader election: lease duration must be greater than renew deadline");
    if (this.renewDeadlineMs <= this.retryPeriodMs * 1.2)
      throw new RangeError("leader election: renew deadline must be greater than 1.2 × retry period");
    this.#labels = options.labels ?? {};
    this.#healthTimeoutMs = options.healthTimeoutMs ?? 20_000;
    this.#clock = options.clock ?? realClock;
    this.#logger = (options.logger ?? silentLogger).with({ lease: `${options.namespace}/${options.name}` });
    this.#random = options.random ?? Math.random;
    this.#releaseOnCancel = options.releaseOnCancel ?? true;
  }

  /** True while this elector holds the lease and has not lost it. */
  isLeader(): boolean {
    return this.#leading;
  }

  /** The holder last observed in the Lease ("" when free or unknown). */
  get observedLeader(): string {
    return this.#observed?.holderIdentity ?? "";
  }

  /** For /healthz/leader-election: throws while leading with the renewal overdue. */
  healthCheck(): () => void {
    return () => {
      if (!this.#leading) return;
      const since = this.#clock.now() - this.#observedTime;
      if (since > this.leaseDurationMs + this.#healthTimeoutMs)
        throw new CsikitError(
          "CSIKIT_ERR_LEADERSHIP_LOST",
          `failed election to renew leadership on lease ${this.name}`,
        );
    };
  }

  /**
   * Campaigns, then runs `work` while leading. Resolves "stopped" after the signal aborted
   * (work finished, lease released) or "lost" after leadership was lost (work finished).
   * Rejects only if `work` rejects (after releasing the lease).
   */
  async run(
    work: (signal: AbortSignal) => Promise<void>,
    signal: AbortSignal,
    callbacks: LeaderCallbacks = {},
  ): Promise<"stopped" | "lost"> {
    if (!(await this.#acquire(signal, callbacks))) return "stopped";
    this.#leading = true;
    this.#logger.info(0, "successfully acquired lease", { identity: this.identity });
    const leader = childController(signal);
    let workError: unknown;
    let workFailed = false;
    // Through a resolved promise so a synchronous throw in `work` is handled like a rejection.
    const working = Promise.resolve(leader.controller.signal)
      .then(work)
      .then(
        () => leader.controller.abort(new Error("work finished")),
        (error: unknown) => {
          workFailed = true;
          workError = error;
          leader.controller.abort(new Error("work failed"));
        },
      );
    const lost = await this.#renewLoop(leader.controller.signal, callbacks);
    this.#leading = false;
    leader.controller.abort(new Error(lost ? "leadership lost" : "stopping"));
    await working;
    leader.dispose();
    if (!lost && this.#releaseOnCancel) await this.#release();
    callbacks.onStoppedLeading?.();
    if (workFailed) throw workError;
    if (lost) this.#logger.error("leader election lost", { identity: this.identity });
    return lost ? "lost" : "stopped";
  }

  async #acquire(signal: AbortSignal, callbacks: LeaderCallbacks): Promise<boolean> {
    this.#logger.info(1, "attempting to acquire leader lease", { identity: this.identity });
    while (!signal.aborted) {
      if (await this.#tryAcquireOrRenew(signal, callbacks)) return true;
      const wait = this.retryPeriodMs + this.retryPeriodMs * 1.2 * this.#random();
      try {
        await this.#clock.sleep(wait, signal);
      } catch {
        return false;
      }
    }
    return false;
  }

  /** Returns true when leadership was lost; false when stopped by the signal. */
  async #renewLoop(signal: AbortSignal, callbacks: LeaderCallbacks): Promise<boolean> {
    for (;;) {
      try {
        await this.#clock.sleep(this.retryPeriodMs, signal);
      } catch {
        return false;
      }
      const deadline = new AbortController();
      const cancel = this.#clock.setTimer(this.renewDeadlineMs, () =>
        deadline.abort(new Error("renew deadline")),
      );
      const attempt = AbortSignal.any([signal, deadline.signal]);
      let renewed = false;
      while (!attempt.aborted) {
        if (await this.#tryAcquireOrRenew(attempt, callbacks)) {
          renewed = true;
          break;
        }
        try {
          await this.#clock.sleep(this.retryPeriodMs, attempt);
        } catch {
          break;
        }
      }
      cancel();
      if (signal.aborted) return false;
      if (!renewed) {
        this.#logger.error("failed to renew lease within the renew deadline", {
          renewDeadline: this.renewDeadlineMs,
        });
        return true;
      }
    }
  }

  #observe(spec: LeaseSpec, callbacks: LeaderCallbacks): void {
    const key = JSON.stringify([
      spec.holderIdentity ?? "",
      spec.leaseDurationSeconds ?? 0,
      spec.acquireTime ?? "",
      spec.renewTime ?? "",
      spec.leaseTransitions ?? 0,
    ]);
    if (key !== this.#observedKey) {
      this.#observedKey = key;
      this.#observed = spec;
      this.#observedTime = this.#clock.now();
    }
    const holder = spec.holderIdentity ?? "";
    if (holder !== this.#reportedLeader) {
      this.#reportedLeader = holder;
      if (holder !== "") {
        this.#logger.info(1, "new leader elected", { leader: holder });
        callbacks.onNewLeader?.(holder);
      }
    }
  }

  async #tryAcquireOrRenew(signal: AbortSignal, callbacks: LeaderCallbacks): Promise<boolean> {
    try {
      return await this.#attempt(signal, callbacks);
    } finally {
      this.stats.attempts++;
    }
  }

  async #attempt(signal: AbortSignal, callbacks: LeaderCallbacks): Promise<boolean> {
    const now = this.#clock.now();
    const record: LeaseSpec = {
      holderIdentity: this.identity,
      leaseDurationSeconds: Math.ceil(this.leaseDurationMs / 1000),
      acquireTime: microTime(now),
      renewTime: microTime(now),
      leaseTransitions: 0,
    };
    let lease: Lease;
    try {
      lease = await this.#client.get<Lease>(LEASES, this.name, { namespace: this.namespace }, signal);
    } catch (error) {
      if (signal.aborted) return false;
      if (!isNotFound(error)) {
        this.#logger.warn("error retrieving lease", { err: errorMessage(error) });
        return false;
      }
      try {
        const created = await this.#client.create<Lease>(
          LEASES,
          {
            apiVersion: "coordination.k8s.io/v1",
            kind: "Lease",
            metadata: {
              name: this.name,
              namespace: this.namespace,
              ...(Object.keys(this.#labels).length > 0 ? { labels: this.#labels } : {}),
            },
            spec: record,
          },
          signal,
        );
        this.#observe(created.spec ?? record, callbacks);
        return true;
      } catch (createError) {
        if (!signal.aborted) this.#logger.warn("error creating lease", { err: errorMessage(createError) });
        return false;
      }
    }
    const current = lease.spec ?? {};
    this.#observe(current, callbacks);
    const holder = current.holderIdentity ?? "";
    const durationMs = (current.leaseDurationSeconds ?? 0) * 1000;
    const heldByOther = holder !== "" && holder !== this.identity && this.#observedTime + durationMs > now;
    if (heldByOther) {
      this.#logger.info(4, "lease is held by another candidate and has not yet expired", { holder });
      return false;
    }
    if (holder === this.identity) {
      if (current.acquireTime) record.acquireTime = current.acquireTime;
      record.leaseTransitions = current.leaseTransitions ?? 0;
    } else {
      record.leaseTransitions = (current.leaseTransitions ?? 0) + 1;
    }
    try {
      const updated = await this.#client.update<Lease>(
        LEASES,
        { ...lease, spec: { ...current, ...record } },
        {},
        signal,
      );
      this.#observe(updated.spec ?? record, callbacks);
      return true;
    } catch (error) {
      if (signal.aborted) return false;
      if (isConflict(error)) this.#logger.info(2, "lease update conflicted; another candidate wrote first");
      else this.#logger.warn("failed to update lease", { err: errorMessage(error) });
      return false;
    }
  }

  async #release(): Promise<void> {
    const controller = new AbortController();
    const cancel = this.#clock.setTimer(this.renewDeadlineMs, () =>
      controller.abort(new Error("release timeout")),
    );
    try {
      const lease = await this.#client.get<Lease>(
        LEASES,
        this.name,
        { namespace: this.namespace },
        controller.signal,
      );
      if (lease.spec?.holderIdentity !== this.identity) return;
      const now = microTime(this.#clock.now());
      await this.#client.update<Lease>(
        LEASES,
        {
          ...lease,
          spec: {
            ...lease.spec,
            holderIdentity: "",
            leaseDurationSeconds: 1,
            acquireTime: now,
            renewTime: now,
            leaseTransitions: lease.spec.leaseTransitions ?? 0,
          },
        },
        {},
        controller.signal,
      );
      this.#logger.info(1, "released lease");
    } catch (error) {
      this.#logger.warn("failed to release lease", { err: errorMessage(error) });
    } finally {
      cancel();
    }
  }
}

export interface LeaderElectionOptions extends Omit<LeaderElectorOptions, "client"> {
  /** --leader-election. When false, `run` is called directly. */
  enabled: boolean;
  client: KubeClient;
  callbacks?: LeaderCallbacks;
}

/**
 * Runs `run` under leader election (or directly when disabled). Resolves after the signal
 * aborted and everything stopped (lease released); rejects with LeadershipLostError when the
 * lease was lost, once `run` has returned.
 */
export async function runWithLeaderElection(
  options: LeaderElectionOptions,
  run: (signal: AbortSignal) => Promise<void>,
  signal: AbortSignal,
): Promise<void> {
  if (!options.enabled) {
    await run(signal);
    return;
  }
  const { enabled: _enabled, callbacks, ...electorOptions } = options;
  await runElected(new LeaderElector(electorOptions), run, signal, callbacks);
}

/** `run` under an existing elector; rejects with LeadershipLostError when the lease was lost. */
export async function runElected(
  elector: LeaderElector,
  run: (signal: AbortSignal) => Promise<void>,
  signal: AbortSignal,
  callbacks?: LeaderCallbacks,
): Promise<void> {
  const outcome = await elector.run(run, signal, callbacks);
  if (outcome === "lost")
    throw new LeadershipLostError(
      `lost leadership of lease ${elector.namespace}/${elector.name}: could not renew within ${elector.renewDeadlineMs}ms`,
    );
}

/**
 * LeaderElectionOptions from the common --leader-election-* flags: an empty namespace means
 * the pod's own (POD_NAMESPACE, the service-account namespace file, else "default"), as
 * csi-lib-utils does.
 */
export function leaderElectionOptions(
  flags: LeaderElectionFlagOptions,
  context: {
    client: KubeClient;
    leaseName: string;
    callbacks?: LeaderCallbacks;
    logger?: Logger;
    clock?: Clock;
  },
): LeaderElectionOptions {
  return {
    enabled: flags.enabled,
    client: context.client,
    name: context.leaseName,
    namespace: flags.namespace !== "" ? flags.namespace : podNamespace(),
    leaseDurationMs: flags.leaseDurationMs,
    renewDeadlineMs: flags.renewDeadlineMs,
    retryPeriodMs: flags.retryPeriodMs,
    labels: flags.labels,
    ...(context.callbacks ? { callbacks: context.callbacks } : {}),
    ...(context.logger ? { logger: context.logger } : {}),
    ...(context.clock ? { clock: context.clock } : {}),
  };
}
