// The store as one resource sees it: the only place the REST layer honours ResourceDef.storage.
// A resource whose objects live in another resource's storage (events.k8s.io/v1 events in
// core/v1 events, as kube-apiserver stores one Event in its storage version) gets a Store whose
// keys are its own ("/events.k8s.io/events/<ns>/<name>", so objectKey, collectionPrefix and
// continue tokens stay as they are) but which reads and writes the storing resource's keys,
// converting each object on the way in (toStorage) and out (fromStorage, including both sides
// of every watch event). Keys outside the resource's collection (the namespace a create looks
// up, …) pass through unchanged and unconverted. Revisions come from the one store, so
// resourceVersion, uid, creationTimestamp, finalizers and deletion are the same through both.
// Code that walks the raw store by resource (the namespace reaper) sees nothing under the
// viewing resource's prefix: the storing resource owns those objects.

import type { KubeObject, ResourceDef, StorageMapping } from "./resource.ts";
import type { RestContext } from "./rest-types.ts";
import type { ListOptions, ListResult, Store, StoredObject, StoreEvent, Watch } from "../storage/types.ts";

/** `ctx` with its store seen through `def` (ctx itself when the resource owns its storage). */
export function restContextFor(ctx: RestContext, def: ResourceDef): RestContext {
  return def.storage === undefined ? ctx : { ...ctx, store: storeFor(ctx.store, def) };
}

/** `store` as `def` sees it (`store` itself when the resource owns its storage). */
export function storeFor(store: Store, def: ResourceDef): Store {
  const mapping = def.storage;
  if (mapping === undefined) return store;
  return new ConvertingStore(store, rootPrefix(def.group, def.resource), mapping);
}

function rootPrefix(group: string, resource: string): string {
  return `/${group === "" ? "core" : group}/${resource}/`;
}

class ConvertingStore implements Store {
  readonly #store: Store;
  readonly #own: string;
  readonly #stored: string;
  readonly #mapping: StorageMapping;

  constructor(store: Store, ownPrefix: string, mapping: StorageMapping) {
    this.#store = store;
    this.#own = ownPrefix;
    this.#stored = rootPrefix(mapping.group, mapping.resource);
    this.#mapping = mapping;
  }

  #mapped(key: string): boolean {
    return key.startsWith(this.#own);
  }

  #toStoredKey(key: string): string {
    return this.#stored + key.slice(this.#own.length);
  }

  #toOwnKey(key: string): string {
    return key.startsWith(this.#stored) ? this.#own + key.slice(this.#stored.length) : key;
  }

  #out(stored: StoredObject): StoredObject {
    // Not `json`: that is the storing resource's form.
    return {
      key: this.#toOwnKey(stored.key),
      revision: stored.revision,
      createRevision: stored.createRevision,
      object: this.#mapping.fromStorage(stored.object),
    };
  }

  #event(event: StoreEvent): StoreEvent {
    const out: StoreEvent = {
      type: event.type,
      key: this.#toOwnKey(event.key),
      revision: event.revision,
      object: this.#mapping.fromStorage(event.object),
    };
    if (event.previous !== undefined) out.previous = this.#mapping.fromStorage(event.previous);
    return out;
  }

  currentRevision(): number {
    return this.#store.currentRevision();
  }

  compactedRevision(): number {
    return this.#store.compactedRevision();
  }

  whenDurable(revision: number): Promise<void> {
    return this.#store.whenDurable(revision);
  }

  get(key: string): StoredObject | undefined {
    if (!this.#mapped(key)) return this.#store.get(key);
    const stored = this.#store.get(this.#toStoredKey(key));
    return stored && this.#out(stored);
  }

  create(key: string, object: KubeObject): StoredObject {
    if (!this.#mapped(key)) return this.#store.create(key, object);
    return this.#out(this.#store.create(this.#toStoredKey(key), this.#mapping.toStorage(object)));
  }

  update(key: string, object: KubeObject, expectedRevision?: number): StoredObject {
    if (!this.#mapped(key)) return this.#store.update(key, object, expectedRevision);
    const converted = this.#mapping.toStorage(object);
    return this.#out(this.#store.update(this.#toStoredKey(key), converted, expectedRevision));
  }

  delete(key: string, expectedRevision?: number): StoredObject {
    if (!this.#mapped(key)) return this.#store.delete(key, expectedRevision);
    return this.#out(this.#store.delete(this.#toStoredKey(key), expectedRevision));
  }

  list(options: ListOptions): ListResult {
    if (!this.#mapped(options.prefix)) return this.#store.list(options);
    const page = this.#store.list({
      ...options,
      prefix: this.#toStoredKey(options.prefix),
      ...(options.startAfter !== undefined ? { startAfter: this.#toStoredKey(options.startAfter) } : {}),
    });
    const result: ListResult = { ...page, items: page.items.map((item) => this.#out(item)) };
    if (page.continueKey !== undefined) result.continueKey = this.#toOwnKey(page.continueKey);
    return result;
  }

  watch(prefix: string, fromRevision: number): Watch {
    if (!this.#mapped(prefix)) return this.#store.watch(prefix, fromRevision);
    const inner = this.#store.watch(this.#toStoredKey(prefix), fromRevision);
    const convert = (event: StoreEvent): StoreEvent => this.#event(event);
    async function* converted(): AsyncGenerator<StoreEvent> {
      for await (const event of inner) yield convert(event);
    }
    return {
      [Symbol.asyncIterator]: () => converted(),
      progressRevision: () => inner.progressRevision(),
      replaying: () => inner.replaying(),
      close: () => inner.close(),
    };
  }

  compact(keep: number): void {
    this.#store.compact(keep);
  }

  close(): void {
    this.#store.close();
  }
}
