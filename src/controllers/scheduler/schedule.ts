// Scheduling one pod (upstream's scheduleOne, without preemption): filter every node, score the
// ones that fit (score.ts: VolumeBinding's storage capacity score when StorageCapacityScoring is
// on), pick the highest score, then the least loaded (ties by name, so placement is
// deterministic and spreads evenly), make
// the volume decisions of WaitForFirstConsumer claims durable (PV claimRef for a static match,
// `volume.kubernetes.io/selected-node` for provisioning), wait — event driven — until those
// claims are bound, then POST pods/binding — in the background, as upstream's binding cycle, so
// the next decision does not wait for the API server. A failure is a FailedScheduling Event plus a
// PodScheduled=False condition, and a retry with per-pod backoff (1s doubling to 10s, as
// upstream's podInitialBackoff/podMaxBackoff).
//
// Memory: "assumed" pods (decided, waiting for volumes or for the informer to show nodeName)
// count on their node for spreading and volume limits, and their chosen static PVs are not
// offered to other claims. Nothing else is remembered, and a restart loses nothing: a claim
// that carries selected-node pins its pods to that node (upstream's fast path), a pre-bound PV
// is found again by its claimRef.

import {
  ANNOTATIONS,
  EVENT_REASONS,
  GVR,
  keyOf,
  type Node,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
  type PodCondition,
  type CSIDriver,
  type CSINode,
  type CSIStorageCapacity,
  type StorageClass,
} from "../../api/index.ts";
import { errorMessage, type Clock, type Logger, CsikitError } from "../../base/index.ts";
import {
  isConflict,
  type EventRecorder,
  type KubeClient,
  type ProcessResult,
  type Store,
} from "../../kube/index.ts";
import { NO_NODES_AVAILABLE, fitErrorMessage, preFilterErrorMessage } from "./fit-error.ts";
import type { FeatureGates } from "../../migration/index.ts";
import { filterNode, type NodeContext } from "./filters.ts";
import { storageCapacityScore } from "./score.ts";
import { claimFullyBound, preFilterVolumes, volumeFitsNode, type VolumeView } from "./volume-binding.ts";

export interface SchedulerCaches {
  pods: Store<Pod>;
  nodes: Store<Node>;
  claims: Store<PersistentVolumeClaim>;
  volumes: Store<PersistentVolume>;
  storageClasses: Store<StorageClass>;
  csiDrivers: Store<CSIDriver>;
  csiNodes: Store<CSINode>;
  capacities: Store<CSIStorageCapacity>;
}

export interface PodSchedulerOptions {
  client: KubeClient;
  caches: SchedulerCaches;
  recorder: EventRecorder;
  clock: Clock;
  /** Pods whose spec.schedulerName is this (or unset) are ours. */
  schedulerName: string;
  /** Resolved feature gates (StorageCapacityScoring, VolumeLimitScaling, CSI migration's). */
  featureGates: FeatureGates;
  /** How long to wait for a pod's claims to bind (upstream bindTimeout, 600s). */
  bindTimeoutMs: number;
  initialBackoffMs: number;
  maxBackoffMs: number;
  /** Puts a pod back on the queue with backoff (a binding failed outside a reconcile). */
  requeue(key: string): void;
  /** Puts a pod back on the queue now (its PreBind writes finished outside a reconcile). */
  enqueue(key: string): void;
}

interface Assumption {
  uid: string;
  node: string;
  at: number;
  /** Bound via pods/binding; kept until the informer shows spec.nodeName. */
  bound: boolean;
  /** PreBind writes (selected-node, static claimRefs) in flight: nothing to decide until they end. */
  preBinding?: boolean;
  /**
   * Claims to provision on `node` (selected-node set): claim key → its resourceVersion before
   * our write, while the cache may still show that older version (undefined: nothing written).
   */
  provisions: Map<string, string | undefined>;
  /** Claims pre-bound to a static PV: claim key → { PV, resourceVersion before our update }. */
  staticBindings: Map<string, { volume: string; staleVersion: string }>;
}

/** Why a pod failed: Unschedulable (filters said no) or SchedulerError (an error while binding). */
type FailureReason = "Unschedulable" | "SchedulerError";

/** A node that passed the filters, with what ranks it. */
interface Candidate {
  node: Node;
  /** Score phase total (0..100). */
  score: number;
  /** Pods counted on the node (spreading). */
  load: number;
  fit: Extract<ReturnType<typeof filterNode>, { fits: true }>;
}

/**
 * Higher score first, then fewer pods; nodes come sorted by name, so a strict comparison keeps
 * the first name among equals.
 */
function preferred(candidate: Candidate, best: Candidate): boolean {
  if (candidate.score !== best.score) return candidate.score > best.score;
  return candidate.load < best.load;
}

export function isFinished(pod: Pod): boolean {
  return pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed";
}

export class PodScheduler {
  readonly #options: PodSchedulerOptions;
  readonly #assumed = new Map<string, Assumption>();
  /** Scheduling attempts that failed in a row, per pod key (backoff). */
  readonly #attempts = new Map<string, number>();
  /** Bindings in flight. */
  readonly #bindings = new Set<Promise<void>>();
  /** PV name → claim it was pre-bound to by us, until the cache shows it. */
  readonly #assumedVolumes = new Map<string, PersistentVolumeClaim>();

  constructor(options: PodSchedulerOptions) {
    this.#options = options;
  }

  /** Whether this scheduler must place the pod. */
  responsibleFor(pod: Pod): boolean {
    const name = pod.spec?.schedulerName ?? "";
    return (
      (name === "" || name === this.#options.schedulerName) &&
      (pod.spec?.nodeName ?? "") === "" &&
      !pod.metadata?.deletionTimestamp &&
      !isFinished(pod)
    );
  }

  async schedule(key: string, signal: AbortSignal, logger: Logger): Promise<ProcessResult | void> {
    const pod = this.#options.caches.pods.get(key);
    let assumption = this.#assumed.get(key);
    if (!pod || !this.responsibleFor(pod) || (assumption && assumption.uid !== pod.metadata?.uid)) {
      this.#forget(key);
      assumption = undefined;
      if (!pod || !this.responsibleFor(pod)) return;
    }
    if (assumption?.bound || assumption?.preBinding) return;
    if (assumption) return this.#continueBinding(key, pod, assumption, signal, logger);
    return this.#scheduleOne(key, pod, signal, logger);
  }

  /** Pods counted on each node: scheduled ones from the cache plus our assumptions. */
  #podsByNode(): Map<string, Pod[]> {
    const byNode = new Map<string, Pod[]>();
    const add = (node: string, pod: Pod): void => {
      const list = byNode.get(node);
      if (list) list.push(pod);
      else byNode.set(node, [pod]);
    };
    for (const pod of this.#options.caches.pods.list()) {
      const node = pod.spec?.nodeName ?? "";
      if (node !== "" && !isFinished(pod)) add(node, pod);
    }
    for (const [key, assumption] of this.#assumed) {
      const pod = this.#options.caches.pods.get(key);
      if (pod && (pod.spec?.nodeName ?? "") === "") add(assumption.node, pod);
    }
    return byNode;
  }

  #view(): VolumeView {
    const caches = this.#options.caches;
    const overlay = (volume: PersistentVolume): PersistentVolume => {
      const claim = this.#assumedVolumes.get(volume.metadata?.name ?? "");
      if (!claim || volume.spec?.claimRef) return volume;
      return { ...volume, spec: { ...volume.spec, claimRef: claimReference(claim) } };
    };
    return {
      claim: (namespace, name) => caches.claims.get(keyOf(namespace, name)),
      volume: (name) => {
        const volume = caches.volumes.get(name);
        return volume && overlay(volume);
      },
      volumes: () => caches.volumes.list().map(overlay),
      storageClass: (name) => caches.storageClasses.get(name),
      csiDriver: (name) => caches.csiDrivers.get(name),
      capacities: () => caches.capacities.list(),
    };
  }

  async #scheduleOne(
    key: string,
    pod: Pod,
    signal: AbortSignal,
    logger: Logger,
  ): Promise<ProcessResult | void> {
    const caches = this.#options.caches;
    const nodes = caches.nodes.list().sort((a, b) => nameOf(a).localeCompare(nameOf(b)));
    if (nodes.length === 0) return this.#fail(key, pod, "Unschedulable", NO_NODES_AVAILABLE, signal);
    const view = this.#view();
    const pre = preFilterVolumes(pod, view);
    if (!pre.ok)
      return this.#fail(key, pod, "Unschedulable", preFilterErrorMessage(nodes.length, pre.message), signal);
    const podsByNode = this.#podsByNode();
    const rejections: string[][] = [];
    const gates = this.#options.featureGates;
    let best: Candidate | undefined;
    for (const node of nodes) {
      const pods = podsByNode.get(nameOf(node)) ?? [];
      const context: NodeContext = { node, csiNode: caches.csiNodes.get(nameOf(node)), pods };
      const fit = filterNode(pod, pre.claims, context, view, gates);
      if (!fit.fits) {
        rejections.push(fit.reasons);
        continue;
      }
      const score = gates.StorageCapacityScoring === true ? storageCapacityScore(fit.volumes) : 0;
      const candidate: Candidate = { node, score, load: pods.length, fit };
      if (!best || preferred(candidate, best)) best = candidate;
    }
    if (!best)
      return this.#fail(key, pod, "Unschedulable", fitErrorMessage(nodes.length, rejections), signal);
    const nodeName = nameOf(best.node);
    const { staticBindings, provisions } = best.fit.volumes;
    if (staticBindings.length === 0 && provisions.length === 0) {
      this.#bind(key, pod, nodeName, signal, logger);
      return;
    }
    const assumption: Assumption = {
      uid: pod.metadata?.uid ?? "",
      node: nodeName,
      at: this.#options.clock.now(),
      bound: false,
      provisions: new Map(),
      staticBindings: new Map(),
    };
    this.#assumed.set(key, assumption);
    // Upstream's binding cycle: the PreBind writes run beside the next scheduling decisions (the
    // assumption already counts the pod and its volumes on the node), so a hundred pods are not
    // a hundred sequential round trips before the provisioner sees the first selected-node.
    assumption.preBinding = true;
    const preBind = this.#preBind(key, pod, assumption, staticBindings, provisions, signal, logger).finally(
      () => this.#bindings.delete(preBind),
    );
    this.#bindings.add(preBind);
  }

  async #preBind(
    key: string,
    pod: Pod,
    assumption: Assumption,
    staticBindings: readonly { claim: PersistentVolumeClaim; volume: PersistentVolume }[],
    provisions: readonly PersistentVolumeClaim[],
    signal: AbortSignal,
    logger: Logger,
  ): Promise<void> {
    const nodeName = assumption.node;
    try {
      await Promise.all([
        ...staticBindings.map(async ({ claim, volume }) => {
          const staleVersion = await this.#preBindVolume(claim, volume, signal);
          assumption.staticBindings.set(objectKeyOf(claim), { volume: nameOf(volume), staleVersion });
        }),
        ...provisions.map(async (claim) => {
          const staleVersion = await this.#selectNode(claim, nodeName, signal);
          assumption.provisions.set(objectKeyOf(claim), staleVersion);
        }),
      ]);
    } catch (error) {
      if (this.#assumed.get(key) === assumption) this.#forget(key);
      if (signal.aborted) return;
      await this.#fail(
        key,
        pod,
        "SchedulerError",
        `running PreBind plugin "VolumeBinding": ${errorMessage(error)}`,
        signal,
      ).catch((failure: unknown) =>
        logger.error("recording the scheduling failure failed", { err: errorMessage(failure) }),
      );
      this.#options.requeue(key);
      return;
    }
    assumption.preBinding = false;
    logger.info(4, "waiting for the pod's claims to bind", { node: nodeName });
    // Whatever the claims did meanwhile, the next look at the pod decides (bound, waiting, failed).
    this.#options.enqueue(key);
  }

  /** Upstream's bindAPIUpdate for a static match: the PV's claimRef names the claim. */
  async #preBindVolume(
    claim: PersistentVolumeClaim,
    volume: PersistentVolume,
    signal: AbortSignal,
  ): Promise<string> {
    const cached = this.#options.caches.volumes.get(nameOf(volume));
    if (!cached)
      throw new CsikitError("CSIKIT_ERR_NOT_FOUND", `persistentvolume "${nameOf(volume)}" not found`);
    const staleVersion = cached.metadata?.resourceVersion ?? "";
    if (cached.spec?.claimRef) return staleVersion;
    const updated = structuredClone(cached);
    updated.metadata = {
      ...updated.metadata,
      annotations: { ...updated.metadata?.annotations, [ANNOTATIONS.boundByController.key]: "yes" },
    };
    updated.spec = { ...updated.spec, claimRef: claimReference(claim) };
    // Assumed before the write: the next decisions run while it is in flight and must not pick
    // the same volume for another claim.
    this.#assumedVolumes.set(nameOf(volume), claim);
    try {
      await this.#options.client.update(GVR.persistentVolumes, updated, {}, signal);
    } catch (error) {
      this.#assumedVolumes.delete(nameOf(volume));
      throw error;
    }
    return staleVersion;
  }

  /** Sets selected-node; returns the claim's version before the write (undefined: none needed). */
  async #selectNode(
    claim: PersistentVolumeClaim,
    nodeName: string,
    signal: AbortSignal,
  ): Promise<string | undefined> {
    if (claim.metadata?.annotations?.[ANNOTATIONS.selectedNode.key] === nodeName) return undefined;
    const staleVersion = claim.metadata?.resourceVersion ?? "";
    await this.#options.client.patch(
      GVR.persistentVolumeClaims,
      nameOf(claim),
      { metadata: { annotations: { [ANNOTATIONS.selectedNode.key]: nodeName } } },
      { namespace: claim.metadata?.namespace ?? "" },
      signal,
    );
    return staleVersion;
  }

  /** Upstream's checkBindings: done, still waiting, or failed (selected-node reset, claimRef reset). */
  async #continueBinding(
    key: string,
    pod: Pod,
    assumption: Assumption,
    signal: AbortSignal,
    logger: Logger,
  ): Promise<ProcessResult | void> {
    const caches = this.#options.caches;
    let waiting = false;
    let failure: string | undefined;
    for (const claimKey of [...assumption.provisions.keys(), ...assumption.staticBindings.keys()]) {
      const claim = caches.claims.get(claimKey);
      const claimName = claimKey.slice(claimKey.indexOf("/") + 1);
      if (!claim) {
        failure = `persistentvolumeclaim "${claimName}" not found`;
        break;
      }
      if (claimFullyBound(claim)) {
        const volume = caches.volumes.get(claim.spec?.volumeName ?? "");
        if (!volume) waiting = true;
        else if (!volumeFitsNode(volume, nodeObject(caches, assumption.node))) {
          failure = `pv "${nameOf(volume)}" node affinity doesn't match node "${assumption.node}"`;
          break;
        }
        continue;
      }
      const staticBinding = assumption.staticBindings.get(claimKey);
      if (staticBinding) {
        const volume = caches.volumes.get(staticBinding.volume);
        const fresh = volume && volume.metadata?.resourceVersion !== staticBinding.staleVersion;
        if (!volume || (fresh && !volume.spec?.claimRef?.uid && !volume.spec?.claimRef?.name)) {
          failure = `ClaimRef got reset for pv "${staticBinding.volume}"`;
          break;
        }
      } else if (claim.metadata?.resourceVersion === assumption.provisions.get(claimKey)) {
        // The cache has not seen our selected-node yet.
      } else if (claim.metadata?.annotations?.[ANNOTATIONS.selectedNode.key] !== assumption.node) {
        failure = `selectedNode annotation reset for PVC "${claimName}"`;
        break;
      }
      waiting = true;
    }
    const elapsed = this.#options.clock.now() - assumption.at;
    if (failure === undefined && waiting && elapsed >= this.#options.bindTimeoutMs) {
      failure = "binding volumes: context deadline exceeded";
    }
    if (failure !== undefined) {
      this.#forget(key);
      return this.#fail(
        key,
        pod,
        "SchedulerError",
        `running PreBind plugin "VolumeBinding": ${failure}`,
        signal,
      );
    }
    if (waiting) return { requeueAfterMs: this.#options.bindTimeoutMs - elapsed };
    this.#bind(key, pod, assumption.node, signal, logger);
  }

  /**
   * The binding cycle: runs beside the next decisions (as upstream's), the pod counted on its
   * node meanwhile; a failed binding drops the assumption and sends the pod back to the queue.
   */
  #bind(key: string, pod: Pod, nodeName: string, signal: AbortSignal, logger: Logger): void {
    this.#forget(key);
    this.#assumed.set(key, {
      uid: pod.metadata?.uid ?? "",
      node: nodeName,
      at: this.#options.clock.now(),
      bound: true,
      provisions: new Map(),
      staticBindings: new Map(),
    });
    const binding = this.#postBinding(key, pod, nodeName, signal, logger).finally(() =>
      this.#bindings.delete(binding),
    );
    this.#bindings.add(binding);
  }

  async #postBinding(
    key: string,
    pod: Pod,
    nodeName: string,
    signal: AbortSignal,
    logger: Logger,
  ): Promise<void> {
    const namespace = pod.metadata?.namespace ?? "";
    const name = nameOf(pod);
    try {
      await this.#options.client.request(
        {
          method: "POST",
          path: `${this.#options.client.resourcePath(GVR.pods, { namespace, name })}/binding`,
          body: {
            apiVersion: "v1",
            kind: "Binding",
            metadata: { name, namespace, uid: pod.metadata?.uid },
            target: { apiVersion: "v1", kind: "Node", name: nodeName },
          },
        },
        signal,
      );
    } catch (error) {
      this.#forget(key);
      // Already assigned (by us before a restart, or by someone else): nothing to do.
      if (isConflict(error) || signal.aborted) return;
      logger.error("binding failed, the pod goes back to the queue", {
        node: nodeName,
        err: errorMessage(error),
      });
      this.#options.requeue(key);
      return;
    }
    this.#attempts.delete(key);
    logger.info(2, "pod bound", { node: nodeName });
    this.#options.recorder.event(
      pod,
      "Normal",
      EVENT_REASONS.scheduled.key,
      `Successfully assigned ${namespace}/${name} to ${nodeName}`,
    );
  }

  /** Resolves when no binding is in flight (shutdown, tests). */
  async drain(): Promise<void> {
    while (this.#bindings.size > 0) await Promise.all([...this.#bindings]);
  }

  async #fail(
    key: string,
    pod: Pod,
    reason: FailureReason,
    message: string,
    signal: AbortSignal,
  ): Promise<ProcessResult> {
    this.#options.recorder.event(pod, "Warning", EVENT_REASONS.failedScheduling.key, message);
    const current = pod.status?.conditions?.find((condition) => condition.type === "PodScheduled");
    if (current?.status !== "False" || current.reason !== reason || current.message !== message) {
      const condition: PodCondition = {
        type: "PodScheduled",
        status: "False",
        lastProbeTime: null,
        lastTransitionTime:
          current?.status === "False" && current.lastTransitionTime
            ? current.lastTransitionTime
            : new Date(this.#options.clock.now()).toISOString().replace(/\.\d{3}Z$/, "Z"),
        reason,
        message,
      };
      await this.#options.client.patch(
        GVR.pods,
        nameOf(pod),
        { status: { conditions: [condition] } },
        { namespace: pod.metadata?.namespace ?? "", subresource: "status", type: "strategic" },
        signal,
      );
    }
    const attempts = (this.#attempts.get(key) ?? 0) + 1;
    this.#attempts.set(key, attempts);
    const delay = Math.min(this.#options.initialBackoffMs * 2 ** (attempts - 1), this.#options.maxBackoffMs);
    return { requeueAfterMs: delay };
  }

  /** Drops everything remembered about a pod. */
  #forget(key: string): void {
    const assumption = this.#assumed.get(key);
    if (assumption) {
      for (const { volume } of assumption.staticBindings.values()) this.#assumedVolumes.delete(volume);
    }
    this.#assumed.delete(key);
  }

  /** Called when a pod leaves the cache or is no longer ours. */
  forgetPod(key: string): void {
    this.#forget(key);
    this.#attempts.delete(key);
  }

  /** The node a pod was assumed on (tests, diagnostics). */
  assumedNode(key: string): string | undefined {
    return this.#assumed.get(key)?.node;
  }
}

function nameOf(object: { metadata?: { name?: string } }): string {
  return object.metadata?.name ?? "";
}

function objectKeyOf(object: { metadata?: { name?: string; namespace?: string } }): string {
  return keyOf(object.metadata?.namespace, nameOf(object));
}

function nodeObject(caches: SchedulerCaches, name: string): Node {
  return caches.nodes.get(name) ?? { metadata: { name } };
}

function claimReference(claim: PersistentVolumeClaim) {
  return {
    kind: "PersistentVolumeClaim",
    apiVersion: "v1",
    namespace: claim.metadata?.namespace ?? "",
    name: nameOf(claim),
    uid: claim.metadata?.uid ?? "",
    resourceVersion: claim.metadata?.resourceVersion ?? "",
  };
}
