// Which version of a resource the API server serves, from its discovery documents
// (/apis/<group>/<version>): for a component that must read a kind whose API graduated
// (VolumeAttributesClass: storage.k8s.io/v1beta1 → v1 in Kubernetes 1.34) and still work with
// an older server. Discovery is readable by every authenticated user, so no extra RBAC.

import type { GroupVersionKindResource } from "../api/index.ts";
import type { KubeClient } from "./client.ts";
import { isNotFound } from "./errors.ts";

interface APIResourceList {
  resources?: { name: string }[];
}

/**
 * The first of `candidates` (same group and resource, preferred version first) the server
 * serves, or undefined when it serves none. A group version the server does not know answers
 * 404 and counts as "not served"; any other failure is thrown (the caller retries or exits).
 */
export async function firstServedVersion<G extends GroupVersionKindResource>(
  client: KubeClient,
  candidates: readonly G[],
  signal?: AbortSignal,
): Promise<G | undefined> {
  for (const candidate of candidates) {
    let list: APIResourceList;
    try {
      list = await client.request<APIResourceList>(
        {
          method: "GET",
          path:
            candidate.group === ""
              ? `/api/${candidate.version}`
              : `/apis/${candidate.group}/${candidate.version}`,
        },
        signal,
      );
    } catch (error) {
      if (isNotFound(error)) continue;
      throw error;
    }
    if ((list.resources ?? []).some((r) => r.name === candidate.resource)) return candidate;
  }
  return undefined;
}
