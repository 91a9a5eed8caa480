// Go-style command-line flags, shared by every subcommand, so upstream invocations work
// unchanged: `--flag=value`, `--flag value`, `-flag value`, `-flag=value`; booleans as
// `--flag` / `--flag=false` (a bare boolean never consumes the next word, as Go's flag
// package); durations as Go writes them (`15s`, `1m30s`, `100ms`); repeated flags of list
// type accumulate. Parsing stops at `--` or the first positional word, as Go's flag package.
// Unknown flags and bad values are a FlagError naming the flag.

import { FlagError, ValidationError } from "./errors.ts";

export type FlagType = "string" | "bool" | "int" | "float" | "duration" | "strings" | "map";

export interface FlagSpec {
  type: FlagType;
  /** What the flag does, with units; shown by --help. */
  help: string;
  /** Default value in the flag's own text form ("15s", "true", "5"); omitted = zero value. */
  default?: string;
  /** Flag is accepted but does nothing; --help says so. */
  deprecated?: string;
  /**
   * Value of a non-bool flag given bare (`--walkthrough` alone means `--walkthrough=<bare>`); such a
   * flag never takes its value from the next argument, only after `=`.
   */
  bare?: string;
}

export type FlagValue = string | boolean | number | string[] | Record<string, string>;

export type FlagSpecs = Record<string, FlagSpec>;

export interface ParsedFlags {
  values: Map<string, FlagValue>;
  /** Names given explicitly on the command line. */
  set: Set<string>;
  positionals: string[];
  help: boolean;
  version: boolean;
}

const DURATION_UNITS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** Parses a Go duration ("1m30s", "-2h", "0", "1.5s") into milliseconds. */
export function parseDuration(text: string): number {
  const input = text.trim();
  if (input === "0" || input === "+0" || input === "-0") return 0;
  const match = /^([-+]?)((?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+$/.exec(input);
  if (!match)
    throw new ValidationError(`invalid duration ${JSON.stringify(text)} (want e.g. 15s, 1m30s, 100ms)`);
  const sign = match[1] === "-" ? -1 : 1;
  let total = 0;
  for (const part of input.slice(match[1]!.length).matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g)) {
    total += Number(part[1]) * DURATION_UNITS[part[2]!]!;
  }
  return sign * total;
}

/** Formats milliseconds the way Go prints a time.Duration ("1m30s", "15s", "100ms", "0s"). */
export function formatDuration(ms: number): string {
  if (ms === 0) return "0s";
  const sign = ms < 0 ? "-" : "";
  let rest = Math.abs(ms);
  if (rest < 1000) return `${sign}${rest}ms`;
  const hours = Math.floor(rest / 3_600_000);
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  rest -= minutes * 60_000;
  const seconds = rest / 1000;
  let out = sign;
  if (hours) out += `${hours}h`;
  if (hours || minutes) out += `${minutes}m`;
  out += `${seconds}s`;
  return out;
}

function convert(name: string, spec: FlagSpec, raw: string, previous: FlagValue | undefined): FlagValue {
  const bad = (why: string): FlagError =>
    new FlagError(`invalid value ${JSON.stringify(raw)} for flag -${name}: ${why}`);
  switch (spec.type) {
    case "string":
      return raw;
    case "bool": {
      const lower = raw.toLowerCase();
      if (["1", "t", "true"].includes(lower)) return true;
      if (["0", "f", "false"].includes(lower)) return false;
      throw bad("want true or false");
    }
    case "int": {
      if (!/^[-+]?\d+$/.test(raw.trim())) throw bad("want an integer");
      const value = Number(raw);
      if (!Number.isSafeInteger(value)) throw bad("integer out of range");
      return value;
    }
    case "float": {
      const value = Number(raw);
      if (raw.trim() === "" || !Number.isFinite(value)) throw bad("want a number");
      return value;
    }
    case "duration":
      try {
        return parseDuration(raw);
      } catch (error) {
        throw bad(error instanceof Error ? error.message : "invalid duration");
      }
    case "strings": {
      const items = raw === "" ? [] : raw.split(",").map((s) => s.trim());
      return [...(Array.isArray(previous) ? previous : []), ...items];
    }
    case "map": {
      const out: Record<string, string> =
        previous && typeof previous === "object" && !Array.isArray(previous) ? { ...previous } : {};
      for (const pair of raw === "" ? [] : raw.split(",")) {
        const eq = pair.indexOf("=");
        if (eq <= 0) throw bad(`want key=value pairs, got ${JSON.stringify(pair)}`);
        out[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
      }
      return out;
    }
  }
}

function zeroValue(spec: FlagSpec): FlagValue {
  switch (spec.type) {
    case "string":
      return "";
    case "bool":
      return false;
    case "int":
    case "float":
    case "duration":
      return 0;
    case "strings":
      return [];
    case "map":
      return {};
  }
}

/** Parses argv against `specs`. `--help`/`-h` and `--version` are always recognised. */
export function parseFlags(specs: FlagSpecs, argv: readonly string[]): ParsedFlags {
  const values = new Map<string, FlagValue>();
  for (const [name, spec] of Object.entries(specs)) {
    values.set(
      name,
      spec.default === undefined ? zeroValue(spec) : convert(name, spec, spec.default, undefined),
    );
  }
  const set = new Set<string>();
  const positionals: string[] = [];
  let help = false;
  let version = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (!arg.startsWith("-") || arg === "-") {
      positionals.push(...argv.slice(i));
      break;
    }
    const body = arg.replace(/^--?/, "");
    const eq = body.indexOf("=");
    const name = eq >= 0 ? body.slice(0, eq) : body;
    let inline = eq >= 0 ? body.slice(eq + 1) : undefined;
    if (name === "") throw new FlagError(`bad flag syntax: ${arg}`);
    const spec = specs[name];
    if (!spec) {
      if ((name === "help" || name === "h") && inline === undefined) {
        help = true;
        continue;
      }
      if (name === "version" && !specs.version) {
        version =
          inline === undefined ? true : convert(name, { type: "bool", help: "" }, inline, undefined) === true;
        continue;
      }
      throw new FlagError(`flag provided but not defined: -${name} (see --help)`);
    }
    if (inline === undefined) {
      if (spec.type === "bool") inline = "true";
      else if (spec.bare !== undefined) inline = spec.bare;
      else {
        if (i + 1 >= argv.length) throw new FlagError(`flag needs an argument: -${name}`);
        inline = argv[++i]!;
      }
    }
    values.set(name, convert(name, spec, inline, set.has(name) ? values.get(name) : undefined));
    set.add(name);
  }
  return { values, set, positionals, help, version };
}

/** The --help text: usage line, then each flag with its type, default and meaning. */
export function formatHelp(usage: string, specs: FlagSpecs, description?: string): string {
  const lines = [`Usage: ${usage}`];
  if (description) lines.push("", description);
  lines.push("", "Flags:");
  const names = Object.keys(specs).sort();
  for (const name of names) {
    const spec = specs[name]!;
    const kind =
      spec.type === "bool"
        ? ""
        : ` ${spec.type === "strings" ? "value,..." : spec.type === "map" ? "key=value,..." : spec.type}`;
    lines.push(`  --${name}${kind}`);
    let text = spec.help;
    if (spec.default !== undefined && spec.default !== "")
      text += ` (default ${JSON.stringify(spec.default)})`;
    if (spec.bare !== undefined) text += ` (alone: ${JSON.stringify(spec.bare)})`;
    if (spec.deprecated) text += ` DEPRECATED: ${spec.deprecated}`;
    lines.push(`      ${text}`);
  }
  lines.push(
    "  --help",
    "      Print this help and exit.",
    "  --version",
    "      Print the csikit version and exit.",
  );
  return lines.join("\n") + "\n";
}

/** Typed accessors over a ParsedFlags, each throwing if the flag has another type. */
export class Flags {
  readonly parsed: ParsedFlags;
  constructor(parsed: ParsedFlags) {
    this.parsed = parsed;
  }
  string(name: string): string {
    const value = this.parsed.values.get(name);
    if (typeof value !== "string") throw new FlagError(`flag -${name} is not a string flag`);
    return value;
  }
  bool(name: string): boolean {
    const value = this.parsed.values.get(name);
    if (typeof value !== "boolean") throw new FlagError(`flag -${name} is not a bool flag`);
    return value;
  }
  /** int, float and duration (milliseconds) flags. */
  number(name: string): number {
    const value = this.parsed.values.get(name);
    if (typeof value !== "number") throw new FlagError(`flag -${name} is not a numeric flag`);
    return value;
  }
  strings(name: string): string[] {
    const value = this.parsed.values.get(name);
    if (!Array.isArray(value)) throw new FlagError(`flag -${name} is not a list flag`);
    return value;
  }
  map(name: string): Record<string, string> {
    const value = this.parsed.values.get(name);
    if (typeof value !== "object" || value === null || Array.isArray(value))
      throw new FlagError(`flag -${name} is not a map flag`);
    return value;
  }
  isSet(name: string): boolean {
    return this.parsed.set.has(name);
  }
}
