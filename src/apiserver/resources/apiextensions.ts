// apiextensions.k8s.io/v1 customresourcedefinitions (+status), and the ResourceDefs an
// installed CRD serves: one per served version, scope from spec.scope, status subresource,
// printer columns from additionalPrinterColumns (default Age), defaulting, pruning and
// validation from the version's openAPIV3Schema.

import { jsonEqual } from "../../base/index.ts";
import {
  fieldForbidden,
  fieldInvalid,
  fieldRequired,
  humanDuration,
  isDNS1123Label,
  isDNS1123Subdomain,
  nameIsDNSSubdomain,
} from "../../api/index.ts";
import type { CustomResourceDefinition, JSONSchemaProps } from "../../api/index.ts";
import type { FieldCause, KubeObject, ResourceDef, TableColumn } from "../rest/resource.ts";
import {
  NAME_COLUMN,
  at,
  child,
  defineResource,
  immutable,
  isRecord,
  metaOf,
  nameOf,
  oneOf,
  setDefault,
  str,
} from "./common.ts";
import { conversionStorage } from "./crd-conversion.ts";
import type { Obj } from "./common.ts";
import {
  applySchemaDefaults,
  pruneUnknownFields,
  validateAgainstSchema,
  validateCelRules,
} from "./schema.ts";
import { compilePattern } from "./regex.ts";
import { compileCelRule } from "./cel.ts";
import {
  costErrorMessage,
  estimateRuleCost,
  maxSizeOf,
  STATIC_RULE_COST_LIMIT,
  STATIC_SCHEMA_COST_LIMIT,
  timesCardinality,
} from "./cel-cost.ts";

function versionsOf(object: Obj): Obj[] {
  const versions = at(object, "spec.versions");
  return Array.isArray(versions) ? versions.filter(isRecord) : [];
}

function validateCRD(object: Obj): FieldCause[] {
  const causes: FieldCause[] = [];
  const spec = isRecord(object.spec) ? object.spec : {};
  const names = isRecord(spec.names) ? spec.names : {};
  const group = str(spec.group);
  const plural = str(names.plural);
  const name = str(metaOf(object).name);
  if (name !== `${plural}.${group}`)
    causes.push(fieldInvalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'));
  if (group === "") causes.push(fieldRequired("spec.group"));
  else {
    for (const message of isDNS1123Subdomain(group)) causes.push(fieldInvalid("spec.group", group, message));
    if (!group.includes("."))
      causes.push(fieldInvalid("spec.group", group, "should be a domain with at least one dot"));
  }
  causes.push(...oneOf("spec.scope", spec.scope, ["Cluster", "Namespaced"]));
  causes.push(...validateApprovalAnnotation(object, group));
  if (plural === "") causes.push(fieldRequired("spec.names.plural"));
  else
    for (const message of isDNS1123Label(plural))
      causes.push(fieldInvalid("spec.names.plural", plural, message));
  const singular = str(names.singular);
  if (singular !== "")
    for (const message of isDNS1123Label(singular))
      causes.push(fieldInvalid("spec.names.singular", singular, message));
  if (str(names.kind) === "") causes.push(fieldRequired("spec.names.kind"));
  if (str(names.listKind) === "") causes.push(fieldRequired("spec.names.listKind"));
  const shortNames = Array.isArray(names.shortNames) ? names.shortNames : [];
  shortNames.forEach((shortName: unknown, i) => {
    for (const message of isDNS1123Label(str(shortName)))
      causes.push(fieldInvalid(`spec.names.shortNames[${i}]`, shortName, message));
  });
  const versions = versionsOf(object);
  if (versions.length === 0) {
    causes.push(fieldRequired("spec.versions", "must have exactly one version marked as storage version"));
    return causes;
  }
  const storage = versions.filter((version) => version.storage === true).length;
  if (storage !== 1)
    causes.push(
      fieldInvalid(
        "spec.versions",
        versions.map((v) => str(v.name)),
        "must have exactly one version marked as storage version",
      ),
    );
  const seen = new Set<string>();
  versions.forEach((version, i) => {
    const versionName = str(version.name);
    for (const message of isDNS1123Label(versionName))
      causes.push(fieldInvalid(`spec.versions[${i}].name`, versionName, message));
    if (seen.has(versionName))
      causes.push(fieldInvalid("spec.versions", versionName, "must contain unique version names"));
    seen.add(versionName);
    const schema = at(version, "schema.openAPIV3Schema");
    if (!isRecord(schema))
      causes.push(fieldRequired(`spec.versions[${i}].schema.openAPIV3Schema`, "schemas are required"));
    else causes.push(...validateSchemaTree(schema, `spec.versions[${i}].schema.openAPIV3Schema`));
  });
  return causes;
}

type SchemaVisitor = (schema: Obj, path: string, cardinality: number) => void;

/**
 * Every sub-schema of `schema` with its field path, in upstream's notation (properties[name]),
 * and how many times it can occur in one object (the sizes of the lists and maps above it).
 */
function walkSchema(schema: Obj, path: string, visit: SchemaVisitor, cardinality = 1, depth = 0): void {
  // CRD bodies are nesting-limited when decoded; this bound only keeps a recursion finite.
  if (depth > 1000) return;
  visit(schema, path, cardinality);
  const own = maxSizeOf(schema);
  const properties = isRecord(schema.properties) ? schema.properties : {};
  for (const [name, child] of Object.entries(properties))
    if (isRecord(child)) walkSchema(child, `${path}.properties[${name}]`, visit, cardinality, depth + 1);
  if (isRecord(schema.items))
    walkSchema(schema.items, `${path}.items`, visit, timesCardinality(cardinality, own), depth + 1);
  if (isRecord(schema.additionalProperties))
    walkSchema(
      schema.additionalProperties,
      `${path}.additionalProperties`,
      visit,
      timesCardinality(cardinality, own),
      depth + 1,
    );
  if (isRecord(schema.not)) walkSchema(schema.not, `${path}.not`, visit, cardinality, depth + 1);
  for (const combinator of ["allOf", "anyOf", "oneOf"]) {
    const list = schema[combinator];
    if (Array.isArray(list))
      list.forEach((child: unknown, i) => {
        if (isRecord(child)) walkSchema(child, `${path}.${combinator}[${i}]`, visit, cardinality, depth + 1);
      });
  }
}

const COST_HINT_RULE = "estimated rule cost";
const COST_HINT_TOTAL = "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema";

/**
 * Schema checks made at CRD create/update: patterns compile (RE2 syntax) and every
 * x-kubernetes-validations rule compiles (422 otherwise, as upstream: none is ever skipped).
 */
function validateSchemaTree(schema: Obj, path: string): FieldCause[] {
  const causes: FieldCause[] = [];
  walkSchema(schema, path, (node, nodePath) => {
    const rules = node["x-kubernetes-validations"];
    if (Array.isArray(rules)) {
      rules.forEach((rule: unknown, i) => {
        const source = isRecord(rule) ? rule.rule : undefined;
        const field = `${nodePath}.x-kubernetes-validations[${i}].rule`;
        if (typeof source !== "string" || source === "") {
          causes.push(fieldRequired(field));
          return;
        }
        const compiled = compileCelRule(source);
        if (!compiled.ok) causes.push(fieldInvalid(field, source, `compilation failed: ${compiled.error}`));
      });
    }
    if (typeof node.pattern === "string") {
      const compiled = compilePattern(node.pattern);
      if (!compiled.ok)
        causes.push(
          fieldInvalid(
            `${nodePath}.pattern`,
            node.pattern,
            `must be a valid regular expression, but isn't: ${compiled.error}`,
          ),
        );
    }
  });
  return causes;
}

/** The rule sources of every version's schema. */
function ruleSources(object: Obj): Set<string> {
  const sources = new Set<string>();
  for (const version of versionsOf(object)) {
    const schema = at(version, "schema.openAPIV3Schema");
    if (!isRecord(schema)) continue;
    walkSchema(schema, "", (node) => {
      const rules = node["x-kubernetes-validations"];
      if (Array.isArray(rules))
        for (const rule of rules) if (isRecord(rule) && typeof rule.rule === "string") sources.add(rule.rule);
    });
  }
  return sources;
}

/**
 * No rule, nor all of one schema's rules together, may cost more than upstream's static limits
 * (cel-cost.ts). Rules the stored CRD already had are exempt on update, as upstream exempts
 * pre-existing expressions, so a CRD stored before a limit applied can still be updated.
 */
function validateRuleCosts(object: Obj, preexisting: ReadonlySet<string>): FieldCause[] {
  const causes: FieldCause[] = [];
  versionsOf(object).forEach((version, v) => {
    const schema = at(version, "schema.openAPIV3Schema");
    if (!isRecord(schema)) return;
    const path = `spec.versions[${v}].schema.openAPIV3Schema`;
    let total = 0;
    let added = false;
    walkSchema(schema, path, (node, nodePath, cardinality) => {
      const rules = node["x-kubernetes-validations"];
      if (!Array.isArray(rules)) return;
      rules.forEach((rule: unknown, i) => {
        const source = isRecord(rule) ? rule.rule : undefined;
        if (typeof source !== "string") return;
        const compiled = compileCelRule(source);
        if (!compiled.ok) return;
        const cost = timesCardinality(estimateRuleCost(compiled.rule.ast, node), cardinality);
        total = timesCardinality(1, total + cost);
        if (preexisting.has(source)) return;
        added = true;
        if (cost > STATIC_RULE_COST_LIMIT)
          causes.push(
            fieldForbidden(
              `${nodePath}.x-kubernetes-validations[${i}].rule`,
              costErrorMessage(COST_HINT_RULE, cost, STATIC_RULE_COST_LIMIT),
            ),
          );
      });
    });
    if (added && total > STATIC_SCHEMA_COST_LIMIT)
      causes.push(fieldForbidden(path, costErrorMessage(COST_HINT_TOTAL, total, STATIC_SCHEMA_COST_LIMIT)));
  });
  return causes;
}

const APPROVAL_ANNOTATION = "api-approved.kubernetes.io";

/** Groups under k8s.io and kubernetes.io are protected: a CRD there needs the approval annotation. */
function isProtectedGroup(group: string): boolean {
  return ["k8s.io", "kubernetes.io"].some((domain) => group === domain || group.endsWith(`.${domain}`));
}

function validateApprovalAnnotation(object: Obj, group: string): FieldCause[] {
  if (!isProtectedGroup(group)) return [];
  const annotations = metaOf(object).annotations;
  const value = isRecord(annotations) ? annotations[APPROVAL_ANNOTATION] : undefined;
  const field = `metadata.annotations[${APPROVAL_ANNOTATION}]`;
  if (typeof value !== "string") {
    return [
      fieldRequired(
        field,
        `protected groups must have approval annotation "${APPROVAL_ANNOTATION}", see https://github.com/kubernetes/enhancements/pull/1111`,
      ),
    ];
  }
  if (value.startsWith("unapproved")) return [];
  try {
    new URL(value);
    return [];
  } catch {
    return [
      fieldInvalid(
        field,
        value,
        'protected groups must have approval annotation "api-approved.kubernetes.io" with either a URL or a reason starting with "unapproved", see https://github.com/kubernetes/enhancements/pull/1111',
      ),
    ];
  }
}

export const customResourceDefinitions: ResourceDef = defineResource({
  group: "apiextensions.k8s.io",
  version: "v1",
  resource: "customresourcedefinitions",
  allowUnconditionalUpdate: false,
  kind: "CustomResourceDefinition",
  namespaced: false,
  shortNames: ["crd", "crds"],
  categories: ["api-extensions"],
  subresources: ["status"],
  tracksGeneration: true,
  defaults(object) {
    const spec = child(object, "spec");
    const names = child(spec, "names");
    const kind = str(names.kind);
    if (kind !== "") {
      setDefault(names, "singular", kind.toLowerCase());
      setDefault(names, "listKind", `${kind}List`);
    }
    setDefault(spec, "conversion", { strategy: "None" });
    // Stand-in for the naming and establishing controllers: names are accepted at once.
    const status = child(object, "status");
    status.acceptedNames = structuredClone(names);
    const stored = new Set(Array.isArray(status.storedVersions) ? status.storedVersions.map(str) : []);
    for (const version of versionsOf(object)) if (version.storage === true) stored.add(str(version.name));
    status.storedVersions = [...stored];
    if (!Array.isArray(status.conditions) || status.conditions.length === 0) {
      const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
      status.conditions = [
        {
          type: "NamesAccepted",
          status: "True",
          lastTransitionTime: now,
          reason: "NoConflicts",
          message: "no conflicts found",
        },
        {
          type: "Established",
          status: "True",
          lastTransitionTime: now,
          reason: "InitialNamesAccepted",
          message: "the initial names have been accepted",
        },
      ];
    }
  },
  validate: validateCRD,
  validateCreate: (object) => validateRuleCosts(object, new Set()),
  validateUpdate(object, old) {
    return [
      ...immutable("spec.scope", at(object, "spec.scope"), at(old, "spec.scope")),
      ...immutable("spec.group", at(object, "spec.group"), at(old, "spec.group")),
      ...validateRuleCosts(object, ruleSources(old)),
    ];
  },
  columns: [
    NAME_COLUMN,
    {
      name: "Created At",
      type: "date",
      description:
        "CreationTimestamp is a timestamp representing the server time when this object was created.",
      priority: 0,
    },
  ],
  row(object) {
    return [nameOf(object), str(metaOf(object).creationTimestamp)];
  },
});

// ---- custom resources ------------------------------------------------------------------

/** Evaluates the simple JSONPath of printer columns: ".spec.a.b", ".status.list[0].x", "{.a}". */
export function evaluateSimpleJSONPath(object: unknown, path: string): unknown {
  let expression = path.trim();
  if (expression.startsWith("{") && expression.endsWith("}")) expression = expression.slice(1, -1);
  if (expression.startsWith("$")) expression = expression.slice(1);
  const steps = expression.match(/\.[^.[\]]+|\[\d+\]|\['[^']*'\]/g) ?? [];
  let current: unknown = object;
  for (const step of steps) {
    if (step.startsWith("[") && !step.startsWith("['")) {
      const index = Number(step.slice(1, -1));
      current = Array.isArray(current) ? current[index] : undefined;
    } else {
      const key = step.startsWith("['") ? step.slice(2, -2) : step.slice(1);
      current = isRecord(current) ? current[key] : undefined;
    }
    if (current === undefined) return undefined;
  }
  return current;
}

/** A CR table cell as the CRD table convertor renders it (nil when the type does not fit). */
function cellFor(type: string, value: unknown, now: number): unknown {
  if (value === undefined || value === null) return null;
  switch (type) {
    case "integer":
      return typeof value === "number" ? Math.trunc(value) : null;
    case "number":
      return typeof value === "number" ? value : null;
    case "boolean":
      return typeof value === "boolean" ? value : null;
    case "string":
      return typeof value === "string" ? value : null;
    case "date": {
      if (typeof value !== "string") return null;
      const then = Date.parse(value);
      return Number.isNaN(then) ? "<invalid>" : humanDuration(now - then);
    }
    default:
      return typeof value === "object" ? JSON.stringify(value) : value;
  }
}

interface PrinterColumn {
  column: TableColumn;
  jsonPath: string;
}

function printerColumns(version: Obj): PrinterColumn[] {
  const declared = Array.isArray(version.additionalPrinterColumns)
    ? version.additionalPrinterColumns.filter(isRecord)
    : [];
  if (declared.length === 0) {
    return [
      {
        column: {
          name: "Age",
          type: "date",
          description:
            "CreationTimestamp is a timestamp representing the server time when this object was created.",
          priority: 0,
        },
        jsonPath: ".metadata.creationTimestamp",
      },
    ];
  }
  return declared.map((entry) => {
    const type = str(entry.type);
    const column: TableColumn = {
      name: str(entry.name),
      type:
        type === "integer" || type === "number" || type === "boolean" || type === "date" ? type : "string",
      description: str(entry.description),
      priority: typeof entry.priority === "number" ? entry.priority : 0,
    };
    if (str(entry.format) !== "") column.format = str(entry.format);
    return { column, jsonPath: str(entry.jsonPath) };
  });
}

function rootSchema(version: Obj): JSONSchemaProps | undefined {
  const schema = at(version, "schema.openAPIV3Schema");
  return isRecord(schema) ? schema : undefined;
}

/** Everything of a custom resource except metadata and (with a status subresource) status. */
function specPart(object: KubeObject, hasStatus: boolean): Obj {
  const copy: Obj = { ...object };
  delete copy.metadata;
  delete copy.apiVersion;
  delete copy.kind;
  if (hasStatus) delete copy.status;
  return copy;
}

/** The ResourceDefs an installed CRD serves: one per served version. */
export function resourceDefFromCRD(crd: CustomResourceDefinition | KubeObject): ResourceDef[] {
  const object = crd as Obj;
  const spec = isRecord(object.spec) ? object.spec : {};
  const names = isRecord(spec.names) ? spec.names : {};
  const group = str(spec.group);
  const kind = str(names.kind);
  const namespaced = spec.scope !== "Cluster";
  const storageVersion = str(versionsOf(object).find((version) => version.storage === true)?.name);
  const defs: ResourceDef[] = [];
  for (const version of versionsOf(object)) {
    if (version.served !== true) continue;
    const schema = rootSchema(version);
    const hasStatus = isRecord(at(version, "subresources.status"));
    // Only the status subresource is served; scale is not (nothing here consumes it).
    const subresources = hasStatus ? ["status"] : [];
    const columns = printerColumns(version);
    const selectable = Array.isArray(version.selectableFields)
      ? version.selectableFields.filter(isRecord)
      : [];
    const fieldSelectors: Record<string, (o: KubeObject) => string> = {};
    for (const field of selectable) {
      const jsonPath = str(field.jsonPath);
      fieldSelectors[jsonPath.replace(/^\./, "")] = (o) => {
        const value = evaluateSimpleJSONPath(o, jsonPath);
        if (typeof value === "string") return value;
        return typeof value === "number" || typeof value === "boolean" ? String(value) : "";
      };
    }
    const storage = conversionStorage(
      object,
      group,
      str(names.plural),
      kind,
      str(version.name),
      storageVersion,
    );
    const def = defineResource({
      group,
      version: str(version.name),
      resource: str(names.plural),
      ...(storage !== undefined ? { storage } : {}),
      // Upstream custom resources: /status keeps all old metadata; updates need resourceVersion.
      statusWritableMetadata: [],
      allowUnconditionalUpdate: false,
      kind,
      namespaced,
      shortNames: Array.isArray(names.shortNames) ? names.shortNames.map(str) : [],
      categories: Array.isArray(names.categories) ? names.categories.map(str) : [],
      subresources,
      nameValidator: nameIsDNSSubdomain,
      tracksGeneration: true,
      defaults(target) {
        if (schema === undefined) return;
        pruneUnknownFields(target, schema);
        applySchemaDefaults(target, schema);
      },
      validate(target) {
        const body = specPart(target, false);
        return [
          ...validateAgainstSchema(body, schema),
          ...validateCelRules(body, undefined, schema, "", "create"),
        ];
      },
      validateUpdate(target, old) {
        return validateCelRules(specPart(target, false), specPart(old, false), schema, "", "transition");
      },
      validateStatus(target, old) {
        if (!hasStatus || schema === undefined) return [];
        const statusSchema = schema.properties?.status;
        return [
          ...validateAgainstSchema(target.status, statusSchema, "status"),
          ...validateCelRules(target.status, undefined, statusSchema, "status", "create"),
          ...validateCelRules(target.status, old.status, statusSchema, "status", "transition"),
        ];
      },
      specChanged(target, old) {
        return !jsonEqual(specPart(target, hasStatus), specPart(old, hasStatus));
      },
      fieldSelectors,
      columns: [NAME_COLUMN, ...columns.map((entry) => entry.column)],
      row(target, now) {
        return [
          nameOf(target),
          ...columns.map((entry) =>
            cellFor(entry.column.type, evaluateSimpleJSONPath(target, entry.jsonPath), now),
          ),
        ];
      },
      ...(schema !== undefined ? { openAPISchema: schema } : {}),
    });
    def.singular = str(names.singular) || kind.toLowerCase();
    def.listKind = str(names.listKind) || `${kind}List`;
    def.custom = true;
    if (version.deprecated === true) {
      def.deprecationWarning =
        typeof version.deprecationWarning === "string"
          ? version.deprecationWarning
          : `${group}/${str(version.name)} ${kind} is deprecated`;
    }
    def.patchStrategies = {};
    defs.push(def);
  }
  return defs;
}

/** Unknown-field paths of a custom resource under its schema (fieldValidation Strict/Warn), without changing it. */
export function unknownFieldsOfCustomResource(def: ResourceDef, object: KubeObject): string[] {
  if (def.custom !== true || def.openAPISchema === undefined) return [];
  return pruneUnknownFields(structuredClone(object), def.openAPISchema);
}
