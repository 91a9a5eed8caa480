// Aggregated discovery (apidiscovery.k8s.io/v2, APIGroupDiscoveryList): the one-request form
// of /api and /apis that kubectl 1.30+ asks for first, with
//   Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,…,application/json
// A server that answers it (with that Content-Type) spares kubectl the per-group-version
// requests; one that answers plain application/json gets the legacy documents read instead.
// Field names follow k8s.io/api/apidiscovery/v2 exactly.

import type { ResourceDef, ResourceRegistry } from "../rest/resource.ts";

export const AGGREGATED_DISCOVERY_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
export const AGGREGATED_DISCOVERY_V2BETA1 =
  "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";

/**
 * Which aggregated form an Accept header asks for ("v2" preferred, then "v2beta1"), or undefined
 * when the client wants only the legacy documents.
 */
export function aggregatedDiscoveryVersion(accept: string | undefined): "v2" | "v2beta1" | undefined {
  if (accept === undefined) return undefined;
  const offered = accept.split(",").map((part) => {
    const params = new Map<string, string>();
    for (const piece of part.split(";").slice(1)) {
      const [key = "", value = ""] = piece.split("=").map((s) => s.trim());
      params.set(key, value);
    }
    return params;
  });
  for (const version of ["v2", "v2beta1"] as const) {
    if (
      offered.some(
        (p) =>
          p.get("g") === "apidiscovery.k8s.io" &&
          p.get("v") === version &&
          p.get("as") === "APIGroupDiscoveryList",
      )
    ) {
      return version;
    }
  }
  return undefined;
}

/** Kubernetes' version priority: GA before beta before alpha, higher numbers first. */
function versionRank(version: string): [number, number, number] {
  const match = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(version);
  if (match === null) return [0, 0, 0];
  const stability = match[2] === undefined ? 3 : match[2] === "beta" ? 2 : 1;
  return [stability, Number(match[1]), Number(match[3] ?? 0)];
}

function byVersionPriority(a: string, b: string): number {
  const ra = versionRank(a);
  const rb = versionRank(b);
  for (let i = 0; i < 3; i++) {
    const diff = (rb[i] ?? 0) - (ra[i] ?? 0);
    if (diff !== 0) return diff;
  }
  return a.localeCompare(b);
}

const SUBRESOURCE_KINDS: Readonly<
  Record<string, { group: string; version: string; kind: string; verbs: string[] }>
> = {
  binding: { group: "", version: "v1", kind: "Binding", verbs: ["create"] },
  exec: { group: "", version: "v1", kind: "PodExecOptions", verbs: ["create", "get"] },
  log: { group: "", version: "v1", kind: "Pod", verbs: ["get"] },
  token: { group: "authentication.k8s.io", version: "v1", kind: "TokenRequest", verbs: ["create"] },
  scale: { group: "autoscaling", version: "v1", kind: "Scale", verbs: ["get", "patch", "update"] },
};

function resourceEntry(def: ResourceDef): Record<string, unknown> {
  const entry: Record<string, unknown> = {
    resource: def.resource,
    responseKind: { group: def.group, version: def.version, kind: def.kind },
    scope: def.namespaced ? "Namespaced" : "Cluster",
    singularResource: def.singular,
    verbs: [...def.verbs],
  };
  if (def.shortNames.length > 0) entry.shortNames = [...def.shortNames];
  if (def.categories.length > 0) entry.categories = [...def.categories];
  const subresources = def.subresources.map((name) => {
    const known = SUBRESOURCE_KINDS[name];
    return {
      subresource: name,
      responseKind: known
        ? { group: known.group, version: known.version, kind: known.kind }
        : { group: def.group, version: def.version, kind: def.kind },
      verbs: known ? known.verbs : ["get", "patch", "update"],
    };
  });
  if (subresources.length > 0) entry.subresources = subresources;
  return entry;
}

/**
 * The APIGroupDiscoveryList for /api (scope "api": the core group, whose item has no name) or
 * /apis (every named group, preferred version first).
 */
export function aggregatedDiscovery(
  registry: ResourceRegistry,
  scope: "api" | "apis",
  version: "v2" | "v2beta1" = "v2",
): Record<string, unknown> {
  const groups = new Map<string, Map<string, ResourceDef[]>>();
  for (const def of registry.all()) {
    if ((scope === "api") !== (def.group === "")) continue;
    const versions = groups.get(def.group) ?? new Map<string, ResourceDef[]>();
    const list = versions.get(def.version) ?? [];
    list.push(def);
    versions.set(def.version, list);
    groups.set(def.group, versions);
  }
  if (scope === "api" && !groups.has("")) groups.set("", new Map([["v1", []]]));
  const items = [...groups.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([group, versions]) => ({
      metadata: group === "" ? { creationTimestamp: null } : { name: group, creationTimestamp: null },
      versions: [...versions.keys()].sort(byVersionPriority).map((v) => ({
        version: v,
        resources: (versions.get(v) ?? [])
          .slice()
          .sort((a, b) => a.resource.localeCompare(b.resource))
          .map(resourceEntry),
        freshness: "Current",
      })),
    }));
  return { kind: "APIGroupDiscoveryList", apiVersion: `apidiscovery.k8s.io/${version}`, metadata: {}, items };
}
