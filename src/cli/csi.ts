// `csikit csi`: a raw CSI client, what gocsi's csc is for Go. Every RPC of CSI 1.12 (the table
// in csi-rpcs.ts) against any driver socket: the request from typed flags, positional ids and
// `--json` (typed flags win), secrets from a file, the response as YAML, JSON or a table;
// streamed responses are printed as each message arrives. Bad input is refused before dialling,
// naming the flag or JSON field; a failed RPC prints its gRPC code and message and exits 1.
// Secret values are never printed: not in errors, not in -v 5 traces (the client sanitizes).

import { readFile } from "node:fs/promises";
import { parse as parseYaml } from "yaml";
import {
  FlagError,
  Flags,
  LOGGING_FLAGS,
  Logger,
  ValidationError,
  errorMessage,
  formatHelp,
  isRecord,
  parseByteQuantity,
  parseFlags,
  type FlagSpecs,
  type FlagValue,
  type ParsedFlags,
} from "../base/index.ts";
import {
  CsiClient,
  grpcCode,
  grpcDetails,
  messageFromJson,
  parseEndpoint,
  statusName,
} from "../csi/index.ts";
import type { Command, CommandContext } from "./command.ts";
import { OUTPUT_FORMATS, formatMessage, type OutputFormat } from "./csi-output.ts";
import { RPCS, findRpc, methodSpec, rpcFlagSpecs, type FieldFlag, type RpcCommand } from "./csi-rpcs.ts";

const SUMMARY =
  "Call any CSI RPC on a driver's socket from the command line (a raw CSI client, like gocsi's csc)";

/** Flags every RPC takes. */
const COMMON_FLAGS: FlagSpecs = {
  endpoint: {
    type: "string",
    help: "The driver's CSI socket: unix:///path/csi.sock or a path (default $CSI_ENDPOINT)",
  },
  json: {
    type: "string",
    help: "The request as JSON (proto or camelCase field names), or @FILE to read it from a file; typed flags and arguments override its fields",
  },
  "secrets-file": {
    type: "string",
    help: "YAML or JSON file with a flat map of secrets for the request's secrets field; never printed",
  },
  output: { type: "string", default: "yaml", help: `Output format: ${OUTPUT_FORMATS.join(", ")}` },
  o: { type: "string", help: "Short for --output" },
  timeout: { type: "duration", default: "1m", help: "Deadline of the call (0 = none)" },
};

function rpcUsage(command: RpcCommand): string {
  const args = command.args.map((field) => field.replace(/([A-Z])/g, "_$1").toUpperCase()).join(" ");
  return `csikit csi ${command.group} ${command.name}${args ? ` ${args}` : ""} [flags]`;
}

/** The RPC list `csikit csi --help` shows. */
function rpcList(): string {
  const lines = ["RPCs (csikit csi <group> <rpc> --help for an RPC's flags):"];
  const usages = RPCS.map((command) =>
    rpcUsage(command)
      .replace(/^csikit csi \S+ /, "")
      .replace(/ \[flags\]$/, ""),
  );
  const width = Math.max(...usages.map((usage) => usage.length));
  let group = "";
  RPCS.forEach((command, i) => {
    if (command.group !== group) {
      group = command.group;
      lines.push(`  ${group}`);
    }
    const aliases = command.aliases.length ? ` (also: ${command.aliases.join(", ")})` : "";
    lines.push(`    ${usages[i]!.padEnd(width)}  ${methodSpec(command).name}${aliases}`);
  });
  return lines.join("\n");
}

const DESCRIPTION =
  "Sends one CSI request to a driver's socket and prints the response. The request is built from\n" +
  "the RPC's positional arguments and typed flags over --json (a full request, for any field);\n" +
  "--secrets-file fills the request's secrets. An RPC is named by its group and command word, by\n" +
  "its proto name (CreateVolume), or both (controller CreateVolume). Streaming RPCs (snapshot-\n" +
  "metadata allocated/delta) print each message as it arrives (-o json: one object per line).\n" +
  "Exit code 0 on success, 1 when the RPC fails (its gRPC code and message on stderr), 2 for bad\n" +
  "input. RPC flags come after the RPC's name.\n\n" +
  rpcList();

interface Invocation {
  command: RpcCommand;
  flags: Flags;
  args: string[];
  caps: string[];
}

/** Splits `--cap` occurrences out of argv: their value has commas a list flag would split. */
function extractCaps(argv: readonly string[]): { rest: string[]; caps: string[] } {
  const rest: string[] = [];
  const caps: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") {
      rest.push(...argv.slice(i));
      break;
    }
    const match = /^--?cap(?:=(.*))?$/s.exec(arg);
    if (!match) rest.push(arg);
    else if (match[1] !== undefined) caps.push(match[1]);
    else if (i + 1 < argv.length) caps.push(argv[++i]!);
    else throw new FlagError("flag needs an argument: -cap");
  }
  return { rest, caps };
}

function mergeValue(previous: FlagValue | undefined, next: FlagValue): FlagValue {
  if (Array.isArray(previous) && Array.isArray(next)) return [...previous, ...next];
  if (isRecord(previous) && isRecord(next) && !Array.isArray(previous)) return { ...previous, ...next };
  return next;
}

/**
 * Parses flags anywhere among the positional words (Go's flag package stops at the first one;
 * csc, on cobra, takes them anywhere): the words before the RPC were parsed by runCommand.
 */
function parseInterspersed(specs: FlagSpecs, before: ParsedFlags, argv: readonly string[]): ParsedFlags {
  const result = parseFlags(specs, []);
  const apply = (parsed: ParsedFlags): void => {
    for (const name of parsed.set) {
      const value = parsed.values.get(name)!;
      result.values.set(name, result.set.has(name) ? mergeValue(result.values.get(name), value) : value);
      result.set.add(name);
    }
    result.help ||= parsed.help;
  };
  apply(before);
  const dashes = argv.indexOf("--");
  let rest = dashes < 0 ? [...argv] : argv.slice(0, dashes);
  while (rest.length > 0) {
    const parsed = parseFlags(specs, rest);
    apply(parsed);
    if (parsed.positionals.length === 0) break;
    result.positionals.push(parsed.positionals[0]!);
    rest = parsed.positionals.slice(1);
  }
  if (dashes >= 0) result.positionals.push(...argv.slice(dashes + 1));
  return result;
}

function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split(".");
  let node = target;
  for (const key of keys.slice(0, -1)) {
    const next = node[key];
    node = node[key] = isRecord(next) && !Array.isArray(next) ? next : {};
  }
  node[keys.at(-1)!] = value;
}

/** A VolumeCapability from `MODE,TYPE[,FS_TYPE[,MOUNT_FLAG...]]` (as csc's --cap). */
export function parseCapability(text: string): Record<string, unknown> {
  const [mode = "", type = "mount", fsType, ...mountFlags] = text.split(",").map((part) => part.trim());
  if (mode === "")
    throw new FlagError(
      `invalid value ${JSON.stringify(text)} for flag -cap: want ACCESS_MODE,ACCESS_TYPE[,FS_TYPE[,MOUNT_FLAG...]]`,
    );
  const accessMode = { mode: /^\d+$/.test(mode) ? Number(mode) : mode.toUpperCase() };
  if (type === "block") {
    if (fsType !== undefined)
      throw new FlagError(
        `invalid value ${JSON.stringify(text)} for flag -cap: a block volume has no fs type or mount flags`,
      );
    return { block: {}, accessMode };
  }
  if (type !== "mount")
    throw new FlagError(
      `invalid value ${JSON.stringify(text)} for flag -cap: access type ${JSON.stringify(type)} is neither mount nor block`,
    );
  return { mount: { fsType: fsType ?? "", mountFlags }, accessMode };
}

function flagValue(name: string, flag: FieldFlag, flags: Flags, caps: readonly string[]): unknown {
  switch (flag.kind) {
    case "string":
      return flags.string(name);
    case "bool":
      return flags.bool(name);
    case "map":
      return flags.map(name);
    case "strings":
      return flags.strings(name);
    case "int": {
      const text = flags.string(name);
      if (!/^\d+$/.test(text))
        throw new FlagError(`invalid value ${JSON.stringify(text)} for flag -${name}: want a whole number`);
      return Number(text);
    }
    case "bytes":
      try {
        return parseByteQuantity(flags.string(name), `flag -${name}`).toString();
      } catch (error) {
        throw new FlagError(errorMessage(error));
      }
    case "caps":
      return caps.map(parseCapability);
    case "cap":
      if (caps.length > 1)
        throw new FlagError(`flag -cap: ${caps.length} given, this RPC takes one volume capability`);
      return parseCapability(caps[0]!);
  }
}

/** Reads `--json` (text or @FILE); a syntax error names the position, never the text (it may hold secrets). */
async function jsonRequest(text: string): Promise<unknown> {
  let source = text;
  if (text.startsWith("@")) {
    try {
      source = await readFile(text.slice(1), "utf8");
    } catch (error) {
      throw new FlagError(`flag -json: cannot read ${text.slice(1)}: ${errorMessage(error)}`);
    }
  }
  try {
    return JSON.parse(source);
  } catch (error) {
    const message = errorMessage(error);
    const at = / in JSON at position \d+.*$/.exec(message)?.[0] ?? "";
    const reason = at ? message.slice(0, message.length - at.length) : "not valid JSON";
    throw new FlagError(
      `flag -json: malformed JSON: ${/"/.test(reason) ? "not valid JSON" : reason}${at.replace(/^ in JSON/, "")}`,
    );
  }
}

/** The secrets file: a flat map of strings. Errors never quote the file's text. */
async function readSecrets(path: string): Promise<Record<string, string>> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    throw new FlagError(`flag -secrets-file: cannot read ${path}: ${errorMessage(error)}`);
  }
  let data: unknown;
  try {
    data = parseYaml(text);
  } catch {
    throw new FlagError(`flag -secrets-file: ${path} is not valid YAML or JSON`);
  }
  if (!isRecord(data) || Array.isArray(data)) {
    throw new FlagError(`flag -secrets-file: ${path} must hold a map of secret names to values`);
  }
  const secrets: Record<string, string> = {};
  for (const [key, value] of Object.entries(data)) {
    if (typeof value !== "string" && typeof value !== "number" && typeof value !== "boolean") {
      throw new FlagError(`flag -secrets-file: ${path}: the value of ${JSON.stringify(key)} is not a string`);
    }
    secrets[key] = String(value);
  }
  return secrets;
}

function hasField(messageType: string, field: string): boolean {
  try {
    messageFromJson(messageType, { [field]: null });
    return true;
  } catch {
    return false;
  }
}

/** The request: --json, then positional arguments and typed flags, then secrets; validated whole. */
export async function buildRequest(invocation: Invocation): Promise<Record<string, unknown>> {
  const { command, flags, args, caps } = invocation;
  const requestType = methodSpec(command).requestType;
  const rpcName = methodSpec(command).name;
  let request: Record<string, unknown> = {};
  if (flags.isSet("json")) {
    request = messageFromJson(requestType, await jsonRequest(flags.string("json")), "--json");
  }
  if (args.length > command.args.length) {
    throw new FlagError(
      `${rpcName} takes ${command.args.length === 0 ? "no arguments" : command.args.join(", ")}; unexpected ${JSON.stringify(args[command.args.length])}`,
    );
  }
  args.forEach((value, i) => setPath(request, command.args[i]!, value));
  for (const [name, flag] of Object.entries(command.flags)) {
    const given = flag.kind === "cap" || flag.kind === "caps" ? caps.length > 0 : flags.isSet(name);
    if (given) setPath(request, flag.field, flagValue(name, flag, flags, caps));
  }
  if (caps.length > 0 && !("cap" in command.flags)) throw new FlagError(`${rpcName} takes no -cap`);
  const missing = command.args.filter(
    (field) => !(typeof request[field] === "string" && request[field] !== ""),
  );
  if (missing.length > 0) {
    throw new FlagError(`${rpcName} needs ${missing.join(", ")} (usage: ${rpcUsage(command)})`);
  }
  request = messageFromJson(requestType, request, "request");
  if (flags.isSet("secrets-file")) {
    if (!hasField(requestType, "secrets"))
      throw new FlagError(`${rpcName} takes no secrets (flag -secrets-file)`);
    request.secrets = await readSecrets(flags.string("secrets-file"));
  }
  return request;
}

function outputFormat(flags: Flags): OutputFormat {
  const value = flags.isSet("o") ? flags.string("o") : flags.string("output");
  const format = OUTPUT_FORMATS.find((candidate) => candidate === value);
  if (!format)
    throw new FlagError(
      `invalid value ${JSON.stringify(value)} for flag -output: want ${OUTPUT_FORMATS.join(", ")}`,
    );
  return format;
}

function endpoint(flags: Flags): string {
  const value = flags.isSet("endpoint") ? flags.string("endpoint") : (process.env.CSI_ENDPOINT ?? "");
  if (value === "") throw new FlagError("flag -endpoint is required (or set CSI_ENDPOINT)");
  try {
    return parseEndpoint(value);
  } catch (error) {
    throw new FlagError(`flag -endpoint: ${errorMessage(error)}`);
  }
}

/** Where `csikit csi` writes and what stops it: the command's context plus stderr. */
export interface CsiIo extends Pick<CommandContext, "stdout" | "signal" | "logger"> {
  stderr: NodeJS.WritableStream;
}

async function call(invocation: Invocation, context: CsiIo, logger: Logger): Promise<number> {
  const { command, flags } = invocation;
  const format = outputFormat(flags);
  const path = endpoint(flags);
  const request = await buildRequest(invocation);
  const timeout = flags.number("timeout");
  const client = CsiClient.connect(path, { logger, ...(timeout > 0 ? { timeoutMs: timeout } : {}) });
  const method = methodSpec(command);
  // The table names the method by its key on the typed client; the request was checked above.
  const service: Record<string, unknown> = client[command.service];
  const rpc = service[command.key];
  if (typeof rpc !== "function") throw new ValidationError(`${method.path} is missing from the CSI client`);
  try {
    const result: unknown = Reflect.apply(rpc, service, [request, { signal: context.signal }]);
    if (method.responseStream) {
      let index = 0;
      for await (const message of result as AsyncIterable<unknown>) {
        context.stdout.write(formatMessage(format, message, true, index++));
      }
    } else {
      context.stdout.write(formatMessage(format, await result));
    }
    return 0;
  } catch (error) {
    const code = grpcCode(error);
    const status = code === undefined ? "" : `${statusName(code)}: `;
    context.stderr.write(`csikit csi: ${method.name} failed: ${status}${grpcDetails(error)}\n`);
    return 1;
  } finally {
    client.close();
  }
}

/**
 * Runs one RPC: `before` holds the flags given before the RPC's name (parsed by runCommand) and
 * its positional words. Returns the exit code.
 */
export async function runCsi(before: ParsedFlags, io: CsiIo): Promise<number> {
  const words = before.positionals;
  if (words.length === 0) {
    io.stderr.write(
      `csikit csi: name an RPC\n\n${formatHelp(csiCommand.usage, { ...LOGGING_FLAGS, ...COMMON_FLAGS }, DESCRIPTION)}`,
    );
    return 2;
  }
  const found = findRpc(words);
  if (!found) {
    const named = words.slice(0, 2).join(" ");
    io.stderr.write(`csikit csi: unknown RPC ${JSON.stringify(named)} (csikit csi --help lists them)\n`);
    return 2;
  }
  const { command, used } = found;
  const specs = { ...LOGGING_FLAGS, ...COMMON_FLAGS, ...rpcFlagSpecs(command) };
  const fail = (error: unknown): number => {
    if (!(error instanceof FlagError || error instanceof ValidationError)) throw error;
    io.stderr.write(`csikit csi ${command.group} ${command.name}: ${error.message}\n`);
    return 2;
  };
  let flags: Flags;
  let caps: string[];
  try {
    const extracted = extractCaps(words.slice(used));
    caps = extracted.caps;
    flags = new Flags(parseInterspersed(specs, before, extracted.rest));
  } catch (error) {
    return fail(error);
  }
  if (flags.parsed.help) {
    const description = `Calls ${methodSpec(command).path}.${command.aliases.length ? ` Also named: ${command.aliases.join(", ")}.` : ""}`;
    io.stdout.write(formatHelp(rpcUsage(command), specs, description));
    return 0;
  }
  const logger = flags.isSet("v")
    ? new Logger({
        verbosity: flags.number("v"),
        format: flags.string("log-format") === "json" ? "json" : "text",
      })
    : io.logger;
  try {
    return await call({ command, flags, args: flags.parsed.positionals, caps }, io, logger);
  } catch (error) {
    return fail(error);
  }
}

export const csiCommand: Command = {
  name: "csi",
  summary: SUMMARY,
  usage: "csikit csi <group> <rpc> [ARGS] --endpoint=unix:///csi/csi.sock [flags]",
  description: DESCRIPTION,
  flags: COMMON_FLAGS,
  run: (context) => runCsi(context.flags.parsed, { ...context, stderr: process.stderr }),
};

/** The flags `csikit csi` parses before the RPC's name (for runCsi's callers). */
export const CSI_TOP_FLAGS: FlagSpecs = { ...LOGGING_FLAGS, ...COMMON_FLAGS };
