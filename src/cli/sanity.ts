// `csikit sanity`: the CSI conformance suite against any driver endpoint. Flags follow csi-test's
// csi-sanity in meaning (endpoint, controller endpoint, staging/target dirs, test volume sizes,
// secrets and parameters files, focus/skip); this file only turns them into SanityOptions,
// streams the text report to stdout and writes JUnit XML when asked.

import { writeFile } from "node:fs/promises";
import { FlagError, ValidationError, type Flags } from "../base/index.ts";
import {
  DEFAULT_TEST_VOLUME_SIZE,
  formatJUnit,
  loadParametersFile,
  loadSecretsFile,
  parseByteQuantity,
  runSanity,
  textReporter,
  textSummary,
  type SanityOptions,
  type SanityReport,
} from "../sanity/index.ts";
import type { Command, CommandContext } from "./command.ts";

function regex(flags: Flags, name: string): RegExp | undefined {
  const text = flags.string(name);
  if (text === "") return undefined;
  try {
    return new RegExp(text);
  } catch (error) {
    throw new FlagError(
      `invalid value ${JSON.stringify(text)} for flag -${name}: ${error instanceof Error ? error.message : ""}`,
    );
  }
}

function bytes(flags: Flags, name: string): number | undefined {
  const text = flags.string(name);
  if (text === "") return undefined;
  try {
    return parseByteQuantity(text, `flag -${name}`);
  } catch (error) {
    if (error instanceof ValidationError) throw new FlagError(error.message);
    throw error;
  }
}

/** Turns the flags into options; files named by flags are read here, errors name the flag. */
export async function sanityOptions(flags: Flags): Promise<SanityOptions> {
  const endpoint = flags.string("endpoint");
  if (endpoint === "") throw new FlagError("flag -endpoint is required");
  const options: SanityOptions = {
    endpoint,
    testVolumeSize: bytes(flags, "test-volume-size") ?? DEFAULT_TEST_VOLUME_SIZE,
    callTimeoutMs: flags.number("timeout"),
    testTimeoutMs: flags.number("test-timeout"),
  };
  const controllerEndpoint = flags.string("controller-endpoint");
  if (controllerEndpoint !== "") options.controllerEndpoint = controllerEndpoint;
  const stagingDir = flags.string("staging-dir");
  if (stagingDir !== "") options.stagingDir = stagingDir;
  const targetDir = flags.string("target-dir");
  if (targetDir !== "") options.targetDir = targetDir;
  const expand = bytes(flags, "test-volume-expand-size");
  if (expand !== undefined) options.testVolumeExpandSize = expand;
  const focus = regex(flags, "focus");
  if (focus) options.focus = focus;
  const skip = regex(flags, "skip");
  if (skip) options.skip = skip;
  try {
    if (flags.string("secrets") !== "") options.secrets = await loadSecretsFile(flags.string("secrets"));
    if (flags.string("parameters") !== "")
      options.parameters = await loadParametersFile(flags.string("parameters"));
    if (flags.string("mutable-parameters") !== "")
      options.mutableParameters = await loadParametersFile(flags.string("mutable-parameters"));
  } catch (error) {
    if (error instanceof ValidationError) throw new FlagError(error.message);
    throw error;
  }
  if (options.callTimeoutMs !== undefined && options.callTimeoutMs <= 0)
    throw new FlagError("flag -timeout must be positive");
  if (options.testTimeoutMs !== undefined && options.testTimeoutMs <= 0)
    throw new FlagError("flag -test-timeout must be positive");
  return options;
}

/** Runs the suite with the text report streamed to `context.stdout`; writes JUnit to `junit` if set. */
export async function runAndReport(
  options: SanityOptions,
  context: Pick<CommandContext, "stdout" | "signal" | "logger">,
  junit: string,
): Promise<SanityReport> {
  const write = (text: string): void => void context.stdout.write(text);
  const report = await runSanity(
    { ...options, onResult: textReporter(write), logger: context.logger },
    context.signal,
  );
  write(textSummary(report));
  if (junit !== "") await writeFile(junit, formatJUnit(report));
  return report;
}

export const sanityCommand: Command = {
  name: "sanity",
  summary: "Run the CSI conformance suite against a driver's socket",
  usage: "csikit sanity --endpoint=unix:///path/csi.sock [--controller-endpoint=...] [flags]",
  description:
    "Runs tests derived from the CSI v1.12.0 spec against the driver: required fields, idempotency,\n" +
    "NOT_FOUND cases, capability-gated behaviour, full volume lifecycles with real mounts, pagination,\n" +
    "snapshots, clones, expansion, stats. Prints one line per test and `N passed, N failed, N skipped`;\n" +
    "exits 1 on any failure. Everything a test creates is removed again, also when it fails.",
  flags: {
    endpoint: {
      type: "string",
      help: "CSI endpoint of the node (and identity) service: unix:///path, unix:path or /path (required).",
    },
    "controller-endpoint": {
      type: "string",
      help: "CSI endpoint of the controller service, if another process (default: --endpoint).",
    },
    "staging-dir": {
      type: "string",
      help: "Directory for per-test staging paths (default: a fresh temp dir, removed after).",
    },
    "target-dir": {
      type: "string",
      help: "Directory for per-test target paths (default: a fresh temp dir, removed after).",
    },
    "test-volume-size": {
      type: "string",
      default: "10Mi",
      help: "Size of test volumes: bytes or a quantity (10Mi, 1Gi).",
    },
    "test-volume-expand-size": {
      type: "string",
      help: "Size test volumes are expanded to: bytes or a quantity (default: twice --test-volume-size).",
    },
    secrets: {
      type: "string",
      help: "YAML/JSON file of secrets per RPC in csi-test's format (CreateVolumeSecret: {key: value}, ...).",
    },
    parameters: {
      type: "string",
      help: "YAML/JSON file: a string map passed as parameters to every CreateVolume.",
    },
    "mutable-parameters": {
      type: "string",
      help: "YAML/JSON file: mutable parameters the driver accepts, for the ControllerModifyVolume tests (unset: they are skipped).",
    },
    focus: {
      type: "string",
      help: "Run only tests whose full name (`Service Group test name`) matches this regular expression.",
    },
    skip: { type: "string", help: "Skip tests whose full name matches this regular expression." },
    junit: { type: "string", help: "Write a JUnit XML report to this file." },
    timeout: { type: "duration", default: "30s", help: "Deadline of each CSI call." },
    "test-timeout": { type: "duration", default: "2m", help: "Deadline of each test, cleanup excluded." },
  },
  async run(context) {
    const options = await sanityOptions(context.flags);
    const report = await runAndReport(options, context, context.flags.string("junit"));
    return report.failed > 0 ? 1 : 0;
  },
};
