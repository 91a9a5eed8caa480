// Regular expressions from user input (CRD `pattern`, CEL `matches()`), matched in linear time
// with RE2 semantics as upstream (Go's regexp): a pattern such as `^(a+)+$` cannot make the
// server backtrack for seconds. Compiled patterns are cached, the cache bounded.

import { RE2JS } from "re2js";

/** A compiled pattern, or why it does not compile (Go's regexp error text). */
export type CompiledPattern = { ok: true; re: RE2JS } | { ok: false; error: string };

const MAX_CACHED = 1024;
const cache = new Map<string, CompiledPattern>();

export function compilePattern(pattern: string): CompiledPattern {
  let compiled = cache.get(pattern);
  if (compiled === undefined) {
    try {
      compiled = { ok: true, re: RE2JS.compile(pattern) };
    } catch (error) {
      compiled = { ok: false, error: error instanceof Error ? error.message : String(error) };
    }
    // A crude bound: patterns come from CRDs and CEL rules, so the set is small in practice.
    if (cache.size >= MAX_CACHED) cache.clear();
    cache.set(pattern, compiled);
  }
  return compiled;
}

/**
 * Whether `value` contains a match of `pattern` (unanchored, as Go's MatchString); undefined
 * when the pattern does not compile.
 */
export function patternMatches(pattern: string, value: string): boolean | undefined {
  const compiled = compilePattern(pattern);
  return compiled.ok ? compiled.re.test(value) : undefined;
}
