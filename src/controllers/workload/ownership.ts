// Upstream's ControllerRefManager (pkg/controller/controller_ref_manager.go): a controller
// owns the objects whose controller reference names its uid; it adopts orphans its selector
// matches and releases owned objects its selector no longer matches. Adoption first re-reads
// the owner from the API server (canAdopt: same uid, not being deleted) so a stale cache never
// adopts for an owner that is gone; every patch carries the resourceVersion it was decided on,
// so a concurrent change (another owner adopting first) is a 409 and the sync runs again.

import { type GroupVersionKindResource, type OwnerReference } from "../../api/index.ts";
import { isNotFound, type KubeClient, type KubeObject } from "../../kube/index.ts";
import { controllerOf } from "./pods.ts";

export interface ClaimOptions<T extends KubeObject> {
  client: KubeClient;
  /** The kind of the claimed objects (pods, replicasets). */
  gvr: GroupVersionKindResource;
  /** The kind of the owner, to re-read it before adopting. */
  ownerGvr: GroupVersionKindResource;
  owner: KubeObject;
  controllerRef: OwnerReference;
  matches(object: T): boolean;
  objects: readonly T[];
  signal?: AbortSignal;
}

function ownerRefsPatch(object: KubeObject, refs: OwnerReference[]): unknown {
  return { metadata: { ownerReferences: refs, resourceVersion: object.metadata?.resourceVersion } };
}

/** The objects `owner` controls after adopting and releasing; an error leaves the sync to retry. */
export async function claimObjects<T extends KubeObject>(options: ClaimOptions<T>): Promise<T[]> {
  const { client, owner, controllerRef } = options;
  const ownerUid = owner.metadata?.uid;
  const ownerDeleting = owner.metadata?.deletionTimestamp !== undefined;
  const namespace = owner.metadata?.namespace ?? "";
  let adoptable: boolean | undefined;
  const canAdopt = async (): Promise<boolean> => {
    if (adoptable !== undefined) return adoptable;
    try {
      const fresh = await client.get<KubeObject>(
        options.ownerGvr,
        owner.metadata?.name ?? "",
        { namespace },
        options.signal,
      );
      adoptable = fresh.metadata?.uid === ownerUid && fresh.metadata?.deletionTimestamp === undefined;
    } catch (error) {
      if (!isNotFound(error)) throw error;
      adoptable = false;
    }
    return adoptable;
  };
  const claimed: T[] = [];
  for (const object of options.objects) {
    const ref = controllerOf(object);
    const refs = object.metadata?.ownerReferences ?? [];
    const name = object.metadata?.name ?? "";
    if (ref !== undefined) {
      if (ref.uid !== ownerUid) continue; // OBSERVATION: another controller owns it.
      if (options.matches(object) || ownerDeleting) {
        claimed.push(object);
        continue;
      }
      // OBSERVATION: ours, but the selector no longer matches: release it.
      try {
        await client.patch(
          options.gvr,
          name,
          ownerRefsPatch(
            object,
            refs.filter((r) => r.uid !== ownerUid),
          ),
          { namespace },
          options.signal,
        );
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
      continue;
    }
    // OBSERVATION: an orphan.
    if (!options.matches(object) || ownerDeleting || object.metadata?.deletionTimestamp !== undefined)
      continue;
    if (!(await canAdopt())) continue;
    try {
      const adopted = await client.patch<T>(
        options.gvr,
        name,
        ownerRefsPatch(object, [...refs, controllerRef]),
        { namespace },
        options.signal,
      );
      claimed.push(adopted);
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
  return claimed;
}
