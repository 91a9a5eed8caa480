// Keeps the served custom resources in step with the stored CustomResourceDefinitions: at start
// every stored CRD is served again; after any write to a CRD the registry serves its current
// versions, and once a CRD is gone its resources stop being served.
// Deletion goes as upstream's: the first DELETE only marks the CRD (deletionTimestamp, the
// `customresourcecleanup.apiextensions.k8s.io` finalizer, condition Terminating=True) and answers
// 200 with it; then every custom object is deleted (those held by finalizers are marked and
// waited for, re-checked with a backoff of 100 ms doubling to 2 s), and once none is left the
// finalizer is removed, which removes the CRD. Creating objects of a terminating CRD is 405.
// Cleanup resumes after a restart.

import type { Logger } from "../../base/index.ts";
import { errorMessage } from "../../base/index.ts";
import type { KubeObject, ResourceDef, ResourceRegistry } from "../rest/resource.ts";
import type { Store } from "../storage/index.ts";
import { finalizersOf, forOutput, metadataOf, timestamp } from "../rest/objects.ts";
import { checkDeletePreconditions, type DeleteOptions, type RestResult, type Target } from "../rest/rest.ts";
import { ApiError } from "../transport/status.ts";

export const CRD_GROUP = "apiextensions.k8s.io";
export const CRD_RESOURCE = "customresourcedefinitions";
const CRD_PREFIX = `/${CRD_GROUP}/${CRD_RESOURCE}//`;
export const CRD_CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io";

const RETRY_MIN_MS = 100;
const RETRY_MAX_MS = 2000;

type Obj = Record<string, unknown>;

function record(value: unknown): Obj {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Obj) : {};
}

/** Sets (or replaces) the condition of `type` in the CRD's status, as SetCRDCondition does. */
function setCondition(crd: KubeObject, condition: Obj, now: string): void {
  const status = record(crd.status);
  const conditions = Array.isArray(status.conditions) ? (status.conditions as Obj[]) : [];
  const index = conditions.findIndex((c) => record(c).type === condition.type);
  const old = index >= 0 ? conditions[index] : undefined;
  const next = {
    ...condition,
    lastTransitionTime: old && old.status === condition.status ? old.lastTransitionTime : now,
  };
  if (index >= 0) conditions[index] = next;
  else conditions.push(next);
  crd.status = { ...status, conditions };
}

/** The storage prefix of a CRD's custom objects, or undefined when it names none. */
function instancesPrefix(crd: KubeObject): string | undefined {
  const spec = record(crd.spec);
  const names = record(spec.names);
  if (typeof spec.group !== "string" || typeof names.plural !== "string") return undefined;
  return `/${spec.group}/${names.plural}/`;
}

/** A registry that can serve CRDs (createBuiltinRegistry's). */
export interface CustomResourceRegistry extends ResourceRegistry {
  addCustomResource(crd: KubeObject): void;
  removeCustomResource(crd: KubeObject): void;
}

export function isCustomResourceRegistry(registry: ResourceRegistry): registry is CustomResourceRegistry {
  return (
    "addCustomResource" in registry &&
    typeof registry.addCustomResource === "function" &&
    "removeCustomResource" in registry &&
    typeof registry.removeCustomResource === "function"
  );
}

export class CustomResourceSync {
  readonly #store: Store;
  readonly #registry: CustomResourceRegistry;
  readonly #logger: Logger;
  readonly #now: () => number;
  /** CRD name → the object last served, to retire it once it is gone. */
  readonly #served = new Map<string, KubeObject>();
  /** CRD name → the pending cleanup retry. */
  readonly #cleanups = new Map<string, { timer: NodeJS.Timeout | undefined; delayMs: number }>();
  #stopped = false;

  constructor(options: {
    store: Store;
    registry: CustomResourceRegistry;
    logger: Logger;
    now?: () => number;
  }) {
    this.#store = options.store;
    this.#registry = options.registry;
    this.#logger = options.logger;
    this.#now = options.now ?? Date.now;
  }

  /** Serves every stored CRD (at start) and resumes the cleanup of terminating ones. */
  load(): void {
    for (const item of this.#store.list({ prefix: CRD_PREFIX }).items) {
      this.#serve(item.object);
      if (item.object.metadata?.deletionTimestamp)
        this.#scheduleCleanup(String(item.object.metadata.name), 0);
    }
  }

  /** Stops pending cleanups (server shutdown). */
  stop(): void {
    this.#stopped = true;
    for (const cleanup of this.#cleanups.values()) clearTimeout(cleanup.timer);
    this.#cleanups.clear();
  }

  /** Whether the CRD named `<plural>.<group>` is being deleted (its objects may not be created). */
  terminating(def: ResourceDef): boolean {
    return Boolean(
      this.#store.get(`${CRD_PREFIX}${def.resource}.${def.group}`)?.object.metadata?.deletionTimestamp,
    );
  }

  /** 405 for a create of objects of a terminating CRD, as upstream's CR handler answers. */
  refuseCreate(def: ResourceDef): ApiError {
    return new ApiError(
      405,
      "MethodNotAllowed",
      `create is not supported on resources of kind "${def.resource}.${def.group}"`,
      { group: def.group, kind: def.resource },
    );
  }

  /**
   * The first DELETE of a CRD: marks it terminating in one write and answers 200 with it.
   * Undefined when the CRD is missing or already terminating (the plain delete answers then).
   */
  beginDelete(def: ResourceDef, target: Target, options: DeleteOptions): RestResult | undefined {
    const old = this.#store.get(CRD_PREFIX + target.name);
    if (!old || old.object.metadata?.deletionTimestamp) return undefined;
    checkDeletePreconditions(target, old, options);
    const next = structuredClone(old.object);
    const meta = metadataOf(next);
    const now = timestamp(this.#now());
    meta.deletionTimestamp = now;
    meta.deletionGracePeriodSeconds = 0;
    const finalizers = finalizersOf(next);
    if (!finalizers.includes(CRD_CLEANUP_FINALIZER)) meta.finalizers = [...finalizers, CRD_CLEANUP_FINALIZER];
    setCondition(
      next,
      {
        type: "Terminating",
        status: "True",
        reason: "InstanceDeletionPending",
        message: "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
      },
      now,
    );
    if (options.dryRun) return { code: 200, body: forOutput(def, next) };
    const stored = this.#store.update(old.key, next, old.revision);
    return { code: 200, body: forOutput(def, stored.object) };
  }

  /** After a write to the CRD `name` (create, update, patch, delete): serve or retire it. */
  changed(name: string): void {
    const stored = this.#store.get(CRD_PREFIX + name);
    if (stored) {
      this.#serve(stored.object);
      if (stored.object.metadata?.deletionTimestamp) this.#scheduleCleanup(name, 0);
      return;
    }
    const last = this.#served.get(name);
    if (last) {
      this.#served.delete(name);
      this.#retire(last);
    }
  }

  #serve(crd: KubeObject): void {
    const name = crd.metadata?.name;
    if (typeof name === "string") this.#served.set(name, crd);
    try {
      this.#registry.addCustomResource(crd);
    } catch (error) {
      this.#logger.error("cannot serve custom resource definition", {
        crd: crd.metadata?.name,
        err: errorMessage(error),
      });
    }
  }

  #scheduleCleanup(name: string, delayMs: number): void {
    if (this.#stopped || this.#cleanups.get(name)?.timer !== undefined) return;
    const entry = this.#cleanups.get(name) ?? { timer: undefined, delayMs: RETRY_MIN_MS };
    entry.timer = setTimeout(() => {
      entry.timer = undefined;
      this.#cleanup(name, entry);
    }, delayMs);
    entry.timer.unref();
    this.#cleanups.set(name, entry);
  }

  /** One pass: delete the instances; when none is left, drop the finalizer (removing the CRD). */
  #cleanup(name: string, entry: { delayMs: number }): void {
    if (this.#stopped) return;
    try {
      const stored = this.#store.get(CRD_PREFIX + name);
      if (!stored || !finalizersOf(stored.object).includes(CRD_CLEANUP_FINALIZER)) {
        this.#cleanups.delete(name);
        return;
      }
      const prefix = instancesPrefix(stored.object);
      let remaining = 0;
      for (const item of prefix ? this.#store.list({ prefix }).items : []) {
        if (finalizersOf(item.object).length === 0) {
          this.#store.delete(item.key, item.revision);
          continue;
        }
        remaining++;
        if (!item.object.metadata?.deletionTimestamp) {
          const marked = structuredClone(item.object);
          metadataOf(marked).deletionTimestamp = timestamp(this.#now());
          metadataOf(marked).deletionGracePeriodSeconds = 0;
          this.#store.update(item.key, marked, item.revision);
        }
      }
      if (remaining > 0) {
        entry.delayMs = Math.min(entry.delayMs * 2, RETRY_MAX_MS);
        this.#scheduleCleanup(name, entry.delayMs);
        return;
      }
      const next = structuredClone(stored.object);
      setCondition(
        next,
        {
          type: "Terminating",
          status: "False",
          reason: "InstanceDeletionCompleted",
          message: "removed all instances",
        },
        timestamp(this.#now()),
      );
      const finalizers = finalizersOf(next).filter((f) => f !== CRD_CLEANUP_FINALIZER);
      metadataOf(next).finalizers = finalizers;
      if (finalizers.length === 0) this.#store.delete(stored.key, stored.revision);
      else this.#store.update(stored.key, next, stored.revision);
      this.#cleanups.delete(name);
      this.changed(name);
    } catch (error) {
      // A concurrent write (conflict) or a transient store error: try again shortly.
      this.#logger.warn("custom resource cleanup pass failed; retrying", {
        crd: name,
        err: errorMessage(error),
      });
      entry.delayMs = Math.min(entry.delayMs * 2, RETRY_MAX_MS);
      this.#scheduleCleanup(name, entry.delayMs);
    }
  }

  #retire(crd: KubeObject): void {
    this.#registry.removeCustomResource(crd);
    // Normally none is left (the cleanup removed them); a CRD whose finalizer was removed by
    // hand would otherwise leave its objects behind.
    const prefix = instancesPrefix(crd);
    if (prefix === undefined) return;
    for (const item of this.#store.list({ prefix }).items) {
      try {
        this.#store.delete(item.key);
      } catch (error) {
        this.#logger.warn("cannot remove custom object of a deleted CRD", {
          key: item.key,
          err: errorMessage(error),
        });
      }
    }
  }
}
