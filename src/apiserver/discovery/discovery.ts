// Discovery documents built from the registry's ResourceDefs: /api (APIVersions), /apis
// (APIGroupList), /apis/<group> (APIGroup) and /api/v1, /apis/<g>/<v> (APIResourceList), in the
// legacy (unaggregated) form. kubectl asks for aggregated discovery first but falls back to
// this form when the response's Content-Type is plain application/json.

import type { ResourceDef, ResourceRegistry } from "../rest/resource.ts";

interface GroupVersionForDiscovery {
  groupVersion: string;
  version: string;
}

export interface ApiGroup {
  name: string;
  versions: GroupVersionForDiscovery[];
  preferredVersion: GroupVersionForDiscovery;
}

const SUBRESOURCE_VERBS: Record<
  string,
  { kind?: string; group?: string; version?: string; verbs: string[] }
> = {
  status: { verbs: ["get", "patch", "update"] },
  binding: { kind: "Binding", verbs: ["create"] },
  exec: { kind: "PodExecOptions", verbs: ["create", "get"] },
  log: { kind: "Pod", verbs: ["get"] },
  token: { kind: "TokenRequest", group: "authentication.k8s.io", version: "v1", verbs: ["create"] },
  eviction: { kind: "Eviction", group: "policy", version: "v1", verbs: ["create"] },
  scale: { kind: "Scale", group: "autoscaling", version: "v1", verbs: ["get", "patch", "update"] },
};

/** Kubernetes' version priority: GA > beta > alpha, higher numbers first; else lexical. */
function versionRank(version: string): [number, number, number] {
  const match = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(version);
  if (!match) return [0, 0, 0];
  const stability = match[2] === undefined ? 3 : match[2] === "beta" ? 2 : 1;
  return [stability, Number(match[1]), Number(match[3] ?? 0)];
}

function compareVersions(a: string, b: string): number {
  const ra = versionRank(a);
  const rb = versionRank(b);
  for (let i = 0; i < 3; i++) if (ra[i] !== rb[i]) return rb[i]! - ra[i]!;
  return a.localeCompare(b);
}

export function apiGroups(registry: ResourceRegistry): ApiGroup[] {
  const versionsByGroup = new Map<string, Set<string>>();
  for (const def of registry.all()) {
    if (def.group === "") continue;
    const set = versionsByGroup.get(def.group) ?? new Set<string>();
    set.add(def.version);
    versionsByGroup.set(def.group, set);
  }
  return [...versionsByGroup.entries()].map(([name, set]) => {
    const versions = [...set]
      .sort(compareVersions)
      .map((version) => ({ groupVersion: `${name}/${version}`, version }));
    return { name, versions, preferredVersion: versions[0]! };
  });
}

export function apiVersions(serverAddress: string): Record<string, unknown> {
  return {
    kind: "APIVersions",
    versions: ["v1"],
    serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress }],
  };
}

export function apiGroupList(registry: ResourceRegistry): Record<string, unknown> {
  return { kind: "APIGroupList", apiVersion: "v1", groups: apiGroups(registry) };
}

export function apiGroup(registry: ResourceRegistry, group: string): Record<string, unknown> | undefined {
  const found = apiGroups(registry).find((g) => g.name === group);
  return found ? { kind: "APIGroup", apiVersion: "v1", ...found } : undefined;
}

function resourceEntries(def: ResourceDef): Record<string, unknown>[] {
  const main: Record<string, unknown> = {
    name: def.resource,
    singularName: def.singular,
    namespaced: def.namespaced,
    kind: def.kind,
    verbs: [...def.verbs],
  };
  if (def.shortNames.length > 0) main.shortNames = [...def.shortNames];
  if (def.categories.length > 0) main.categories = [...def.categories];
  const entries = [main];
  for (const sub of def.subresources) {
    const known = SUBRESOURCE_VERBS[sub];
    const entry: Record<string, unknown> = {
      name: `${def.resource}/${sub}`,
      singularName: "",
      namespaced: def.namespaced,
      kind: known?.kind ?? def.kind,
      verbs: known?.verbs ?? ["get"],
    };
    if (known?.group !== undefined) entry.group = known.group;
    if (known?.version !== undefined) entry.version = known.version;
    entries.push(entry);
  }
  return entries;
}

export function apiResourceList(
  registry: ResourceRegistry,
  group: string,
  version: string,
): Record<string, unknown> | undefined {
  const defs = registry.all().filter((d) => d.group === group && d.version === version);
  if (defs.length === 0 && !(group === "" && version === "v1")) return undefined;
  return {
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion: group === "" ? version : `${group}/${version}`,
    resources: defs.flatMap(resourceEntries),
  };
}
