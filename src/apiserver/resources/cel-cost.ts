// The static cost estimate of an x-kubernetes-validations rule, made when a CRD is written, as
// apiextensions-apiserver makes it with cel-go's cost estimator: every value the rule reads has
// a largest possible size taken from the schema — maxLength, maxItems, maxProperties, or when
// those are missing, what one 3 MiB request can hold — and the rule's cost is its worst case
// over those sizes (macros cost the collection's size times their body, string operations a
// tenth of the string's length, and so on, cel-go's cost units), times the number of times the
// rule can run in one object (the sizes of the lists and maps above it). A rule over 10,000,000
// or a schema whose rules total over 100,000,000 is refused at CRD create/update, with
// upstream's message, so an unbounded rule never reaches a custom resource.
//
// This follows cel-go's estimator for what CRD rules use (field access, macros, comparisons,
// string and list functions, the Kubernetes libraries); its constants are cel-go's. It is an
// estimate of an estimate where cel-go special-cases more: a bounded rule near the limit may be
// priced a little differently, an unbounded one is refused as upstream refuses it.

import type { JSONSchemaProps } from "../../api/index.ts";

/** Upstream's limit on one rule's estimated cost (StaticEstimatedCostLimit). */
export const STATIC_RULE_COST_LIMIT = 10_000_000;
/** Upstream's limit on all rules of one schema (StaticEstimatedCRDCostLimit). */
export const STATIC_SCHEMA_COST_LIMIT = 100_000_000;

/** kube-apiserver's request size limit, which bounds what a schema leaves unbounded. */
const MAX_REQUEST_SIZE_BYTES = 3 * 1024 * 1024;
/** cel-go's "unknown size": the largest uint64. */
const UNKNOWN = 2 ** 64 - 1;
const STRING_TRAVERSAL_FACTOR = 0.1;
const REGEX_LENGTH_FACTOR = 0.25;
const LIST_CREATE_COST = 10;
const MAP_CREATE_COST = 30;

type Schema = JSONSchemaProps | undefined;

interface Value {
  schema: Schema;
  /** Largest size: characters of a string, items of a list, entries of a map; 1 for scalars. */
  size: number;
}

interface Estimate {
  cost: number;
  value: Value;
}

function capped(n: number): number {
  return Number.isFinite(n) ? Math.min(n, UNKNOWN) : UNKNOWN;
}

function scaled(size: number, factor: number): number {
  return capped(Math.ceil(size * factor));
}

/** The shortest JSON a value of `schema` can be written in (upstream's estimateMinSizeJSON). */
function minJsonSize(schema: Schema): number {
  switch (schema?.type) {
    case "string":
    case "object":
    case "array":
      return 2;
    case "boolean":
      return 4;
    case "integer":
    case "number":
      return 1;
    default:
      return 1;
  }
}

/** The largest size a value of `schema` can have, declared or bounded by one request. */
export function maxSizeOf(schema: Schema): number {
  if (schema === undefined) return UNKNOWN;
  if (schema["x-kubernetes-int-or-string"] === true) return MAX_REQUEST_SIZE_BYTES - 2;
  switch (schema.type) {
    case "string":
      // maxLength counts characters; a character is up to 4 bytes (unicode.UTFMax).
      return schema.maxLength === undefined ? MAX_REQUEST_SIZE_BYTES - 2 : 4 * schema.maxLength;
    case "array":
      return schema.maxItems ?? Math.floor((MAX_REQUEST_SIZE_BYTES - 2) / (minJsonSize(schema.items) + 1));
    case "object": {
      const max = schema.maxProperties;
      if (typeof max === "number") return max;
      if (isMap(schema)) {
        // An entry is at least `"":v,`.
        const value =
          typeof schema.additionalProperties === "object" ? schema.additionalProperties : undefined;
        return Math.floor((MAX_REQUEST_SIZE_BYTES - 2) / (minJsonSize(value) + 4));
      }
      if (schema["x-kubernetes-preserve-unknown-fields"] === true) return UNKNOWN;
      return Object.keys(schema.properties ?? {}).length;
    }
    case "integer":
    case "number":
    case "boolean":
      return 1;
    default:
      return UNKNOWN;
  }
}

function isMap(schema: Schema): boolean {
  return (
    schema?.type === "object" &&
    schema.additionalProperties !== undefined &&
    schema.additionalProperties !== false
  );
}

function valueOf(schema: Schema): Value {
  return { schema, size: maxSizeOf(schema) };
}

const UNKNOWN_VALUE: Value = { schema: undefined, size: UNKNOWN };
const SCALAR: Value = { schema: { type: "integer" }, size: 1 };

/** The schema of `.name` on a value: a property (by its CEL-escaped name too) or a map value. */
function member(schema: Schema, name: string): Schema {
  if (schema === undefined) return undefined;
  const properties = schema.properties ?? {};
  if (Object.hasOwn(properties, name)) return properties[name];
  const unescaped = name
    .replace(/^__(.*)__$/, "$1")
    .replace(/__dash__/g, "-")
    .replace(/__dot__/g, ".")
    .replace(/__slash__/g, "/")
    .replace(/__underscores__/g, "__");
  if (Object.hasOwn(properties, unescaped)) return properties[unescaped];
  return typeof schema.additionalProperties === "object" ? schema.additionalProperties : undefined;
}

/** The element a list or map yields when indexed or iterated (a map iterates its keys). */
function element(value: Value, iterate: boolean): Value {
  const schema = value.schema;
  if (schema?.type === "array") return valueOf(schema.items);
  if (schema?.type === "object") {
    if (iterate) return valueOf({ type: "string" });
    return valueOf(typeof schema.additionalProperties === "object" ? schema.additionalProperties : undefined);
  }
  return UNKNOWN_VALUE;
}

type Node = { op: string; args: unknown };

function isNode(value: unknown): value is Node {
  return typeof value === "object" && value !== null && !Array.isArray(value) && "op" in value;
}

function literalValue(node: Node): Value {
  const literal = node.args;
  if (typeof literal === "string") return { schema: { type: "string" }, size: [...literal].length };
  return SCALAR;
}

const MACROS = new Set(["all", "exists", "exists_one", "filter", "map"]);
const REGEX_FUNCTIONS = new Set(["matches", "__re2_matches", "find", "findAll"]);
const LIST_TRAVERSALS = new Set(["isSorted", "sum", "min", "max", "indexOf", "lastIndexOf"]);
const STRING_TRAVERSALS = new Set([
  "lowerAscii",
  "upperAscii",
  "trim",
  "replace",
  "split",
  "substring",
  "charAt",
  "join",
  "reverse",
  "format",
  "quote",
]);

class Estimator {
  private readonly scopes: Map<string, Value>[] = [];
  private readonly self: Value;
  constructor(self: Value) {
    this.self = self;
  }

  private lookup(name: string): Value {
    for (let i = this.scopes.length - 1; i >= 0; i--) {
      const found = this.scopes[i]?.get(name);
      if (found !== undefined) return found;
    }
    if (name === "self" || name === "oldSelf") return this.self;
    return UNKNOWN_VALUE;
  }

  estimate(node: unknown): Estimate {
    if (!isNode(node)) return { cost: 0, value: UNKNOWN_VALUE };
    const args = node.args;
    const list = Array.isArray(args) ? (args as unknown[]) : [args];
    switch (node.op) {
      case "value":
        return { cost: 0, value: literalValue(node) };
      case "id":
        return { cost: 1, value: this.lookup(String(args)) };
      case ".":
      case ".?": {
        const target = this.estimate(list[0]);
        return { cost: target.cost + 1, value: valueOf(member(target.value.schema, String(list[1]))) };
      }
      case "[]":
      case "[?]": {
        const target = this.estimate(list[0]);
        const index = this.estimate(list[1]);
        return { cost: capped(target.cost + index.cost + 1), value: element(target.value, false) };
      }
      case "list": {
        const items = list.map((item) => this.estimate(item));
        return {
          cost: capped(LIST_CREATE_COST + items.reduce((sum, item) => sum + item.cost, 0)),
          value: { schema: { type: "array" }, size: items.length },
        };
      }
      case "map": {
        const entries = list.flatMap((entry): unknown[] =>
          Array.isArray(entry) ? (entry as unknown[]) : [entry],
        );
        const cost = entries.reduce((sum: number, entry) => sum + this.estimate(entry).cost, 0);
        return {
          cost: capped(MAP_CREATE_COST + cost),
          value: { schema: { type: "object" }, size: entries.length / 2 },
        };
      }
      case "&&":
      case "||": {
        const [a, b] = list.map((item) => this.estimate(item));
        return { cost: capped((a?.cost ?? 0) + (b?.cost ?? 0)), value: SCALAR };
      }
      case "?:": {
        const [condition, yes, no] = list.map((item) => this.estimate(item));
        const larger = (yes?.cost ?? 0) >= (no?.cost ?? 0) ? yes : no;
        return {
          cost: capped((condition?.cost ?? 0) + (larger?.cost ?? 0)),
          value: { schema: larger?.value.schema, size: Math.max(yes?.value.size ?? 0, no?.value.size ?? 0) },
        };
      }
      case "==":
      case "!=":
      case "<":
      case "<=":
      case ">":
      case ">=": {
        const [a, b] = list.map((item) => this.estimate(item));
        const smallest = Math.min(a?.value.size ?? UNKNOWN, b?.value.size ?? UNKNOWN);
        return {
          cost: capped((a?.cost ?? 0) + (b?.cost ?? 0) + scaled(smallest, STRING_TRAVERSAL_FACTOR)),
          value: SCALAR,
        };
      }
      case "in": {
        const [needle, haystack] = list.map((item) => this.estimate(item));
        return {
          cost: capped((needle?.cost ?? 0) + (haystack?.cost ?? 0) + (haystack?.value.size ?? UNKNOWN)),
          value: SCALAR,
        };
      }
      case "+": {
        const [a, b] = list.map((item) => this.estimate(item));
        const size = capped((a?.value.size ?? UNKNOWN) + (b?.value.size ?? UNKNOWN));
        const isString = a?.value.schema?.type === "string" || b?.value.schema?.type === "string";
        return {
          cost: capped(
            (a?.cost ?? 0) + (b?.cost ?? 0) + (isString ? scaled(size, STRING_TRAVERSAL_FACTOR) : 1),
          ),
          value: { schema: a?.value.schema ?? b?.value.schema, size },
        };
      }
      case "call":
        return this.call(String(list[0]), undefined, Array.isArray(list[1]) ? (list[1] as unknown[]) : []);
      case "rcall": {
        const name = String(list[0]);
        const rest = Array.isArray(list[2]) ? (list[2] as unknown[]) : [];
        if (MACROS.has(name) && rest.length >= 2) return this.macro(name, list[1], rest);
        return this.call(name, list[1], rest);
      }
      default: {
        const cost = list.reduce((sum: number, item) => sum + this.estimate(item).cost, 0);
        return { cost: capped(cost + 1), value: SCALAR };
      }
    }
  }

  /** A comprehension: its range, then per element the loop condition and step (cel-go's costComprehension). */
  private macro(name: string, range: unknown, rest: unknown[]): Estimate {
    const iterated = this.estimate(range);
    const variable = rest[0];
    const scope = new Map<string, Value>();
    if (isNode(variable) && variable.op === "id")
      scope.set(String(variable.args), element(iterated.value, true));
    this.scopes.push(scope);
    const body = rest.slice(1).reduce((sum: number, item) => sum + this.estimate(item).cost, 0);
    this.scopes.pop();
    // Per element: all/exists test `@not_strictly_false(result)` (2) and step `result && body`
    // (1 + body); exists_one steps `body ? result + 1 : result`; filter and map append a
    // one-element list to the result.
    const perElement =
      name === "all" || name === "exists"
        ? 2 + 1 + body
        : name === "exists_one"
          ? body + 3
          : body + LIST_CREATE_COST + 3;
    const cost = capped(iterated.cost + 1 + iterated.value.size * perElement);
    const value: Value =
      name === "filter"
        ? iterated.value
        : name === "map"
          ? { schema: { type: "array" }, size: iterated.value.size }
          : SCALAR;
    return { cost, value };
  }

  private call(name: string, targetNode: unknown, argNodes: unknown[]): Estimate {
    const target = targetNode === undefined ? undefined : this.estimate(targetNode);
    const args = argNodes.map((item) => this.estimate(item));
    const operands = (target?.cost ?? 0) + args.reduce((sum, item) => sum + item.cost, 0);
    const subject = target ?? args[0];
    const size = (estimate: Estimate | undefined): number => estimate?.value.size ?? UNKNOWN;
    let own = 1;
    let value: Value = SCALAR;
    // has(x.f) is one field test: the select's own cost, nothing more.
    if (name === "has") own = 0;
    else if (name === "size") own = 1;
    else if (name === "contains" && target !== undefined)
      own = scaled(size(target), STRING_TRAVERSAL_FACTOR) * scaled(size(args[0]), STRING_TRAVERSAL_FACTOR);
    else if (name === "startsWith" || name === "endsWith")
      own = scaled(size(args[0]), STRING_TRAVERSAL_FACTOR);
    else if (REGEX_FUNCTIONS.has(name)) {
      const text = target ?? args[0];
      const pattern = target === undefined ? args[1] : args[0];
      own = scaled(size(text) + 1, STRING_TRAVERSAL_FACTOR) * scaled(size(pattern), REGEX_LENGTH_FACTOR);
      if (name.startsWith("find")) value = { schema: { type: "string" }, size: size(text) };
    } else if (LIST_TRAVERSALS.has(name) && subject?.value.schema?.type !== "string") own = size(subject);
    else if (
      STRING_TRAVERSALS.has(name) ||
      (name === "indexOf" && subject?.value.schema?.type === "string")
    ) {
      own = scaled(size(subject), STRING_TRAVERSAL_FACTOR);
      value = { schema: { type: "string" }, size: size(subject) };
    }
    return { cost: capped(operands + own), value };
  }
}

/** A rule's estimated cost over `schema`, the schema of the node it is declared on. */
export function estimateRuleCost(ast: unknown, schema: JSONSchemaProps): number {
  return new Estimator(valueOf(schema)).estimate(ast).cost;
}

/** Upstream's getCostErrorMessage: the factor over the limit, "more than 100x" past 100. */
export function costErrorMessage(costName: string, cost: number, limit: number): string {
  const factor = cost / limit;
  const text =
    factor > 100 ? "more than 100x" : factor < 1.5 ? `${factor.toFixed(6)}x` : `${factor.toFixed(1)}x`;
  return `${costName} exceeds budget by factor of ${text} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)`;
}

export function timesCardinality(cost: number, cardinality: number): number {
  return cost === 0 ? 0 : capped(cost * cardinality);
}
