// kube-apiserver's NodeRestriction admission plugin (--enable-admission-plugins=NodeRestriction):
// what the Node authorizer lets a node identity (system:node:<name>, group system:nodes) write,
// narrowed to what is its own. A node
// - creates or updates only its own Node, never setting or changing labels under
//   node-restriction.kubernetes.io/ or other kubernetes.io / k8s.io labels outside the kubelet's
//   own set, and never changing its taints once registered;
// - writes only its own Lease (in kube-node-lease) and CSINode;
// - deletes only pods bound to it, creates only mirror pods bound to it that reference nothing,
//   updates only the status of pods bound to it (not their labels), evicts only its own pods;
// - updates only a PVC's status, and there only capacity, conditions and the resize status;
// - requests ServiceAccount tokens only bound to a pod (with its uid) that runs on it.
// Refusals are 403 with upstream's texts, named as admission.NewForbidden names them.

import type { KubeObject } from "../rest/resource.ts";
import { forbidden, notFound, qualifiedResource } from "../transport/status.ts";
import type { AdmissionPlugin, AdmissionRequest } from "./types.ts";
import type { Store } from "../storage/types.ts";
import { nodeIdentity, NODE_LEASE_NAMESPACE } from "../auth/node-authz.ts";
import { podReferences } from "../auth/node-graph.ts";
import { jsonEqual } from "../../base/index.ts";

type Obj = Record<string, unknown>;

function record(value: unknown): Obj {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Obj) : {};
}

function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

const MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror";

/** The labels a kubelet may set on its own Node (k8s.io/kubelet's kubeletLabels and namespaces). */
const KUBELET_LABELS = new Set([
  "kubernetes.io/hostname",
  "topology.kubernetes.io/zone",
  "topology.kubernetes.io/region",
  "failure-domain.beta.kubernetes.io/zone",
  "failure-domain.beta.kubernetes.io/region",
  "beta.kubernetes.io/instance-type",
  "node.kubernetes.io/instance-type",
  "kubernetes.io/os",
  "kubernetes.io/arch",
  "beta.kubernetes.io/os",
  "beta.kubernetes.io/arch",
]);
const KUBELET_LABEL_NAMESPACES = ["kubelet.kubernetes.io", "node.kubernetes.io"];
const NODE_RESTRICTION_NAMESPACE = "node-restriction.kubernetes.io";

function labelNamespace(key: string): string {
  const slash = key.indexOf("/");
  return slash < 0 ? "" : key.slice(0, slash);
}

function inNamespace(namespace: string, domain: string): boolean {
  return namespace === domain || namespace.endsWith(`.${domain}`);
}

function isKubeletLabel(key: string): boolean {
  if (KUBELET_LABELS.has(key)) return true;
  const namespace = labelNamespace(key);
  return KUBELET_LABEL_NAMESPACES.some((allowed) => inNamespace(namespace, allowed));
}

/** upstream's getForbiddenLabels over the keys that differ between two label maps, sorted. */
export function forbiddenLabels(labels: Obj, oldLabels: Obj): string[] {
  const keys = new Set([...Object.keys(labels), ...Object.keys(oldLabels)]);
  const forbiddenKeys: string[] = [];
  for (const key of keys) {
    if (labels[key] === oldLabels[key] && Object.hasOwn(labels, key) === Object.hasOwn(oldLabels, key))
      continue;
    const namespace = labelNamespace(key);
    const kubernetes = inNamespace(namespace, "kubernetes.io") || inNamespace(namespace, "k8s.io");
    if (inNamespace(namespace, NODE_RESTRICTION_NAMESPACE) || (kubernetes && !isKubeletLabel(key)))
      forbiddenKeys.push(key);
  }
  return forbiddenKeys.sort();
}

/** admission.NewForbidden: `<resource> "<name>" is forbidden: <why>`. */
function refuse(request: AdmissionRequest, why: string): never {
  const meta = record(request.object?.metadata);
  const name = request.name || text(meta.name) || text(meta.generateName) || "Unknown";
  const { group, resource } = request.def;
  throw forbidden(`${qualifiedResource(group, resource)} ${JSON.stringify(name)} is forbidden: ${why}`, {
    name,
    ...(group !== "" ? { group } : {}),
    kind: resource,
  });
}

function storedPod(request: AdmissionRequest, store: Pick<Store, "get">, name: string): KubeObject {
  const pod = store.get(`/core/pods/${request.namespace}/${name}`)?.object;
  if (!pod) throw notFound("", "pods", name);
  return pod;
}

function podNode(pod: KubeObject | undefined): string {
  return text(record(pod?.spec).nodeName);
}

function admitPodCreate(node: string, request: AdmissionRequest): void {
  const pod = request.object ?? {};
  const meta = record(pod.metadata);
  if (!Object.hasOwn(record(meta.annotations), MIRROR_POD_ANNOTATION))
    refuse(
      request,
      `pod does not have ${JSON.stringify(MIRROR_POD_ANNOTATION)} annotation, node ${JSON.stringify(node)} can only create mirror pods`,
    );
  if (podNode(pod) !== node)
    refuse(request, `node ${JSON.stringify(node)} can only create pods with spec.nodeName set to itself`);
  const owners = Array.isArray(meta.ownerReferences) ? meta.ownerReferences.map(record) : [];
  if (owners.length > 1)
    refuse(
      request,
      `node ${JSON.stringify(node)} can only create pods with a single owner reference set to itself`,
    );
  const owner = owners[0];
  if (!owner || owner.apiVersion !== "v1" || owner.kind !== "Node" || owner.name !== node)
    refuse(
      request,
      `node ${JSON.stringify(node)} can only create pods with an owner reference set to itself`,
    );
  if (owner.controller !== true)
    refuse(
      request,
      `node ${JSON.stringify(node)} can only create pods with a controller owner reference set to itself`,
    );
  if (owner.blockOwnerDeletion === true)
    refuse(request, `node ${JSON.stringify(node)} must not set blockOwnerDeletion on an owner reference`);
  const refs = podReferences(pod);
  if (refs.serviceAccount !== "")
    refuse(request, `node ${JSON.stringify(node)} can not create pods that reference a service account`);
  if (refs.secrets.size > 0)
    refuse(request, `node ${JSON.stringify(node)} can not create pods that reference secrets`);
  if (refs.configmaps.size > 0)
    refuse(request, `node ${JSON.stringify(node)} can not create pods that reference configmaps`);
  const volumes = Array.isArray(record(pod.spec).volumes) ? (record(pod.spec).volumes as unknown[]) : [];
  if (volumes.some((volume) => record(volume).persistentVolumeClaim !== undefined))
    refuse(request, `node ${JSON.stringify(node)} can not create pods that reference persistentvolumeclaims`);
}

function admitPod(node: string, request: AdmissionRequest): void {
  switch (request.subresource) {
    case "":
      if (request.operation === "CREATE") return admitPodCreate(node, request);
      if (request.operation === "DELETE") {
        if (podNode(request.old) !== node)
          refuse(
            request,
            `node ${JSON.stringify(node)} can only delete pods with spec.nodeName set to itself`,
          );
        return;
      }
      return refuse(
        request,
        `unexpected operation ${JSON.stringify(request.operation)}, node ${JSON.stringify(node)} can only create and delete mirror pods`,
      );
    case "status":
      if (request.operation !== "UPDATE")
        return refuse(request, `unexpected operation ${JSON.stringify(request.operation)}`);
      if (podNode(request.old) !== node)
        refuse(
          request,
          `node ${JSON.stringify(node)} can only update pod status for pods with spec.nodeName set to itself`,
        );
      if (
        !jsonEqual(
          record(record(request.object?.metadata).labels),
          record(record(request.old?.metadata).labels),
        )
      )
        refuse(request, `node ${JSON.stringify(node)} cannot update labels through pod status`);
      return;
    case "eviction":
      if (request.operation !== "CREATE") return refuse(request, `unexpected operation ${request.operation}`);
      if (podNode(request.old) !== node)
        refuse(request, `node ${node} can only evict pods with spec.nodeName set to itself`);
      return;
    default:
      return refuse(
        request,
        `unexpected pod subresource ${JSON.stringify(request.subresource)}, only 'status' and 'eviction' are allowed`,
      );
  }
}

/** The PVC without what a node may change in it (status capacity, conditions, resize status). */
function pvcWithoutNodeFields(claim: KubeObject | undefined): Obj {
  const copy = structuredClone(record(claim));
  const meta = record(copy.metadata);
  delete meta.resourceVersion;
  delete meta.managedFields;
  const status = record(copy.status);
  for (const field of ["capacity", "conditions", "allocatedResourceStatuses", "allocatedResources"])
    delete status[field];
  copy.status = status;
  return copy;
}

function changedFields(a: Obj, b: Obj, prefix = ""): string[] {
  const changed: string[] = [];
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    if (jsonEqual(a[key], b[key])) continue;
    const [x, y] = [a[key], b[key]];
    const nested =
      typeof x === "object" &&
      x !== null &&
      !Array.isArray(x) &&
      typeof y === "object" &&
      y !== null &&
      !Array.isArray(y);
    changed.push(...(nested ? changedFields(x as Obj, y as Obj, `${prefix}${key}.`) : [`${prefix}${key}`]));
  }
  return changed;
}

function admitPvcStatus(node: string, request: AdmissionRequest): void {
  if (request.operation !== "UPDATE")
    return refuse(request, `unexpected operation ${JSON.stringify(request.operation)}`);
  const changed = changedFields(pvcWithoutNodeFields(request.object), pvcWithoutNodeFields(request.old));
  if (changed.length > 0)
    refuse(
      request,
      `node ${JSON.stringify(node)} is not allowed to update fields other than status.capacity and status.conditions: ${changed.join(", ")}`,
    );
}

function admitNode(node: string, request: AdmissionRequest): void {
  const name = request.name || text(record(request.object?.metadata).name);
  if (name !== node)
    refuse(request, `node ${JSON.stringify(node)} is not allowed to modify node ${JSON.stringify(name)}`);
  const labels = record(record(request.object?.metadata).labels);
  if (request.operation === "CREATE") {
    const forbiddenKeys = forbiddenLabels(labels, {});
    if (forbiddenKeys.length > 0)
      refuse(
        request,
        `node ${JSON.stringify(node)} is not allowed to set the following labels: ${forbiddenKeys.join(", ")}`,
      );
  } else if (request.operation === "UPDATE") {
    const taints = record(request.object?.spec).taints;
    const oldTaints = record(request.old?.spec).taints;
    if (!jsonEqual(taints ?? [], oldTaints ?? []))
      refuse(request, `node ${JSON.stringify(node)} is not allowed to modify taints`);
    const forbiddenKeys = forbiddenLabels(labels, record(record(request.old?.metadata).labels));
    if (forbiddenKeys.length > 0)
      refuse(request, `is not allowed to modify labels: ${forbiddenKeys.join(", ")}`);
  }
}

function admitServiceAccountToken(node: string, request: AdmissionRequest, store: Pick<Store, "get">): void {
  if (request.operation !== "CREATE" || request.subresource !== "token") return;
  const ref = record(record(request.object?.spec).boundObjectRef);
  if (ref.apiVersion !== "v1" || ref.kind !== "Pod" || text(ref.name) === "")
    refuse(request, "node requested token not bound to a pod");
  if (text(ref.uid) === "") refuse(request, "node requested token with a pod binding without a uid");
  const pod = storedPod(request, store, text(ref.name));
  if (record(pod.metadata).uid !== ref.uid)
    refuse(
      request,
      `the UID in the bound object reference (${text(ref.uid)}) does not match the UID in record. The object might have been deleted and then recreated`,
    );
  if (podNode(pod) !== node)
    refuse(request, "node requested token bound to a pod scheduled on a different node");
}

function admitOwnNamed(node: string, request: AdmissionRequest, mismatch: string): void {
  const name = request.operation === "CREATE" ? text(record(request.object?.metadata).name) : request.name;
  if (name !== node) refuse(request, mismatch);
}

export const nodeRestriction: AdmissionPlugin = {
  name: "NodeRestriction",
  admitCreate() {},
  validate(context, request) {
    if (!request.user) return;
    const node = nodeIdentity(request.user);
    if (node === undefined) return;
    if (node === "")
      refuse(request, `could not determine node from user ${JSON.stringify(request.user.username)}`);
    const { group, resource } = request.def;
    switch (`${group}/${resource}`) {
      case "/pods":
        return admitPod(node, request);
      case "/nodes":
        return admitNode(node, request);
      case "/persistentvolumeclaims":
        if (request.subresource !== "status") return refuse(request, "may only update PVC status");
        return admitPvcStatus(node, request);
      case "/serviceaccounts":
        return admitServiceAccountToken(node, request, context.store);
      case "coordination.k8s.io/leases":
        if (request.namespace !== NODE_LEASE_NAMESPACE)
          refuse(
            request,
            `can only access leases in the ${JSON.stringify(NODE_LEASE_NAMESPACE)} system namespace`,
          );
        return admitOwnNamed(
          node,
          request,
          "can only access node lease with the same name as the requesting node",
        );
      case "storage.k8s.io/csinodes":
        return admitOwnNamed(
          node,
          request,
          "can only access CSINode with the same name as the requesting node",
        );
      default:
        return;
    }
  },
};
