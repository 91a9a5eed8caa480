// The garbage collector (kube-controller-manager's garbage-collector-controller): deletes
// objects whose owners are gone and carries out the owner-side propagation policies the API
// server records as finalizers:
// - Background (default): once every owner of an object is gone, the object is deleted.
// - Foreground: the owner keeps `foregroundDeletion` while it has dependents; those are
//   deleted (themselves in the foreground when they have dependents), and the finalizer goes
//   once no dependent with blockOwnerDeletion=true is left.
// - Orphan: the owner's UID is removed from every dependent's ownerReferences, then the
//   `orphan` finalizer goes.
// Decisions follow upstream's attemptToDeleteItem: an owner absent from the graph is looked
// up on the server (404 or another UID: dangling); an object with at least one solid owner is
// kept and only loses its dangling references; deletes carry a UID precondition, and every
// patch a resourceVersion, so a stale graph can never delete or rewrite the wrong object.
// The watched resources come from discovery, repeated every `discoveryPeriodMs` so resources
// added later (CRDs) are covered; their informers come from the shared factory and are
// started here (after discovery), since they are only known once the server has answered.

import { parseAPIVersion, type GroupVersionKindResource, type OwnerReference } from "../../api/index.ts";
import {
  errorMessage,
  realClock,
  silentLogger,
  type Clock,
  type Logger,
  CsikitError,
} from "../../base/index.ts";
import {
  WorkQueue,
  controllerRateLimiter,
  deletedObject,
  isNotFound,
  runController,
  type InformerFactory,
  type KubeClient,
  type KubeObject,
  type SharedInformer,
} from "../../kube/index.ts";
import { discoverDeletableResources } from "./discovery.ts";
import { DependencyGraph, ownerReferences, type GraphNode } from "./graph.ts";

export const FOREGROUND_FINALIZER = "foregroundDeletion";
export const ORPHAN_FINALIZER = "orphan";

export interface GarbageCollectorOptions {
  client: KubeClient;
  informers: InformerFactory;
  logger?: Logger;
  /** --concurrent-gc-syncs. Default 20. */
  workers?: number;
  /** How often discovery is repeated to find new resources. Default 30000 ms. */
  discoveryPeriodMs?: number;
  clock?: Clock;
}

type Policy = "Foreground" | "Background" | "Orphan";

function finalizersOf(object: KubeObject): string[] {
  return object.metadata?.finalizers ?? [];
}

function isDeletingDependents(object: KubeObject): boolean {
  return (
    object.metadata?.deletionTimestamp !== undefined && finalizersOf(object).includes(FOREGROUND_FINALIZER)
  );
}

interface OwnerState {
  ref: OwnerReference;
  state: "solid" | "dangling" | "waiting";
}

export async function startGarbageCollector(
  options: GarbageCollectorOptions,
  signal: AbortSignal,
): Promise<void> {
  const logger = (options.logger ?? silentLogger).with({ controller: "garbage-collector-controller" });
  const clock = options.clock ?? realClock;
  const client = options.client;
  const graph = new DependencyGraph();
  const queue = new WorkQueue<string>({
    name: "garbage_collector_attempt_to_delete",
    rateLimiter: controllerRateLimiter<string>({
      retryIntervalStartMs: 5,
      retryIntervalMaxMs: 1_000_000,
      clock,
    }),
    clock,
  });
  const watched = new Map<string, SharedInformer<KubeObject>>();
  /** group/kind → resource, for owner lookups (any version of the group). */
  const byKind = new Map<string, GroupVersionKindResource>();
  const informerRuns: Promise<void>[] = [];

  const enqueueOwnersWaiting = (object: KubeObject): void => {
    for (const ref of ownerReferences(object)) {
      const owner = graph.get(ref.uid);
      if (owner && owner.object.metadata?.deletionTimestamp !== undefined) queue.add(ref.uid);
    }
  };
  const observe = (resource: GroupVersionKindResource, object: KubeObject): void => {
    graph.upsert(resource, object);
    const uid = object.metadata?.uid;
    if (!uid) return;
    const finalizers = finalizersOf(object);
    if (
      ownerReferences(object).length > 0 ||
      (object.metadata?.deletionTimestamp !== undefined &&
        (finalizers.includes(ORPHAN_FINALIZER) || finalizers.includes(FOREGROUND_FINALIZER)))
    )
      queue.add(uid);
    enqueueOwnersWaiting(object);
  };

  function watch(resources: GroupVersionKindResource[]): SharedInformer<KubeObject>[] {
    const added: SharedInformer<KubeObject>[] = [];
    for (const resource of resources) {
      byKind.set(`${resource.group}/${resource.kind}`, resource);
      const id = `${resource.group}/${resource.resource}`;
      if (watched.has(id)) continue;
      const informer = options.informers.informer<KubeObject>(resource);
      watched.set(id, informer);
      informer.addEventHandler({
        onAdd: (object) => observe(resource, object),
        onUpdate: (_old, object) => observe(resource, object),
        onDelete: (deleted) => {
          const object = deletedObject(deleted);
          graph.remove(object);
          // Background: dependents of a removed owner are looked at; Foreground: the owners waiting.
          for (const dependent of graph.dependents(object.metadata?.uid ?? "")) queue.add(dependent);
          enqueueOwnersWaiting(object);
        },
      });
      added.push(informer);
    }
    if (added.length > 0) informerRuns.push(options.informers.start(signal));
    return added;
  }

  async function discover(): Promise<SharedInformer<KubeObject>[]> {
    return watch(await discoverDeletableResources(client, signal));
  }

  /** The owner as the server has it now (graph first), or undefined when it is gone. */
  async function lookupOwner(
    dependent: GraphNode,
    ref: OwnerReference,
    reconcileSignal: AbortSignal,
  ): Promise<KubeObject | undefined> {
    const known = graph.get(ref.uid);
    if (known) return known.object;
    const { group } = parseAPIVersion(ref.apiVersion);
    const resource = byKind.get(`${group}/${ref.kind}`);
    if (!resource)
      throw new CsikitError(
        "CSIKIT_ERR_KIND_NOT_SERVED",
        `ownerReference to ${ref.apiVersion}/${ref.kind} ${ref.name}: kind not served`,
      );
    const namespace = resource.namespaced ? (dependent.object.metadata?.namespace ?? "") : undefined;
    if (resource.namespaced && !namespace) return undefined; // a cluster-scoped object cannot have a namespaced owner
    try {
      const owner = await client.get<KubeObject>(
        resource,
        ref.name,
        namespace ? { namespace } : {},
        reconcileSignal,
      );
      return owner.metadata?.uid === ref.uid ? owner : undefined;
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  async function patchMetadata(
    node: GraphNode,
    metadata: Record<string, unknown>,
    reconcileSignal: AbortSignal,
  ): Promise<void> {
    const meta = node.object.metadata ?? {};
    await client.patch(
      node.resource,
      meta.name ?? "",
      { metadata: { resourceVersion: meta.resourceVersion, ...metadata } },
      meta.namespace ? { namespace: meta.namespace } : {},
      reconcileSignal,
    );
  }

  async function deleteObject(node: GraphNode, policy: Policy, reconcileSignal: AbortSignal): Promise<void> {
    const meta = node.object.metadata ?? {};
    logger.info(2, "deleting object", {
      resource: node.resource.resource,
      namespace: meta.namespace,
      name: meta.name,
      propagationPolicy: policy,
    });
    await client.delete(
      node.resource,
      meta.name ?? "",
      {
        ...(meta.namespace ? { namespace: meta.namespace } : {}),
        propagationPolicy: policy,
        preconditions: { uid: meta.uid ?? "" },
      },
      reconcileSignal,
    );
  }

  async function orphanDependents(node: GraphNode, reconcileSignal: AbortSignal): Promise<void> {
    const uid = node.object.metadata?.uid ?? "";
    for (const dependentUid of graph.dependents(uid)) {
      const dependent = graph.get(dependentUid);
      if (!dependent) continue;
      const refs = ownerReferences(dependent.object).filter((ref) => ref.uid !== uid);
      await patchMetadata(dependent, { ownerReferences: refs.length > 0 ? refs : null }, reconcileSignal);
    }
    await patchMetadata(
      node,
      { finalizers: finalizersOf(node.object).filter((f) => f !== ORPHAN_FINALIZER) },
      reconcileSignal,
    );
  }

  async function processDeletingDependents(node: GraphNode, reconcileSignal: AbortSignal): Promise<void> {
    const uid = node.object.metadata?.uid ?? "";
    let blocking = 0;
    for (const dependentUid of graph.dependents(uid)) {
      const dependent = graph.get(dependentUid);
      if (!dependent) continue;
      if (ownerReferences(dependent.object).some((ref) => ref.uid === uid && ref.blockOwnerDeletion === true))
        blocking++;
      if (dependent.object.metadata?.deletionTimestamp === undefined) queue.add(dependentUid);
    }
    if (blocking > 0) return; // each dependent's removal enqueues this owner again
    await patchMetadata(
      node,
      { finalizers: finalizersOf(node.object).filter((f) => f !== FOREGROUND_FINALIZER) },
      reconcileSignal,
    );
  }

  async function attemptToDelete(uid: string, reconcileSignal: AbortSignal): Promise<void> {
    const node = graph.get(uid);
    if (!node) return;
    const object = node.object;
    if (object.metadata?.deletionTimestamp !== undefined) {
      const finalizers = finalizersOf(object);
      if (finalizers.includes(ORPHAN_FINALIZER)) await orphanDependents(node, reconcileSignal);
      else if (finalizers.includes(FOREGROUND_FINALIZER))
        await processDeletingDependents(node, reconcileSignal);
      return;
    }
    const refs = ownerReferences(object);
    if (refs.length === 0) return;
    const owners: OwnerState[] = [];
    for (const ref of refs) {
      const owner = await lookupOwner(node, ref, reconcileSignal);
      owners.push({
        ref,
        state: owner === undefined ? "dangling" : isDeletingDependents(owner) ? "waiting" : "solid",
      });
    }
    const solid = owners.filter((o) => o.state === "solid");
    const waiting = owners.filter((o) => o.state === "waiting");
    if (solid.length > 0) {
      if (solid.length === owners.length) return;
      // Kept by a solid owner: drop the references to owners that are gone or being deleted.
      const keep = new Set(solid.map((o) => o.ref.uid));
      await patchMetadata(
        node,
        { ownerReferences: refs.filter((ref) => keep.has(ref.uid)) },
        reconcileSignal,
      );
      return;
    }
    let policy: Policy;
    if (waiting.length > 0 && graph.dependents(uid).length > 0) policy = "Foreground";
    else if (finalizersOf(object).includes(ORPHAN_FINALIZER)) policy = "Orphan";
    else if (finalizersOf(object).includes(FOREGROUND_FINALIZER)) policy = "Foreground";
    else policy = "Background";
    await deleteObject(node, policy, reconcileSignal);
  }

  let initial: SharedInformer<KubeObject>[];
  try {
    initial = await discover();
  } catch (error) {
    if (signal.aborted) return;
    throw error;
  }
  const discoveryPeriodMs = options.discoveryPeriodMs ?? 30_000;
  let cancelDiscovery = (): void => {};
  const scheduleDiscovery = (): void => {
    if (signal.aborted || discoveryPeriodMs <= 0) return;
    cancelDiscovery = clock.setTimer(discoveryPeriodMs, () => {
      discover().then(
        () => scheduleDiscovery(),
        (error: unknown) => {
          if (!signal.aborted) logger.warn("discovery failed", { err: errorMessage(error) });
          scheduleDiscovery();
        },
      );
    });
  };
  scheduleDiscovery();
  try {
    await runController(
      {
        name: "garbage-collector-controller",
        informers: initial,
        queue,
        workers: options.workers ?? 20,
        logger,
        reconcile: async (uid, { signal: reconcileSignal }) => {
          try {
            await attemptToDelete(uid, reconcileSignal);
          } catch (error) {
            if (!isNotFound(error)) throw error;
          }
        },
      },
      signal,
    );
  } finally {
    cancelDiscovery();
    queue.shutDown();
    await Promise.all(informerRuns);
  }
}
