// A small subset of CEL, enough for the x-kubernetes-validations rules CRDs in this field use
// (the VolumeSnapshot CRDs: has(), ==/!=, &&/||/!, size(), self/oldSelf, string methods,
// comparisons, ternaries). A rule this subset cannot parse is skipped, never enforced
// wrongly. Evaluation errors follow CEL's commutative logic: `a || b` is true when either side
// is true even if the other errs; otherwise the error makes the rule fail.

import { patternMatches } from "./regex.ts";

type Token =
  | { kind: "num"; value: number }
  | { kind: "str"; value: string }
  | { kind: "id"; value: string }
  | { kind: "op"; value: string }
  | { kind: "end" };

export type Expr =
  | { kind: "lit"; value: unknown }
  | { kind: "ident"; name: string }
  | { kind: "member"; target: Expr; name: string }
  | { kind: "index"; target: Expr; index: Expr }
  | { kind: "call"; name: string; target?: Expr; args: Expr[] }
  | { kind: "unary"; op: string; operand: Expr }
  | { kind: "binary"; op: string; left: Expr; right: Expr }
  | { kind: "cond"; test: Expr; then: Expr; else: Expr }
  | { kind: "list"; items: Expr[] };

class CelSyntaxError extends Error {}
class CelEvalError extends Error {}

const OPERATORS = [
  "&&",
  "||",
  "==",
  "!=",
  "<=",
  ">=",
  "<",
  ">",
  "!",
  "+",
  "-",
  "*",
  "/",
  "%",
  "(",
  ")",
  "[",
  "]",
  ".",
  ",",
  "?",
  ":",
];

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i] ?? "";
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (/[0-9]/.test(c)) {
      const match = /^[0-9]+(\.[0-9]+)?[uU]?/.exec(source.slice(i));
      const text = match?.[0] ?? c;
      tokens.push({ kind: "num", value: Number(text.replace(/[uU]$/, "")) });
      i += text.length;
      continue;
    }
    if (c === "'" || c === '"') {
      let j = i + 1;
      let value = "";
      while (j < source.length && source[j] !== c) {
        if (source[j] === "\\") {
          const next = source[j + 1] ?? "";
          value += next === "n" ? "\n" : next === "t" ? "\t" : next;
          j += 2;
        } else {
          value += source[j];
          j++;
        }
      }
      if (j >= source.length) throw new CelSyntaxError("unterminated string");
      tokens.push({ kind: "str", value });
      i = j + 1;
      continue;
    }
    if (/[A-Za-z_]/.test(c)) {
      const match = /^[A-Za-z_][A-Za-z0-9_]*/.exec(source.slice(i));
      const text = match?.[0] ?? c;
      tokens.push({ kind: "id", value: text });
      i += text.length;
      continue;
    }
    const op = OPERATORS.find((candidate) => source.startsWith(candidate, i));
    if (op === undefined) throw new CelSyntaxError(`unexpected ${JSON.stringify(c)}`);
    tokens.push({ kind: "op", value: op });
    i += op.length;
  }
  tokens.push({ kind: "end" });
  return tokens;
}

/** CEL escapes property names that are reserved words or contain dashes/dots (`__namespace__`). */
function unescapeProperty(name: string): string {
  const match = /^__(.+)__$/.exec(name);
  if (match === null) return name;
  return (match[1] ?? "")
    .replace(/__dash__/g, "-")
    .replace(/__dot__/g, ".")
    .replace(/__slash__/g, "/")
    .replace(/__underscores__/g, "__");
}

const PRECEDENCE: Readonly<Record<string, number>> = {
  "||": 1,
  "&&": 2,
  "==": 3,
  "!=": 3,
  "<": 3,
  "<=": 3,
  ">": 3,
  ">=": 3,
  in: 3,
  "+": 4,
  "-": 4,
  "*": 5,
  "/": 5,
  "%": 5,
};

export function parseCel(source: string): Expr {
  const tokens = tokenize(source);
  let position = 0;
  const peek = (): Token => tokens[position] ?? { kind: "end" };
  const next = (): Token => tokens[position++] ?? { kind: "end" };
  const isOp = (token: Token, value: string) => token.kind === "op" && token.value === value;
  const expect = (value: string) => {
    if (!isOp(next(), value)) throw new CelSyntaxError(`expected ${value}`);
  };

  const expression = (): Expr => {
    const test = binary(1);
    if (isOp(peek(), "?")) {
      next();
      const then = expression();
      expect(":");
      return { kind: "cond", test, then, else: expression() };
    }
    return test;
  };

  const binaryOp = (token: Token): string | undefined => {
    if (token.kind === "op" && PRECEDENCE[token.value] !== undefined) return token.value;
    if (token.kind === "id" && token.value === "in") return "in";
    return undefined;
  };

  const binary = (minimum: number): Expr => {
    let left = unary();
    for (;;) {
      const op = binaryOp(peek());
      const precedence = op === undefined ? undefined : PRECEDENCE[op];
      if (op === undefined || precedence === undefined || precedence < minimum) return left;
      next();
      left = { kind: "binary", op, left, right: binary(precedence + 1) };
    }
  };

  const unary = (): Expr => {
    const token = peek();
    if (isOp(token, "!") || isOp(token, "-")) {
      next();
      return { kind: "unary", op: token.kind === "op" ? token.value : "!", operand: unary() };
    }
    return postfix(primary());
  };

  const args = (): Expr[] => {
    const list: Expr[] = [];
    if (isOp(peek(), ")")) {
      next();
      return list;
    }
    for (;;) {
      list.push(expression());
      const token = next();
      if (isOp(token, ")")) return list;
      if (!isOp(token, ",")) throw new CelSyntaxError("expected , or )");
    }
  };

  const postfix = (start: Expr): Expr => {
    let target = start;
    for (;;) {
      const token = peek();
      if (isOp(token, ".")) {
        next();
        const name = next();
        if (name.kind !== "id") throw new CelSyntaxError("expected a field name");
        if (isOp(peek(), "(")) {
          next();
          target = { kind: "call", name: name.value, target, args: args() };
        } else {
          target = { kind: "member", target, name: unescapeProperty(name.value) };
        }
      } else if (isOp(token, "[")) {
        next();
        const index = expression();
        expect("]");
        target = { kind: "index", target, index };
      } else {
        return target;
      }
    }
  };

  const primary = (): Expr => {
    const token = next();
    if (token.kind === "num" || token.kind === "str") return { kind: "lit", value: token.value };
    if (token.kind === "id") {
      if (token.value === "true" || token.value === "false")
        return { kind: "lit", value: token.value === "true" };
      if (token.value === "null") return { kind: "lit", value: null };
      if (isOp(peek(), "(")) {
        next();
        return { kind: "call", name: token.value, args: args() };
      }
      return { kind: "ident", name: token.value };
    }
    if (isOp(token, "(")) {
      const inner = expression();
      expect(")");
      return inner;
    }
    if (isOp(token, "[")) {
      const items: Expr[] = [];
      if (isOp(peek(), "]")) {
        next();
        return { kind: "list", items };
      }
      for (;;) {
        items.push(expression());
        const separator = next();
        if (isOp(separator, "]")) return { kind: "list", items };
        if (!isOp(separator, ",")) throw new CelSyntaxError("expected , or ]");
      }
    }
    throw new CelSyntaxError("unexpected token");
  };

  const result = expression();
  if (peek().kind !== "end") throw new CelSyntaxError("trailing input");
  return result;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function equal(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((item, i) => equal(item, b[i]));
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return (
      keys.length === Object.keys(b).length &&
      keys.every((key) => Object.hasOwn(b, key) && equal(a[key], b[key]))
    );
  }
  return false;
}

function sizeOf(value: unknown): number {
  if (typeof value === "string") return [...value].length;
  if (Array.isArray(value)) return value.length;
  if (isObject(value)) return Object.keys(value).length;
  throw new CelEvalError("size() of an unsized value");
}

type Env = Readonly<Record<string, unknown>>;

export function evaluateCel(expr: Expr, env: Env): unknown {
  switch (expr.kind) {
    case "lit":
      return expr.value;
    case "list":
      return expr.items.map((item) => evaluateCel(item, env));
    case "ident":
      if (!Object.hasOwn(env, expr.name)) throw new CelEvalError(`undeclared reference to '${expr.name}'`);
      return env[expr.name];
    case "member": {
      const target = evaluateCel(expr.target, env);
      if (!isObject(target) || !Object.hasOwn(target, expr.name))
        throw new CelEvalError(`no such key: ${expr.name}`);
      return target[expr.name];
    }
    case "index": {
      const target = evaluateCel(expr.target, env);
      const index = evaluateCel(expr.index, env);
      if (Array.isArray(target) && typeof index === "number" && index >= 0 && index < target.length)
        return target[index];
      if (isObject(target) && typeof index === "string" && Object.hasOwn(target, index)) return target[index];
      throw new CelEvalError("index out of range or no such key");
    }
    case "unary": {
      const value = evaluateCel(expr.operand, env);
      if (expr.op === "!") {
        if (typeof value !== "boolean") throw new CelEvalError("no such overload: !");
        return !value;
      }
      if (typeof value !== "number") throw new CelEvalError("no such overload: -");
      return -value;
    }
    case "cond": {
      const test = evaluateCel(expr.test, env);
      if (typeof test !== "boolean") throw new CelEvalError("no such overload: ?:");
      return test ? evaluateCel(expr.then, env) : evaluateCel(expr.else, env);
    }
    case "call":
      return evaluateCall(expr, env);
    case "binary":
      return evaluateBinary(expr, env);
  }
}

function evaluateCall(expr: Extract<Expr, { kind: "call" }>, env: Env): unknown {
  if (expr.target === undefined && expr.name === "has") {
    const [argument] = expr.args;
    if (argument === undefined || argument.kind !== "member")
      throw new CelEvalError("invalid argument to has() macro");
    const target = evaluateCel(argument.target, env);
    return isObject(target) && Object.hasOwn(target, argument.name);
  }
  if (expr.target === undefined && expr.name === "size") {
    return sizeOf(evaluateCel(expr.args[0] ?? { kind: "lit", value: null }, env));
  }
  if (expr.target === undefined) throw new CelEvalError(`unknown function ${expr.name}`);
  const target = evaluateCel(expr.target, env);
  const args = expr.args.map((arg) => evaluateCel(arg, env));
  const [first] = args;
  switch (expr.name) {
    case "size":
      return sizeOf(target);
    case "startsWith":
      if (typeof target === "string" && typeof first === "string") return target.startsWith(first);
      break;
    case "endsWith":
      if (typeof target === "string" && typeof first === "string") return target.endsWith(first);
      break;
    case "contains":
      if (typeof target === "string" && typeof first === "string") return target.includes(first);
      break;
    case "matches":
      if (typeof target === "string" && typeof first === "string") {
        const matched = patternMatches(first, target);
        if (matched === undefined) throw new CelEvalError(`invalid regular expression: ${first}`);
        return matched;
      }
      break;
    default:
      break;
  }
  throw new CelEvalError(`no such overload: ${expr.name}`);
}

function evaluateBinary(expr: Extract<Expr, { kind: "binary" }>, env: Env): unknown {
  if (expr.op === "&&" || expr.op === "||") {
    const absorbing = expr.op === "||";
    let failure: Error | undefined;
    for (const side of [expr.left, expr.right]) {
      try {
        const value = evaluateCel(side, env);
        if (typeof value !== "boolean") throw new CelEvalError(`no such overload: ${expr.op}`);
        if (value === absorbing) return absorbing;
      } catch (error) {
        failure = error instanceof Error ? error : new CelEvalError(String(error));
      }
    }
    if (failure !== undefined) throw failure;
    return !absorbing;
  }
  const left = evaluateCel(expr.left, env);
  const right = evaluateCel(expr.right, env);
  switch (expr.op) {
    case "==":
      return equal(left, right);
    case "!=":
      return !equal(left, right);
    case "in":
      if (Array.isArray(right)) return right.some((item) => equal(item, left));
      if (isObject(right) && typeof left === "string") return Object.hasOwn(right, left);
      throw new CelEvalError("no such overload: in");
    default:
      break;
  }
  if (typeof left === "number" && typeof right === "number") {
    switch (expr.op) {
      case "<":
        return left < right;
      case "<=":
        return left <= right;
      case ">":
        return left > right;
      case ">=":
        return left >= right;
      case "+":
        return left + right;
      case "-":
        return left - right;
      case "*":
        return left * right;
      case "/":
        if (right === 0) throw new CelEvalError("division by zero");
        return Number.isInteger(left) && Number.isInteger(right) ? Math.trunc(left / right) : left / right;
      case "%":
        if (right === 0) throw new CelEvalError("modulus by zero");
        return left % right;
      default:
        break;
    }
  }
  if (typeof left === "string" && typeof right === "string") {
    switch (expr.op) {
      case "+":
        return left + right;
      case "<":
        return left < right;
      case "<=":
        return left <= right;
      case ">":
        return left > right;
      case ">=":
        return left >= right;
      default:
        break;
    }
  }
  if (Array.isArray(left) && Array.isArray(right) && expr.op === "+")
    return (left as unknown[]).concat(right as unknown[]);
  throw new CelEvalError(`no such overload: ${expr.op}`);
}

const SUPPORTED_FUNCTIONS = new Set(["has", "size", "startsWith", "endsWith", "contains", "matches"]);

/** Whether every function and variable of an expression is one this subset evaluates. */
function supported(expr: Expr): boolean {
  switch (expr.kind) {
    case "lit":
      return true;
    case "ident":
      return expr.name === "self" || expr.name === "oldSelf";
    case "list":
      return expr.items.every(supported);
    case "member":
      return supported(expr.target);
    case "index":
      return supported(expr.target) && supported(expr.index);
    case "call":
      return (
        SUPPORTED_FUNCTIONS.has(expr.name) &&
        (expr.target === undefined || supported(expr.target)) &&
        expr.args.every(supported)
      );
    case "unary":
      return supported(expr.operand);
    case "binary":
      return supported(expr.left) && supported(expr.right);
    case "cond":
      return supported(expr.test) && supported(expr.then) && supported(expr.else);
  }
}

const compiled = new Map<string, Expr | undefined>();

/** The parsed rule, or undefined when it is outside the supported subset (then it is skipped). */
export function compileCelRule(rule: string): Expr | undefined {
  if (!compiled.has(rule)) {
    try {
      const expr = parseCel(rule);
      compiled.set(rule, supported(expr) ? expr : undefined);
    } catch {
      compiled.set(rule, undefined);
    }
  }
  return compiled.get(rule);
}

/** Whether a rule mentions oldSelf (a transition rule, evaluated on updates only). */
export function isTransitionRule(rule: string): boolean {
  return /\boldSelf\b/.test(rule);
}

export type RuleOutcome = { ok: true } | { ok: false; error?: string };

/** Evaluates one rule; a non-boolean result or an evaluation error fails it. */
export function checkCelRule(rule: Expr, self: unknown, oldSelf?: unknown): RuleOutcome {
  try {
    const env: Record<string, unknown> = { self };
    if (oldSelf !== undefined) env.oldSelf = oldSelf;
    const result = evaluateCel(rule, env);
    return result === true ? { ok: true } : { ok: false };
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message : String(error) };
  }
}
