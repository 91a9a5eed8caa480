// RBAC escalation prevention, as kube-apiserver's RBAC storage enforces it on every write of a
// role or binding (pkg/registry/rbac: policybased storage, validation.ConfirmNoEscalation):
// - a Role or ClusterRole may be created or updated only by a requester who already holds every
//   permission it grants, or who may `escalate` roles/clusterroles; a ClusterRole with an
//   aggregationRule needs full authority (it can gather anything);
// - a RoleBinding or ClusterRoleBinding only by a requester who holds every permission of the
//   role it references (in the binding's namespace), or who may `bind` that role;
// - members of system:masters are exempt, and so is an update that changes only what the
//   garbage collector needs (ownerReferences, finalizers).
// Refusals are upstream's 403 texts; a binding to a role that does not exist is its 404. Held
// permissions are the RBAC rules bound to the requester (Authorizer.rulesFor), compared rule by
// rule as upstream's Covers does: each granted rule broken down into one verb, group, resource
// and name, each of those covered by some held rule.

import type { UserInfo } from "./authn.ts";
import { MASTERS_GROUP } from "./authn.ts";
import type { Authorizer } from "./authz.ts";
import type { KubeObject, ResourceDef } from "../rest/resource.ts";
import { ApiError, forbidden, notFound, qualifiedResource } from "../transport/status.ts";
import { jsonEqual } from "../../base/index.ts";
import { RBAC_GROUP } from "../resources/rbac.ts";

type Obj = Record<string, unknown>;

const ROLE_RESOURCES = new Set(["roles", "clusterroles"]);
const BINDING_RESOURCES = new Set(["rolebindings", "clusterrolebindings"]);

/** What may be granted with an aggregationRule: everything (upstream's fullAuthority). */
const FULL_AUTHORITY: readonly Obj[] = [
  { verbs: ["*"], apiGroups: ["*"], resources: ["*"] },
  { verbs: ["*"], nonResourceURLs: ["*"] },
];

function record(value: unknown): Obj {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Obj) : {};
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : [];
}

function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

/** A policy rule's lists, as upstream's PolicyRule holds them. */
interface Rule {
  verbs: string[];
  apiGroups: string[];
  resources: string[];
  resourceNames: string[];
  nonResourceURLs: string[];
}

function toRule(value: unknown): Rule {
  const rule = record(value);
  return {
    verbs: strings(rule.verbs),
    apiGroups: strings(rule.apiGroups),
    resources: strings(rule.resources),
    resourceNames: strings(rule.resourceNames),
    nonResourceURLs: strings(rule.nonResourceURLs),
  };
}

/** upstream's BreakdownRule: one verb, group, resource (and name), or one verb and URL, per rule. */
function breakdown(rule: Rule): Rule[] {
  const simple: Rule[] = [];
  const one = (parts: Partial<Rule>): Rule => ({
    verbs: [],
    apiGroups: [],
    resources: [],
    resourceNames: [],
    nonResourceURLs: [],
    ...parts,
  });
  for (const group of rule.apiGroups)
    for (const resource of rule.resources)
      for (const verb of rule.verbs) {
        if (rule.resourceNames.length === 0)
          simple.push(one({ apiGroups: [group], resources: [resource], verbs: [verb] }));
        for (const name of rule.resourceNames)
          simple.push(
            one({ apiGroups: [group], resources: [resource], verbs: [verb], resourceNames: [name] }),
          );
      }
  for (const url of rule.nonResourceURLs)
    for (const verb of rule.verbs) simple.push(one({ nonResourceURLs: [url], verbs: [verb] }));
  return simple;
}

function hasAll(set: string[], wanted: string[]): boolean {
  return wanted.every((item) => set.includes(item));
}

// A held resource list covers `wanted`: "*", the exact name, or "*" then "/<subresource>".
function resourcesCover(held: string[], wanted: string[]): boolean {
  if (held.includes("*") || hasAll(held, wanted)) return true;
  return wanted.every((resource) => {
    if (held.includes(resource)) return true;
    const slash = resource.indexOf("/");
    return slash >= 0 && held.includes(`*${resource.slice(slash)}`);
  });
}

/** A held URL covers another: equal, or a `*`-suffixed prefix of it. */
function urlCovers(held: string, wanted: string): boolean {
  return held === wanted || (held.endsWith("*") && wanted.startsWith(held.replace(/\*+$/, "")));
}

/** upstream's ruleCovers. */
function ruleCovers(held: Rule, wanted: Rule): boolean {
  const verbs = held.verbs.includes("*") || hasAll(held.verbs, wanted.verbs);
  const groups = held.apiGroups.includes("*") || hasAll(held.apiGroups, wanted.apiGroups);
  const resources = resourcesCover(held.resources, wanted.resources);
  const urls = wanted.nonResourceURLs.every((url) => held.nonResourceURLs.some((own) => urlCovers(own, url)));
  const names =
    held.resourceNames.length === 0 ||
    (wanted.resourceNames.length > 0 && hasAll(held.resourceNames, wanted.resourceNames));
  return verbs && groups && resources && urls && names;
}

/** The simple rules of `granted` that no rule of `held` covers (upstream's Covers). */
export function uncoveredRules(held: readonly Obj[], granted: readonly unknown[]): Rule[] {
  const heldRules = held.map(toRule);
  return granted
    .flatMap((rule) => breakdown(toRule(rule)))
    .filter((wanted) => !heldRules.some((own) => ruleCovers(own, wanted)));
}

/** upstream's CompactRules: simple resource rules that differ only in verbs become one. */
function compact(rules: Rule[]): Rule[] {
  const merged = new Map<string, Rule>();
  const others: Rule[] = [];
  for (const rule of rules) {
    const simple =
      rule.nonResourceURLs.length === 0 &&
      rule.resourceNames.length <= 1 &&
      rule.apiGroups.length === 1 &&
      rule.resources.length === 1;
    if (!simple) {
      others.push(rule);
      continue;
    }
    const key = JSON.stringify([rule.apiGroups[0], rule.resources[0], rule.resourceNames]);
    const existing = merged.get(key);
    if (existing) existing.verbs.push(...rule.verbs);
    else merged.set(key, { ...rule, verbs: [...rule.verbs] });
  }
  return [...others, ...merged.values()];
}

/** Go's %q of a string list: ["a" "b"]. */
function quotedList(values: string[]): string {
  return `[${values.map((value) => JSON.stringify(value)).join(" ")}]`;
}

/** upstream's PolicyRule.CompactString: {APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}. */
function compactString(rule: Rule): string {
  const parts: string[] = [];
  if (rule.apiGroups.length > 0) parts.push(`APIGroups:${quotedList(rule.apiGroups)}`);
  if (rule.resources.length > 0) parts.push(`Resources:${quotedList(rule.resources)}`);
  if (rule.nonResourceURLs.length > 0) parts.push(`NonResourceURLs:${quotedList(rule.nonResourceURLs)}`);
  if (rule.resourceNames.length > 0) parts.push(`ResourceNames:${quotedList(rule.resourceNames)}`);
  if (rule.verbs.length > 0) parts.push(`Verbs:${quotedList(rule.verbs)}`);
  return `{${parts.join(", ")}}`;
}

/**
 * upstream's ConfirmNoEscalation: undefined when `user` holds every rule of `granted` in
 * `namespace`, else the refusal's text (the missing rules, compacted and sorted).
 */
export function escalationMessage(
  authorizer: Authorizer,
  user: UserInfo,
  namespace: string,
  granted: readonly unknown[],
): string | undefined {
  const { rules, errors } = authorizer.rulesFor(user, namespace);
  const missing = uncoveredRules(rules, granted);
  if (missing.length === 0) return undefined;
  const described = [...new Set(compact(missing).map(compactString))].sort();
  let message = `user ${JSON.stringify(user.username)} (groups=${quotedList(user.groups)}) is attempting to grant RBAC permissions not currently held:\n${described.join("\n")}`;
  if (errors.length > 0) message += `; resolution errors: [${errors.join(" ")}]`;
  return message;
}

/** upstream's IsOnlyMutatingGCFields: the update changes nothing but ownerReferences and finalizers. */
function onlyGcFieldsChange(object: KubeObject, old: KubeObject): boolean {
  const withoutGc = (value: KubeObject): KubeObject => {
    const { ownerReferences: _o, finalizers: _f, resourceVersion: _r, ...metadata } = record(value.metadata);
    return { ...value, metadata };
  };
  return jsonEqual(withoutGc(object), withoutGc(old));
}

function refused(def: ResourceDef, name: string, why: string): ApiError {
  const qualified = qualifiedResource(def.group, def.resource);
  const subject = name === "" ? qualified : `${qualified} ${JSON.stringify(name)}`;
  return forbidden(`${subject} is forbidden: ${why}`, {
    ...(name !== "" ? { name } : {}),
    group: def.group,
    kind: def.resource,
  });
}

/** Whether `user` may `verb` the named role resource (escalate a role, bind a referenced one). */
function allowed(
  authorizer: Authorizer,
  user: UserInfo,
  verb: string,
  target: { apiGroup: string; resource: string; namespace: string; name: string },
): boolean {
  return authorizer.authorize({ user, verb, resourceRequest: true, path: "", subresource: "", ...target })
    .allowed;
}

export interface RbacWrite {
  def: ResourceDef;
  namespace: string;
  /** The object as it would be stored (named, defaulted, validated). */
  object: KubeObject;
  /** The stored object an update replaces; absent on create. */
  old?: KubeObject;
}

/**
 * Throws the 403 (or 404 for a binding's missing role) kube-apiserver answers when `user`'s write
 * of a role or binding would grant more than `user` holds; any other write passes.
 */
export function checkRbacEscalation(authorizer: Authorizer, user: UserInfo, write: RbacWrite): void {
  const { def, namespace, object, old } = write;
  if (def.group !== RBAC_GROUP) return;
  if (!ROLE_RESOURCES.has(def.resource) && !BINDING_RESOURCES.has(def.resource)) return;
  if (user.groups.includes(MASTERS_GROUP)) return;
  if (old !== undefined && onlyGcFieldsChange(object, old)) return;
  const name = text(record(object.metadata).name);
  if (ROLE_RESOURCES.has(def.resource)) {
    const escalate = { apiGroup: RBAC_GROUP, resource: def.resource, namespace, name };
    if (allowed(authorizer, user, "escalate", escalate)) return;
    const rules = Array.isArray(object.rules) ? object.rules : [];
    const message = escalationMessage(authorizer, user, namespace, rules);
    if (message !== undefined) throw refused(def, name, message);
    if (
      def.resource === "clusterroles" &&
      object.aggregationRule !== undefined &&
      object.aggregationRule !== null
    ) {
      if (escalationMessage(authorizer, user, namespace, FULL_AUTHORITY) !== undefined)
        throw refused(def, name, "must have cluster-admin privileges to use the aggregationRule");
    }
    return;
  }
  const roleRef = record(object.roleRef);
  const kind = text(roleRef.kind);
  const roleResource = kind === "Role" ? "roles" : "clusterroles";
  const roleName = text(roleRef.name);
  const bind = { apiGroup: text(roleRef.apiGroup), resource: roleResource, namespace, name: roleName };
  if (allowed(authorizer, user, "bind", bind)) return;
  const rules = authorizer.roleRefRules(kind, roleName, namespace);
  if (rules === undefined) throw notFound(RBAC_GROUP, roleResource, roleName);
  const message = escalationMessage(authorizer, user, namespace, rules);
  if (message !== undefined) throw refused(def, name, message);
}
