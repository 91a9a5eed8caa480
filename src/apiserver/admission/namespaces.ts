// Namespace lifecycle, kept simple but observable like upstream's: the four system namespaces
// exist from the first start; deleting a namespace marks it (deletionTimestamp,
// status.phase=Terminating) and answers at once, then a reaper deletes every namespaced object
// in it (finalizers and pod grace periods are honoured: held objects are waited for), and once
// it is empty clears the `kubernetes` spec finalizer and removes the namespace. New objects in a
// terminating namespace are refused with 403 (rest-write.ts). The reaper resumes after a
// restart for namespaces still terminating. While it waits it re-sweeps with a backoff of
// 100 ms doubling to 2 s.

import type { Clock, Logger } from "../../base/index.ts";
import { errorMessage } from "../../base/index.ts";
import type { KubeObject, ResourceDef } from "../rest/resource.ts";
import { StoreError } from "../storage/index.ts";
import { collectionPrefix, metadataOf, objectKey, stringField, timestamp } from "../rest/objects.ts";
import {
  createObject,
  deleteObject,
  NAMESPACE_KEY_PREFIX,
  type RestContext,
  type RestResult,
} from "../rest/rest.ts";
import { ApiError, notFound } from "../transport/status.ts";

export const SYSTEM_NAMESPACES = ["default", "kube-system", "kube-public", "kube-node-lease"] as const;

const RETRY_MIN_MS = 100;
const RETRY_MAX_MS = 2000;

export function namespaceDef(ctx: RestContext): ResourceDef | undefined {
  return ctx.registry.lookup("", "v1", "namespaces");
}

/** Creates the system namespaces that do not exist yet. */
export function ensureSystemNamespaces(ctx: RestContext): void {
  const def = namespaceDef(ctx);
  for (const name of SYSTEM_NAMESPACES) {
    if (ctx.store.get(NAMESPACE_KEY_PREFIX + name)) continue;
    const object: KubeObject = { apiVersion: "v1", kind: "Namespace", metadata: { name } };
    if (def) {
      createObject(ctx, def, "", object, { dryRun: false });
    } else {
      ctx.store.create(NAMESPACE_KEY_PREFIX + name, object);
    }
  }
}

export class NamespaceReaper {
  readonly #ctx: RestContext;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #pending = new Map<string, { cancel: () => void; delayMs: number }>();
  #stopped = false;

  constructor(options: { ctx: RestContext; clock: Clock; logger: Logger }) {
    this.#ctx = options.ctx;
    this.#clock = options.clock;
    this.#logger = options.logger;
  }

  /** Picks up namespaces left terminating by a previous run. */
  resume(): void {
    const page = this.#ctx.store.list({ prefix: NAMESPACE_KEY_PREFIX });
    for (const item of page.items) {
      if (item.object.metadata?.deletionTimestamp)
        this.#schedule(stringField(metadataOf(item.object), "name"), 0);
    }
  }

  /** DELETE of a namespace: mark it terminating and start emptying it. */
  deleteNamespace(name: string, dryRun: boolean): RestResult {
    const def = namespaceDef(this.#ctx);
    const key = NAMESPACE_KEY_PREFIX + name;
    const stored = this.#ctx.store.get(key);
    if (!stored) throw notFound("", "namespaces", name);
    if (
      SYSTEM_NAMESPACES.includes(name as (typeof SYSTEM_NAMESPACES)[number]) &&
      name !== "kube-node-lease"
    ) {
      throw new ApiError(
        403,
        "Forbidden",
        `namespaces "${name}" is forbidden: this namespace may not be deleted`,
        {
          name,
          kind: "namespaces",
        },
      );
    }
    const object = structuredClone(stored.object);
    const meta = metadataOf(object);
    if (meta.deletionTimestamp === undefined) {
      meta.deletionTimestamp = timestamp(this.#clock.now());
      meta.deletionGracePeriodSeconds = 0;
      const status = typeof object.status === "object" && object.status !== null ? object.status : {};
      object.status = { ...status, phase: "Terminating" };
      if (!dryRun) {
        const updated = this.#ctx.store.update(key, object, stored.revision);
        this.#schedule(name, 0);
        return { code: 200, body: withKind(updated.object, def) };
      }
    }
    return { code: 200, body: withKind(object, def) };
  }

  stop(): void {
    this.#stopped = true;
    for (const entry of this.#pending.values()) entry.cancel();
    this.#pending.clear();
  }

  #schedule(name: string, delayMs: number): void {
    if (this.#stopped) return;
    this.#pending.get(name)?.cancel();
    const cancel = this.#clock.setTimer(delayMs, () => {
      this.#pending.delete(name);
      this.#sweep(name, delayMs);
    });
    this.#pending.set(name, { cancel, delayMs });
  }

  #sweep(name: string, lastDelayMs: number): void {
    if (this.#stopped) return;
    try {
      const remaining = this.#deleteContents(name);
      if (remaining > 0) {
        this.#schedule(name, Math.min(RETRY_MAX_MS, Math.max(RETRY_MIN_MS, lastDelayMs * 2)));
        return;
      }
      this.#finalize(name);
    } catch (error) {
      this.#logger.error("namespace cleanup failed; retrying", { namespace: name, err: errorMessage(error) });
      this.#schedule(name, RETRY_MAX_MS);
    }
  }

  /** Deletes the namespace's objects; returns how many still exist (held by finalizers or grace). */
  #deleteContents(namespace: string): number {
    let remaining = 0;
    const seen = new Set<string>();
    for (const def of this.#ctx.registry.all()) {
      if (!def.namespaced) continue;
      const prefix = collectionPrefix(def, namespace);
      if (seen.has(prefix)) continue;
      seen.add(prefix);
      for (const item of this.#ctx.store.list({ prefix }).items) {
        const name = stringField(metadataOf(item.object), "name");
        if (!item.object.metadata?.deletionTimestamp) {
          try {
            // Default grace, as upstream's namespace controller: a scheduled pod terminates
            // through its node (which deletes it with grace 0), everything else goes at once.
            deleteObject(this.#ctx, { def, namespace, name, subresource: "" }, { dryRun: false });
          } catch (error) {
            if (!(error instanceof ApiError && error.code === 404)) throw error;
          }
        }
        if (this.#ctx.store.get(objectKey(def, namespace, name))) remaining++;
      }
    }
    return remaining;
  }

  #finalize(name: string): void {
    const key = NAMESPACE_KEY_PREFIX + name;
    const stored = this.#ctx.store.get(key);
    if (!stored || !stored.object.metadata?.deletionTimestamp) return;
    const object = structuredClone(stored.object);
    const spec =
      typeof object.spec === "object" && object.spec !== null ? (object.spec as Record<string, unknown>) : {};
    const finalizers = Array.isArray(spec.finalizers) ? spec.finalizers : [];
    const metaFinalizers = object.metadata?.finalizers;
    try {
      if (Array.isArray(metaFinalizers) && metaFinalizers.length > 0) {
        if (finalizers.length > 0) {
          object.spec = { ...spec, finalizers: [] };
          this.#ctx.store.update(key, object, stored.revision);
        }
        return; // someone else's finalizer holds it; their removal deletes it (rest.ts commit)
      }
      this.#ctx.store.delete(key, stored.revision);
    } catch (error) {
      if (error instanceof StoreError && error.reason === "Conflict") {
        this.#schedule(name, RETRY_MIN_MS);
        return;
      }
      if (error instanceof StoreError && error.reason === "NotFound") return;
      throw error;
    }
  }
}

function withKind(object: KubeObject, def: ResourceDef | undefined): KubeObject {
  const { apiVersion: _a, kind: _k, ...rest } = object;
  return { apiVersion: "v1", kind: def?.kind ?? "Namespace", ...rest };
}
