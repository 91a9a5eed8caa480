// The scheduler loop: informers → handlers → a queue of pod keys → one worker (scheduling
// decisions are serial, as upstream's scheduleOne, so two pods never race for the last volume
// slot of a node). Handlers only enqueue: a pending pod on its own changes; every pending pod
// when something that can make it fit changes (node labels/taints, CSINode, CSIStorageCapacity,
// classes, drivers, a scheduled pod leaving); the pods of a claim when the claim or its PV
// changes (WaitForFirstConsumer binding progress, a selected-node removed by the provisioner).

import {
  DEFAULT_KUBERNETES_MINOR,
  GVR,
  objectKey,
  resolveKubeFeatureGates,
  type CSIDriver,
  type CSINode,
  type CSIStorageCapacity,
  type Node,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
  type StorageClass,
} from "../../api/index.ts";
import { realClock, silentLogger, type Clock, type Logger } from "../../base/index.ts";
import {
  EventRecorder,
  WorkQueue,
  deletedObject,
  runController,
  type EventHandlers,
  type InformerFactory,
  type KubeClient,
  type SharedInformer,
  type Tombstone,
} from "../../kube/index.ts";
import { resolveFeatureGates, type FeatureGates } from "../../migration/index.ts";
import { PodScheduler, isFinished } from "./schedule.ts";
import { podVolumeClaimName } from "./volume-binding.ts";

export interface SchedulerOptions {
  client: KubeClient;
  /** Shared informers; the caller starts them after every loop asked for its own. */
  informers: InformerFactory;
  logger?: Logger;
  /** Default realClock. */
  clock?: Clock;
  /** spec.schedulerName served (unset also counts). Default "default-scheduler". */
  schedulerName?: string;
  /** Wait for a pod's WaitForFirstConsumer claims to bind. Default 600000 (upstream bindTimeout). */
  bindTimeoutMs?: number;
  /** First retry delay of an unschedulable pod. Default 1000 (upstream podInitialBackoff). */
  podInitialBackoffMs?: number;
  /** Longest retry delay. Default 10000 (upstream podMaxBackoff). */
  podMaxBackoffMs?: number;
  /** Event recorder (component "default-scheduler"); default one of its own, started here. */
  recorder?: EventRecorder;
  /**
   * Resolved feature gates (`csikit controllers --kubernetes-version/--feature-gates`): the
   * storage gates of the release (StorageCapacityScoring, VolumeLimitScaling) plus CSI
   * migration's. Default: the defaults of Kubernetes 1.37 (DEFAULT_KUBERNETES_MINOR).
   */
  featureGates?: FeatureGates;
}

/** The gates a scheduler told nothing acts with: the default release's, migration's included. */
export function defaultSchedulerGates(): FeatureGates {
  return Object.freeze({ ...resolveFeatureGates({}), ...resolveKubeFeatureGates(DEFAULT_KUBERNETES_MINOR) });
}

export const DEFAULT_SCHEDULER_NAME = "default-scheduler";

/** Runs the scheduler until the signal aborts; resolves when fully stopped. */
export async function startScheduler(options: SchedulerOptions, signal: AbortSignal): Promise<void> {
  const logger = (options.logger ?? silentLogger).with({ controller: "scheduler" });
  const clock = options.clock ?? realClock;
  // Informers are requested before the first await: the composition root starts them next.
  const informers = {
    pods: options.informers.informer<Pod>(GVR.pods),
    nodes: options.informers.informer<Node>(GVR.nodes),
    claims: options.informers.informer<PersistentVolumeClaim>(GVR.persistentVolumeClaims),
    volumes: options.informers.informer<PersistentVolume>(GVR.persistentVolumes),
    storageClasses: options.informers.informer<StorageClass>(GVR.storageClasses),
    csiDrivers: options.informers.informer<CSIDriver>(GVR.csiDrivers),
    csiNodes: options.informers.informer<CSINode>(GVR.csiNodes),
    capacities: options.informers.informer<CSIStorageCapacity>(GVR.csiStorageCapacities),
  };
  const ownRecorder = options.recorder === undefined;
  const recorder =
    options.recorder ??
    new EventRecorder({ client: options.client, component: DEFAULT_SCHEDULER_NAME, clock, logger });
  const queue = new WorkQueue<string>({ name: "scheduler", clock });
  const scheduler = new PodScheduler({
    client: options.client,
    caches: {
      pods: informers.pods.store,
      nodes: informers.nodes.store,
      claims: informers.claims.store,
      volumes: informers.volumes.store,
      storageClasses: informers.storageClasses.store,
      csiDrivers: informers.csiDrivers.store,
      csiNodes: informers.csiNodes.store,
      capacities: informers.capacities.store,
    },
    recorder,
    clock,
    schedulerName: options.schedulerName ?? DEFAULT_SCHEDULER_NAME,
    featureGates: options.featureGates ?? defaultSchedulerGates(),
    bindTimeoutMs: options.bindTimeoutMs ?? 600_000,
    initialBackoffMs: options.podInitialBackoffMs ?? 1000,
    maxBackoffMs: options.podMaxBackoffMs ?? 10_000,
    requeue: (key) => queue.addRateLimited(key),
    enqueue: (key) => queue.add(key),
  });
  const removers = registerHandlers(informers, scheduler, queue);
  const recorderStopped = ownRecorder ? recorder.start(signal) : Promise.resolve();
  try {
    await runController(
      {
        name: "scheduler",
        informers: Object.values(informers),
        queue,
        // One decision at a time: placement reads what the previous decision assumed.
        workers: 1,
        logger,
        reconcile: (key, context) => scheduler.schedule(key, context.signal, context.logger),
      },
      signal,
    );
  } finally {
    queue.shutDown();
    for (const remove of removers) remove();
    await scheduler.drain();
    await recorderStopped;
  }
}

interface Informers {
  pods: SharedInformer<Pod>;
  nodes: SharedInformer<Node>;
  claims: SharedInformer<PersistentVolumeClaim>;
  volumes: SharedInformer<PersistentVolume>;
  storageClasses: SharedInformer<StorageClass>;
  csiDrivers: SharedInformer<CSIDriver>;
  csiNodes: SharedInformer<CSINode>;
  capacities: SharedInformer<CSIStorageCapacity>;
}

/** What about a pod can change its placement (status-only updates cannot). */
function schedulingInput(pod: Pod): string {
  const { resourceVersion: _rv, managedFields: _mf, ...metadata } = pod.metadata ?? {};
  return JSON.stringify([metadata, pod.spec]);
}

function registerHandlers(
  informers: Informers,
  scheduler: PodScheduler,
  queue: WorkQueue<string>,
): (() => void)[] {
  const pending = new Set<string>();
  const enqueuePending = (): void => {
    for (const key of pending) queue.add(key);
  };
  const enqueueClaimUsers = (namespace: string, claimName: string): void => {
    for (const key of pending) {
      const pod = informers.pods.store.get(key);
      if (pod?.metadata?.namespace !== namespace) continue;
      if ((pod.spec?.volumes ?? []).some((volume) => podVolumeClaimName(pod, volume) === claimName))
        queue.add(key);
    }
  };
  const track = (pod: Pod): boolean => {
    const key = objectKey(pod);
    if (scheduler.responsibleFor(pod)) {
      pending.add(key);
      return true;
    }
    pending.delete(key);
    return false;
  };
  const podHandlers: EventHandlers<Pod> = {
    onAdd: (pod) => {
      if (track(pod)) queue.add(objectKey(pod));
    },
    onUpdate: (old, pod) => {
      const wasPending = pending.has(objectKey(pod));
      const isPending = track(pod);
      if (isPending && (!wasPending || schedulingInput(old) !== schedulingInput(pod)))
        queue.add(objectKey(pod));
      // Bound (our assumption can go) or left the scheduler's hands.
      if (wasPending && !isPending) queue.add(objectKey(pod));
      // A scheduled pod that finished frees its node's volume slots.
      if ((pod.spec?.nodeName ?? "") !== "" && isFinished(pod) && !isFinished(old)) enqueuePending();
    },
    onDelete: (object: Pod | Tombstone<Pod>) => {
      const pod = deletedObject(object);
      const key = objectKey(pod);
      pending.delete(key);
      scheduler.forgetPod(key);
      if ((pod.spec?.nodeName ?? "") !== "") enqueuePending();
    },
  };
  const anyChange: EventHandlers<{ metadata?: object }> = {
    onAdd: enqueuePending,
    onUpdate: (old, object) => {
      if (old !== object) enqueuePending();
    },
    onDelete: enqueuePending,
  };
  const nodeHandlers: EventHandlers<Node> = {
    onAdd: enqueuePending,
    onUpdate: (old, node) => {
      // Heartbeats and volume status do not change placement.
      if (
        JSON.stringify([old.metadata?.labels, old.spec]) !==
        JSON.stringify([node.metadata?.labels, node.spec])
      ) {
        enqueuePending();
      }
    },
    onDelete: enqueuePending,
  };
  const claimHandlers: EventHandlers<PersistentVolumeClaim> = {
    onAdd: (claim) => enqueueClaimUsers(claim.metadata?.namespace ?? "", claim.metadata?.name ?? ""),
    onUpdate: (_old, claim) => enqueueClaimUsers(claim.metadata?.namespace ?? "", claim.metadata?.name ?? ""),
    onDelete: (object) => {
      const claim = deletedObject(object);
      enqueueClaimUsers(claim.metadata?.namespace ?? "", claim.metadata?.name ?? "");
    },
  };
  const volumeChanged = (volume: PersistentVolume): void => {
    const ref = volume.spec?.claimRef;
    // A PV with no claim may now match any waiting claim.
    if (ref?.name && ref.namespace) enqueueClaimUsers(ref.namespace, ref.name);
    else enqueuePending();
  };
  const volumeHandlers: EventHandlers<PersistentVolume> = {
    onAdd: volumeChanged,
    onUpdate: (_old, volume) => volumeChanged(volume),
    onDelete: (object) => volumeChanged(deletedObject(object)),
  };
  return [
    informers.pods.addEventHandler(podHandlers),
    informers.nodes.addEventHandler(nodeHandlers),
    informers.claims.addEventHandler(claimHandlers),
    informers.volumes.addEventHandler(volumeHandlers),
    informers.storageClasses.addEventHandler(anyChange),
    informers.csiDrivers.addEventHandler(anyChange),
    informers.csiNodes.addEventHandler(anyChange),
    informers.capacities.addEventHandler(anyChange),
  ];
}
