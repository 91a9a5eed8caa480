// The provisioner's read side: cached objects (informers) plus the few objects it reads live
// (secrets, snapshots, contents, VolumeAttributesClasses, ReferenceGrants), behind one narrow
// interface so request building stays a function of what it reads.

import type {
  CSINode,
  GroupVersionResource,
  Node,
  PersistentVolume,
  PersistentVolumeClaim,
  Secret,
  StorageClass,
  VolumeAttributesClass,
  VolumeAttachment,
} from "../../api/index.ts";
import { GVR } from "../../api/index.ts";
import { isNotFound, type KubeClient, type KubeObject, type Informer } from "../../kube/index.ts";

export interface VolumeSnapshot extends KubeObject {
  spec?: {
    source?: { persistentVolumeClaimName?: string; volumeSnapshotContentName?: string };
    volumeSnapshotClassName?: string;
  };
  status?: {
    boundVolumeSnapshotContentName?: string;
    readyToUse?: boolean;
    restoreSize?: string;
    error?: { message?: string };
  };
}

export interface VolumeSnapshotContent extends KubeObject {
  spec?: {
    driver?: string;
    sourceVolumeMode?: "Filesystem" | "Block";
    volumeSnapshotRef?: { name?: string; namespace?: string; uid?: string };
  };
  status?: { snapshotHandle?: string; readyToUse?: boolean; restoreSize?: number };
}

export interface ReferenceGrant extends KubeObject {
  spec?: {
    from?: { group: string; kind: string; namespace: string }[];
    to?: { group: string; kind: string; name?: string }[];
  };
}

export const REFERENCE_GRANTS = {
  group: "gateway.networking.k8s.io",
  version: "v1beta1",
  resource: "referencegrants",
  namespaced: true,
};

export interface ClusterView {
  claim(namespace: string, name: string): PersistentVolumeClaim | undefined;
  volume(name: string): PersistentVolume | undefined;
  storageClass(name: string): StorageClass | undefined;
  csiNodes(): CSINode[];
  nodes(): Node[];
  secret(namespace: string, name: string, signal?: AbortSignal): Promise<Secret | undefined>;
  snapshot(namespace: string, name: string, signal?: AbortSignal): Promise<VolumeSnapshot | undefined>;
  snapshotContent(name: string, signal?: AbortSignal): Promise<VolumeSnapshotContent | undefined>;
  volumeAttributesClass(name: string, signal?: AbortSignal): Promise<VolumeAttributesClass | undefined>;
  referenceGrants(namespace: string, signal?: AbortSignal): Promise<ReferenceGrant[]>;
  /** A VolumeAttachment whose source is this PV, if any (a volume still attached is not deleted). */
  attachmentOf(pvName: string): VolumeAttachment | undefined;
}

async function getOrUndefined<T>(fetch: () => Promise<T>): Promise<T | undefined> {
  try {
    return await fetch();
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

export function clusterView(parts: {
  client: KubeClient;
  claims: Informer<PersistentVolumeClaim>;
  volumes: Informer<PersistentVolume>;
  classes: Informer<StorageClass>;
  csiNodes?: Informer<CSINode>;
  nodes?: Informer<Node>;
  volumeAttachments?: Informer<VolumeAttachment>;
  /** Node deployment: the local node as the only source of topology. */
  localNodes?: { csiNodes: CSINode[]; nodes: Node[] };
  /** The VolumeAttributesClass version the server serves (vac-api.ts); default GVR's. */
  volumeAttributesClasses?: GroupVersionResource;
}): ClusterView {
  const { client } = parts;
  return {
    claim: (namespace, name) => parts.claims.store.get(`${namespace}/${name}`),
    volume: (name) => parts.volumes.store.get(name),
    storageClass: (name) => parts.classes.store.get(name),
    csiNodes: () => parts.localNodes?.csiNodes ?? parts.csiNodes?.store.list() ?? [],
    nodes: () => parts.localNodes?.nodes ?? parts.nodes?.store.list() ?? [],
    secret: (namespace, name, signal) =>
      getOrUndefined(() => client.get<Secret>(GVR.secrets, name, { namespace }, signal)),
    snapshot: (namespace, name, signal) =>
      getOrUndefined(() => client.get<VolumeSnapshot>(GVR.volumeSnapshots, name, { namespace }, signal)),
    snapshotContent: (name, signal) =>
      getOrUndefined(() => client.get<VolumeSnapshotContent>(GVR.volumeSnapshotContents, name, {}, signal)),
    volumeAttributesClass: (name, signal) =>
      getOrUndefined(() =>
        client.get<VolumeAttributesClass>(
          parts.volumeAttributesClasses ?? GVR.volumeAttributesClasses,
          name,
          {},
          signal,
        ),
      ),
    referenceGrants: async (namespace, signal) => {
      const list = await getOrUndefined(() =>
        client.list<ReferenceGrant>(REFERENCE_GRANTS, { namespace }, signal),
      );
      return list?.items ?? [];
    },
    attachmentOf: (pvName) =>
      parts.volumeAttachments?.store
        .list()
        .find((attachment) => attachment.spec?.source?.persistentVolumeName === pvName),
  };
}
