// Label and field selectors as kube-apiserver parses them (labels.Parse, fields.ParseSelector):
// label operators =, ==, !=, in, notin, exists, !key, gt, lt; field operators =, ==, !=.
// Parsing errors become 400 BadRequest with upstream-like messages; the returned matchers are
// pure functions over one object.

import type { KubeObject, ResourceDef } from "./resource.ts";
import { badRequest } from "./status.ts";

type Operator = "=" | "!=" | "in" | "notin" | "exists" | "!" | "gt" | "lt";

interface Requirement {
  key: string;
  operator: Operator;
  values: string[];
}

export type ObjectMatcher = (object: KubeObject) => boolean;

const QUALIFIED_NAME =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** Splits on commas that are not inside parentheses. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === "(") depth++;
    else if (ch === ")") depth--;
    else if (ch === "," && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}

function parseRequirement(raw: string): Requirement {
  const text = raw.trim();
  const fail = (why: string): never => {
    throw badRequest(`unable to parse requirement: ${why}`);
  };
  if (text === "") return fail("found '', expected: !, identifier, or 'end of string'");
  let match = /^!\s*([^\s=!<>(),]+)$/.exec(text);
  if (match) return checkKey({ key: match[1]!, operator: "!", values: [] }, fail);
  match = /^([^\s=!<>(),]+)\s+(in|notin)\s*\(([^()]*)\)$/.exec(text);
  if (match) {
    const values = match[3]!.split(",").map((v) => v.trim());
    const op = match[2] === "in" ? "in" : "notin";
    return checkValues(checkKey({ key: match[1]!, operator: op, values }, fail), fail);
  }
  match = /^([^\s=!<>(),]+)\s*(==|=|!=|<|>)\s*([^\s=!<>(),]*)$/.exec(text);
  if (match) {
    const opText = match[2]!;
    const operator: Operator = opText === "!=" ? "!=" : opText === "<" ? "lt" : opText === ">" ? "gt" : "=";
    const requirement = checkKey({ key: match[1]!, operator, values: [match[3]!] }, fail);
    if ((operator === "gt" || operator === "lt") && !/^-?\d+$/.test(match[3]!)) {
      fail(`for 'Gt', 'Lt' operators, the value must be an integer`);
    }
    return operator === "gt" || operator === "lt" ? requirement : checkValues(requirement, fail);
  }
  match = /^([^\s=!<>(),]+)$/.exec(text);
  if (match) return checkKey({ key: match[1]!, operator: "exists", values: [] }, fail);
  return fail(`invalid syntax in "${text}"`);
}

function checkKey(requirement: Requirement, fail: (why: string) => never): Requirement {
  if (requirement.key.length > 316 || !QUALIFIED_NAME.test(requirement.key)) {
    fail(
      `key: Invalid value: "${requirement.key}": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character`,
    );
  }
  return requirement;
}

function checkValues(requirement: Requirement, fail: (why: string) => never): Requirement {
  for (const value of requirement.values) {
    if (value.length > 63 || !LABEL_VALUE.test(value)) {
      fail(
        `values[0][${requirement.key}]: Invalid value: "${value}": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character`,
      );
    }
  }
  return requirement;
}

function labelsOf(object: KubeObject): Record<string, unknown> {
  const labels = object.metadata?.labels;
  return typeof labels === "object" && labels !== null ? (labels as Record<string, unknown>) : {};
}

function matches(requirement: Requirement, labels: Record<string, unknown>): boolean {
  const has = Object.hasOwn(labels, requirement.key);
  const value = has ? String(labels[requirement.key]) : undefined;
  switch (requirement.operator) {
    case "=":
      return value === requirement.values[0];
    case "!=":
      return value !== requirement.values[0];
    case "in":
      return value !== undefined && requirement.values.includes(value);
    case "notin":
      return value === undefined || !requirement.values.includes(value);
    case "exists":
      return has;
    case "!":
      return !has;
    case "gt":
    case "lt": {
      if (value === undefined || !/^-?\d+$/.test(value)) return false;
      const n = Number(value);
      const bound = Number(requirement.values[0]);
      return requirement.operator === "gt" ? n > bound : n < bound;
    }
  }
}

/** Parses `labelSelector`; an empty or absent selector matches everything. */
export function parseLabelSelector(text: string | null | undefined): ObjectMatcher {
  if (text === null || text === undefined || text.trim() === "") return () => true;
  const requirements = splitTopLevel(text).map(parseRequirement);
  return (object) => {
    const labels = labelsOf(object);
    return requirements.every((r) => matches(r, labels));
  };
}

const NAMESPACED_FIELDS = ["metadata.name", "metadata.namespace"];

/** Parses `fieldSelector` against the fields the kind supports (metadata.name/namespace always). */
export function parseFieldSelector(
  text: string | null | undefined,
  def: Pick<ResourceDef, "fieldSelectors">,
): ObjectMatcher {
  if (text === null || text === undefined || text.trim() === "") return () => true;
  const terms = text.split(",").map((term) => {
    // Split at the first operator by hand: a backtracking regex here is quadratic on long input.
    const at = term.search(/!=|==|=/);
    const field = at < 0 ? "" : term.slice(0, at).trim();
    if (at < 0 || field === "" || /[\s!]/.test(field)) {
      throw badRequest(`invalid selector: '${text}'; can't understand '${term}'`);
    }
    const operator = term.startsWith("!=", at) ? "!=" : term.startsWith("==", at) ? "==" : "=";
    const value = term.slice(at + operator.length).trim();
    const getter = fieldGetter(field, def);
    if (!getter) throw badRequest(`field label not supported: ${field}`);
    return { getter, negate: operator === "!=", value };
  });
  return (object) => terms.every((t) => (t.getter(object) === t.value) !== t.negate);
}

function fieldGetter(
  field: string,
  def: Pick<ResourceDef, "fieldSelectors">,
): ((object: KubeObject) => string) | undefined {
  const own = def.fieldSelectors[field];
  if (own) return own;
  if (!NAMESPACED_FIELDS.includes(field)) return undefined;
  const key = field === "metadata.name" ? "name" : "namespace";
  return (object) => {
    const value = object.metadata?.[key];
    return typeof value === "string" ? value : "";
  };
}
