// The resource registry: the built-in kinds plus, at run time, the kinds of installed CRDs.
// The REST layer calls addCustomResource(crd) after a CRD is created or updated and
// removeCustomResource(crd) after it is deleted; listeners (discovery caches, routing) hear of
// every change. A CRD may not shadow a built-in resource.

import { kubeRelease, type CustomResourceDefinition, type KubeRelease } from "../api/index.ts";
import type { KubeObject, ResourceDef, ResourceRegistry } from "./rest/resource.ts";
import { builtinResourceDefs, resourceDefFromCRD } from "./resources/index.ts";

export { resourceDefFromCRD };

export interface MutableResourceRegistry extends ResourceRegistry {
  /** Serves (or re-serves, replacing the previous definitions) the versions of a CRD. */
  addCustomResource(crd: CustomResourceDefinition | KubeObject): void;
  /** Stops serving a CRD's resources. */
  removeCustomResource(crd: CustomResourceDefinition | KubeObject): void;
}

function keyOf(group: string, version: string, resource: string): string {
  return `${group}/${version}/${resource}`;
}

function crdIdentity(crd: CustomResourceDefinition | KubeObject): { group: string; plural: string } {
  const spec = (crd as { spec?: { group?: unknown; names?: { plural?: unknown } } }).spec;
  return {
    group: typeof spec?.group === "string" ? spec.group : "",
    plural: typeof spec?.names?.plural === "string" ? spec.names.plural : "",
  };
}

/** The built-in kinds as a server acting as `release` serves them (default: 1.37, its gates). */
export function createBuiltinRegistry(release: KubeRelease = kubeRelease()): MutableResourceRegistry {
  const builtins = new Map<string, ResourceDef>();
  for (const def of builtinResourceDefs(release))
    builtins.set(keyOf(def.group, def.version, def.resource), def);
  const builtinGroups = new Set([...builtins.values()].map((def) => def.group));
  /** "<group>/<plural>" → its served definitions. */
  const custom = new Map<string, ResourceDef[]>();
  const listeners: (() => void)[] = [];
  let snapshot: readonly ResourceDef[] | undefined;

  const changed = () => {
    snapshot = undefined;
    for (const listener of [...listeners]) listener();
  };

  return {
    all() {
      snapshot ??= Object.freeze([...builtins.values(), ...[...custom.values()].flat()]);
      return snapshot;
    },
    lookup(group, version, resource) {
      const builtin = builtins.get(keyOf(group, version, resource));
      if (builtin !== undefined) return builtin;
      return custom.get(`${group}/${resource}`)?.find((def) => def.version === version);
    },
    onChange(listener) {
      listeners.push(listener);
    },
    addCustomResource(crd) {
      const { group, plural } = crdIdentity(crd);
      if (group === "" || plural === "" || builtinGroups.has(group)) return;
      custom.set(`${group}/${plural}`, resourceDefFromCRD(crd));
      changed();
    },
    removeCustomResource(crd) {
      const { group, plural } = crdIdentity(crd);
      if (custom.delete(`${group}/${plural}`)) changed();
    },
  };
}
