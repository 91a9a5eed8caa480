// The owner of the CSIStorageCapacity objects (--capacity-ownerref-level), resolved once at
// start-up as upstream's owner.Lookup: start at the pod named by POD_NAME in NAMESPACE and walk
// up `level` controller references — 0 is the pod itself, 1 its controller (a StatefulSet,
// DaemonSet or ReplicaSet), 2 that one's controller (a Deployment), and so on. A negative level
// means no owner. The result always has controller: true and no blockOwnerDeletion.
//
// Only the objects actually read need RBAC "get": at level 1 the pod's controller reference is
// taken as it stands, without reading the controller (as upstream, so a StatefulSet deployment
// needs "get" on pods only).

import { CsikitError } from "../../../base/index.ts";
import { parseAPIVersion, type OwnerReference } from "../../../api/index.ts";
import type { KubeClient, KubeObject } from "../../../kube/index.ts";

export interface ResolveOwnerOptions {
  /** NAMESPACE: where the pod and its owners live. */
  namespace: string;
  /** POD_NAME. */
  podName: string;
  /** --capacity-ownerref-level (default 1). */
  level: number;
  signal?: AbortSignal;
}

/** The owner reference for the capacity objects, or null for a negative level. */
export async function resolveCapacityOwner(
  client: KubeClient,
  options: ResolveOwnerOptions,
): Promise<OwnerReference | null> {
  if (!Number.isInteger(options.level)) {
    throw new CsikitError(
      "CSIKIT_ERR_VALIDATION",
      `--capacity-ownerref-level: not an integer: ${options.level}`,
    );
  }
  if (options.level < 0) return null;
  if (options.namespace === "") {
    throw new CsikitError(
      "CSIKIT_ERR_VALIDATION",
      "need NAMESPACE env variable for CSIStorageCapacity objects",
    );
  }
  if (options.podName === "") {
    throw new CsikitError(
      "CSIKIT_ERR_VALIDATION",
      "need POD_NAME env variable to determine CSIStorageCapacity owner",
    );
  }
  return lookup(client, { apiVersion: "v1", kind: "Pod", name: options.podName }, options.level, options);
}

interface Target {
  apiVersion: string;
  kind: string;
  name: string;
}

async function lookup(
  client: KubeClient,
  target: Target,
  levels: number,
  options: ResolveOwnerOptions,
): Promise<OwnerReference> {
  const object = await getObject(client, target, options);
  if (levels === 0) {
    return {
      apiVersion: target.apiVersion,
      kind: target.kind,
      name: target.name,
      uid: object.metadata?.uid ?? "",
      controller: true,
    };
  }
  const controller = (object.metadata?.ownerReferences ?? []).find((ref) => ref.controller === true);
  if (controller === undefined) {
    throw new CsikitError(
      "CSIKIT_ERR_OWNER",
      `${target.apiVersion}/${target.kind} "${target.name}" in namespace "${options.namespace}" has no controlling owner, cannot unwind the ownership further`,
    );
  }
  if (levels === 1) {
    return {
      apiVersion: controller.apiVersion,
      kind: controller.kind,
      name: controller.name,
      uid: controller.uid,
      controller: true,
    };
  }
  return lookup(client, controller, levels - 1, options);
}

/** GET of any kind by apiVersion and kind: the resource comes from API discovery. */
async function getObject(
  client: KubeClient,
  target: Target,
  options: ResolveOwnerOptions,
): Promise<KubeObject> {
  const { group, version } = parseAPIVersion(target.apiVersion);
  const resource = await resourceOfKind(client, target.apiVersion, target.kind, options.signal);
  try {
    return await client.get<KubeObject>(
      { group, version, resource },
      target.name,
      { namespace: options.namespace },
      options.signal,
    );
  } catch (error) {
    throw new CsikitError(
      "CSIKIT_ERR_OWNER",
      `look up owner(s) of pod: get ${target.apiVersion}/${target.kind} "${target.name}" in namespace "${options.namespace}": ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
}

interface APIResourceList {
  resources?: { name: string; kind: string; namespaced?: boolean }[];
}

async function resourceOfKind(
  client: KubeClient,
  apiVersion: string,
  kind: string,
  signal: AbortSignal | undefined,
): Promise<string> {
  const path = apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  let list: APIResourceList;
  try {
    list = await client.request<APIResourceList>({ method: "GET", path }, signal);
  } catch (error) {
    throw new CsikitError(
      "CSIKIT_ERR_OWNER",
      `look up owner(s) of pod: API ${apiVersion} is not served: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  const match = (list.resources ?? []).find((r) => r.kind === kind && !r.name.includes("/"));
  if (match === undefined) {
    throw new CsikitError(
      "CSIKIT_ERR_OWNER",
      `look up owner(s) of pod: API ${apiVersion} has no kind ${kind}`,
    );
  }
  return match.name;
}
