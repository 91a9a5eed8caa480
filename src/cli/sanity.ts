// `csikit sanity`: the CSI conformance suite against any driver endpoint. Flags follow csi-test's
// csi-sanity in meaning (endpoint, controller endpoint, staging/target dirs, test volume sizes,
// secrets and parameters files, focus/skip), and csi-sanity's whole command line is accepted:
// every `-csi.*` flag and Ginkgo v2's `-ginkgo.*` test-process flags, each honoured or refused
// with the reason. This file only turns them into SanityOptions, streams the text report to
// stdout and writes the JUnit / JSON / TeamCity reports asked for.

import { writeFile } from "node:fs/promises";
import { FlagError, ValidationError, parseDuration, type FlagSpecs, type Flags } from "../base/index.ts";
import {
  DEFAULT_TEST_VOLUME_SIZE,
  formatGinkgoJSON,
  formatJUnit,
  formatTeamCity,
  parseLabelFilter,
  loadParametersFile,
  loadSecretsFile,
  loadTopologyFile,
  parseByteQuantity,
  runSanity,
  textReporter,
  textSummary,
  type SanityOptions,
  type SanityReport,
  type TextReportOptions,
} from "../sanity/index.ts";
import type { Command, CommandContext } from "./command.ts";

/**
 * csi-sanity v5.5.0's flags (v5.4.0's: v5.5.0's changelog adds none) and Ginkgo's that mean the
 * same as one of csikit's: the value of whichever was given is used (csikit's own wins when both are), so an existing CI line
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
  "csi.timeout": "timeout",
  "ginkgo.focus": "focus",
  "ginkgo.skip": "skip",
  "ginkgo.junit-report": "junit",
  "ginkgo.reportFile": "junit",
};

/**
 * Ginkgo v2's test-process flags as csi-sanity v5 accepts them (`-ginkgo.<name>`, from Ginkgo's
 * types/config.go SuiteConfigFlags, ParallelConfigFlags and ReporterConfigFlags), with the
 * camelCase names Ginkgo still accepts as deprecated. Each is honoured or, where csikit's suite
 * has nothing it could act on, accepted with its help saying why (docs/sanity.md maps them).
 */
const GINKGO_FLAGS: FlagSpecs = {
  "ginkgo.v": {
    type: "bool",
    help: "Ginkgo: verbose. csikit prints every test's line anyway; this keeps that.",
  },
  "ginkgo.vv": { type: "bool", help: "Ginkgo: very verbose. Every test's line with its duration." },
  "ginkgo.succinct": { type: "bool", help: "Ginkgo: succinct. Only failed tests, then the summary." },
  "ginkgo.silence-skips": { type: "bool", help: "Ginkgo: leave skipped tests out of the text report." },
  "ginkgo.trace": {
    type: "bool",
    help: "Ginkgo: full failure detail. Failure reasons over several lines as given.",
  },
  "ginkgo.github-output": {
    type: "bool",
    help: "Ginkgo: output for GitHub Actions. Also an ::error annotation line per failed test.",
  },
  "ginkgo.no-color": { type: "bool", help: "Ginkgo: no colour. csikit's report is never coloured." },
  "ginkgo.noColor": { type: "bool", help: "Ginkgo's deprecated name of -ginkgo.no-color." },
  "ginkgo.force-newlines": {
    type: "bool",
    help: "Ginkgo: a newline after each test. Every csikit line ends with one.",
  },
  "ginkgo.show-node-events": {
    type: "bool",
    help: "Ginkgo: node enter/exit events of failed specs. csikit tests have no setup nodes; a failure names the call that failed.",
  },
  "ginkgo.always-emit-ginkgo-writer": {
    type: "bool",
    help: "Ginkgo (deprecated): emit GinkgoWriter output. csikit writes none; accepted.",
  },
  "ginkgo.json-report": {
    type: "string",
    help: "Ginkgo: write a JSON report in Ginkgo's shape to this file.",
  },
  "ginkgo.teamcity-report": { type: "string", help: "Ginkgo: write TeamCity service messages to this file." },
  "ginkgo.label-filter": {
    type: "string",
    help: "Ginkgo: run tests whose labels match (&&, ||, ',', !, (), /regexp/). csikit's tests are labelled with their service and RPC group, e.g. 'Node && !NodeExpandVolume'.",
  },
  "ginkgo.sem-ver-filter": {
    type: "string",
    help: "Ginkgo: run specs whose version constraints the version satisfies. csikit's tests have none, so all match, as in Ginkgo.",
  },
  "ginkgo.focus-file": {
    type: "string",
    help: "Ginkgo: select specs by Go source file. Refused: csikit's tests are not Go files (use -ginkgo.focus).",
  },
  "ginkgo.skip-file": {
    type: "string",
    help: "Ginkgo: skip specs by Go source file. Refused: csikit's tests are not Go files (use -ginkgo.skip).",
  },
  "ginkgo.fail-fast": {
    type: "bool",
    help: "Ginkgo: stop after the first failed test; the rest are not run.",
  },
  "ginkgo.failFast": { type: "bool", help: "Ginkgo's deprecated name of -ginkgo.fail-fast." },
  "ginkgo.flake-attempts": {
    type: "int",
    default: "0",
    help: "Ginkgo: attempts per failing test; it passes if any attempt passes (flaky passes are reported as warnings). 0 = 1.",
  },
  "ginkgo.flakeAttempts": {
    type: "int",
    default: "0",
    help: "Ginkgo's deprecated name of -ginkgo.flake-attempts.",
  },
  "ginkgo.fail-on-pending": {
    type: "bool",
    help: "Ginkgo: fail if specs are pending. csikit has no pending tests.",
  },
  "ginkgo.failOnPending": { type: "bool", help: "Ginkgo's deprecated name of -ginkgo.fail-on-pending." },
  "ginkgo.fail-on-empty": { type: "bool", help: "Ginkgo: fail (exit 1) when no test is selected." },
  "ginkgo.dry-run": {
    type: "bool",
    help: "Ginkgo: walk the tests without running them. Lists the selected tests as skipped; the driver is not contacted.",
  },
  "ginkgo.dryRun": { type: "bool", help: "Ginkgo's deprecated name of -ginkgo.dry-run." },
  "ginkgo.seed": {
    type: "int",
    default: "0",
    help: "Ginkgo: the seed of the run order. Given, csikit shuffles the RPC groups with it (tests within a group keep their order), as Ginkgo shuffles top-level containers; unset, the catalogue's order.",
  },
  "ginkgo.randomize-all": {
    type: "bool",
    help: "Ginkgo: shuffle every test, with -ginkgo.seed or a random seed (printed first).",
  },
  "ginkgo.randomizeAllSpecs": { type: "bool", help: "Ginkgo's deprecated name of -ginkgo.randomize-all." },
  "ginkgo.timeout": {
    type: "duration",
    default: "1h",
    help: "Ginkgo: deadline of the whole run. Past it the running test is stopped, the rest are not run, and the run fails.",
  },
  "ginkgo.grace-period": {
    type: "duration",
    help: "Ginkgo: how long a stopped test (interrupt, timeout) may take to return before its cleanup runs (default: --timeout).",
  },
  "ginkgo.poll-progress-after": {
    type: "duration",
    default: "0",
    help: "Ginkgo: report a test still running after this long (0 = never), then every -ginkgo.poll-progress-interval.",
  },
  "ginkgo.poll-progress-interval": {
    type: "duration",
    default: "10s",
    help: "Ginkgo: the interval of the progress reports after -ginkgo.poll-progress-after.",
  },
  "ginkgo.progress": {
    type: "bool",
    help: "Ginkgo (deprecated): emit spec progress. Accepted; use -ginkgo.poll-progress-after.",
  },
  "ginkgo.output-interceptor-mode": {
    type: "string",
    help: "Ginkgo: output interception in parallel runs (dup, swap, none). csikit runs serially and intercepts nothing.",
  },
  "ginkgo.source-root": {
    type: "strings",
    help: "Ginkgo: where to find sources for progress reports. csikit's reports name the test; accepted.",
  },
  "ginkgo.parallel.process": {
    type: "int",
    default: "1",
    help: "Ginkgo: this worker's number in a parallel run. csikit runs serially: must be 1.",
  },
  "ginkgo.parallel.total": {
    type: "int",
    default: "1",
    help: "Ginkgo: workers in a parallel run. csikit runs serially: must be 1.",
  },
  "ginkgo.parallel.host": {
    type: "string",
    help: "Ginkgo: the parallel run's server. Unused: csikit runs serially.",
  },
};

/** A bool flag given under its name or its deprecated Ginkgo alias. */
function either(flags: Flags, name: string, alias: string): boolean {
  return flags.bool(name) || flags.bool(alias);
}

/** The text report's options from Ginkgo's reporter flags; conflicting verbosities are refused as Ginkgo does. */
export function reportOptions(flags: Flags): TextReportOptions {
  const verbosities = ["ginkgo.succinct", "ginkgo.v", "ginkgo.vv"].filter((name) => flags.bool(name));
  if (verbosities.length > 1)
    throw new FlagError(`flags ${verbosities.map((n) => `-${n}`).join(" and ")} conflict: give at most one`);
  return {
    verbosity: flags.bool("ginkgo.succinct") ? "succinct" : flags.bool("ginkgo.vv") ? "verbose" : "normal",
    silenceSkips: flags.bool("ginkgo.silence-skips"),
    fullReasons: flags.bool("ginkgo.trace"),
    githubOutput: flags.bool("ginkgo.github-output"),
  };
}

/** The run options that come from Ginkgo's suite flags. */
function ginkgoRunOptions(flags: Flags): Partial<SanityOptions> {
  for (const name of ["ginkgo.focus-file", "ginkgo.skip-file"])
    if (flags.string(name) !== "")
      throw new FlagError(
        `flag -${name} cannot be honoured: csikit's tests are not Go source files; select them with -ginkgo.focus / -ginkgo.skip (regular expressions over "Service Group test name") or -ginkgo.label-filter`,
      );
  if (flags.number("ginkgo.parallel.total") !== 1 || flags.number("ginkgo.parallel.process") !== 1)
    throw new FlagError(
      "flags -ginkgo.parallel.*: csikit sanity runs its tests serially (total and process must be 1)",
    );
  const mode = flags.string("ginkgo.output-interceptor-mode").toLowerCase();
  if (!["", "dup", "swap", "none"].includes(mode))
    throw new FlagError(
      `invalid value ${JSON.stringify(mode)} for flag -ginkgo.output-interceptor-mode: want dup, swap or none`,
    );
  const options: Partial<SanityOptions> = {};
  const labels = flags.string("ginkgo.label-filter");
  if (labels !== "") {
    try {
      options.labelFilter = parseLabelFilter(labels);
    } catch (error) {
      throw new FlagError(
        `invalid value for flag -ginkgo.label-filter: ${error instanceof Error ? error.message : ""}`,
      );
    }
  }
  if (either(flags, "ginkgo.fail-fast", "ginkgo.failFast")) options.failFast = true;
  const attempts = Math.max(flags.number("ginkgo.flake-attempts"), flags.number("ginkgo.flakeAttempts"));
  if (attempts < 0) throw new FlagError("flag -ginkgo.flake-attempts must not be negative");
  if (attempts > 1) options.flakeAttempts = attempts;
  if (either(flags, "ginkgo.dry-run", "ginkgo.dryRun")) options.dryRun = true;
  const timeout = flags.number("ginkgo.timeout");
  if (timeout <= 0) throw new FlagError("flag -ginkgo.timeout must be positive");
  options.runTimeoutMs = timeout;
  if (flags.isSet("ginkgo.grace-period")) {
    const grace = flags.number("ginkgo.grace-period");
    if (grace <= 0) throw new FlagError("flag -ginkgo.grace-period must be positive");
    options.graceMs = grace;
  }
  const all = either(flags, "ginkgo.randomize-all", "ginkgo.randomizeAllSpecs");
  if (all || flags.isSet("ginkgo.seed"))
    options.order = {
      seed: flags.isSet("ginkgo.seed") ? flags.number("ginkgo.seed") : Math.floor(Math.random() * 2 ** 31),
      shuffle: all ? "tests" : "groups",
    };
  return options;
}

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
  "csi.testtopologyrequirements": {
    type: "string",
    help: "csi-sanity: YAML/JSON file of a TopologyRequirement (requisite/preferred lists of segments) sent as accessibility_requirements with every CreateVolume.",
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
    callTimeoutMs:
      flags.isSet("timeout") || !flags.isSet("csi.timeout")
        ? flags.number("timeout")
        : flags.number("csi.timeout"),
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
    const topology = flags.string("csi.testtopologyrequirements");
    if (topology !== "") options.topologyRequirements = await loadTopologyFile(topology);
  } catch (error) {
    if (error instanceof ValidationError) throw new FlagError(error.message);
    throw error;
  }
  Object.assign(options, ginkgoRunOptions(flags));
  if (options.callTimeoutMs !== undefined && options.callTimeoutMs <= 0)
    throw new FlagError("flag -timeout must be positive");
  if (options.testTimeoutMs !== undefined && options.testTimeoutMs <= 0)
    throw new FlagError("flag -test-timeout must be positive");
  return options;
}

/** Report files to write after the run; "" = none. */
export interface ReportFiles {
  junit: string;
  json?: string;
  teamcity?: string;
}

/** Runs the suite with the text report streamed to `context.stdout`; writes the report files asked for. */
export async function runAndReport(
  options: SanityOptions,
  context: Pick<CommandContext, "stdout" | "signal" | "logger">,
  files: ReportFiles,
  text: TextReportOptions = {},
): Promise<SanityReport> {
  const write = (line: string): void => void context.stdout.write(line);
  if (options.order) write(`random seed: ${options.order.seed}\n`);
  const progress = options.progress;
  const startedAt = new Date();
  const report = await runSanity(
    {
      ...options,
      ...(progress
        ? {
            progress: {
              ...progress,
              report: (test, ms) => write(`  … ${test}: still running after ${(ms / 1000).toFixed(1)}s\n`),
            },
          }
        : {}),
      onResult: textReporter(write, text),
      logger: context.logger,
    },
    context.signal,
  );
  write(textSummary(report));
  if (files.junit !== "") await writeFile(files.junit, formatJUnit(report));
  if (files.json) await writeFile(files.json, formatGinkgoJSON(report, startedAt));
  if (files.teamcity) await writeFile(files.teamcity, formatTeamCity(report));
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
    "exits 1 on any failure. Everything a test creates is removed again, also when it fails.\n" +
    "Matches csi-test v5.5.0's csi-sanity: its flags, and its specs' rules (GetSnapshot, a second target\n" +
    "path of a SINGLE_NODE_SINGLE_WRITER volume refused); beyond it, SnapshotMetadata and GroupController tests.",
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
    ...GINKGO_FLAGS,
  },
  async run(context) {
    const { flags } = context;
    const options = await sanityOptions(flags);
    const after = flags.number("ginkgo.poll-progress-after");
    if (after > 0)
      options.progress = {
        afterMs: after,
        intervalMs: flags.number("ginkgo.poll-progress-interval"),
        report: () => {},
      };
    const report = await runAndReport(
      options,
      context,
      {
        junit: given(flags, "junit"),
        json: flags.string("ginkgo.json-report"),
        teamcity: flags.string("ginkgo.teamcity-report"),
      },
      reportOptions(flags),
    );
    if (flags.bool("ginkgo.fail-on-empty") && report.results.length === 0) {
      context.stdout.write("no test was selected (-ginkgo.fail-on-empty)\n");
      return 1;
    }
    return report.failed > 0 ? 1 : 0;
  },
};

// Each alias takes its twin's type (csi-sanity's sizes are plain byte counts, which are quantities).
for (const [alias, target] of Object.entries(CSI_SANITY_ALIASES)) {
  const spec = sanityCommand.flags[target];
  if (spec) sanityCommand.flags[alias] = { type: spec.type, help: `csi-sanity's name for --${target}.` };
}
