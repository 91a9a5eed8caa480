// Structural-schema handling for custom resources, as apiextensions-apiserver applies it:
// defaulting (`default`), pruning of unknown fields (kept under
// x-kubernetes-preserve-unknown-fields, additionalProperties and embedded resources' TypeMeta
// and metadata), and validation of type, required, enum, nullable, bounds and patterns with
// upstream's messages, the value-validation combinators (oneOf, anyOf, allOf, not), and
// x-kubernetes-validations rules, evaluated by cel.ts (full CEL, cost-bounded).

import { fieldForbidden, fieldInvalid, fieldNotSupported, fieldRequired } from "../../api/index.ts";
import type { JSONSchemaProps } from "../../api/index.ts";
import type { FieldCause } from "../rest/resource.ts";
import { checkCelRule, compileCelRule, newCostBudget, type CostBudget } from "./cel.ts";
import { isRecord } from "./common.ts";
import { patternMatches } from "./regex.ts";

function join(path: string, key: string): string {
  return path === "" ? key : `${path}.${key}`;
}

function preservesUnknown(schema: JSONSchemaProps): boolean {
  return schema["x-kubernetes-preserve-unknown-fields"] === true;
}

/** Applies `default` values where fields are absent (objects and array items, recursively). */
export function applySchemaDefaults(value: unknown, schema: JSONSchemaProps | undefined): void {
  if (schema === undefined) return;
  if (isRecord(value) && schema.properties !== undefined) {
    for (const [key, property] of Object.entries(schema.properties)) {
      if (value[key] === undefined && property.default !== undefined)
        value[key] = structuredClone(property.default);
      applySchemaDefaults(value[key], property);
    }
  }
  if (isRecord(value) && isRecord(schema.additionalProperties)) {
    const additional = schema.additionalProperties;
    for (const item of Object.values(value)) applySchemaDefaults(item, additional);
  }
  if (Array.isArray(value) && schema.items !== undefined) {
    for (const item of value) applySchemaDefaults(item, schema.items);
  }
}

/**
 * Removes fields the schema does not know, returning their paths (for fieldValidation=Strict
 * and Warn). `root` keeps apiVersion, kind and metadata as every object's TypeMeta/ObjectMeta.
 */
export function pruneUnknownFields(
  value: unknown,
  schema: JSONSchemaProps | undefined,
  path = "",
  root = true,
): string[] {
  if (schema === undefined) return [];
  const unknown: string[] = [];
  if (isRecord(value)) {
    const embedded = root || schema["x-kubernetes-embedded-resource"] === true;
    const properties = schema.properties ?? {};
    const additional = schema.additionalProperties;
    for (const key of Object.keys(value)) {
      const property = properties[key];
      if (embedded && (key === "apiVersion" || key === "kind" || key === "metadata")) {
        if (property !== undefined && key !== "metadata")
          unknown.push(...pruneUnknownFields(value[key], property, join(path, key), false));
        continue;
      }
      if (property !== undefined) {
        unknown.push(...pruneUnknownFields(value[key], property, join(path, key), false));
      } else if (isRecord(additional)) {
        unknown.push(...pruneUnknownFields(value[key], additional, join(path, key), false));
      } else if (additional === true || preservesUnknown(schema)) {
        continue;
      } else {
        unknown.push(join(path, key));
        delete value[key];
      }
    }
  } else if (Array.isArray(value) && schema.items !== undefined) {
    value.forEach((item, i) =>
      unknown.push(...pruneUnknownFields(item, schema.items, `${path}[${i}]`, false)),
    );
  }
  return unknown;
}

function typeName(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

function matchesType(value: unknown, type: string, schema: JSONSchemaProps): boolean {
  if (schema["x-kubernetes-int-or-string"] === true)
    return typeof value === "string" || Number.isInteger(value);
  switch (type) {
    case "object":
      return isRecord(value);
    case "array":
      return Array.isArray(value);
    case "string":
      return typeof value === "string";
    case "integer":
      return typeof value === "number" && Number.isInteger(value);
    case "number":
      return typeof value === "number";
    case "boolean":
      return typeof value === "boolean";
    default:
      return true;
  }
}

/** Validates `value` against a structural schema; paths are JSON paths from the object root. */
export function validateAgainstSchema(
  value: unknown,
  schema: JSONSchemaProps | undefined,
  path = "",
): FieldCause[] {
  if (schema === undefined) return [];
  const causes: FieldCause[] = [];
  if (value === null) {
    if (schema.nullable === true || schema.type === undefined) return [];
    return [fieldInvalid(path, "null", `${path} in body must be of type ${schema.type}: "null"`)];
  }
  const type = schema.type;
  if (type !== undefined && !matchesType(value, type, schema)) {
    return [
      fieldInvalid(
        path,
        typeName(value),
        `${path} in body must be of type ${type}: ${JSON.stringify(typeName(value))}`,
      ),
    ];
  }
  if (
    schema.enum !== undefined &&
    !schema.enum.some((candidate) => JSON.stringify(candidate) === JSON.stringify(value))
  ) {
    causes.push(
      fieldNotSupported(
        path,
        value,
        schema.enum.map((candidate) =>
          typeof candidate === "string" ? candidate : JSON.stringify(candidate),
        ),
      ),
    );
  }
  if (typeof value === "string") {
    if (schema.maxLength !== undefined && value.length > schema.maxLength) {
      causes.push({
        reason: "FieldValueTooLong",
        message: `Too long: may not be more than ${schema.maxLength} bytes`,
        field: path,
      });
    }
    if (schema.minLength !== undefined && value.length < schema.minLength) {
      causes.push(
        fieldInvalid(path, value, `${path} in body should be at least ${schema.minLength} chars long`),
      );
    }
    if (schema.pattern !== undefined && patternMatches(schema.pattern, value) !== true) {
      causes.push(fieldInvalid(path, value, `${path} in body should match '${schema.pattern}'`));
    }
  }
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) {
      causes.push(
        fieldInvalid(path, value, `${path} in body should be greater than or equal to ${schema.minimum}`),
      );
    }
    if (schema.maximum !== undefined && value > schema.maximum) {
      causes.push(
        fieldInvalid(path, value, `${path} in body should be less than or equal to ${schema.maximum}`),
      );
    }
  }
  if (Array.isArray(value)) {
    if (schema.maxItems !== undefined && value.length > schema.maxItems) {
      causes.push({
        reason: "FieldValueTooMany",
        message: `Too many: ${value.length}: must have at most ${schema.maxItems} items`,
        field: path,
      });
    }
    if (schema.minItems !== undefined && value.length < schema.minItems) {
      causes.push(
        fieldInvalid(path, value.length, `${path} in body should have at least ${schema.minItems} items`),
      );
    }
    value.forEach((item, i) => causes.push(...validateAgainstSchema(item, schema.items, `${path}[${i}]`)));
  }
  causes.push(...validateCombinators(value, schema, path));
  if (isRecord(value)) {
    for (const key of schema.required ?? []) {
      if (value[key] === undefined) causes.push(fieldRequired(join(path, key)));
    }
    for (const [key, property] of Object.entries(schema.properties ?? {})) {
      if (value[key] !== undefined && !(path === "" && key === "metadata")) {
        causes.push(...validateAgainstSchema(value[key], property, join(path, key)));
      }
    }
    if (isRecord(schema.additionalProperties)) {
      const additional = schema.additionalProperties;
      for (const [key, item] of Object.entries(value)) {
        if (schema.properties?.[key] === undefined)
          causes.push(...validateAgainstSchema(item, additional, join(path, key)));
      }
    }
  }
  return causes;
}

function passes(value: unknown, schema: JSONSchemaProps, path: string): boolean {
  return validateAgainstSchema(value, schema, path).length === 0;
}

/** oneOf / anyOf / allOf / not, with kube-openapi's wording. */
function validateCombinators(value: unknown, schema: JSONSchemaProps, path: string): FieldCause[] {
  const causes: FieldCause[] = [];
  const label = path === "" ? "body" : path;
  const type = typeName(value);
  if (schema.oneOf !== undefined) {
    const valid = schema.oneOf.filter((option) => passes(value, option, path)).length;
    if (valid !== 1) {
      const found = valid === 0 ? "Found none valid" : `Found ${valid} valid alternatives`;
      causes.push(
        fieldInvalid(path, type, `${label} in body must validate one and only one schema (oneOf). ${found}`),
      );
    }
  }
  if (schema.anyOf !== undefined && !schema.anyOf.some((option) => passes(value, option, path))) {
    causes.push(fieldInvalid(path, type, `${label} in body must validate at least one schema (anyOf)`));
  }
  if (schema.allOf !== undefined && !schema.allOf.every((option) => passes(value, option, path))) {
    causes.push(fieldInvalid(path, type, `${label} in body must validate all the schemas (allOf)`));
  }
  if (schema.not !== undefined && passes(value, schema.not, path)) {
    causes.push(fieldInvalid(path, type, `${label} in body must not validate the schema (not)`));
  }
  return causes;
}

interface ValidationRule {
  rule: string;
  message?: string;
  reason?: string;
  fieldPath?: string;
}

function rulesOf(schema: JSONSchemaProps): ValidationRule[] {
  const rules = schema["x-kubernetes-validations"];
  return Array.isArray(rules) ? rules.filter((rule) => typeof rule.rule === "string") : [];
}

function ruleCause(rule: ValidationRule, schema: JSONSchemaProps, path: string, error?: string): FieldCause {
  const field = rule.fieldPath !== undefined && rule.fieldPath !== "" ? `${path}${rule.fieldPath}` : path;
  const detail =
    error !== undefined
      ? `${error} evaluating rule: ${rule.rule}`
      : rule.message !== undefined && rule.message !== ""
        ? rule.message
        : `failed rule: ${rule.rule}`;
  switch (rule.reason) {
    case "FieldValueForbidden":
      return fieldForbidden(field, detail);
    case "FieldValueRequired":
      return fieldRequired(field, detail);
    case "FieldValueDuplicate":
      return {
        reason: "FieldValueDuplicate",
        message: `Duplicate value: ${JSON.stringify(schema.type ?? "object")}: ${detail}`,
        field,
      };
    default:
      return fieldInvalid(field, schema.type ?? "object", detail);
  }
}

/**
 * Evaluates the x-kubernetes-validations (CEL) rules of a schema over `value`. Mode "create"
 * runs the rules without oldSelf; mode "transition" runs only the oldSelf rules, where the old
 * value exists (list items are not correlated, so their transition rules are not run).
 */
export function validateCelRules(
  value: unknown,
  old: unknown,
  schema: JSONSchemaProps | undefined,
  path: string,
  mode: "create" | "transition",
  budget: CostBudget = newCostBudget(),
): FieldCause[] {
  if (schema === undefined || value === undefined || value === null) return [];
  const causes: FieldCause[] = [];
  for (const rule of rulesOf(schema)) {
    const compiled = compileCelRule(rule.rule);
    if (!compiled.ok) {
      // Refused at CRD create; a CRD stored before that check still never skips the rule.
      causes.push(ruleCause(rule, schema, path, `compilation failed: ${compiled.error}`));
      continue;
    }
    const transition = compiled.rule.transition;
    if (mode === "create" ? transition : !transition || old === undefined || old === null) continue;
    if (budget.remaining <= 0) {
      causes.push({
        reason: "FieldValueForbidden",
        message:
          "Forbidden: validation failed due to running out of cost budget, no further validation rules will be run",
        field: path,
      });
      return causes;
    }
    const outcome = checkCelRule(compiled.rule, value, transition ? old : undefined, schema, budget);
    if (!outcome.ok) causes.push(ruleCause(rule, schema, path, outcome.error));
  }
  if (isRecord(value)) {
    const oldRecord = isRecord(old) ? old : undefined;
    for (const [key, property] of Object.entries(schema.properties ?? {})) {
      if (path === "" && key === "metadata") continue;
      causes.push(...validateCelRules(value[key], oldRecord?.[key], property, join(path, key), mode, budget));
    }
    if (isRecord(schema.additionalProperties)) {
      const additional = schema.additionalProperties;
      for (const [key, item] of Object.entries(value)) {
        if (schema.properties?.[key] !== undefined) continue;
        causes.push(...validateCelRules(item, oldRecord?.[key], additional, `${path}[${key}]`, mode, budget));
      }
    }
  } else if (Array.isArray(value)) {
    value.forEach((item, i) =>
      causes.push(...validateCelRules(item, undefined, schema.items, `${path}[${i}]`, mode, budget)),
    );
  }
  return causes;
}
