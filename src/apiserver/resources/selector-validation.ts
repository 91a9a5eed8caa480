// Validation of LabelSelector and NodeSelector objects inside specs (ValidateLabelSelector,
// ValidateNodeSelector), with upstream field paths.

import {
  fieldForbidden,
  fieldInvalid,
  fieldRequired,
  isQualifiedName,
  isValidLabelValue,
  validateLabels,
} from "../../api/index.ts";
import type { FieldCause } from "../rest/resource.ts";
import { isRecord, str } from "./common.ts";

export function validateLabelSelectorObject(selector: unknown, field: string): FieldCause[] {
  if (selector === undefined || selector === null) return [];
  if (!isRecord(selector)) return [fieldInvalid(field, selector, "must be a label selector object")];
  const causes: FieldCause[] = [...validateLabels(selector.matchLabels, `${field}.matchLabels`)];
  const expressions = selector.matchExpressions;
  if (expressions === undefined || expressions === null) return causes;
  if (!Array.isArray(expressions))
    return [...causes, fieldInvalid(`${field}.matchExpressions`, expressions, "must be a list")];
  expressions.forEach((expression: unknown, i) => {
    const path = `${field}.matchExpressions[${i}]`;
    if (!isRecord(expression)) {
      causes.push(fieldInvalid(path, expression, "must be an object"));
      return;
    }
    const values = Array.isArray(expression.values) ? expression.values : [];
    switch (expression.operator) {
      case "In":
      case "NotIn":
        if (values.length === 0)
          causes.push(
            fieldRequired(`${path}.values`, "must be specified when `operator` is 'In' or 'NotIn'"),
          );
        break;
      case "Exists":
      case "DoesNotExist":
        if (values.length > 0)
          causes.push(
            fieldForbidden(
              `${path}.values`,
              "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            ),
          );
        break;
      default:
        causes.push(
          fieldInvalid(`${path}.operator`, expression.operator ?? "", "not a valid selector operator"),
        );
    }
    const key = str(expression.key);
    for (const message of isQualifiedName(key)) causes.push(fieldInvalid(`${path}.key`, key, message));
    values.forEach((value: unknown, j) => {
      for (const message of isValidLabelValue(str(value)))
        causes.push(fieldInvalid(`${path}.values[${j}]`, value, message));
    });
  });
  return causes;
}

const NODE_SELECTOR_OPERATORS = ["DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn"];

export function validateNodeSelector(selector: unknown, field: string): FieldCause[] {
  if (!isRecord(selector)) return [fieldInvalid(field, selector ?? null, "must be a node selector object")];
  const terms = selector.nodeSelectorTerms;
  if (!Array.isArray(terms) || terms.length === 0) {
    return [fieldRequired(`${field}.nodeSelectorTerms`, "must have at least one node selector term")];
  }
  const causes: FieldCause[] = [];
  terms.forEach((term: unknown, i) => {
    const expressions = isRecord(term) && Array.isArray(term.matchExpressions) ? term.matchExpressions : [];
    expressions.forEach((expression: unknown, j) => {
      const path = `${field}.nodeSelectorTerms[${i}].matchExpressions[${j}]`;
      const operator = isRecord(expression) ? expression.operator : undefined;
      if (typeof operator !== "string" || !NODE_SELECTOR_OPERATORS.includes(operator)) {
        causes.push({
          reason: "FieldValueNotSupported",
          message: `Unsupported value: ${JSON.stringify(operator ?? "")}: supported values: ${NODE_SELECTOR_OPERATORS.map((o) => JSON.stringify(o)).join(", ")}`,
          field: `${path}.operator`,
        });
      }
      const key = isRecord(expression) ? str(expression.key) : "";
      for (const message of isQualifiedName(key)) causes.push(fieldInvalid(`${path}.key`, key, message));
    });
  });
  return causes;
}
