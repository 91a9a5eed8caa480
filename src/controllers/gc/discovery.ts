// What the garbage collector watches: every resource the server serves (preferred version of
// each group) that can be listed, watched and deleted, except events (upstream's
// ignoredResources), found through discovery (/api/v1, /apis, /apis/<group>/<version>).

import type { GroupVersionKindResource } from "../../api/index.ts";
import type { KubeClient } from "../../kube/index.ts";

interface APIResource {
  name: string;
  namespaced: boolean;
  kind: string;
  verbs?: string[];
}

interface APIResourceList {
  groupVersion?: string;
  resources?: APIResource[];
}

interface APIGroupList {
  groups?: { name: string; preferredVersion?: { version: string }; versions?: { version: string }[] }[];
}

const IGNORED = new Set(["/events", "events.k8s.io/events"]);

function usable(resource: APIResource): boolean {
  const verbs = new Set(resource.verbs ?? []);
  return !resource.name.includes("/") && verbs.has("list") && verbs.has("watch") && verbs.has("delete");
}

function resourcesOf(group: string, version: string, list: APIResourceList): GroupVersionKindResource[] {
  return (list.resources ?? [])
    .filter((resource) => usable(resource) && !IGNORED.has(`${group}/${resource.name}`))
    .map((resource) => ({
      group,
      version,
      resource: resource.name,
      kind: resource.kind,
      namespaced: resource.namespaced,
    }));
}

/** Every deletable, watchable resource the server serves now. */
export async function discoverDeletableResources(
  client: KubeClient,
  signal?: AbortSignal,
): Promise<GroupVersionKindResource[]> {
  const core = await client.request<APIResourceList>({ method: "GET", path: "/api/v1" }, signal);
  const found = resourcesOf("", "v1", core);
  const groups = await client.request<APIGroupList>({ method: "GET", path: "/apis" }, signal);
  for (const group of groups.groups ?? []) {
    const version = group.preferredVersion?.version ?? group.versions?.[0]?.version;
    if (!version) continue;
    const list = await client.request<APIResourceList>(
      { method: "GET", path: `/apis/${group.name}/${version}` },
      signal,
    );
    found.push(...resourcesOf(group.name, version, list));
  }
  return found;
}
