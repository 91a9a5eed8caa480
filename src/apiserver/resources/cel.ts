// CEL for x-kubernetes-validations rules, on @marcbachmann/cel-js (the full language: macros
// all/exists/exists_one/filter/map, optional chaining off, every standard function), set up as
// apiextensions-apiserver sets up its environment:
// - `self` (and `oldSelf` in transition rules) typed from the schema: `integer` values are CEL
//   ints, `number` doubles; properties whose names are CEL keywords or hold `__`, `.`, `-`, `/`
//   are reached by upstream's escaped names (`self.__namespace__`, `self.a__dash__b`).
// - `matches()` and the Kubernetes regex library (`find`, `findAll`) run on RE2 (linear time,
//   regex.ts), not JavaScript's backtracking engine; the Kubernetes lists library is there
//   (`isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf`).
// - Cost is bounded as upstream bounds it: each rule's evaluation may spend at most 1,000,000
//   cost units (PerCallLimit), and one object's rules together 10,000,000 (the runtime budget).
//   The cost of a rule over a value is estimated before it runs, from the rule's size, its macro
//   nesting and the largest list or map in the value (size × n^depth), and a rule over budget is
//   not run: it fails with upstream's message, so no value can make a rule run for long.
// A rule that does not parse or refers to an unknown function or variable does not compile;
// CRDs with such rules are refused at create (apiextensions.ts), so nothing is skipped.

import { Environment } from "@marcbachmann/cel-js";
import type { JSONSchemaProps } from "../../api/index.ts";
import { withKubernetesLibraries } from "./cel-libraries.ts";
import { compilePattern, patternMatches } from "./regex.ts";
import { CsikitError } from "../../base/index.ts";

/** Upstream's per-expression runtime cost limit (apiextensions PerCallLimit). */
export const PER_CALL_COST_LIMIT = 1_000_000;
/** Upstream's runtime cost budget for all rules of one object (RuntimeCELCostBudget). */
export const RUNTIME_COST_BUDGET = 10_000_000;

const environment = withKubernetesLibraries(
  new Environment({
    homogeneousAggregateLiterals: false,
    // Upstream's CRD environment has optional types (`self.?field.orValue(x)`) since 1.29.
    enableOptionalTypes: true,
    limits: {
      maxAstNodes: 10_000,
      maxDepth: 250,
      maxListElements: 1000,
      maxMapEntries: 1000,
      maxCallArguments: 32,
    },
  })
    .registerVariable("self", "dyn")
    .registerVariable("oldSelf", "dyn")
    .registerFunction("string.__re2_matches(string): bool", (value: string, pattern: string) =>
      re2(value, pattern),
    )
    .registerFunction("__re2_matches(string, string): bool", (value: string, pattern: string) =>
      re2(value, pattern),
    )
    // Kubernetes' lists library.
    .registerFunction("list.isSorted(): bool", (list: unknown[]) =>
      list.every((item, i) => i === 0 || compare(list[i - 1], item) <= 0),
    )
    .registerFunction("list.sum(): dyn", (list: unknown[]) => sum(list))
    .registerFunction("list.min(): dyn", (list: unknown[]) => extreme(list, -1))
    .registerFunction("list.max(): dyn", (list: unknown[]) => extreme(list, 1))
    .registerFunction("list.indexOf(dyn): int", (list: unknown[], value: unknown) =>
      BigInt(list.findIndex((item) => same(item, value))),
    )
    .registerFunction("list.lastIndexOf(dyn): int", (list: unknown[], value: unknown) =>
      BigInt(list.findLastIndex((item) => same(item, value))),
    )
    // Kubernetes' regex library, on RE2.
    .registerFunction(
      "string.find(string): string",
      (value: string, pattern: string) => findAll(value, pattern, 1)[0] ?? "",
    )
    .registerFunction("string.findAll(string): list<string>", (value: string, pattern: string) =>
      findAll(value, pattern, -1),
    )
    .registerFunction(
      "string.findAll(string, int): list<string>",
      (value: string, pattern: string, limit: bigint) => findAll(value, pattern, Number(limit)),
    ),
);

function compare(a: unknown, b: unknown): number {
  if (typeof a !== typeof b || !["bigint", "number", "string", "boolean"].includes(typeof a))
    throw new CsikitError("CSIKIT_ERR_CEL", "no such overload: list elements are not comparable");
  return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
}

function sum(list: unknown[]): unknown {
  if (list.length === 0) return 0n;
  return list.reduce((total, item) => {
    if (typeof total === "bigint" && typeof item === "bigint") return total + item;
    if (typeof total === "number" && typeof item === "number") return total + item;
    throw new CsikitError("CSIKIT_ERR_CEL", "no such overload: sum() of mixed or non-numeric elements");
  });
}

function extreme(list: unknown[], sign: number): unknown {
  if (list.length === 0) throw new CsikitError("CSIKIT_ERR_CEL", "min/max of an empty list");
  return list.reduce((best, item) => (compare(item, best) * sign > 0 ? item : best));
}

function same(a: unknown, b: unknown): boolean {
  if (typeof a !== "object" || a === null) return a === b;
  const encode = (value: unknown): string =>
    JSON.stringify(value, (_key, inner: unknown) => (typeof inner === "bigint" ? `${inner}n` : inner));
  return encode(a) === encode(b);
}

/** Up to `limit` (all when negative) leftmost non-overlapping RE2 matches. */
function findAll(value: string, pattern: string, limit: number): string[] {
  const compiledPattern = compilePattern(pattern);
  if (!compiledPattern.ok) throw new CsikitError("CSIKIT_ERR_CEL", `invalid regular expression: ${pattern}`);
  const matches: string[] = [];
  const matcher = compiledPattern.re.matcher(value);
  while ((limit < 0 || matches.length < limit) && matcher.find()) matches.push(matcher.group() ?? "");
  return matches;
}

const COST_LIMIT_MESSAGE = "operation cancelled: actual cost limit exceeded";

function re2(value: string, pattern: string): boolean {
  const matched = patternMatches(pattern, value);
  if (matched === undefined)
    throw new CsikitError("CSIKIT_ERR_CEL", `invalid regular expression: ${pattern}`);
  return matched;
}

type AstNode = { op: string; args: unknown; pos?: number; start?: number; end?: number };

function isNode(value: unknown): value is AstNode {
  return typeof value === "object" && value !== null && !Array.isArray(value) && "op" in value;
}

function nodeCount(value: unknown): number {
  if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + nodeCount(item), 0);
  if (!isNode(value)) return 0;
  return 1 + nodeCount(value.args);
}

const MACROS = new Set(["all", "exists", "exists_one", "filter", "map"]);

/**
 * Rewrites the parsed rule in place so matches() calls go to the RE2 function, and returns how
 * deep its macros nest (their comprehensions multiply the cost by the collection size).
 */
function instrument(node: unknown, names: Set<string>): number {
  if (Array.isArray(node)) return Math.max(0, ...node.map((item) => instrument(item, names)));
  if (!isNode(node)) return 0;
  if (node.op === "id" && typeof node.args === "string") names.add(node.args);
  let own = 0;
  if ((node.op === "rcall" || node.op === "call") && Array.isArray(node.args)) {
    const args = node.args as unknown[];
    if (args[0] === "matches") args[0] = "__re2_matches";
    if (node.op === "rcall" && MACROS.has(String(args[0]))) own = 1;
  }
  return own + instrument(node.args, names);
}

export interface CompiledRule {
  evaluate(context: Record<string, unknown>): unknown;
  /** Whether the rule reads oldSelf (a transition rule). */
  transition: boolean;
  /** The rule's size in AST nodes. */
  size: number;
  /** How deep its macros nest. */
  depth: number;
  /** The parsed rule, for the static cost estimate (cel-cost.ts). */
  ast: unknown;
}

export type Compilation = { ok: true; rule: CompiledRule } | { ok: false; error: string };

const compiled = new Map<string, Compilation>();
const MAX_CACHED = 4096;

/** Compiles a rule (cached); a parse error or an unknown function or variable is an error. */
export function compileCelRule(source: string): Compilation {
  const cached = compiled.get(source);
  if (cached !== undefined) return cached;
  let result: Compilation;
  try {
    const parsed = environment.parse(source);
    // Rewritten before the type check, which resolves (and caches) each call's overload.
    const names = new Set<string>();
    const depth = instrument(parsed.ast, names);
    const checked = parsed.check();
    if (!checked.valid) throw checked.error ?? new Error("type check failed");
    result = {
      ok: true,
      rule: {
        evaluate: (context): unknown => parsed(context),
        transition: names.has("oldSelf"),
        size: nodeCount(parsed.ast),
        depth,
        ast: parsed.ast,
      },
    };
  } catch (error) {
    result = { ok: false, error: (error instanceof Error ? error.message : String(error)).split("\n")[0]! };
  }
  if (compiled.size >= MAX_CACHED) compiled.clear();
  compiled.set(source, result);
  return result;
}

/** Whether a rule mentions oldSelf (a transition rule, evaluated on updates only). */
export function isTransitionRule(source: string): boolean {
  const compilation = compileCelRule(source);
  return compilation.ok ? compilation.rule.transition : /\boldSelf\b/.test(source);
}

const RESERVED = new Set([
  "true",
  "false",
  "null",
  "in",
  "as",
  "break",
  "const",
  "continue",
  "else",
  "for",
  "function",
  "if",
  "import",
  "let",
  "loop",
  "package",
  "namespace",
  "return",
  "var",
  "void",
  "while",
]);

/** upstream's property-name escaping for CEL field access. */
export function escapeCelName(name: string): string {
  if (RESERVED.has(name)) return `__${name}__`;
  return name
    .replace(/__/g, "__underscores__")
    .replace(/\./g, "__dot__")
    .replace(/-/g, "__dash__")
    .replace(/\//g, "__slash__");
}

function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** A JSON value as CEL sees it under `schema`: ints as bigint, escaped property names. */
export function toCelValue(value: unknown, schema: JSONSchemaProps | undefined): unknown {
  if (typeof value === "number") {
    if (schema?.type === "number") return value;
    return Number.isInteger(value) ? BigInt(value) : value;
  }
  if (Array.isArray(value)) return value.map((item) => toCelValue(item, schema?.items));
  if (typeof value !== "object" || value === null) return value;
  const out: Record<string, unknown> = {};
  const properties = schema?.properties ?? {};
  const additional =
    typeof schema?.additionalProperties === "object" ? schema.additionalProperties : undefined;
  for (const [key, item] of Object.entries(value)) {
    if (Object.hasOwn(properties, key)) setOwn(out, escapeCelName(key), toCelValue(item, properties[key]));
    else setOwn(out, key, toCelValue(item, additional));
  }
  return out;
}

export type RuleOutcome = { ok: true } | { ok: false; error?: string };

/** A cost budget shared by the rules of one object. */
export interface CostBudget {
  remaining: number;
}

export function newCostBudget(): CostBudget {
  return { remaining: RUNTIME_COST_BUDGET };
}

/** The element count of the largest list or map in `value` (iteratively: values can be deep). */
function largestCollection(value: unknown): number {
  let largest = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const current = stack.pop();
    if (typeof current !== "object" || current === null) continue;
    const children = Array.isArray(current) ? current : Object.values(current);
    largest = Math.max(largest, children.length);
    for (const child of children) stack.push(child);
  }
  return largest;
}

/** Evaluates one rule; a non-boolean result, an evaluation error or a cost over budget fails it. */
export function checkCelRule(
  rule: CompiledRule,
  self: unknown,
  oldSelf?: unknown,
  schema?: JSONSchemaProps,
  budget: CostBudget = newCostBudget(),
): RuleOutcome {
  const size = Math.max(largestCollection(self), oldSelf === undefined ? 0 : largestCollection(oldSelf), 1);
  const cost = rule.size * size ** rule.depth;
  budget.remaining -= Math.min(cost, PER_CALL_COST_LIMIT);
  if (cost > PER_CALL_COST_LIMIT || budget.remaining < 0) return { ok: false, error: COST_LIMIT_MESSAGE };
  const context: Record<string, unknown> = { self: toCelValue(self, schema) };
  if (oldSelf !== undefined) context.oldSelf = toCelValue(oldSelf, schema);
  try {
    const result = rule.evaluate(context);
    return result === true ? { ok: true } : { ok: false };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return { ok: false, error: message.split("\n")[0]!.replace(/^No such key/, "no such key") };
  }
}
