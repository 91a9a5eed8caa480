// The minimal object shapes the generic plumbing needs: any Kubernetes object has metadata
// with name/namespace/resourceVersion; lists carry a resourceVersion and continue token; watch
// streams carry typed events. Typed kinds come from @kubernetes/client-node or src/api; these
// are structural so both fit.

import type { GroupVersionResource as ApiGroupVersionResource, ListMeta, ObjectMeta } from "../api/index.ts";
import { splitKey } from "../api/index.ts";

export type { ObjectMeta, WatchEvent, WatchEventType } from "../api/index.ts";
export { objectKey } from "../api/index.ts";

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
}

export interface KubeList<T> {
  apiVersion?: string;
  kind?: string;
  metadata?: ListMeta;
  items: T[];
}

/** A group/version/resource; `group` "" is the core group. */
export interface GroupVersionResource extends ApiGroupVersionResource {
  /** Whether objects live in namespaces. Default true only matters for path building with a namespace. */
  namespaced?: boolean;
}

/** Splits a key from objectKey back into namespace ("" for cluster-scoped) and name. */
export const splitObjectKey = splitKey;

export function gvrString(gvr: GroupVersionResource): string {
  return gvr.group === "" ? `${gvr.version}/${gvr.resource}` : `${gvr.group}/${gvr.version}/${gvr.resource}`;
}
