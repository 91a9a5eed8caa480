// Label selectors: the string form of list/watch `labelSelector=` (=, ==, !=, in, notin,
// exists, !key, and the numeric > and <) and the LabelSelector object form
// (matchLabels/matchExpressions), both compiled to one requirement list and matched the same
// way. An empty requirement list matches everything; what a *missing* LabelSelector object
// means is the caller's decision (upstream: nothing for most APIs, everything for PVC binding).

import { ValidationError } from "../base/index.ts";
import type { LabelSelector } from "./meta.ts";
import { isQualifiedName, isValidLabelValue } from "./validation.ts";

export type LabelOperator = "=" | "==" | "!=" | "in" | "notin" | "exists" | "!" | "gt" | "lt";

export interface LabelRequirement {
  readonly key: string;
  readonly operator: LabelOperator;
  readonly values: readonly string[];
}

export type LabelSelectorRequirements = readonly LabelRequirement[];

type Labels = Readonly<Record<string, string>> | undefined;

/** Whether one requirement holds for the labels (absent key: only notin, != and ! match). */
export function requirementMatches(requirement: LabelRequirement, labels: Labels): boolean {
  const has = labels !== undefined && Object.hasOwn(labels, requirement.key);
  const value = has ? labels[requirement.key] : undefined;
  switch (requirement.operator) {
    case "=":
    case "==":
    case "in":
      return has && requirement.values.includes(value ?? "");
    case "!=":
    case "notin":
      return !has || !requirement.values.includes(value ?? "");
    case "exists":
      return has;
    case "!":
      return !has;
    case "gt":
    case "lt": {
      if (!has) return false;
      const actual = Number.parseInt(value ?? "", 10);
      const bound = Number.parseInt(requirement.values[0] ?? "", 10);
      if (!/^-?[0-9]+$/.test(value ?? "") || Number.isNaN(bound)) return false;
      return requirement.operator === "gt" ? actual > bound : actual < bound;
    }
  }
}

export function labelsMatch(requirements: LabelSelectorRequirements, labels: Labels): boolean {
  return requirements.every((requirement) => requirementMatches(requirement, labels));
}

// ---- string form -----------------------------------------------------------------------

type Token =
  | { kind: "id"; text: string }
  | { kind: "op"; text: "=" | "==" | "!=" | "!" | ">" | "<" | "(" | ")" | "," }
  | { kind: "end" };

function tokenize(input: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < input.length) {
    const c = input[i] ?? "";
    if (/\s/.test(c)) {
      i++;
    } else if (c === "=" && input[i + 1] === "=") {
      tokens.push({ kind: "op", text: "==" });
      i += 2;
    } else if (c === "!" && input[i + 1] === "=") {
      tokens.push({ kind: "op", text: "!=" });
      i += 2;
    } else if (c === "=" || c === "!" || c === ">" || c === "<" || c === "(" || c === ")" || c === ",") {
      tokens.push({ kind: "op", text: c });
      i++;
    } else {
      let j = i;
      while (j < input.length && !/[\s=!><(),]/.test(input[j] ?? "")) j++;
      tokens.push({ kind: "id", text: input.slice(i, j) });
      i = j;
    }
  }
  tokens.push({ kind: "end" });
  return tokens;
}

function describe(token: Token): string {
  return token.kind === "end" ? "EOS" : token.text;
}

function validateKey(key: string): void {
  const errors = isQualifiedName(key);
  if (errors.length > 0)
    throw new ValidationError(
      `unable to parse requirement: key: Invalid value: ${JSON.stringify(key)}: ${errors.join("; ")}`,
    );
}

function validateValue(value: string): void {
  const errors = isValidLabelValue(value);
  if (errors.length > 0) {
    throw new ValidationError(
      `unable to parse requirement: values[0]: Invalid value: ${JSON.stringify(value)}: ${errors.join("; ")}`,
    );
  }
}

/** Parses a selector string such as "app=web,tier in (a,b),!legacy"; throws ValidationError. */
export function parseLabelSelector(input: string): LabelSelectorRequirements {
  const tokens = tokenize(input);
  let position = 0;
  const peek = (): Token => tokens[position] ?? { kind: "end" };
  const next = (): Token => tokens[position++] ?? { kind: "end" };
  const requirements: LabelRequirement[] = [];
  if (peek().kind === "end") return requirements;
  for (;;) {
    requirements.push(parseRequirement());
    const after = next();
    if (after.kind === "end") break;
    if (after.kind === "op" && after.text === ",") continue;
    throw new ValidationError(`found '${describe(after)}', expected: ',' or 'end of string'`);
  }
  return requirements;

  function parseRequirement(): LabelRequirement {
    let token = next();
    if (token.kind === "op" && token.text === "!") {
      const key = next();
      if (key.kind !== "id")
        throw new ValidationError(`found '${describe(key)}', expected: identifier after '!'`);
      validateKey(key.text);
      return { key: key.text, operator: "!", values: [] };
    }
    if (token.kind !== "id")
      throw new ValidationError(`found '${describe(token)}', expected: !, identifier, or 'end of string'`);
    const key = token.text;
    validateKey(key);
    const following = peek();
    if (following.kind === "end" || (following.kind === "op" && following.text === ",")) {
      return { key, operator: "exists", values: [] };
    }
    token = next();
    if (token.kind === "id" && (token.text === "in" || token.text === "notin")) {
      const values = parseSet();
      return { key, operator: token.text, values };
    }
    if (token.kind === "op" && (token.text === "=" || token.text === "==" || token.text === "!=")) {
      const value = parseSingleValue();
      return { key, operator: token.text, values: [value] };
    }
    if (token.kind === "op" && (token.text === ">" || token.text === "<")) {
      const value = parseSingleValue();
      if (!/^-?[0-9]+$/.test(value)) {
        throw new ValidationError(
          `unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer`,
        );
      }
      return { key, operator: token.text === ">" ? "gt" : "lt", values: [value] };
    }
    throw new ValidationError(`found '${describe(token)}', expected: in, notin, =, ==, !=, gt, lt`);
  }

  function parseSingleValue(): string {
    const token = peek();
    if (token.kind === "end" || (token.kind === "op" && token.text === ",")) return "";
    if (token.kind !== "id") throw new ValidationError(`found '${describe(token)}', expected: identifier`);
    position++;
    validateValue(token.text);
    return token.text;
  }

  function parseSet(): string[] {
    const open = next();
    if (!(open.kind === "op" && open.text === "("))
      throw new ValidationError(`found '${describe(open)}', expected: '('`);
    const values: string[] = [];
    for (;;) {
      const token = next();
      if (token.kind === "id") {
        validateValue(token.text);
        values.push(token.text);
        const separator = next();
        if (separator.kind === "op" && separator.text === ")") return values;
        if (separator.kind === "op" && separator.text === ",") continue;
        throw new ValidationError(`found '${describe(separator)}', expected: ',' or ')'`);
      }
      if (token.kind === "op" && token.text === ")") {
        values.push(""); // "in ()" and a trailing "," mean the empty value, as upstream
        return values;
      }
      if (token.kind === "op" && token.text === ",") {
        values.push("");
        continue;
      }
      throw new ValidationError(`found '${describe(token)}', expected: ',', ')' or identifier`);
    }
  }
}

/** The canonical string of requirements (sorted by key, as upstream's String()). */
export function formatLabelSelector(requirements: LabelSelectorRequirements): string {
  return [...requirements]
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .map((r) => {
      switch (r.operator) {
        case "exists":
          return r.key;
        case "!":
          return `!${r.key}`;
        case "in":
        case "notin":
          return `${r.key} ${r.operator} (${[...r.values].sort().join(",")})`;
        case "gt":
          return `${r.key}>${r.values[0] ?? ""}`;
        case "lt":
          return `${r.key}<${r.values[0] ?? ""}`;
        default:
          return `${r.key}${r.operator}${r.values[0] ?? ""}`;
      }
    })
    .join(",");
}

// ---- object form -----------------------------------------------------------------------

/**
 * Compiles a LabelSelector object. An empty object matches everything. Invalid operators or
 * values throw ValidationError naming the field, as LabelSelectorAsSelector does.
 */
export function labelSelectorRequirements(selector: LabelSelector): LabelSelectorRequirements {
  const requirements: LabelRequirement[] = [];
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    validateKey(key);
    validateValue(value);
    requirements.push({ key, operator: "=", values: [value] });
  }
  for (const expression of selector.matchExpressions ?? []) {
    validateKey(expression.key);
    const values = expression.values ?? [];
    switch (expression.operator) {
      case "In":
      case "NotIn":
        if (values.length === 0) {
          throw new ValidationError(`for 'in', 'notin' operators, values set can't be empty`);
        }
        values.forEach(validateValue);
        requirements.push({
          key: expression.key,
          operator: expression.operator === "In" ? "in" : "notin",
          values,
        });
        break;
      case "Exists":
      case "DoesNotExist":
        if (values.length > 0) {
          throw new ValidationError(`values set must be empty for exists and does not exist`);
        }
        requirements.push({
          key: expression.key,
          operator: expression.operator === "Exists" ? "exists" : "!",
          values: [],
        });
        break;
      default:
        throw new ValidationError(
          `${JSON.stringify(expression.operator)} is not a valid label selector operator`,
        );
    }
  }
  return requirements;
}

/** Whether labels satisfy a LabelSelector object; `undefined` matches nothing (upstream's nil). */
export function labelSelectorMatches(selector: LabelSelector | undefined | null, labels: Labels): boolean {
  if (selector === undefined || selector === null) return false;
  return labelsMatch(labelSelectorRequirements(selector), labels);
}
