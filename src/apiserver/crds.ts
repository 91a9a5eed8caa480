// Keeps the served custom resources in step with the stored CustomResourceDefinitions: at start
// every stored CRD is served again; after any write to a CRD the registry serves its current
// versions, and once a CRD is gone its resources stop being served and its stored custom
// objects are removed (upstream's customresourcecleanup finalizer does the same, less
// abruptly: here the instances go at once, finalizers on them are not waited for).

import type { Logger } from "../base/index.ts";
import { errorMessage } from "../base/index.ts";
import type { KubeObject, ResourceRegistry } from "./resource.ts";
import type { Store } from "./storage/index.ts";

export const CRD_GROUP = "apiextensions.k8s.io";
export const CRD_RESOURCE = "customresourcedefinitions";
const CRD_PREFIX = `/${CRD_GROUP}/${CRD_RESOURCE}//`;

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
  /** CRD name → the object last served, to retire it once it is gone. */
  readonly #served = new Map<string, KubeObject>();

  constructor(options: { store: Store; registry: CustomResourceRegistry; logger: Logger }) {
    this.#store = options.store;
    this.#registry = options.registry;
    this.#logger = options.logger;
  }

  /** Serves every stored CRD (at start). */
  load(): void {
    for (const item of this.#store.list({ prefix: CRD_PREFIX }).items) this.#serve(item.object);
  }

  /** After a write to the CRD `name` (create, update, patch, delete): serve or retire it. */
  changed(name: string): void {
    const stored = this.#store.get(CRD_PREFIX + name);
    if (stored) {
      this.#serve(stored.object);
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

  #retire(crd: KubeObject): void {
    this.#registry.removeCustomResource(crd);
    const spec =
      typeof crd.spec === "object" && crd.spec !== null ? (crd.spec as Record<string, unknown>) : {};
    const names =
      typeof spec.names === "object" && spec.names !== null ? (spec.names as Record<string, unknown>) : {};
    if (typeof spec.group !== "string" || typeof names.plural !== "string") return;
    const prefix = `/${spec.group}/${names.plural}/`;
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
