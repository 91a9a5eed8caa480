// Objects the node may only GET one by one: PVCs, PVs and VolumeAttachments. kube-apiserver's
// Node authorizer lets a node get those its pods use and refuses to list or watch them (as it
// does for every kubelet), so the node agent cannot hold informers for them. This cache has the
// informer store's `get(key)`: a key asked for is fetched at once (and until then reads as
// absent), then refetched every `refreshMs` while the reconciler keeps asking for it; a key
// not asked for in `forgetAfterMs` is dropped. A fetch that changes what the cache holds
// (resourceVersion, or present/absent) calls onChange, as an informer event would.

import type { Clock, Logger } from "../base/index.ts";
import { errorMessage } from "../base/index.ts";
import { isNotFound, type KubeClient, type KubeObject } from "../kube/index.ts";
import type { GroupVersionResource } from "../api/index.ts";

interface Entry<T> {
  object: T | undefined;
  /** ms of the last answered fetch; undefined: never fetched. */
  fetchedAt?: number;
  wantedAt: number;
}

export interface PolledObjectsOptions {
  client: KubeClient;
  gvr: GroupVersionResource;
  clock: Clock;
  logger: Logger;
  /** How often a wanted object is fetched again. */
  refreshMs: number;
  /** Drop a key not asked for this long. Default 10 × refreshMs. */
  forgetAfterMs?: number;
  onChange: () => void;
}

export class PolledObjects<T extends KubeObject> {
  /** Keys are "<namespace>/<name>" for namespaced kinds, "<name>" otherwise (as informer stores). */
  readonly store: { get(key: string): T | undefined };
  readonly #o: PolledObjectsOptions;
  readonly #entries = new Map<string, Entry<T>>();
  #wake: (() => void) | undefined;

  constructor(options: PolledObjectsOptions) {
    this.#o = options;
    this.store = { get: (key) => this.#get(key) };
  }

  /** Whether some asked-for key has not been fetched yet (its absence is not known). */
  pending(): boolean {
    for (const entry of this.#entries.values()) if (entry.fetchedAt === undefined) return true;
    return false;
  }

  #get(key: string): T | undefined {
    const now = this.#o.clock.now();
    const entry = this.#entries.get(key);
    if (entry) {
      entry.wantedAt = now;
      return entry.object;
    }
    this.#entries.set(key, { object: undefined, wantedAt: now });
    this.#wake?.();
    return undefined;
  }

  /** Fetches until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    const { clock, refreshMs } = this.#o;
    const forgetAfter = this.#o.forgetAfterMs ?? 10 * refreshMs;
    while (!signal.aborted) {
      let nextDue = Number.POSITIVE_INFINITY;
      for (const [key, entry] of [...this.#entries]) {
        if (signal.aborted) return;
        const now = clock.now();
        if (now - entry.wantedAt > forgetAfter) {
          this.#entries.delete(key);
          continue;
        }
        if (entry.fetchedAt === undefined || now - entry.fetchedAt >= refreshMs)
          await this.#fetch(key, entry, signal);
        nextDue = Math.min(nextDue, (entry.fetchedAt ?? clock.now()) + refreshMs);
      }
      if (this.pending()) continue;
      const waitMs = Number.isFinite(nextDue) ? Math.max(0, nextDue - clock.now()) : refreshMs;
      await new Promise<void>((resolve) => {
        const done = (): void => {
          cancel();
          signal.removeEventListener("abort", done);
          this.#wake = undefined;
          resolve();
        };
        const cancel = clock.setTimer(waitMs, done);
        this.#wake = done;
        signal.addEventListener("abort", done, { once: true });
      });
    }
  }

  async #fetch(key: string, entry: Entry<T>, signal: AbortSignal): Promise<void> {
    const slash = key.indexOf("/");
    const [namespace, name] = slash < 0 ? ["", key] : [key.slice(0, slash), key.slice(slash + 1)];
    let object: T | undefined;
    try {
      object = await this.#o.client.get<T>(this.#o.gvr, name, namespace ? { namespace } : {}, signal);
    } catch (error) {
      if (signal.aborted) return;
      if (!isNotFound(error)) {
        // Forbidden (no pod of this node uses it any more) or a transient failure: keep what
        // was known, ask again next period.
        this.#o.logger.info(2, "cannot get object", {
          resource: this.#o.gvr.resource,
          key,
          err: errorMessage(error),
        });
        const first = entry.fetchedAt === undefined;
        entry.fetchedAt = this.#o.clock.now();
        if (first) this.#o.onChange();
        return;
      }
    }
    const before = entry.object?.metadata?.resourceVersion;
    const first = entry.fetchedAt === undefined;
    entry.object = object;
    entry.fetchedAt = this.#o.clock.now();
    if (first || before !== object?.metadata?.resourceVersion) this.#o.onChange();
  }
}
