// The live rule set of a fault proxy: rules in order, each with its own call counter, injection
// counter and random stream. The stream of a rule is seeded from the proxy's seed and the rule's
// id, so a rule's decisions depend only on its own matching calls: the same seed and the same
// sequence of calls replay the same faults, whatever other rules do. Changing a rule (PUT)
// starts its counters and stream afresh.

import { ValidationError } from "../base/index.ts";
import { matchesMethod, type FaultRule } from "./rules.ts";

export interface RuleStatus extends FaultRule {
  /** Matching calls seen since the rule was set. */
  calls: number;
  /** Faults it injected. */
  injected: number;
}

export interface Decision {
  rule: FaultRule;
  /** The rule's count of matching calls, this one included. */
  call: number;
}

interface Entry {
  rule: FaultRule;
  calls: number;
  injected: number;
  random: () => number;
}

/** mulberry32: a small, fast, seedable generator; quality is ample for fault rates. */
function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** FNV-1a of the seed and the rule id: the rule's own stream. */
function streamSeed(seed: number, id: string): number {
  let hash = 0x811c9dc5 ^ seed;
  for (const char of id) hash = Math.imul(hash ^ char.charCodeAt(0), 0x01000193);
  return hash >>> 0;
}

export class FaultRules {
  readonly seed: number;
  #entries: Entry[] = [];
  #lastId = 0;

  constructor(seed: number, rules: readonly FaultRule[] = []) {
    this.seed = seed;
    this.replace(rules);
  }

  /** A fresh rule id ("r1", "r2", ...). */
  readonly nextId = (): string => {
    let id: string;
    do id = `r${++this.#lastId}`;
    while (this.#entries.some((entry) => entry.rule.id === id));
    return id;
  };

  list(): RuleStatus[] {
    return this.#entries.map(({ rule, calls, injected }) => ({ ...rule, calls, injected }));
  }

  get(id: string): RuleStatus | undefined {
    return this.list().find((rule) => rule.id === id);
  }

  #entry(rule: FaultRule): Entry {
    return { rule, calls: 0, injected: 0, random: mulberry32(streamSeed(this.seed, rule.id)) };
  }

  replace(rules: readonly FaultRule[]): void {
    const ids = new Set<string>();
    for (const rule of rules) {
      if (ids.has(rule.id)) throw new ValidationError(`rule id ${JSON.stringify(rule.id)} is given twice`);
      ids.add(rule.id);
    }
    this.#entries = rules.map((rule) => this.#entry(rule));
  }

  /** Adds a rule, or replaces the one with its id in place. */
  put(rule: FaultRule): void {
    const index = this.#entries.findIndex((entry) => entry.rule.id === rule.id);
    if (index < 0) this.#entries.push(this.#entry(rule));
    else this.#entries[index] = this.#entry(rule);
  }

  remove(id: string): boolean {
    const before = this.#entries.length;
    this.#entries = this.#entries.filter((entry) => entry.rule.id !== id);
    return this.#entries.length !== before;
  }

  /**
   * Counts a call to `path` against every matching rule (each draws its number, fired or not,
   * so decisions stay reproducible) and returns the first rule that fires.
   */
  decide(path: string): Decision | undefined {
    let decision: Decision | undefined;
    for (const entry of this.#entries) {
      const { rule } = entry;
      if (!matchesMethod(rule.method, path)) continue;
      entry.calls++;
      const draw = entry.random();
      const exhausted = rule.times !== undefined && entry.injected >= rule.times;
      const fires =
        !exhausted &&
        (rule.nth !== undefined
          ? entry.calls === rule.nth
          : rule.rate !== undefined
            ? draw < rule.rate
            : true);
      if (fires && decision === undefined) {
        entry.injected++;
        decision = { rule, call: entry.calls };
      }
    }
    return decision;
  }
}
