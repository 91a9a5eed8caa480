// A view over an informer's cache that also knows the objects this controller itself wrote,
// as upstream's pv_controller keeps its own cache updated with every write it makes
// (storeObjectUpdate): a reconcile that runs again before the watch delivered our last write
// sees the newer object and does not fail on a stale resourceVersion (or write twice).
//
// Invariants: `get` returns whichever of the cached and the written object has the higher
// resourceVersion; a written object is forgotten as soon as the cache has caught up with it,
// and on a delete event for its key (a later write would have failed with 404 anyway).

import { objectKey, type KubeObject, type Store } from "../../kube/index.ts";

function revision(object: KubeObject | undefined): bigint | undefined {
  const rv = object?.metadata?.resourceVersion;
  if (rv === undefined || !/^\d+$/.test(rv)) return undefined;
  return BigInt(rv);
}

export class LatestObjects<T extends KubeObject> {
  readonly #store: Store<T>;
  readonly #written = new Map<string, T>();

  constructor(store: Store<T>) {
    this.#store = store;
  }

  /**
   * Records the server's answer to one of our writes. An older answer never replaces a newer
   * one: with several workers, answers about one object could be remembered out of order.
   */
  remember(object: T): T {
    const key = objectKey(object);
    const known = revision(this.#written.get(key));
    const ours = revision(object);
    if (known === undefined || ours === undefined || ours >= known) this.#written.set(key, object);
    return object;
  }

  /** The object was deleted (informer delete): forget our copy. */
  forget(key: string): void {
    this.#written.delete(key);
  }

  get(key: string): T | undefined {
    const cached = this.#store.get(key);
    const written = this.#written.get(key);
    if (written === undefined) return cached;
    if (cached === undefined) return written;
    const ours = revision(written);
    const theirs = revision(cached);
    if (ours !== undefined && theirs !== undefined && ours > theirs) return written;
    this.#written.delete(key);
    return cached;
  }

  list(): T[] {
    return this.#store.list().map((object) => this.get(objectKey(object)) ?? object);
  }
}
