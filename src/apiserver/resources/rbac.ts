// rbac.authorization.k8s.io/v1 roles, clusterroles, rolebindings and clusterrolebindings,
// validated as upstream (rules need verbs, and resources with apiGroups or nonResourceURLs on
// cluster roles; a binding's roleRef is immutable and names a Role or ClusterRole; subjects
// are users, groups or namespaced service accounts). The RBAC authorizer (authz.ts) reads them.

import { jsonEqual } from "../../base/index.ts";
import { fieldInvalid, fieldNotSupported, fieldRequired } from "../../api/index.ts";
import type { FieldCause, ResourceDef } from "../rest/resource.ts";
import { AGE_COLUMN, NAME_COLUMN, age, column, defineResource, isRecord, nameOf, str } from "./common.ts";
import type { Obj } from "./common.ts";

export const RBAC_GROUP = "rbac.authorization.k8s.io";

function validateRules(object: Obj, clusterScoped: boolean): FieldCause[] {
  const causes: FieldCause[] = [];
  const rules = Array.isArray(object.rules) ? object.rules : [];
  rules.forEach((rule: unknown, i) => {
    const path = `rules[${i}]`;
    const r = isRecord(rule) ? rule : {};
    const list = (key: string): unknown[] => (Array.isArray(r[key]) ? (r[key] as unknown[]) : []);
    if (list("verbs").length === 0)
      causes.push(fieldRequired(`${path}.verbs`, "verbs must contain at least one value"));
    if (list("nonResourceURLs").length > 0) {
      if (!clusterScoped)
        causes.push(
          fieldInvalid(
            `${path}.nonResourceURLs`,
            list("nonResourceURLs"),
            "namespaced rules cannot apply to non-resource URLs",
          ),
        );
      if (list("apiGroups").length > 0 || list("resources").length > 0 || list("resourceNames").length > 0)
        causes.push(
          fieldInvalid(
            `${path}.nonResourceURLs`,
            list("nonResourceURLs"),
            "rules cannot apply to both regular resources and non-resource URLs",
          ),
        );
      return;
    }
    if (list("apiGroups").length === 0)
      causes.push(fieldRequired(`${path}.apiGroups`, "resource rules must supply at least one api group"));
    if (list("resources").length === 0)
      causes.push(fieldRequired(`${path}.resources`, "resource rules must supply at least one resource"));
  });
  return causes;
}

function validateBinding(object: Obj, namespaced: boolean): FieldCause[] {
  const causes: FieldCause[] = [];
  const roleRef = isRecord(object.roleRef) ? object.roleRef : {};
  if (roleRef.apiGroup !== RBAC_GROUP)
    causes.push(fieldNotSupported("roleRef.apiGroup", roleRef.apiGroup ?? "", [RBAC_GROUP]));
  const kinds = namespaced ? ["Role", "ClusterRole"] : ["ClusterRole"];
  if (!kinds.includes(str(roleRef.kind)))
    causes.push(fieldNotSupported("roleRef.kind", roleRef.kind ?? "", kinds));
  if (str(roleRef.name) === "") causes.push(fieldRequired("roleRef.name"));
  const subjects = Array.isArray(object.subjects) ? object.subjects : [];
  subjects.forEach((subject: unknown, i) => {
    const path = `subjects[${i}]`;
    const s = isRecord(subject) ? subject : {};
    if (str(s.name) === "") causes.push(fieldRequired(`${path}.name`));
    switch (s.kind) {
      case "ServiceAccount":
        if (s.apiGroup !== undefined && s.apiGroup !== "")
          causes.push(fieldNotSupported(`${path}.apiGroup`, s.apiGroup, [""]));
        if (str(s.namespace) === "") causes.push(fieldRequired(`${path}.namespace`));
        break;
      case "User":
      case "Group":
        if (s.apiGroup !== RBAC_GROUP)
          causes.push(fieldNotSupported(`${path}.apiGroup`, s.apiGroup ?? "", [RBAC_GROUP]));
        break;
      default:
        causes.push(fieldNotSupported(`${path}.kind`, s.kind ?? "", ["ServiceAccount", "User", "Group"]));
    }
  });
  return causes;
}

/** Subjects of kind User or Group get the RBAC API group when it is left out (v1 defaulting). */
function defaultSubjects(object: Obj): void {
  const subjects = Array.isArray(object.subjects) ? object.subjects : [];
  for (const subject of subjects) {
    if (
      isRecord(subject) &&
      (subject.kind === "User" || subject.kind === "Group") &&
      subject.apiGroup === undefined
    )
      subject.apiGroup = RBAC_GROUP;
  }
}

const roleRefImmutable = (object: Obj, old: Obj): FieldCause[] =>
  jsonEqual(object.roleRef, old.roleRef)
    ? []
    : [fieldInvalid("roleRef", object.roleRef, "cannot change roleRef")];

function roleRefText(object: Obj): string {
  const ref = isRecord(object.roleRef) ? object.roleRef : {};
  return `${str(ref.kind)}/${str(ref.name)}`;
}

function subjectsOfKind(object: Obj, kind: string): string {
  const subjects = Array.isArray(object.subjects) ? object.subjects : [];
  return subjects
    .filter((s): s is Obj => isRecord(s) && s.kind === kind)
    .map((s) => (kind === "ServiceAccount" ? `${str(s.namespace)}/${str(s.name)}` : str(s.name)))
    .join(", ");
}

const BINDING_COLUMNS = [
  NAME_COLUMN,
  column(
    "Role",
    "string",
    "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace.",
  ),
  AGE_COLUMN,
  column("Users", "string", "Users bound", 1),
  column("Groups", "string", "Groups bound", 1),
  column("ServiceAccounts", "string", "ServiceAccounts bound", 1),
];

const bindingRow = (object: Obj, now: number): unknown[] => [
  nameOf(object),
  roleRefText(object),
  age(object, now),
  subjectsOfKind(object, "User"),
  subjectsOfKind(object, "Group"),
  subjectsOfKind(object, "ServiceAccount"),
];

const createdAt = (object: Obj): string => {
  const meta = isRecord(object.metadata) ? object.metadata : {};
  return str(meta.creationTimestamp);
};

export const roles: ResourceDef = defineResource({
  group: RBAC_GROUP,
  version: "v1",
  resource: "roles",
  kind: "Role",
  namespaced: true,
  nameValidator: () => [],
  validate: (object) => validateRules(object, false),
  specChanged: () => false,
  columns: [NAME_COLUMN, column("Created At", "date", "Creation time")],
  row: (object) => [nameOf(object), createdAt(object)],
});

export const clusterRoles: ResourceDef = defineResource({
  group: RBAC_GROUP,
  version: "v1",
  resource: "clusterroles",
  kind: "ClusterRole",
  namespaced: false,
  nameValidator: () => [],
  validate: (object) => validateRules(object, true),
  specChanged: () => false,
  columns: [NAME_COLUMN, column("Created At", "date", "Creation time")],
  row: (object) => [nameOf(object), createdAt(object)],
});

export const roleBindings: ResourceDef = defineResource({
  group: RBAC_GROUP,
  version: "v1",
  resource: "rolebindings",
  kind: "RoleBinding",
  namespaced: true,
  nameValidator: () => [],
  defaults: defaultSubjects,
  validate: (object) => validateBinding(object, true),
  validateUpdate: roleRefImmutable,
  specChanged: () => false,
  columns: BINDING_COLUMNS,
  row: bindingRow,
});

export const clusterRoleBindings: ResourceDef = defineResource({
  group: RBAC_GROUP,
  version: "v1",
  resource: "clusterrolebindings",
  kind: "ClusterRoleBinding",
  namespaced: false,
  nameValidator: () => [],
  defaults: defaultSubjects,
  validate: (object) => validateBinding(object, false),
  validateUpdate: roleRefImmutable,
  specChanged: () => false,
  columns: BINDING_COLUMNS,
  row: bindingRow,
});

export const rbacResources: readonly ResourceDef[] = Object.freeze([
  clusterRoleBindings,
  clusterRoles,
  roleBindings,
  roles,
]);
