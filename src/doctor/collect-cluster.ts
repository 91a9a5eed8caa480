// Collects the API objects the checks read: whole lists, page by page (a cluster with
// thousands of PVs answers in bounded pages, as kubectl asks). The snapshot kinds are CRDs: a
// cluster without them (404) has none, which the checks tell apart from an empty list.

import {
  GVR,
  type GroupVersionKindResource,
  type KubeResource,
  type Node,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
  type VolumeAttachment,
  type VolumeSnapshot,
  type VolumeSnapshotContent,
} from "../api/index.ts";
import { isNotFound, type KubeClient } from "../kube/index.ts";
import type { ClusterState } from "./types.ts";

/** Objects per list request. */
const PAGE_SIZE = 500;

async function listAll<T extends KubeResource>(
  client: KubeClient,
  gvr: GroupVersionKindResource,
  signal?: AbortSignal,
): Promise<T[]> {
  const items: T[] = [];
  let token: string | undefined;
  do {
    const page = await client.list<T>(
      gvr,
      { limit: PAGE_SIZE, ...(token ? { continue: token } : {}) },
      signal,
    );
    items.push(...page.items);
    token = page.metadata?.continue || undefined;
  } while (token);
  return items;
}

/** A CRD's objects, or undefined when the cluster does not serve the kind. */
async function listOptional<T extends KubeResource>(
  client: KubeClient,
  gvr: GroupVersionKindResource,
  signal?: AbortSignal,
): Promise<T[] | undefined> {
  try {
    return await listAll<T>(client, gvr, signal);
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

export async function collectCluster(client: KubeClient, signal?: AbortSignal): Promise<ClusterState> {
  const [
    persistentVolumes,
    persistentVolumeClaims,
    pods,
    nodes,
    volumeAttachments,
    volumeSnapshots,
    contents,
  ] = await Promise.all([
    listAll<PersistentVolume>(client, GVR.persistentVolumes, signal),
    listAll<PersistentVolumeClaim>(client, GVR.persistentVolumeClaims, signal),
    listAll<Pod>(client, GVR.pods, signal),
    listAll<Node>(client, GVR.nodes, signal),
    listAll<VolumeAttachment>(client, GVR.volumeAttachments, signal),
    listOptional<VolumeSnapshot>(client, GVR.volumeSnapshots, signal),
    listOptional<VolumeSnapshotContent>(client, GVR.volumeSnapshotContents, signal),
  ]);
  return {
    persistentVolumes,
    persistentVolumeClaims,
    pods,
    nodes,
    volumeAttachments,
    ...(volumeSnapshots ? { volumeSnapshots } : {}),
    ...(contents ? { volumeSnapshotContents: contents } : {}),
  };
}
