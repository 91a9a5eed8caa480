// klog's command-line flags (klog.InitFlags), so an upstream manifest that passes any of them
// starts a csikit process instead of failing with "flag provided but not defined". Types and
// defaults are klog v2's. csikit always logs to stderr through its own Logger: a flag whose
// effect csikit cannot honour is accepted, and klogFlagWarnings says what is ignored and why.
// `-v` (csikit honours it) and the others together make LOGGING_FLAGS, which every csikit
// command accepts (runCommand adds them), as every upstream Go component calls klog.InitFlags.

import type { FlagSpecs } from "./flags.ts";

export const KLOG_FLAGS: FlagSpecs = {
  logtostderr: { type: "bool", default: "true", help: "klog: log to standard error instead of files." },
  alsologtostderr: {
    type: "bool",
    default: "false",
    help: "klog: log to standard error as well as files (no effect when -logtostderr=true).",
  },
  log_dir: {
    type: "string",
    help: "klog: if non-empty, write log files in this directory (no effect when -logtostderr=true).",
  },
  log_file: {
    type: "string",
    help: "klog: if non-empty, use this log file (no effect when -logtostderr=true).",
  },
  log_file_max_size: {
    type: "int",
    default: "1800",
    help: "klog: maximum size a log file can grow to, in megabytes; 0 = unlimited (no effect when -logtostderr=true).",
  },
  stderrthreshold: {
    type: "string",
    default: "2",
    help: "klog: logs at or above this severity (INFO/0, WARNING/1, ERROR/2, FATAL/3) go to stderr when writing to files and stderr (no effect when -logtostderr=true or -alsologtostderr=true).",
  },
  vmodule: {
    type: "string",
    help: "klog: comma-separated list of pattern=N settings for file-filtered logging.",
  },
  add_dir_header: {
    type: "bool",
    default: "false",
    help: "klog: if true, adds the file directory to the header of the log messages.",
  },
  skip_headers: {
    type: "bool",
    default: "false",
    help: "klog: if true, avoid header prefixes in the log messages.",
  },
  skip_log_headers: {
    type: "bool",
    default: "false",
    help: "klog: if true, avoid headers when opening log files (no effect when -logtostderr=true).",
  },
  one_output: {
    type: "bool",
    default: "false",
    help: "klog: if true, only write logs to their native severity level (no effect when -logtostderr=true).",
  },
  log_backtrace_at: {
    type: "string",
    default: ":0",
    help: "klog: when logging hits line file:N, emit a stack trace.",
  },
};

/** Flags every subcommand accepts: klog's whole flag list (-v honoured) and the log format. */
export const LOGGING_FLAGS: FlagSpecs = {
  v: { type: "int", default: "0", help: "Log verbosity: 0 normal, 4 debug, 5 per-request traces." },
  "log-format": { type: "string", default: "text", help: "Log line format: text or json." },
  ...KLOG_FLAGS,
};

const SEVERITIES = new Set(["0", "1", "2", "3", "INFO", "WARNING", "ERROR", "FATAL"]);

/** The parsed values a warning decision needs: which flags were set, and to what. */
export interface KlogFlagValues {
  isSet(name: string): boolean;
  string(name: string): string;
  bool(name: string): boolean;
}

/**
 * One line per klog flag that was set to something csikit does not do, saying what is ignored
 * and why. Flags upstream itself ignores under -logtostderr=true (its default) warn only when
 * -logtostderr=false makes them matter.
 */
export function klogFlagWarnings(flags: KlogFlagValues): string[] {
  const warnings: string[] = [];
  const toFiles = flags.isSet("logtostderr") && !flags.bool("logtostderr");
  if (toFiles)
    warnings.push("-logtostderr=false is ignored: csikit always logs to standard error, never to files");
  const fileOnly = [
    "alsologtostderr",
    "log_dir",
    "log_file",
    "log_file_max_size",
    "skip_log_headers",
    "one_output",
  ];
  for (const name of fileOnly)
    if (toFiles && flags.isSet(name)) warnings.push(`-${name} is ignored: csikit writes no log files`);
  if (flags.isSet("stderrthreshold") && !SEVERITIES.has(flags.string("stderrthreshold").toUpperCase()))
    warnings.push(
      `-stderrthreshold=${flags.string("stderrthreshold")} is not a klog severity; ignored (csikit logs every severity to standard error)`,
    );
  const unsupported: Record<string, string> = {
    vmodule: "csikit has one verbosity per process (-v)",
    add_dir_header: "csikit log lines carry no source file",
    skip_headers: "csikit's text format has a fixed header (use --log-format=json for structured lines)",
    log_backtrace_at: "csikit logs no Go stack traces",
  };
  for (const [name, why] of Object.entries(unsupported)) {
    const value = KLOG_FLAGS[name]?.type === "bool" ? flags.bool(name) : flags.string(name) !== "";
    if (flags.isSet(name) && value && !(name === "log_backtrace_at" && flags.string(name) === ":0"))
      warnings.push(`-${name} is ignored: ${why}`);
  }
  return warnings;
}
