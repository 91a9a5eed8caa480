// The attach/detach controller loop: informers → handlers that map every change to the node(s)
// it concerns → a queue of node names → workers running NodeReconciler. Handlers only enqueue:
// a pod's node (old and new), a node itself, a VolumeAttachment's node, the nodes of the pods
// using a claim when the claim or its PV changes, every node when a CSIDriver changes.

import {
  GVR,
  keyOf,
  type CSIDriver,
  type CSINode,
  type Node,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
  type VolumeAttachment,
} from "../../api/index.ts";
import { realClock, silentLogger, type Clock, type Logger } from "../../base/index.ts";
import {
  EventRecorder,
  WorkQueue,
  deletedObject,
  runController,
  type EventHandlers,
  type IndexFunc,
  type KubeObject,
  type SharedInformer,
  type InformerFactory,
  type KubeClient,
  type Tombstone,
} from "../../kube/index.ts";
import { resolveFeatureGates, type FeatureGates } from "../../migration/index.ts";
import { podVolumeClaim } from "./desired.ts";
import { NodeReconciler } from "./reconcile.ts";

export interface AttachDetachOptions {
  client: KubeClient;
  /** Shared informers; the caller starts them after every loop asked for its own. */
  informers: InformerFactory;
  logger?: Logger;
  /** Default realClock. */
  clock?: Clock;
  /** Concurrent node reconciles. Default 10. */
  workers?: number;
  /** Force detach from a not-Ready node after this long. Default 360000 (upstream maxWaitForUnmountDuration, 6m). */
  maxWaitForUnmountMs?: number;
  /** FailedAttachVolume when the attacher has not answered after this long. Default 120000 (upstream csiTimeout). */
  attachTimeoutMs?: number;
  /** Event recorder (component "attachdetach-controller"); default one of its own, started here. */
  recorder?: EventRecorder;
  /** Resolved --feature-gates (CSI migration's, src/migration). Default: Kubernetes 1.32's. */
  featureGates?: FeatureGates;
}

export const ATTACH_DETACH_COMPONENT = "attachdetach-controller";

const POD_NODE_INDEX = "attachdetach/node";
const POD_CLAIM_INDEX = "attachdetach/claim";
const ATTACHMENT_NODE_INDEX = "attachdetach/node";

/** Adds an index once per shared informer (a loop restarted on the same factory finds it there). */
function ensureIndexer<T extends KubeObject>(
  informer: SharedInformer<T>,
  name: string,
  fn: IndexFunc<T>,
): void {
  try {
    informer.store.indexKeys(name, "");
  } catch {
    informer.addIndexer(name, fn);
  }
}

/** Runs the attach/detach controller until the signal aborts; resolves when fully stopped. */
export async function startAttachDetachController(
  options: AttachDetachOptions,
  signal: AbortSignal,
): Promise<void> {
  const logger = (options.logger ?? silentLogger).with({ controller: "attachdetach" });
  const clock = options.clock ?? realClock;
  // Informers are requested before the first await: the composition root starts them next.
  const pods = options.informers.informer<Pod>(GVR.pods);
  const nodes = options.informers.informer<Node>(GVR.nodes);
  const claims = options.informers.informer<PersistentVolumeClaim>(GVR.persistentVolumeClaims);
  const volumes = options.informers.informer<PersistentVolume>(GVR.persistentVolumes);
  const csiDrivers = options.informers.informer<CSIDriver>(GVR.csiDrivers);
  const attachments = options.informers.informer<VolumeAttachment>(GVR.volumeAttachments);
  // CSI migration: a node's kubelet announces its migrated plugins on its CSINode.
  const csiNodes = options.informers.informer<CSINode>(GVR.csiNodes);
  ensureIndexer(pods, POD_NODE_INDEX, (pod) => (pod.spec?.nodeName ? [pod.spec.nodeName] : []));
  ensureIndexer(pods, POD_CLAIM_INDEX, (pod) =>
    (pod.spec?.volumes ?? []).flatMap((volume) => {
      const claim = podVolumeClaim(pod, volume);
      return claim === undefined ? [] : [keyOf(pod.metadata?.namespace, claim)];
    }),
  );
  ensureIndexer(attachments, ATTACHMENT_NODE_INDEX, (va) => (va.spec?.nodeName ? [va.spec.nodeName] : []));

  const ownRecorder = options.recorder === undefined;
  const recorder =
    options.recorder ??
    new EventRecorder({ client: options.client, component: ATTACH_DETACH_COMPONENT, clock, logger });
  const reconciler = new NodeReconciler({
    client: options.client,
    recorder,
    clock,
    maxWaitForUnmountMs: options.maxWaitForUnmountMs ?? 360_000,
    attachTimeoutMs: options.attachTimeoutMs ?? 120_000,
    lookups: {
      node: (name) => nodes.store.get(name),
      podsOnNode: (name) => pods.store.byIndex(POD_NODE_INDEX, name),
      attachmentsOnNode: (name) => attachments.store.byIndex(ATTACHMENT_NODE_INDEX, name),
      claim: (key) => claims.store.get(key),
      volume: (name) => volumes.store.get(name),
      csiDriver: (name) => csiDrivers.store.get(name),
      csiNode: (name) => csiNodes.store.get(name),
      featureGates: options.featureGates ?? resolveFeatureGates({}),
    },
  });
  const queue = new WorkQueue<string>({ name: "attachdetach", clock });

  const enqueueNode = (name: string | undefined): void => {
    if (name) queue.add(name);
  };
  const enqueueClaimUsers = (claimKey: string): void => {
    for (const pod of pods.store.byIndex(POD_CLAIM_INDEX, claimKey)) enqueueNode(pod.spec?.nodeName);
  };
  const enqueueAll = (): void => {
    for (const node of nodes.store.keys()) queue.add(node);
    for (const attachment of attachments.store.list()) enqueueNode(attachment.spec?.nodeName);
  };
  const byNode = <T>(nodeOf: (object: T) => string | undefined): EventHandlers<T> => ({
    onAdd: (object) => enqueueNode(nodeOf(object)),
    onUpdate: (old, object) => {
      enqueueNode(nodeOf(object));
      if (nodeOf(old) !== nodeOf(object)) enqueueNode(nodeOf(old));
    },
    onDelete: (object: T | Tombstone<T>) => enqueueNode(nodeOf(deletedObject(object))),
  });
  const claimKeyOf = (claim: PersistentVolumeClaim): string =>
    keyOf(claim.metadata?.namespace, claim.metadata?.name ?? "");
  const volumeClaimKey = (volume: PersistentVolume): string | undefined => {
    const ref = volume.spec?.claimRef;
    return ref?.name ? keyOf(ref.namespace, ref.name) : undefined;
  };
  const removers = [
    pods.addEventHandler(byNode<Pod>((pod) => pod.spec?.nodeName)),
    nodes.addEventHandler(byNode<Node>((node) => node.metadata?.name)),
    attachments.addEventHandler(byNode<VolumeAttachment>((va) => va.spec?.nodeName)),
    csiNodes.addEventHandler(byNode<CSINode>((csiNode) => csiNode.metadata?.name)),
    claims.addEventHandler({
      onAdd: (claim) => enqueueClaimUsers(claimKeyOf(claim)),
      onUpdate: (_old, claim) => enqueueClaimUsers(claimKeyOf(claim)),
      onDelete: (object) => enqueueClaimUsers(claimKeyOf(deletedObject(object))),
    }),
    volumes.addEventHandler({
      onAdd: (volume) => {
        const key = volumeClaimKey(volume);
        if (key) enqueueClaimUsers(key);
      },
      onUpdate: (_old, volume) => {
        const key = volumeClaimKey(volume);
        if (key) enqueueClaimUsers(key);
      },
      onDelete: (object) => {
        const key = volumeClaimKey(deletedObject(object));
        if (key) enqueueClaimUsers(key);
      },
    }),
    csiDrivers.addEventHandler({ onAdd: enqueueAll, onUpdate: enqueueAll, onDelete: enqueueAll }),
  ];

  const recorderStopped = ownRecorder ? recorder.start(signal) : Promise.resolve();
  try {
    await runController(
      {
        name: "attachdetach",
        informers: [pods, nodes, claims, volumes, csiDrivers, attachments, csiNodes],
        queue,
        workers: options.workers ?? 10,
        logger,
        reconcile: (nodeName, context) => reconciler.reconcile(nodeName, context.signal, context.logger),
      },
      signal,
    );
  } finally {
    queue.shutDown();
    for (const remove of removers) remove();
    await recorderStopped;
  }
}
