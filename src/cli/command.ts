// The shape of a subcommand and the shared plumbing around it: parse Go-style flags, answer
// --help and --version, build the logger from -v/--log-format, hand a SIGINT/SIGTERM signal
// to the command's run. Subcommands hold no logic beyond turning flags into options.

import {
  FlagError,
  Flags,
  LOGGING_FLAGS,
  Logger,
  formatHelp,
  klogFlagWarnings,
  parseFlags,
  processSignal,
  type FlagSpecs,
  type LogFormat,
} from "../base/index.ts";
import { readFileSync } from "node:fs";

export interface CommandContext {
  flags: Flags;
  logger: Logger;
  signal: AbortSignal;
  /** Where normal output (reports, summaries) goes. */
  stdout: NodeJS.WritableStream;
}

export interface Command {
  name: string;
  /** One line for the command list. */
  summary: string;
  usage: string;
  description?: string;
  flags: FlagSpecs;
  /** Returns the process exit code. */
  run(context: CommandContext): Promise<number>;
}

export function csikitVersion(): string {
  const pkg: unknown = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
  return typeof pkg === "object" && pkg !== null && "version" in pkg && typeof pkg.version === "string"
    ? pkg.version
    : "unknown";
}

/**
 * Parses argv against `specs` and answers what needs no program: a flag it cannot parse (one
 * line, `<name>: <what is wrong>`, exit code 2), `--help` and `--version` (printed, exit code 0).
 * Returns the flags, or the exit code when it answered.
 */
function parseOrAnswer(
  name: string,
  usage: string,
  specs: FlagSpecs,
  argv: readonly string[],
  description: string | undefined,
  version: string,
): Flags | number {
  let flags: Flags;
  try {
    flags = new Flags(parseFlags(specs, argv));
  } catch (error) {
    if (!(error instanceof FlagError)) throw error;
    process.stderr.write(`${name}: ${error.message}\n`);
    return 2;
  }
  if (flags.parsed.help) {
    process.stdout.write(formatHelp(usage, specs, description));
    return 0;
  }
  if (flags.parsed.version) {
    process.stdout.write(`${version}\n`);
    return 0;
  }
  return flags;
}

/**
 * Flags of a repository program run through npm (a benchmark, a generator, a check), parsed and
 * answered as a subcommand's are (a bad flag in one line with exit code 2, `--help`,
 * `--version`), exiting when answered instead of a stack trace.
 */
export function parseProgramFlags(
  name: string,
  usage: string,
  specs: FlagSpecs,
  description?: string,
): Flags {
  const version = `csikit ${csikitVersion()} (${name}, node ${process.version})`;
  const flags = parseOrAnswer(name, usage, specs, process.argv.slice(2), description, version);
  if (typeof flags === "number") process.exit(flags);
  return flags;
}

/** Every flag a command accepts: its own over LOGGING_FLAGS (-v, --log-format, klog's list). */
export function commandFlagSpecs(command: Pick<Command, "flags">): FlagSpecs {
  return { ...LOGGING_FLAGS, ...command.flags };
}

/** Runs a command with argv (after the subcommand name); returns the exit code. */
export async function runCommand(command: Command, argv: readonly string[]): Promise<number> {
  const specs = commandFlagSpecs(command);
  const flags = parseOrAnswer(
    `csikit ${command.name}`,
    command.usage,
    specs,
    argv,
    command.description,
    `csikit ${csikitVersion()}`,
  );
  if (typeof flags === "number") return flags;
  // Sidecars also take component-base's --logging-format (SIDECAR_LOGGING_FLAGS); it wins when given.
  const format =
    flags.parsed.values.has("logging-format") && flags.isSet("logging-format")
      ? flags.string("logging-format")
      : flags.string("log-format");
  if (format !== "text" && format !== "json") {
    process.stderr.write(
      `csikit ${command.name}: invalid value "${format}" for flag -${flags.isSet("logging-format") ? "logging-format" : "log-format"}: want text or json\n`,
    );
    return 2;
  }
  const logFormat: LogFormat = format;
  const logger = new Logger({ verbosity: flags.number("v"), format: logFormat });
  // Every command takes klog's flags (as every upstream Go component); say which are ignored.
  for (const warning of klogFlagWarnings(flags)) logger.warn(warning);
  try {
    return await command.run({ flags, logger, signal: processSignal(), stdout: process.stdout });
  } catch (error) {
    if (error instanceof FlagError) {
      process.stderr.write(`csikit ${command.name}: ${error.message}\n`);
      return 2;
    }
    logger.error(`${command.name} failed`, { err: error instanceof Error ? error.message : String(error) });
    return 1;
  }
}
