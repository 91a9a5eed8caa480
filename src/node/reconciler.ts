// The volume manager's reconciler: drives the actual state (actual-state.ts) to the desired
// state (desired-state.ts) through the operation executor. One pass:
//   1. unpublish pod volumes no pod wants any more (or whose pod is terminating/finished);
//   2. unstage volumes no pod on this node uses;
//   3. for wanted volumes: wait for the VolumeAttachment (attachable drivers) and for
//      status.volumesInUse to list the volume, stage, then publish;
//   4. set pods Running once all their volumes are published; finish graceful deletions once
//      a terminating pod has nothing mounted;
//   5. keep node.status.volumesInUse = wanted ∪ mounted; 6. node-side expansion.
// A pass runs on every informer event, driver (de)registration and operation completion
// (coalesced), plus a fallback tick (100ms, as the kubelet's loop period).

import type { FeatureGates } from "../migration/index.ts";
import { rm, rmdir } from "node:fs/promises";
import type {
  CSIDriver,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  VolumeAttachment,
} from "../api/index.ts";
import { EVENT_REASONS, GVR, parseQuantity, quantityValue } from "../api/index.ts";
import { errorMessage } from "../base/index.ts";
import { objectKey, type SharedInformer } from "../kube/index.ts";
import { ActualState, type PublishedVolume } from "./actual-state.ts";
import { isUncertain, describeError } from "./csi-errors.ts";
import type { CsiVolumePlugin } from "./csi-volume.ts";
import {
  computeDesiredState,
  podIsActive,
  type Caches,
  type DesiredPodVolume,
  type DesiredState,
} from "./desired-state.ts";
import type { DriverRegistry } from "./drivers.ts";
import {
  markNodeExpansionFailed,
  markNodeExpansionInProgress,
  markResizeFinished,
  nodeExpansionSize,
} from "./expansion.ts";
import type { NodeStatusManager } from "./node-status.ts";
import type { OperationExecutor } from "./operation-executor.ts";
import type { NodeContext } from "./options.ts";
import { attachmentName } from "./paths.ts";
import { finishPodDeletion, podIsRunning, setPodRunning } from "./pod-status.ts";
import type { HostVolume, PodRuntime } from "./runtime/index.ts";

/** A cache read by key: an informer's store, or objects fetched one by one (polled-objects.ts). */
export interface KeyedObjects<T> {
  store: { get(key: string): T | undefined };
  /** Whether some asked-for key is not fetched yet (its absence is not yet known). */
  pending?(): boolean;
}

export interface Informers {
  pods: SharedInformer<Pod>;
  claims: KeyedObjects<PersistentVolumeClaim>;
  volumes: KeyedObjects<PersistentVolume>;
  csiDrivers: SharedInformer<CSIDriver>;
  attachments: KeyedObjects<VolumeAttachment>;
}

export interface ReconcilerOptions {
  context: NodeContext;
  informers: Informers;
  drivers: DriverRegistry;
  plugin: CsiVolumePlugin;
  nodeStatus: NodeStatusManager;
  executor: OperationExecutor;
  actual: ActualState;
  attachTimeoutMs: number;
  /** Republish period of volumes whose CSIDriver has requiresRepublish. */
  syncFrequencyMs: number;
  /** The node's --feature-gates (CSI migration). Default 1.32's. */
  featureGates?: FeatureGates;
  /** Runs pods' containers; without it every pod is Running with nothing executed. */
  runtime?: PodRuntime;
  /**
   * A VolumeAttachment of this node reports attachError.errorCode ResourceExhausted (KEP-4876):
   * called once per distinct error, with the volume's driver.
   */
  onAttachResourceExhausted?: (driverName: string) => void;
}

/** gRPC RESOURCE_EXHAUSTED, as VolumeError.errorCode carries it. */
const GRPC_RESOURCE_EXHAUSTED = 8;

export class Reconciler {
  readonly #o: ReconcilerOptions;
  readonly #caches: Caches;
  /** When each (pod volume) started waiting for its attachment. */
  readonly #attachWaitSince = new Map<string, number>();
  /** Per VolumeAttachment, the ResourceExhausted error already reported (its time and message). */
  readonly #exhaustedSeen = new Map<string, string>();
  /** Last problem message evented per pod, so one unresolved volume is not evented every pass. */
  readonly #podProblems = new Map<string, string>();
  /** "<pod volume key>@<size>" of expansions done, so a stale claim in the cache is not expanded twice. */
  readonly #expanded = new Set<string>();
  /** Pods set Running, by UID → the resourceVersion seen then: no second write from a stale cache. */
  readonly #runningWritten = new Map<string, string>();
  /** Pods whose final delete was sent (by UID). */
  readonly #deleted = new Set<string>();
  #ready = false;

  constructor(options: ReconcilerOptions) {
    this.#o = options;
    const { informers } = options;
    this.#caches = {
      claim: (namespace, name) => informers.claims.store.get(`${namespace}/${name}`),
      volume: (name) => informers.volumes.store.get(name),
      csiDriver: (name) => informers.csiDrivers.store.get(name),
      ...(options.featureGates !== undefined ? { featureGates: options.featureGates } : {}),
    };
  }

  #fetching(): boolean {
    const { claims, volumes } = this.#o.informers;
    return (claims.pending?.() ?? false) || (volumes.pending?.() ?? false);
  }

  get caches(): Caches {
    return this.#caches;
  }

  /** Lets passes act (after caches synced and reconstruction). */
  setReady(): void {
    this.#ready = true;
  }

  desired(): DesiredState {
    const { runtime } = this.#o;
    // A terminating pod keeps its volumes while its containers stop.
    const keep = runtime ? (pod: Pod) => runtime.busy(pod.metadata?.uid ?? "") : undefined;
    return computeDesiredState(this.#o.informers.pods.store.list(), this.#caches, keep);
  }

  pass(signal: AbortSignal): void {
    if (!this.#ready || signal.aborted) return;
    const desired = this.desired();
    this.#unpublishUnwanted(desired, signal);
    this.#unstageUnused(desired, signal);
    for (const volume of desired.volumes.values()) this.#mount(volume, signal);
    this.#updatePods(desired, signal);
    this.#reportInUse(desired, signal);
    this.#expand(desired, signal);
  }

  #unpublishUnwanted(desired: DesiredState, signal: AbortSignal): void {
    const { actual, executor, plugin, drivers } = this.#o;
    for (const published of actual.published.values()) {
      // OBSERVATION: still wanted → left to the mount step (which re-publishes if uncertain).
      if (desired.volumes.has(published.key)) continue;
      executor.run(
        `pod:${published.key}`,
        `unpublish:${published.key}`,
        async () => {
          await plugin.unpublish(published, drivers.require(published.driver), signal);
          actual.published.delete(published.key);
          this.#o.context.logger.info(4, "unpublished volume", {
            volume: published.uniqueName,
            pod: published.podUID,
          });
        },
        (error) =>
          this.#podEvent(
            published.podUID,
            "Warning",
            EVENT_REASONS.failedMount.key,
            `UnmountVolume.TearDown failed for volume "${published.specName}" : ${describeError(error)}`,
          ),
      );
    }
  }

  #unstageUnused(desired: DesiredState, signal: AbortSignal): void {
    const { actual, executor, plugin, drivers } = this.#o;
    const wanted = new Set([...desired.volumes.values()].map((v) => v.spec.uniqueName));
    for (const staged of actual.staged.values()) {
      if (wanted.has(staged.uniqueName)) continue;
      // OBSERVATION: not wanted, but a pod still has it published → unpublish first.
      if (actual.publishedOfVolume(staged.uniqueName).length > 0) continue;
      executor.run(
        `vol:${staged.uniqueName}`,
        `unstage:${staged.uniqueName}`,
        async () => {
          await plugin.unstage(staged, drivers.require(staged.driver), signal);
          actual.staged.delete(staged.uniqueName);
          this.#o.context.logger.info(4, "unstaged volume", { volume: staged.uniqueName });
        },
        (error) =>
          this.#o.context.logger.warn("UnmountDevice failed", {
            volume: staged.uniqueName,
            err: describeError(error),
          }),
      );
    }
  }

  /**
   * NodePublishVolume again for a mounted volume of a requiresRepublish driver. A failure leaves
   * the volume mounted (the pod keeps its data) and is retried at the next period; it is reported
   * as the kubelet reports a failed SetUp.
   */
  #republish(
    volume: DesiredPodVolume,
    published: PublishedVolume,
    csiDriver: CSIDriver,
    signal: AbortSignal,
  ): void {
    const { actual, executor, plugin, drivers, informers, context } = this.#o;
    const { spec } = volume;
    const attachment = informers.attachments.store.get(
      attachmentName(spec.handle, spec.driver, context.nodeName),
    );
    const publishContext = attachment?.status?.attachmentMetadata ?? {};
    executor.run(
      `pod:${volume.key}`,
      `republish:${volume.key}`,
      async () => {
        // Counted as done before the call, so a failing driver is asked once per period.
        actual.published.set(volume.key, { ...published, publishedAt: context.clock.now() });
        await plugin.publish(volume, drivers.require(spec.driver), csiDriver, publishContext, signal);
        context.logger.info(4, "republished volume", { volume: spec.uniqueName, pod: volume.podUID });
      },
      (error) =>
        this.#podEvent(
          volume.podUID,
          "Warning",
          EVENT_REASONS.failedMount.key,
          `MountVolume.SetUp failed for volume "${spec.specName}" : ${describeError(error)}`,
        ),
    );
  }

  #mount(volume: DesiredPodVolume, signal: AbortSignal): void {
    const { actual, executor, plugin, drivers, informers, nodeStatus, context } = this.#o;
    const { spec } = volume;
    const published = actual.published.get(volume.key);
    const csiDriver = this.#caches.csiDriver(spec.driver);
    if (published?.state === "mounted") {
      // OBSERVATION: mounted; a requiresRepublish driver is called again every sync period
      // (fresh ServiceAccount tokens, rotated credentials), as the kubelet's remount does.
      if (!csiDriver?.spec.requiresRepublish) return;
      if (context.clock.now() - (published.publishedAt ?? 0) < this.#o.syncFrequencyMs) return;
      if (executor.isRunning(`pod:${volume.key}`)) return;
      this.#republish(volume, published, csiDriver, signal);
      return;
    }
    if (executor.isRunning(`pod:${volume.key}`)) return;
    let publishContext: Record<string, string> = {};
    // OBSERVATION: persistent volume of a driver that needs attach (no CSIDriver = attach required).
    if (!spec.ephemeral && (csiDriver?.spec.attachRequired ?? true)) {
      const name = attachmentName(spec.handle, spec.driver, context.nodeName);
      const attachment = informers.attachments.store.get(name);
      if (!attachment?.status?.attached) {
        this.#waitingForAttach(volume, attachment);
        return;
      }
      this.#attachWaitSince.delete(volume.key);
      this.#exhaustedSeen.delete(name);
      publishContext = attachment.status.attachmentMetadata ?? {};
      // The kubelet mounts an attachable volume only once node status says it is in use, so
      // the attach/detach controller cannot detach it under the mount.
      if (!nodeStatus.reportedInUse.has(spec.uniqueName)) return;
    }
    const staged = actual.staged.get(spec.uniqueName);
    // Inline ephemeral volumes are never staged (the kubelet has no device mount for them).
    if (!spec.ephemeral && (!staged || staged.state !== "mounted")) {
      executor.run(
        `vol:${spec.uniqueName}`,
        `stage:${spec.uniqueName}`,
        async () => {
          const driver = drivers.require(spec.driver);
          try {
            actual.staged.set(
              spec.uniqueName,
              await plugin.stage(volume, driver, csiDriver, publishContext, signal),
            );
          } catch (error) {
            if (isUncertain(error) || staged) {
              actual.staged.set(spec.uniqueName, {
                uniqueName: spec.uniqueName,
                driver: spec.driver,
                handle: spec.handle,
                specName: spec.specName,
                block: spec.block,
                stagingPath: plugin.stagingPath(spec),
                staged: true,
                state: "uncertain",
              });
            }
            throw error;
          }
        },
        (error) =>
          this.#podEvent(
            volume.podUID,
            "Warning",
            spec.block ? EVENT_REASONS.failedMapVolume.key : EVENT_REASONS.failedMount.key,
            `${spec.block ? "MapVolume.MapPodDevice" : "MountVolume.MountDevice"} failed for volume "${spec.specName}" : ${describeError(error)}`,
          ),
      );
      return;
    }
    executor.run(
      `pod:${volume.key}`,
      `publish:${volume.key}`,
      async () => {
        const driver = drivers.require(spec.driver);
        try {
          actual.published.set(volume.key, {
            ...(await plugin.publish(volume, driver, csiDriver, publishContext, signal)),
            publishedAt: context.clock.now(),
          });
        } catch (error) {
          if (isUncertain(error) || published) {
            actual.published.set(volume.key, uncertainPublished(volume, plugin));
          }
          throw error;
        }
      },
      (error) =>
        this.#podEvent(
          volume.podUID,
          "Warning",
          spec.block ? EVENT_REASONS.failedMapVolume.key : EVENT_REASONS.failedMount.key,
          `${spec.block ? "MapVolume.SetUpDevice" : "MountVolume.SetUp"} failed for volume "${spec.specName}" : ${describeError(error)}`,
        ),
    );
  }

  #waitingForAttach(volume: DesiredPodVolume, attachment: VolumeAttachment | undefined): void {
    const { context } = this.#o;
    const attachError = attachment?.status?.attachError?.message;
    const volumeError = attachment?.status?.attachError;
    if (volumeError?.errorCode === GRPC_RESOURCE_EXHAUSTED && attachment?.metadata?.name) {
      const stamp = `${volumeError.time ?? ""} ${volumeError.message ?? ""}`;
      if (this.#exhaustedSeen.get(attachment.metadata.name) !== stamp) {
        this.#exhaustedSeen.set(attachment.metadata.name, stamp);
        this.#o.onAttachResourceExhausted?.(volume.spec.driver);
      }
    }
    if (attachError) {
      this.#podEvent(
        volume.podUID,
        "Warning",
        EVENT_REASONS.failedAttachVolume.key,
        `AttachVolume.Attach failed for volume "${volume.spec.specName}" : ${attachError}`,
      );
    }
    const since = this.#attachWaitSince.get(volume.key);
    const now = context.clock.now();
    if (since === undefined) {
      this.#attachWaitSince.set(volume.key, now);
    } else if (now - since >= this.#o.attachTimeoutMs) {
      this.#attachWaitSince.set(volume.key, now);
      this.#podEvent(
        volume.podUID,
        "Warning",
        EVENT_REASONS.failedMount.key,
        `Unable to attach or mount volumes: unmounted volumes=[${volume.outerName}], unattached volumes=[${volume.outerName}]: timed out waiting for the condition`,
      );
    }
  }

  #updatePods(desired: DesiredState, signal: AbortSignal): void {
    const { actual, executor, informers, context, runtime } = this.#o;
    const byPod = new Map<string, DesiredPodVolume[]>();
    for (const volume of desired.volumes.values()) {
      const list = byPod.get(volume.podUID) ?? [];
      list.push(volume);
      byPod.set(volume.podUID, list);
    }
    for (const [uid, pod] of desired.pods) {
      const problems = desired.problems.get(uid);
      // A claim or volume asked for the first time reads as absent until fetched: not a problem yet.
      if (problems && this.#fetching()) continue;
      if (problems) {
        const message = `Unable to attach or mount volumes: ${problems.join("; ")}`;
        if (this.#podProblems.get(uid) !== message) {
          this.#podProblems.set(uid, message);
          this.#podEvent(uid, "Warning", EVENT_REASONS.failedMount.key, message);
        }
        continue;
      }
      this.#podProblems.delete(uid);
      if (runtime) {
        const volumes = byPod.get(uid) ?? [];
        const mounted = volumes.every((v) => actual.published.get(v.key)?.state === "mounted");
        const hostVolumes = (): Map<string, HostVolume> =>
          new Map(
            volumes.map((v) => [
              v.outerName,
              {
                path: this.#o.plugin.targetPath(uid, v.spec),
                block: v.spec.block,
                readOnly: v.spec.readOnly,
              },
            ]),
          );
        if (runtime.handles(pod)) {
          // The runtime writes this pod's status from its containers.
          if (mounted) runtime.sync(pod, hostVolumes());
          continue;
        }
        if (mounted) runtime.track(pod, hostVolumes());
      }
      if (podIsRunning(pod)) {
        this.#runningWritten.delete(uid);
        continue;
      }
      if (this.#runningWritten.get(uid) === pod.metadata?.resourceVersion) continue;
      const volumes = byPod.get(uid) ?? [];
      if (!volumes.every((v) => actual.published.get(v.key)?.state === "mounted")) continue;
      executor.run(
        `status:${uid}`,
        `status:${uid}`,
        async () => {
          await setPodRunning(context.client, pod, context.clock.now(), signal);
          this.#runningWritten.set(uid, pod.metadata?.resourceVersion ?? "");
        },
        (error) =>
          context.logger.warn("failed to set pod Running", { pod: objectKey(pod), err: errorMessage(error) }),
      );
    }
    // Terminating or finished pods: once nothing of theirs is mounted, clean up and finish.
    for (const pod of informers.pods.store.list()) {
      if (podIsActive(pod)) continue;
      const uid = pod.metadata?.uid ?? "";
      if (runtime) {
        // Containers first (SIGTERM, SIGKILL after the grace period), then the volumes; a pod
        // ended from outside (phase Failed by a node shutdown) is stopped the same way.
        runtime.terminate(pod);
        if (runtime.busy(uid)) continue;
      }
      if (actual.publishedOfPod(uid).length > 0) continue;
      if (!pod.metadata?.deletionTimestamp || this.#deleted.has(uid)) continue;
      executor.run(
        `delete:${uid}`,
        `delete:${uid}`,
        async () => {
          await runtime?.cleanup(uid);
          await removePodDir(this.#o.context, uid);
          await finishPodDeletion(context.client, pod, signal);
          this.#deleted.add(uid);
          this.#podProblems.delete(uid);
        },
        (error) =>
          context.logger.warn("failed to finish pod deletion", {
            pod: objectKey(pod),
            err: errorMessage(error),
          }),
      );
    }
    runtime?.prune(new Set(informers.pods.store.list().map((p) => p.metadata?.uid ?? "")));
    for (const uid of this.#runningWritten.keys())
      if (!desired.pods.has(uid)) this.#runningWritten.delete(uid);
    if (this.#deleted.size > 1000) {
      const live = new Set(informers.pods.store.list().map((p) => p.metadata?.uid ?? ""));
      for (const uid of this.#deleted) if (!live.has(uid)) this.#deleted.delete(uid);
    }
  }

  #reportInUse(desired: DesiredState, signal: AbortSignal): void {
    const { actual, executor, nodeStatus, context } = this.#o;
    const inUse = actual.inUse();
    for (const volume of desired.volumes.values()) inUse.add(volume.spec.uniqueName);
    const reported = nodeStatus.reportedInUse;
    if (inUse.size === reported.size && [...inUse].every((name) => reported.has(name))) return;
    executor.run(
      "node-status",
      "node-status",
      () => nodeStatus.setVolumesInUse([...inUse], signal),
      (error) => context.logger.warn("failed to update volumesInUse", { err: errorMessage(error) }),
    );
  }

  #expand(desired: DesiredState, signal: AbortSignal): void {
    const { actual, executor, plugin, drivers, context } = this.#o;
    for (const published of actual.published.values()) {
      if (published.state !== "mounted" || !published.claim) continue;
      const volume = desired.volumes.get(published.key);
      if (!volume) continue;
      const cached = this.#caches.claim(published.claim.namespace, published.claim.name);
      if (!cached) continue;
      const pv = volume.spec.pvName ? this.#caches.volume(volume.spec.pvName) : undefined;
      const size = nodeExpansionSize(cached, pv);
      if (size === undefined) continue;
      const done = `${published.key}@${size}`;
      if (this.#expanded.has(done)) continue;
      executor.run(
        `pod:${published.key}`,
        `expand:${published.key}`,
        async () => {
          // The claim as the API server has it now, as the kubelet reads it when the operation
          // runs: the polled copy may predate this node's own last resize of it (an expansion
          // done at the stage of another pod), and expanding on it would repeat that resize.
          const claim = await context.client.get<PersistentVolumeClaim>(
            GVR.persistentVolumeClaims,
            cached.metadata?.name ?? "",
            { namespace: cached.metadata?.namespace ?? "" },
            signal,
          );
          const needed = nodeExpansionSize(claim, pv);
          if (needed !== size) {
            // Done already: remember it while the polled copy catches up. Another size: the
            // pass after this one (the executor triggers it) works from the newer claim.
            if (needed === undefined) this.#expanded.add(done);
            return;
          }
          const driver = drivers.require(published.driver);
          if (driver.nodeCapabilities.has("EXPAND_VOLUME")) {
            await markNodeExpansionInProgress(context, claim, signal);
            try {
              await plugin.expand(
                published,
                volume.spec,
                driver,
                Number(quantityValue(parseQuantity(size))),
                signal,
              );
            } catch (error) {
              // Recorded on the claim (NodeResizeError, NodeResizeInfeasible when final), then retried.
              await markNodeExpansionFailed(context, claim, error, signal).catch((markError: unknown) =>
                context.logger.warn("failed to record the node expansion failure", {
                  err: errorMessage(markError),
                }),
              );
              throw error;
            }
          }
          await markResizeFinished(context, claim, size, signal);
          this.#expanded.add(done);
          context.events.event(
            claim,
            "Normal",
            EVENT_REASONS.fileSystemResizeSuccessful.key,
            `MountVolume.NodeExpandVolume succeeded for volume "${published.specName}" ${context.nodeName}`,
          );
        },
        (error) =>
          this.#podEvent(
            published.podUID,
            "Warning",
            "FileSystemResizeFailed",
            `MountVolume.NodeExpandVolume failed for volume "${published.specName}" : ${describeError(error)}`,
          ),
      );
    }
  }

  #podEvent(podUID: string, type: "Normal" | "Warning", reason: string, message: string): void {
    const pod = this.#o.informers.pods.store.list().find((p) => p.metadata?.uid === podUID);
    if (pod) this.#o.context.events.event({ ...pod, kind: "Pod", apiVersion: "v1" }, type, reason, message);
  }
}

function uncertainPublished(volume: DesiredPodVolume, plugin: CsiVolumePlugin): PublishedVolume {
  const { spec } = volume;
  return {
    key: volume.key,
    podUID: volume.podUID,
    specName: spec.specName,
    uniqueName: spec.uniqueName,
    driver: spec.driver,
    handle: spec.handle,
    block: spec.block,
    targetPath: plugin.targetPath(volume.podUID, spec),
    stagingPath: plugin.stagingPath(spec),
    state: "uncertain",
    ...(spec.claim ? { claim: spec.claim } : {}),
  };
}

/** Removes pods/<uid> when only empty dirs are left (a dir with a mount in it stays). */
async function removePodDir(context: NodeContext, uid: string): Promise<void> {
  const { paths } = context;
  for (const dir of [paths.podCsiVolumesDir(uid), paths.podDeviceDir(uid)]) {
    await rmdir(dir).catch(() => undefined);
    await rmdir(dirnameOf(dir)).catch(() => undefined);
  }
  await rm(`${paths.podDir(uid)}/plugins`, { recursive: true, force: true }).catch(() => undefined);
  await rmdir(paths.podDir(uid)).catch(() => undefined);
}

function dirnameOf(path: string): string {
  return path.slice(0, path.lastIndexOf("/"));
}
