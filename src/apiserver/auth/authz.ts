// Authorization of API requests as kube-apiserver's --authorization-mode chain: a comma list
// of Node (node-authz.ts), RBAC, AlwaysAllow and AlwaysDeny, asked in order; the first that
// allows (or, AlwaysDeny, denies) decides, and a refusal carries every reason given, one per
// line, as upstream's union authorizer. RBAC decides as kube-apiserver's RBAC authorizer does from the stored Roles, ClusterRoles, RoleBindings and
// ClusterRoleBindings (rule matching with `*`, `*/subresource`, resourceNames and
// nonResourceURLs; ServiceAccount, User and Group subjects; ClusterRoles with an aggregationRule
// carry the rules of the ClusterRoles their selectors match, as the aggregation controller
// would have written them). Before RBAC, members of system:masters are always allowed (the
// bootstrap admin), and every authenticated user gets what upstream's bootstrap policy binds to
// system:authenticated: discovery paths (system:discovery) and the self reviews
// (system:basic-user). A denial is 403 with upstream's message.

import type { UserInfo } from "./authn.ts";
import { AUTHENTICATED_GROUP, MASTERS_GROUP } from "./authn.ts";
import type { KubeObject } from "../rest/resource.ts";
import type { Store } from "../storage/index.ts";
import { createObject, type RestContext } from "../rest/rest.ts";
import { ApiError, qualifiedResource } from "../transport/status.ts";
import { NodeAuthorizer } from "./node-authz.ts";

export const AUTHORIZATION_MODES = ["Node", "RBAC", "AlwaysAllow", "AlwaysDeny"] as const;
export type AuthorizationMode = (typeof AUTHORIZATION_MODES)[number];

/**
 * The modes of an --authorization-mode value ("Node,RBAC"), in order; an Error with
 * kube-apiserver's message for an unknown or repeated mode.
 */
export function parseAuthorizationModes(value: string): AuthorizationMode[] {
  const modes: AuthorizationMode[] = [];
  for (const mode of value.split(",").map((m) => m.trim())) {
    if (!(AUTHORIZATION_MODES as readonly string[]).includes(mode))
      throw new Error(
        `authorization-mode ${JSON.stringify(mode)} is not a valid mode (valid modes: ${AUTHORIZATION_MODES.join(", ")})`,
      );
    if (modes.includes(mode as AuthorizationMode))
      throw new Error(`authorization-mode ${JSON.stringify(mode)} has mode specified more than once`);
    modes.push(mode as AuthorizationMode);
  }
  return modes;
}

export interface RequestAttributes {
  user: UserInfo;
  verb: string;
  /** False for a non-resource path (discovery, /openapi, /metrics…). */
  resourceRequest: boolean;
  path: string;
  apiGroup: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
  /** The fieldSelector query parameter of a list/watch (the Node authorizer reads spec.nodeName). */
  fieldSelector?: string;
}

export interface Decision {
  allowed: boolean;
  reason: string;
}

type Obj = Record<string, unknown>;
const RBAC = "/rbac.authorization.k8s.io";

function record(value: unknown): Obj {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Obj) : {};
}

function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : [];
}

/** system:discovery's nonResourceURLs and system:basic-user's reviews, bound to system:authenticated. */
const BOOTSTRAP_RULES: readonly Obj[] = [
  {
    verbs: ["get"],
    nonResourceURLs: [
      "/api",
      "/api/*",
      "/apis",
      "/apis/*",
      "/healthz",
      "/livez",
      "/openapi",
      "/openapi/*",
      "/readyz",
      "/version",
      "/version/",
    ],
  },
  {
    verbs: ["create"],
    apiGroups: ["authorization.k8s.io"],
    resources: ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
  },
  { verbs: ["create"], apiGroups: ["authentication.k8s.io"], resources: ["selfsubjectreviews"] },
];

/** upstream's RuleAllows. */
export function ruleAllows(attributes: RequestAttributes, rule: Obj): boolean {
  const verbs = strings(rule.verbs);
  if (!verbs.includes("*") && !verbs.includes(attributes.verb)) return false;
  if (!attributes.resourceRequest) {
    return strings(rule.nonResourceURLs).some(
      (url) =>
        url === "*" ||
        url === attributes.path ||
        (url.endsWith("*") && attributes.path.startsWith(url.slice(0, -1))),
    );
  }
  const groups = strings(rule.apiGroups);
  if (!groups.includes("*") && !groups.includes(attributes.apiGroup)) return false;
  const combined =
    attributes.subresource === "" ? attributes.resource : `${attributes.resource}/${attributes.subresource}`;
  const resourceMatches = strings(rule.resources).some(
    (resource) =>
      resource === "*" ||
      resource === combined ||
      (attributes.subresource !== "" && resource === `*/${attributes.subresource}`),
  );
  if (!resourceMatches) return false;
  const names = strings(rule.resourceNames);
  return names.length === 0 || names.includes(attributes.name);
}

function subjectApplies(subject: Obj, user: UserInfo, bindingNamespace: string): boolean {
  const name = typeof subject.name === "string" ? subject.name : "";
  switch (subject.kind) {
    case "User":
      return user.username === name;
    case "Group":
      return user.groups.includes(name);
    case "ServiceAccount": {
      const namespace =
        typeof subject.namespace === "string" && subject.namespace !== ""
          ? subject.namespace
          : bindingNamespace;
      return user.username === `system:serviceaccount:${namespace}:${name}`;
    }
    default:
      return false;
  }
}

function labelsMatch(labels: Obj, selector: Obj): boolean {
  for (const [key, value] of Object.entries(record(selector.matchLabels)))
    if (labels[key] !== value) return false;
  for (const expression of Array.isArray(selector.matchExpressions) ? selector.matchExpressions : []) {
    const e = record(expression);
    const key = text(e.key);
    const has = Object.hasOwn(labels, key);
    const values = strings(e.values);
    if (e.operator === "In" && !(has && values.includes(String(labels[key])))) return false;
    if (e.operator === "NotIn" && has && values.includes(String(labels[key]))) return false;
    if (e.operator === "Exists" && !has) return false;
    if (e.operator === "DoesNotExist" && has) return false;
  }
  return true;
}

/** Aggregate of errors as upstream's utilerrors prints it. */
function aggregate(errors: string[]): string {
  return errors.length === 1 ? errors[0]! : `[${errors.join(", ")}]`;
}

export class Authorizer {
  readonly modes: readonly AuthorizationMode[];
  readonly #store: Store;
  readonly #node: NodeAuthorizer;

  /** `mode`: the --authorization-mode value ("Node,RBAC") or its parsed modes. */
  constructor(options: { mode: string | readonly AuthorizationMode[]; store: Store }) {
    this.modes = typeof options.mode === "string" ? parseAuthorizationModes(options.mode) : options.mode;
    this.#store = options.store;
    this.#node = new NodeAuthorizer(options.store);
  }

  authorize(attributes: RequestAttributes): Decision {
    if (this.modes[0] === "AlwaysAllow") return { allowed: true, reason: "" };
    const { user } = attributes;
    if (user.groups.includes(MASTERS_GROUP)) return { allowed: true, reason: "" };
    const reasons: string[] = [];
    for (const mode of this.modes) {
      let decision: Decision | undefined;
      switch (mode) {
        case "AlwaysAllow":
          return { allowed: true, reason: "" };
        case "AlwaysDeny":
          // upstream's alwaysDenyAuthorizer: no opinion, with its reason.
          decision = { allowed: false, reason: "Everything is forbidden." };
          break;
        case "Node":
          decision = this.#node.authorize(attributes);
          break;
        case "RBAC":
          decision =
            user.groups.includes(AUTHENTICATED_GROUP) &&
            BOOTSTRAP_RULES.some((rule) => ruleAllows(attributes, rule))
              ? { allowed: true, reason: "" }
              : this.#rbac(attributes);
          break;
      }
      if (decision?.allowed) return decision;
      if (decision && decision.reason !== "") reasons.push(decision.reason);
    }
    return { allowed: false, reason: reasons.join("\n") };
  }

  #rbac(attributes: RequestAttributes): Decision {
    const errors: string[] = [];
    const describe = (user: UserInfo): string => `User ${JSON.stringify(user.username)}`;
    for (const item of this.#store.list({ prefix: `${RBAC}/clusterrolebindings//` }).items) {
      const binding = item.object;
      if (!this.#bindingApplies(binding, attributes.user, "")) continue;
      const roleRef = record(binding.roleRef);
      const rules = this.#clusterRoleRules(text(roleRef.name), errors);
      if (rules?.some((rule) => ruleAllows(attributes, rule))) {
        return {
          allowed: true,
          reason: `RBAC: allowed by ClusterRoleBinding ${JSON.stringify(text(binding.metadata?.name))} of ClusterRole ${JSON.stringify(text(roleRef.name))} to ${describe(attributes.user)}`,
        };
      }
    }
    if (attributes.namespace !== "") {
      for (const item of this.#store.list({ prefix: `${RBAC}/rolebindings/${attributes.namespace}/` })
        .items) {
        const binding = item.object;
        if (!this.#bindingApplies(binding, attributes.user, attributes.namespace)) continue;
        const roleRef = record(binding.roleRef);
        const roleName = text(roleRef.name);
        let rules: Obj[] | undefined;
        if (roleRef.kind === "Role") {
          const role = this.#store.get(`${RBAC}/roles/${attributes.namespace}/${roleName}`);
          if (!role) errors.push(`role.rbac.authorization.k8s.io ${JSON.stringify(roleName)} not found`);
          rules = role ? (Array.isArray(role.object.rules) ? role.object.rules.map(record) : []) : undefined;
        } else {
          rules = this.#clusterRoleRules(roleName, errors);
        }
        if (rules?.some((rule) => ruleAllows(attributes, rule))) {
          return {
            allowed: true,
            reason: `RBAC: allowed by RoleBinding ${JSON.stringify(`${text(binding.metadata?.name)}/${attributes.namespace}`)} of ${text(roleRef.kind)} ${JSON.stringify(roleName)} to ${describe(attributes.user)}`,
          };
        }
      }
    }
    return { allowed: false, reason: errors.length > 0 ? `RBAC: ${aggregate(errors)}` : "" };
  }

  #bindingApplies(binding: KubeObject, user: UserInfo, namespace: string): boolean {
    const subjects = Array.isArray(binding.subjects) ? binding.subjects : [];
    return subjects.some((subject) => subjectApplies(record(subject), user, namespace));
  }

  /** A ClusterRole's rules, with aggregation resolved; undefined (and an error) when missing. */
  #clusterRoleRules(name: string, errors: string[], seen = new Set<string>()): Obj[] | undefined {
    const stored = this.#store.get(`${RBAC}/clusterroles//${name}`);
    if (!stored) {
      errors.push(`clusterrole.rbac.authorization.k8s.io ${JSON.stringify(name)} not found`);
      return undefined;
    }
    seen.add(name);
    const own = Array.isArray(stored.object.rules) ? stored.object.rules.map(record) : [];
    const selectors = Array.isArray(record(stored.object.aggregationRule).clusterRoleSelectors)
      ? (record(stored.object.aggregationRule).clusterRoleSelectors as unknown[]).map(record)
      : undefined;
    if (selectors === undefined) return own;
    const rules: Obj[] = [];
    for (const item of this.#store.list({ prefix: `${RBAC}/clusterroles//` }).items) {
      const otherName = text(item.object.metadata?.name);
      if (seen.has(otherName)) continue;
      const labels = record(item.object.metadata?.labels);
      if (!selectors.some((selector) => labelsMatch(labels, selector))) continue;
      rules.push(...(this.#clusterRoleRules(otherName, [], new Set(seen)) ?? []));
    }
    return rules;
  }

  /**
   * Every rule bound to `user` in `namespace` ("": cluster bindings only), as upstream's rule
   * resolver (RulesFor) gathers them for RBAC escalation checks (escalation.ts), with the errors
   * of bindings whose role is missing.
   */
  rulesFor(user: UserInfo, namespace: string): { rules: Obj[]; errors: string[] } {
    const errors: string[] = [];
    const rules: Obj[] = user.groups.includes(AUTHENTICATED_GROUP) ? [...BOOTSTRAP_RULES] : [];
    for (const item of this.#store.list({ prefix: `${RBAC}/clusterrolebindings//` }).items) {
      if (!this.#bindingApplies(item.object, user, "")) continue;
      rules.push(...(this.#clusterRoleRules(text(record(item.object.roleRef).name), errors) ?? []));
    }
    if (namespace === "") return { rules, errors };
    for (const item of this.#store.list({ prefix: `${RBAC}/rolebindings/${namespace}/` }).items) {
      if (!this.#bindingApplies(item.object, user, namespace)) continue;
      const roleRef = record(item.object.roleRef);
      const found = this.roleRefRules(text(roleRef.kind), text(roleRef.name), namespace);
      if (found) rules.push(...found);
      else
        errors.push(
          `${text(roleRef.kind).toLowerCase()}.rbac.authorization.k8s.io ${JSON.stringify(text(roleRef.name))} not found`,
        );
    }
    return { rules, errors };
  }

  /** The rules a binding's roleRef grants (a Role in `namespace`, or a ClusterRole); undefined when missing. */
  roleRefRules(kind: string, name: string, namespace: string): Obj[] | undefined {
    if (kind !== "Role") return this.#clusterRoleRules(name, []);
    const role = this.#store.get(`${RBAC}/roles/${namespace}/${name}`);
    if (!role) return undefined;
    return Array.isArray(role.object.rules) ? role.object.rules.map(record) : [];
  }
}

/** upstream's forbiddenMessage. */
function forbiddenMessage(attributes: RequestAttributes): string {
  const user = JSON.stringify(attributes.user.username);
  if (!attributes.resourceRequest)
    return `User ${user} cannot ${attributes.verb} path ${JSON.stringify(attributes.path)}`;
  const resource =
    attributes.subresource === "" ? attributes.resource : `${attributes.resource}/${attributes.subresource}`;
  const where =
    attributes.namespace !== ""
      ? `in the namespace ${JSON.stringify(attributes.namespace)}`
      : "at the cluster scope";
  return `User ${user} cannot ${attributes.verb} resource ${JSON.stringify(resource)} in API group ${JSON.stringify(attributes.apiGroup)} ${where}`;
}

/** The 403 kube-apiserver answers for a denied request (responsewriters.Forbidden). */
export function forbiddenError(attributes: RequestAttributes, reason: string): ApiError {
  const text = reason === "" ? forbiddenMessage(attributes) : `${forbiddenMessage(attributes)}: ${reason}`;
  if (!attributes.resourceRequest) return new ApiError(403, "Forbidden", `forbidden: ${text}`, {});
  const qualified = qualifiedResource(attributes.apiGroup, attributes.resource);
  const message =
    attributes.name === ""
      ? `${qualified} is forbidden: ${text}`
      : `${qualified} ${JSON.stringify(attributes.name)} is forbidden: ${text}`;
  return new ApiError(403, "Forbidden", message, {
    ...(attributes.name !== "" ? { name: attributes.name } : {}),
    ...(attributes.apiGroup !== "" ? { group: attributes.apiGroup } : {}),
    kind: attributes.resource,
  });
}

/**
 * The bootstrap ClusterRole kube-apiserver keeps that manifests bind to most: cluster-admin
 * (everything), created when missing. system:masters needs no binding (always allowed above).
 */
export function ensureBootstrapPolicy(ctx: RestContext): void {
  const def = ctx.registry.lookup("rbac.authorization.k8s.io", "v1", "clusterroles");
  if (!def || ctx.store.get(`${RBAC}/clusterroles//cluster-admin`)) return;
  createObject(
    ctx,
    def,
    "",
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: {
        name: "cluster-admin",
        labels: { "kubernetes.io/bootstrapping": "rbac-defaults" },
        annotations: { "rbac.authorization.kubernetes.io/autoupdate": "true" },
      },
      rules: [
        { apiGroups: ["*"], resources: ["*"], verbs: ["*"] },
        { nonResourceURLs: ["*"], verbs: ["*"] },
      ],
    },
    { dryRun: false },
  );
}
