// `csikit sanity`: the CSI conformance suite against any driver endpoint. Flags follow csi-test's
// csi-sanity in meaning (endpoint, controller endpoint, staging/target dirs, test volume sizes,
// secrets and parameters files, focus/skip); this file only turns them into SanityOptions,
// streams the text report to stdout and writes JUnit XML when asked.

import { writeFile } from "node:fs/promises";
import { FlagError, ValidationError, parseDuration, type FlagSpecs, type Flags } from "../base/index.ts";
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

/**
 * csi-sanity v5.4.0's flags (and Ginkgo's) that mean the same as one of csikit's: the value of
 * whichever was given is used (csikit's own wins when both are), so an existing CI line
 * switches by changing the binary name. docs/sanity.md maps every one.
 */
export const CSI_SANITY_ALIASES: Readonly<Record<string, string>> = {
  "csi.endpoint": "endpoint",
  "csi.controllerendpoint": "controller-endpoint",
  "csi.mountdir": "target-dir",
  "csi.stagingdir": "staging-dir",
  "csi.testvolumesize": "test-volume-size",
  "csi.testvolumeexpandsize": "test-volume-expand-size",
  "csi.testvolumeparameters": "parameters",
  "csi.testvolumemutableparameters": "mutable-parameters",
  "csi.secrets": "secrets",
  "csi.junitfile": "junit",
  "ginkgo.focus": "focus",
  "ginkgo.skip": "skip",
  "ginkgo.junit-report": "junit",
};

/** csi-sanity flags with no csikit twin: the path commands, snapshot parameters and the rest. */
const CSI_SANITY_ONLY: FlagSpecs = {
  "csi.testsnapshotparameters": {
    type: "string",
    help: "csi-sanity: YAML/JSON file of parameters passed to every CreateSnapshot.",
  },
  "csi.testvolumeaccesstype": {
    type: "string",
    default: "mount",
    help: "csi-sanity: access type of its generic test volumes (mount or block). csikit's suite tests each access type the driver offers, so this only validates the value.",
  },
  "csi.testnodevolumeattachlimit": {
    type: "bool",
    default: "false",
    help: "csi-sanity: also test the node's max_volumes_per_node. csikit's suite always checks NodeGetInfo's limit; accepted for compatibility.",
  },
  "csi.createmountpathcmd": {
    type: "string",
    help: "Program that creates a target path (the path is its one argument; it prints the path to use): the node runs elsewhere.",
  },
  "csi.createstagingpathcmd": {
    type: "string",
    help: "Program that creates a staging path (argument and output as -csi.createmountpathcmd).",
  },
  "csi.removemountpathcmd": {
    type: "string",
    help: "Program that removes a target path (its one argument).",
  },
  "csi.removestagingpathcmd": {
    type: "string",
    help: "Program that removes a staging path (its one argument).",
  },
  "csi.checkpathcmd": {
    type: "string",
    help: "Program that checks a path (its one argument) and prints file, directory, not_found or other.",
  },
  "csi.createpathcmdtimeout": {
    type: "string",
    default: "10s",
    help: "Timeout of the create commands: a duration, or whole seconds as csi-sanity takes them.",
  },
  "csi.removepathcmdtimeout": {
    type: "string",
    default: "10s",
    help: "Timeout of the remove commands: a duration or whole seconds.",
  },
  "csi.checkpathcmdtimeout": {
    type: "string",
    default: "10s",
    help: "Timeout of the check command: a duration or whole seconds.",
  },
};

/** A flag's value, from csikit's name or else from the csi-sanity alias that was set. */
function given(flags: Flags, name: string): string {
  if (flags.isSet(name)) return flags.string(name);
  for (const [alias, target] of Object.entries(CSI_SANITY_ALIASES))
    if (target === name && flags.isSet(alias)) return flags.string(alias);
  return flags.string(name);
}

function seconds(flags: Flags, name: string): number {
  const text = flags.string(name);
  try {
    const ms = /^\d+$/.test(text) ? Number(text) * 1000 : parseDuration(text);
    if (ms > 0) return ms;
  } catch {
    // Reported below with the flag's name.
  }
  throw new FlagError(
    `invalid value ${JSON.stringify(text)} for flag -${name}: want a positive duration or seconds`,
  );
}

function regex(flags: Flags, name: string): RegExp | undefined {
  const text = given(flags, name);
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
  const text = given(flags, name);
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
  const endpoint = given(flags, "endpoint");
  if (endpoint === "") throw new FlagError("flag -endpoint is required (csi-sanity: -csi.endpoint)");
  const options: SanityOptions = {
    endpoint,
    testVolumeSize: bytes(flags, "test-volume-size") ?? DEFAULT_TEST_VOLUME_SIZE,
    callTimeoutMs: flags.number("timeout"),
    testTimeoutMs: flags.number("test-timeout"),
  };
  const controllerEndpoint = given(flags, "controller-endpoint");
  if (controllerEndpoint !== "") options.controllerEndpoint = controllerEndpoint;
  const stagingDir = given(flags, "staging-dir");
  if (stagingDir !== "") options.stagingDir = stagingDir;
  const targetDir = given(flags, "target-dir");
  if (targetDir !== "") options.targetDir = targetDir;
  const expand = bytes(flags, "test-volume-expand-size");
  if (expand !== undefined) options.testVolumeExpandSize = expand;
  const focus = regex(flags, "focus");
  if (focus) options.focus = focus;
  const skip = regex(flags, "skip");
  if (skip) options.skip = skip;
  const accessType = flags.string("csi.testvolumeaccesstype");
  if (accessType !== "mount" && accessType !== "block")
    throw new FlagError(
      `invalid value ${JSON.stringify(accessType)} for flag -csi.testvolumeaccesstype: want mount or block`,
    );
  const commands = {
    createMountPathCmd: flags.string("csi.createmountpathcmd"),
    createStagingPathCmd: flags.string("csi.createstagingpathcmd"),
    removeMountPathCmd: flags.string("csi.removemountpathcmd"),
    removeStagingPathCmd: flags.string("csi.removestagingpathcmd"),
    checkPathCmd: flags.string("csi.checkpathcmd"),
  };
  if (Object.values(commands).some((command) => command !== ""))
    options.pathCommands = {
      ...Object.fromEntries(Object.entries(commands).filter(([, command]) => command !== "")),
      createTimeoutMs: seconds(flags, "csi.createpathcmdtimeout"),
      removeTimeoutMs: seconds(flags, "csi.removepathcmdtimeout"),
      checkTimeoutMs: seconds(flags, "csi.checkpathcmdtimeout"),
    };
  try {
    const secrets = given(flags, "secrets");
    if (secrets !== "") options.secrets = await loadSecretsFile(secrets);
    const parameters = given(flags, "parameters");
    if (parameters !== "") options.parameters = await loadParametersFile(parameters);
    const mutable = given(flags, "mutable-parameters");
    if (mutable !== "") options.mutableParameters = await loadParametersFile(mutable);
    const snapshot = flags.string("csi.testsnapshotparameters");
    if (snapshot !== "") options.snapshotParameters = await loadParametersFile(snapshot);
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
    ...CSI_SANITY_ONLY,
  },
  async run(context) {
    const options = await sanityOptions(context.flags);
    const report = await runAndReport(options, context, given(context.flags, "junit"));
    return report.failed > 0 ? 1 : 0;
  },
};

// Each alias takes its twin's type (csi-sanity's sizes are plain byte counts, which are quantities).
for (const [alias, target] of Object.entries(CSI_SANITY_ALIASES)) {
  const spec = sanityCommand.flags[target];
  if (spec) sanityCommand.flags[alias] = { type: spec.type, help: `csi-sanity's name for --${target}.` };
}
