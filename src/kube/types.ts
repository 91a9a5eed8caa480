// The minimal object shapes the generic plumbing needs: any Kubernetes object has metadata
// with name/namespace/resourceVersion; lists carry a resourceVersion and continue token; watch
// streams carry typed events. Typed kinds come from @kubernetes/client-node or src/api; these
// are structural so both fit.

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
}

export interface KubeList<T> {
  apiVersion?: string;
  kind?: string;
  metadata?: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
  items: T[];
}

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";

export interface WatchEvent<T> {
  type: WatchEventType;
  /** The object; for ERROR a Status. */
  object: T;
}

/** A group/version/resource; `group` "" is the core group. */
export interface GroupVersionResource {
  group: string;
  version: string;
  /** Plural lower-case resource name, e.g. "persistentvolumeclaims". */
  resource: string;
  /** Whether objects live in namespaces. Default true only matters for path building with a namespace. */
  namespaced?: boolean;
}

/** "namespace/name" or "name" for cluster-scoped objects: client-go's MetaNamespaceKeyFunc. */
export function objectKey(object: KubeObject): string {
  const name = object.metadata?.name ?? "";
  const namespace = object.metadata?.namespace;
  return namespace ? `${namespace}/${name}` : name;
}

/** Splits a key from objectKey back into namespace ("" for cluster-scoped) and name. */
export function splitObjectKey(key: string): { namespace: string; name: string } {
  const slash = key.indexOf("/");
  return slash < 0
    ? { namespace: "", name: key }
    : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

export function gvrString(gvr: GroupVersionResource): string {
  return gvr.group === "" ? `${gvr.version}/${gvr.resource}` : `${gvr.group}/${gvr.version}/${gvr.resource}`;
}
