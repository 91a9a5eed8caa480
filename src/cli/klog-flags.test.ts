// Every csikit command takes klog's whole flag list (seed 003: "All glog / klog arguments are
// supported, such as -v <log level> or -alsologtostderr"), single-dash as Go's flag package
// spells them, so an upstream manifest's arguments start a csikit process unchanged.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";
import { Flags, KLOG_FLAGS, klogFlagWarnings, parseFlags } from "../base/index.ts";
import { commandFlagSpecs } from "./command.ts";
import { commands } from "./commands.ts";

/** One value for every klog flag, as an upstream manifest writes them. */
const KLOG_ARGS = [
  "-alsologtostderr",
  "-logtostderr=false",
  "-v=5",
  "-vmodule=x=2",
  "-log_dir=/tmp",
  "-log_file=/tmp/x",
  "-log_file_max_size=10",
  "-stderrthreshold=WARNING",
  "-add_dir_header",
  "-skip_headers",
  "-skip_log_headers",
  "-one_output",
  "-log_backtrace_at=main.go:10",
];

test("the klog argument list covers every klog flag", () => {
  const names = KLOG_ARGS.map((arg) => arg.slice(1).split("=")[0]);
  for (const name of Object.keys(KLOG_FLAGS)) assert.ok(names.includes(name), `-${name} listed`);
});

test("every csikit command parses klog's whole flag list, single-dash, with klog's values", async () => {
  for (const entry of commands) {
    const command = await entry.load();
    const flags = new Flags(parseFlags(commandFlagSpecs(command), KLOG_ARGS));
    assert.equal(flags.bool("alsologtostderr"), true, entry.name);
    assert.equal(flags.bool("logtostderr"), false, entry.name);
    assert.equal(flags.number("v"), 5, entry.name);
    assert.equal(flags.string("vmodule"), "x=2", entry.name);
    assert.equal(flags.string("log_file"), "/tmp/x", entry.name);
    assert.equal(flags.bool("skip_headers"), true, entry.name);
    assert.equal(flags.bool("one_output"), true, entry.name);
    assert.deepEqual(flags.parsed.positionals, [], entry.name);
    // What csikit cannot do with them is said, not silently dropped.
    assert.ok(
      klogFlagWarnings(flags).some((line) => line.startsWith("-logtostderr=false is ignored")),
      entry.name,
    );
  }
});

test("csikit provisioner -alsologtostderr (seed 003's example) gets past flag parsing", () => {
  const run = spawnSync(
    process.execPath,
    [join(import.meta.dirname, "main.ts"), "provisioner", "-alsologtostderr", "-v", "5", "--help"],
    { encoding: "utf8", timeout: 60_000 },
  );
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /--alsologtostderr\n/);
});
