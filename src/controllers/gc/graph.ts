// The garbage collector's dependency graph (upstream's GraphBuilder, reduced to what the
// decisions need): every watched object by UID with the resource it came from, and for every
// UID the set of objects naming it in their ownerReferences. Fed by informer events only;
// an owner absent from the graph is looked up on the server before anything is decided.

import type { GroupVersionKindResource, OwnerReference } from "../../api/index.ts";
import type { KubeObject } from "../../kube/index.ts";

export interface GraphNode {
  resource: GroupVersionKindResource;
  object: KubeObject;
}

export class DependencyGraph {
  readonly #nodes = new Map<string, GraphNode>();
  readonly #dependents = new Map<string, Set<string>>();

  get(uid: string): GraphNode | undefined {
    return this.#nodes.get(uid);
  }

  /** UIDs of the objects that list `uid` as an owner. */
  dependents(uid: string): string[] {
    return [...(this.#dependents.get(uid) ?? [])];
  }

  upsert(resource: GroupVersionKindResource, object: KubeObject): void {
    const uid = object.metadata?.uid;
    if (!uid) return;
    const old = this.#nodes.get(uid);
    if (old) this.#unlink(uid, old.object);
    this.#nodes.set(uid, { resource, object });
    for (const ref of ownerReferences(object)) {
      let set = this.#dependents.get(ref.uid);
      if (!set) this.#dependents.set(ref.uid, (set = new Set()));
      set.add(uid);
    }
  }

  remove(object: KubeObject): void {
    const uid = object.metadata?.uid;
    if (!uid) return;
    const old = this.#nodes.get(uid);
    if (old) this.#unlink(uid, old.object);
    this.#nodes.delete(uid);
  }

  #unlink(uid: string, object: KubeObject): void {
    for (const ref of ownerReferences(object)) {
      const set = this.#dependents.get(ref.uid);
      set?.delete(uid);
      if (set?.size === 0) this.#dependents.delete(ref.uid);
    }
  }
}

export function ownerReferences(object: KubeObject): OwnerReference[] {
  return object.metadata?.ownerReferences ?? [];
}
