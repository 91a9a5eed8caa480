// Ginkgo's --label-filter language, for csi-sanity's `-ginkgo.label-filter`: labels joined with
// `&&`, `||` (or `,`), `!`, parentheses, and `/regexp/` (true when any label matches). Labels
// compare case-insensitively, as Ginkgo's do. csi-sanity's specs carry no labels; csikit's tests
// carry two, their service and their RPC group (testLabels), so a filter selects by either.
//
// Invariant: parseLabelFilter either returns a total predicate or throws a ValidationError that
// names the position of the problem; it never evaluates anything while parsing.

import { ValidationError } from "../base/index.ts";

export type LabelPredicate = (labels: readonly string[]) => boolean;

/** The labels a csikit sanity test answers to: its service and its RPC group. */
export function testLabels(test: { service: string; group: string }): string[] {
  return [test.service, test.group];
}

type Token =
  { kind: "and" | "or" | "not" | "open" | "close" | "end" } | { kind: "label" | "regex"; text: string };

function tokenize(filter: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const fail = (why: string): never => {
    throw new ValidationError(`label filter ${JSON.stringify(filter)}: ${why} at offset ${i}`);
  };
  while (i < filter.length) {
    const rest = filter.slice(i);
    const space = /^\s+/.exec(rest);
    if (space) {
      i += space[0].length;
    } else if (rest.startsWith("&&")) {
      tokens.push({ kind: "and" });
      i += 2;
    } else if (rest.startsWith("||")) {
      tokens.push({ kind: "or" });
      i += 2;
    } else if (rest[0] === ",") {
      tokens.push({ kind: "or" });
      i += 1;
    } else if (rest[0] === "!") {
      tokens.push({ kind: "not" });
      i += 1;
    } else if (rest[0] === "(") {
      tokens.push({ kind: "open" });
      i += 1;
    } else if (rest[0] === ")") {
      tokens.push({ kind: "close" });
      i += 1;
    } else if (rest[0] === "/") {
      const end = rest.indexOf("/", 1);
      if (end < 0) fail("unterminated /regexp/");
      tokens.push({ kind: "regex", text: rest.slice(1, end) });
      i += end + 1;
    } else {
      const word = /^[^&|!,()/\s]+/.exec(rest)?.[0] ?? fail(`unexpected ${JSON.stringify(rest[0])}`);
      if (word.includes(":"))
        fail("set expressions (key: containsAny ...) are not supported; csikit's labels have no keys");
      tokens.push({ kind: "label", text: word });
      i += word.length;
    }
  }
  tokens.push({ kind: "end" });
  return tokens;
}

/** Parses a label filter; an empty or blank filter matches everything. */
export function parseLabelFilter(filter: string): LabelPredicate {
  if (filter.trim() === "") return () => true;
  const tokens = tokenize(filter);
  let at = 0;
  const peek = (): Token => tokens[at]!;
  const fail = (why: string): never => {
    throw new ValidationError(`label filter ${JSON.stringify(filter)}: ${why}`);
  };
  const or = (): LabelPredicate => {
    const parts = [and()];
    while (peek().kind === "or") {
      at++;
      parts.push(and());
    }
    return (labels) => parts.some((part) => part(labels));
  };
  const and = (): LabelPredicate => {
    const parts = [unary()];
    while (peek().kind === "and") {
      at++;
      parts.push(unary());
    }
    return (labels) => parts.every((part) => part(labels));
  };
  const unary = (): LabelPredicate => {
    if (peek().kind !== "not") return primary();
    at++;
    const inner = unary();
    return (labels) => !inner(labels);
  };
  const primary = (): LabelPredicate => {
    const token = peek();
    at++;
    if (token.kind === "open") {
      const inner = or();
      if (peek().kind !== "close") fail("missing )");
      at++;
      return inner;
    }
    if (token.kind === "label") {
      const wanted = token.text.toLowerCase();
      return (labels) => labels.some((label) => label.toLowerCase() === wanted);
    }
    if (token.kind === "regex") {
      let pattern: RegExp;
      try {
        pattern = new RegExp(token.text, "i");
      } catch (error) {
        return fail(`bad /regexp/: ${error instanceof Error ? error.message : String(error)}`);
      }
      return (labels) => labels.some((label) => pattern.test(label));
    }
    return fail(token.kind === "end" ? "ends early" : `unexpected ${token.kind}`);
  };
  const predicate = or();
  if (peek().kind !== "end") fail(`unexpected ${peek().kind} after a complete filter`);
  return predicate;
}
