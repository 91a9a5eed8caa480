// Field selectors (`fieldSelector=` on list/watch): comma-separated `path=value`,
// `path==value`, `path!=value`, with "\" escaping of "\", ",", "=" and "!" in values as
// upstream. Which paths exist is per kind (the API server's ResourceDef.fieldSelectors).

import { ValidationError } from "../base/index.ts";

export interface FieldRequirement {
  readonly field: string;
  readonly operator: "=" | "==" | "!=";
  readonly value: string;
}

/** Splits on unescaped separators, keeping escapes for the next stage. */
function splitTerms(input: string): string[] {
  const terms: string[] = [];
  let start = 0;
  for (let i = 0; i < input.length; i++) {
    const c = input[i];
    if (c === "\\") i++;
    else if (c === ",") {
      terms.push(input.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(input.slice(start));
  return terms;
}

function unescapeValue(value: string, selector: string): string {
  let out = "";
  for (let i = 0; i < value.length; i++) {
    const c = value[i] ?? "";
    if (c === "\\") {
      const escaped = value[i + 1];
      if (escaped === undefined || !"\\,=!".includes(escaped)) {
        throw new ValidationError(
          `invalid field selector: ${JSON.stringify(selector)}: invalid escape sequence`,
        );
      }
      out += escaped;
      i++;
    } else if (c === "," || c === "=" || c === "!") {
      throw new ValidationError(
        `invalid field selector: ${JSON.stringify(selector)}: unescaped ${c} in value`,
      );
    } else {
      out += c;
    }
  }
  return out;
}

/** Parses "spec.nodeName=n1,status.phase!=Failed"; throws ValidationError on malformed input. */
export function parseFieldSelector(input: string): readonly FieldRequirement[] {
  const requirements: FieldRequirement[] = [];
  if (input.trim() === "") return requirements;
  for (const term of splitTerms(input)) {
    if (term === "") continue;
    // The operator starts at the first "=" or "!" (field paths contain neither).
    let at = 0;
    while (at < term.length && term[at] !== "=" && term[at] !== "!") at++;
    const rest = term.slice(at);
    const operator: FieldRequirement["operator"] | undefined = rest.startsWith("!=")
      ? "!="
      : rest.startsWith("==")
        ? "=="
        : rest.startsWith("=")
          ? "="
          : undefined;
    const field = term.slice(0, at).trim();
    if (operator === undefined || field === "") {
      throw new ValidationError(`invalid selector: '${input}'; can't understand '${term}'`);
    }
    const value = rest.slice(operator.length);
    requirements.push({ field, operator, value: unescapeValue(value, input) });
  }
  return requirements;
}

/** Whether an object's field values satisfy every requirement. `valueOf` returns undefined for unknown paths. */
export function fieldsMatch(
  requirements: readonly FieldRequirement[],
  valueOf: (field: string) => string | undefined,
): boolean {
  return requirements.every((requirement) => {
    const value = valueOf(requirement.field) ?? "";
    return requirement.operator === "!=" ? value !== requirement.value : value === requirement.value;
  });
}
