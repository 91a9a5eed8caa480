// The informer's cache: objects by key ("namespace/name" or "name"), with secondary indexes.
//
// Invariants:
// - One object per key; `replace` swaps the whole content in one step (after a relist).
// - Indexes always agree with the objects: every write updates them; `addIndexer` after data
//   is present builds the new index at once.
// - The "namespace" index is always there (client-go's cache.NamespaceIndex).
// - Cached objects are shared and read-only (CONVENTIONS §10): callers `structuredClone`
//   before changing one. With `freeze: true` (tests) objects are deep-frozen on the way in so
//   a mutation throws at the guilty line.

import { objectKey, type KubeObject } from "./types.ts";
import { CsikitError } from "../base/index.ts";

export type IndexFunc<T> = (object: T) => string[];

export const NAMESPACE_INDEX = "namespace";

export interface StoreOptions {
  /** Deep-freeze every stored object. Default false. */
  freeze?: boolean;
}

export function deepFreeze<T>(value: T): T {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return value;
  for (const key of Reflect.ownKeys(value)) deepFreeze((value as Record<string | symbol, unknown>)[key]);
  return Object.freeze(value);
}

export class Store<T extends KubeObject> {
  readonly #items = new Map<string, T>();
  readonly #indexers = new Map<string, IndexFunc<T>>();
  /** index name → index value → keys */
  readonly #indices = new Map<string, Map<string, Set<string>>>();
  readonly #freeze: boolean;

  constructor(options: StoreOptions = {}) {
    this.#freeze = options.freeze ?? false;
    this.addIndexer(NAMESPACE_INDEX, (object) => [object.metadata?.namespace ?? ""]);
  }

  /** Adds a named index; throws if the name is taken. */
  addIndexer(name: string, fn: IndexFunc<T>): void {
    if (this.#indexers.has(name))
      throw new CsikitError("CSIKIT_ERR_INDEXER", `indexer ${JSON.stringify(name)} already exists`);
    this.#indexers.set(name, fn);
    const index = new Map<string, Set<string>>();
    this.#indices.set(name, index);
    for (const [key, object] of this.#items) addToIndex(index, fn(object), key);
  }

  get(key: string): T | undefined {
    return this.#items.get(key);
  }

  has(key: string): boolean {
    return this.#items.has(key);
  }

  list(): T[] {
    return [...this.#items.values()];
  }

  keys(): string[] {
    return [...this.#items.keys()];
  }

  get size(): number {
    return this.#items.size;
  }

  /** Objects whose index function returned `value` for index `name`. */
  byIndex(name: string, value: string): T[] {
    const index = this.#indices.get(name);
    if (!index) throw new CsikitError("CSIKIT_ERR_INDEXER", `no indexer named ${JSON.stringify(name)}`);
    return [...(index.get(value) ?? [])].map((key) => this.#items.get(key)!);
  }

  /** Keys for index `name` = `value`. */
  indexKeys(name: string, value: string): string[] {
    const index = this.#indices.get(name);
    if (!index) throw new CsikitError("CSIKIT_ERR_INDEXER", `no indexer named ${JSON.stringify(name)}`);
    return [...(index.get(value) ?? [])];
  }

  listByNamespace(namespace: string): T[] {
    return this.byIndex(NAMESPACE_INDEX, namespace);
  }

  /** Inserts or replaces; returns the previous object. */
  upsert(object: T): T | undefined {
    const key = objectKey(object);
    const stored = this.#freeze ? deepFreeze(object) : object;
    const old = this.#items.get(key);
    if (old) this.#unindex(key, old);
    this.#items.set(key, stored);
    this.#index(key, stored);
    return old;
  }

  /** Removes by key; returns what was there. */
  delete(key: string): T | undefined {
    const old = this.#items.get(key);
    if (!old) return undefined;
    this.#unindex(key, old);
    this.#items.delete(key);
    return old;
  }

  /** Replaces all content; returns the objects that were there and are gone now. */
  replace(objects: readonly T[]): { removed: T[] } {
    const fresh = new Set(objects.map((o) => objectKey(o)));
    const removed: T[] = [];
    for (const [key, old] of this.#items) {
      if (!fresh.has(key)) {
        removed.push(old);
        this.delete(key);
      }
    }
    for (const object of objects) this.upsert(object);
    return { removed };
  }

  #index(key: string, object: T): void {
    for (const [name, fn] of this.#indexers) addToIndex(this.#indices.get(name)!, fn(object), key);
  }

  #unindex(key: string, object: T): void {
    for (const [name, fn] of this.#indexers) {
      const index = this.#indices.get(name)!;
      for (const value of fn(object)) {
        const keys = index.get(value);
        keys?.delete(key);
        if (keys?.size === 0) index.delete(value);
      }
    }
  }
}

function addToIndex(index: Map<string, Set<string>>, values: string[], key: string): void {
  for (const value of values) {
    let keys = index.get(value);
    if (!keys) index.set(value, (keys = new Set()));
    keys.add(key);
  }
}
