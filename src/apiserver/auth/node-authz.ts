// kube-apiserver's Node authorizer (--authorization-mode=Node): requests of a node identity —
// user system:node:<name> in group system:nodes — are allowed only for what that node's pods
// need. Secrets, ConfigMaps, PVCs, PVs, VolumeAttachments and ServiceAccount tokens only along
// a path of the node graph (node-graph.ts); its own Lease and CSINode by name; Nodes and Pods
// with the AuthorizeNodeWithSelectors rules (on by default since 1.32): reads of its own Node,
// pod lists with a spec.nodeName=<itself> field selector; writes the NodeRestriction admission
// plugin then narrows (node-restriction.ts). Everything else against the static rules of the
// bootstrap system:node role. A refusal is "no opinion" with upstream's reason, so the next
// authorizer of the chain (RBAC) may still allow it, as in --authorization-mode=Node,RBAC.

import type { UserInfo } from "./authn.ts";
import { NodeGraph, type VertexType } from "./node-graph.ts";
import type { Store } from "../storage/index.ts";

/** The subset of authz.ts's RequestAttributes this authorizer reads. */
export interface NodeRequest {
  user: UserInfo;
  verb: string;
  resourceRequest: boolean;
  path: string;
  apiGroup: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
  /** The request's fieldSelector query parameter, as sent. */
  fieldSelector?: string;
}

export interface NodeDecision {
  allowed: boolean;
  reason: string;
}

export const NODES_GROUP = "system:nodes";
export const NODE_USER_PREFIX = "system:node:";
export const NODE_LEASE_NAMESPACE = "kube-node-lease";

/** upstream's NodeIdentity: the node name, or undefined for a user that is not a node. */
export function nodeIdentity(user: UserInfo): string | undefined {
  if (!user.username.startsWith(NODE_USER_PREFIX) || !user.groups.includes(NODES_GROUP)) return undefined;
  return user.username.slice(NODE_USER_PREFIX.length);
}

interface StaticRule {
  verbs: readonly string[];
  groups: readonly string[];
  resources: readonly string[];
}

/**
 * upstream's bootstrappolicy.NodeRules(), for the requests the node authorizer does not
 * subdivide (the subdivided kinds never reach these rules).
 */
const NODE_RULES: readonly StaticRule[] = [
  { verbs: ["create"], groups: ["authentication.k8s.io"], resources: ["tokenreviews"] },
  {
    verbs: ["create"],
    groups: ["authorization.k8s.io"],
    resources: ["subjectaccessreviews", "localsubjectaccessreviews"],
  },
  { verbs: ["get", "list", "watch"], groups: [""], resources: ["services"] },
  { verbs: ["create", "update", "patch"], groups: ["", "events.k8s.io"], resources: ["events"] },
  { verbs: ["get"], groups: [""], resources: ["endpoints"] },
  {
    verbs: ["create", "get", "list", "watch"],
    groups: ["certificates.k8s.io"],
    resources: ["certificatesigningrequests"],
  },
  { verbs: ["get", "watch", "list"], groups: ["storage.k8s.io"], resources: ["csidrivers"] },
  { verbs: ["get", "list", "watch"], groups: ["node.k8s.io"], resources: ["runtimeclasses"] },
];

function staticRulesAllow(request: NodeRequest): boolean {
  if (!request.resourceRequest) return false;
  const resource =
    request.subresource === "" ? request.resource : `${request.resource}/${request.subresource}`;
  return NODE_RULES.some(
    (rule) =>
      rule.verbs.includes(request.verb) &&
      rule.groups.includes(request.apiGroup) &&
      rule.resources.includes(resource),
  );
}

/** Whether a fieldSelector holds `field=value` (or `==`) among its comma-separated terms. */
export function selectsField(selector: string | undefined, field: string, value: string): boolean {
  if (selector === undefined) return false;
  return selector.split(",").some((term) => {
    const match = /^\s*([^=!\s]+)\s*==?\s*(.*?)\s*$/.exec(term);
    return match !== null && match[1] === field && match[2] === value;
  });
}

const allow: NodeDecision = { allowed: true, reason: "" };
const noOpinion = (reason: string): NodeDecision => ({ allowed: false, reason });

export class NodeAuthorizer {
  readonly #graph: NodeGraph;

  constructor(store: Store) {
    this.#graph = new NodeGraph(store);
  }

  /** undefined: not a node (the chain goes on without a reason). */
  authorize(request: NodeRequest): NodeDecision | undefined {
    const node = nodeIdentity(request.user);
    if (node === undefined) return undefined;
    if (node === "") return noOpinion(`unknown node for user ${JSON.stringify(request.user.username)}`);
    if (request.resourceRequest) {
      const subdivided = this.#subdivided(node, request);
      if (subdivided !== undefined) return subdivided;
    }
    return staticRulesAllow(request) ? allow : noOpinion("");
  }

  #subdivided(node: string, request: NodeRequest): NodeDecision | undefined {
    const groupResource = `${request.apiGroup}/${request.resource}`;
    switch (groupResource) {
      case "/secrets":
        return this.#readNamespaced(node, "secret", request);
      case "/configmaps":
        return this.#readNamespaced(node, "configmap", request);
      case "/persistentvolumeclaims":
        return request.subresource === "status"
          ? this.#statusUpdate(node, "pvc", request)
          : this.#get(node, "pvc", request);
      case "/persistentvolumes":
        return this.#get(node, "pv", request);
      case "storage.k8s.io/volumeattachments":
        return this.#get(node, "volumeattachment", request);
      case "/serviceaccounts":
        return this.#createToken(node, request);
      case "coordination.k8s.io/leases":
        return this.#named(node, request, "a node lease", {
          namespace: NODE_LEASE_NAMESPACE,
          mismatch: "can only access node lease with the same name as the requesting node",
        });
      case "storage.k8s.io/csinodes":
        return this.#named(node, request, "a CSINode", {
          mismatch: "can only access CSINode with the same name as the requesting node",
        });
      case "/nodes":
        return this.#node(node, request);
      case "/pods":
        return this.#pod(node, request);
      default:
        return undefined;
    }
  }

  #path(node: string, type: VertexType, request: NodeRequest): NodeDecision {
    if (request.name === "") return noOpinion("No Object name found");
    return this.#graph.hasPath(node, type, request.namespace, request.name)
      ? allow
      : noOpinion(`no relationship found between node '${node}' and this object`);
  }

  #readNamespaced(node: string, type: VertexType, request: NodeRequest): NodeDecision {
    if (!["get", "list", "watch"].includes(request.verb))
      return noOpinion("can only read resources of this type");
    if (request.subresource !== "") return noOpinion("cannot read subresource");
    if (request.namespace === "") return noOpinion("can only read namespaced object of this type");
    return this.#path(node, type, request);
  }

  #get(node: string, type: VertexType, request: NodeRequest): NodeDecision {
    if (request.verb !== "get") return noOpinion("can only get individual resources of this type");
    if (request.subresource !== "") return noOpinion("cannot get subresource");
    return this.#path(node, type, request);
  }

  #statusUpdate(node: string, type: VertexType, request: NodeRequest): NodeDecision {
    if (request.verb !== "update" && request.verb !== "patch")
      return noOpinion("can only get/update/patch this type");
    return this.#path(node, type, request);
  }

  #createToken(node: string, request: NodeRequest): NodeDecision {
    if (request.verb !== "create" || request.name === "")
      return noOpinion("can only create tokens for individual service accounts");
    if (request.subresource !== "token")
      return noOpinion("can only create token subresource of serviceaccount");
    return this.#path(node, "serviceaccount", request);
  }

  /** Leases and CSINodes: the node's own by name (create is checked by NodeRestriction). */
  #named(
    node: string,
    request: NodeRequest,
    what: string,
    options: { namespace?: string; mismatch: string },
  ): NodeDecision {
    if (!["get", "create", "update", "patch", "delete"].includes(request.verb))
      return noOpinion(`can only get, create, update, patch, or delete ${what}`);
    if (options.namespace !== undefined && request.namespace !== options.namespace)
      return noOpinion(`can only access leases in the ${JSON.stringify(options.namespace)} system namespace`);
    if (options.namespace === undefined && request.subresource !== "")
      return noOpinion("cannot authorize CSINode subresources");
    if (request.verb !== "create" && request.name !== node) return noOpinion(options.mismatch);
    return allow;
  }

  #node(node: string, request: NodeRequest): NodeDecision {
    if (request.subresource === "") {
      if (["create", "update", "patch"].includes(request.verb)) return allow;
      if (["get", "list", "watch"].includes(request.verb)) {
        if (request.name === node) return allow;
        return noOpinion(
          request.name === ""
            ? `node '${node}' cannot read all nodes, only its own Node object`
            : `node '${node}' cannot read '${request.name}', only its own Node object`,
        );
      }
    } else if (request.subresource === "status" && ["update", "patch"].includes(request.verb)) {
      return allow;
    }
    return noOpinion("");
  }

  #pod(node: string, request: NodeRequest): NodeDecision {
    switch (request.subresource) {
      case "":
        if (request.verb === "get") return this.#get(node, "pod", request);
        if (request.verb === "list" || request.verb === "watch") {
          if (selectsField(request.fieldSelector, "spec.nodeName", node)) return allow;
          if (request.name !== "") return this.#path(node, "pod", request);
          return noOpinion("can only list/watch pods with spec.nodeName field selector");
        }
        if (request.verb === "create" || request.verb === "delete") return allow;
        break;
      case "status":
        if (request.verb === "update" || request.verb === "patch") return allow;
        break;
      case "eviction":
        if (request.verb === "create") return allow;
        break;
    }
    return noOpinion("");
  }
}
