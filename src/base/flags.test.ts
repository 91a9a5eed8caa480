import { test } from "node:test";
import assert from "node:assert/strict";
import { Flags, formatDuration, formatHelp, parseDuration, parseFlags, type FlagSpecs } from "./flags.ts";
import { FlagError } from "./errors.ts";

const specs: FlagSpecs = {
  "csi-address": { type: "string", default: "/run/csi/socket", help: "CSI socket." },
  "leader-election": { type: "bool", help: "Enable leader election." },
  timeout: { type: "duration", default: "10s", help: "CSI call timeout." },
  "worker-threads": { type: "int", default: "100", help: "Workers." },
  "extra-labels": { type: "map", help: "Labels." },
  "feature-gates": { type: "strings", help: "Gates." },
};

test("Go flag syntaxes all set values", () => {
  const flags = new Flags(
    parseFlags(specs, [
      "--csi-address=/a.sock",
      "-timeout",
      "1m30s",
      "--leader-election",
      "-worker-threads=7",
      "--extra-labels",
      "a=b,c=d",
      "--feature-gates=X=true",
      "--feature-gates",
      "Y=false",
      "rest",
      "--not-a-flag",
    ]),
  );
  assert.equal(flags.string("csi-address"), "/a.sock");
  assert.equal(flags.number("timeout"), 90_000);
  assert.equal(flags.bool("leader-election"), true);
  assert.equal(flags.number("worker-threads"), 7);
  assert.deepEqual(flags.map("extra-labels"), { a: "b", c: "d" });
  assert.deepEqual(flags.strings("feature-gates"), ["X=true", "Y=false"]);
  assert.deepEqual(flags.parsed.positionals, ["rest", "--not-a-flag"]);
  assert.ok(flags.isSet("timeout") && !flags.isSet("v"));
});

test("defaults apply and bare booleans never consume the next word", () => {
  const flags = new Flags(parseFlags(specs, ["--leader-election=false", "--leader-election", "x"]));
  assert.equal(flags.bool("leader-election"), true);
  assert.equal(flags.string("csi-address"), "/run/csi/socket");
  assert.equal(flags.number("timeout"), 10_000);
  assert.deepEqual(flags.parsed.positionals, ["x"]);
});

test("unknown flags and bad values name the flag", () => {
  assert.throws(
    () => parseFlags(specs, ["--nope=1"]),
    (e: unknown) => e instanceof FlagError && /-nope/.test(e.message),
  );
  assert.throws(() => parseFlags(specs, ["--timeout=5"]), /flag -timeout/);
  assert.throws(() => parseFlags(specs, ["--worker-threads=1.5"]), /flag -worker-threads/);
  assert.throws(() => parseFlags(specs, ["--leader-election=maybe"]), /flag -leader-election/);
  assert.throws(() => parseFlags(specs, ["--csi-address"]), /needs an argument: -csi-address/);
  assert.throws(() => parseFlags(specs, ["--extra-labels=novalue"]), /flag -extra-labels/);
});

test("help and version are recognised", () => {
  assert.equal(parseFlags(specs, ["--help"]).help, true);
  assert.equal(parseFlags(specs, ["-h"]).help, true);
  assert.equal(parseFlags(specs, ["--version"]).version, true);
  const help = formatHelp("csikit x [flags]", specs);
  for (const name of Object.keys(specs)) assert.match(help, new RegExp(`--${name}`));
  assert.match(help, /default "10s"/);
});

test("durations parse and print as Go does", () => {
  const cases: [string, number][] = [
    ["0", 0],
    ["15s", 15_000],
    ["1m30s", 90_000],
    ["5m", 300_000],
    ["100ms", 100],
    ["1.5h", 5_400_000],
    ["-2s", -2000],
    ["1h2m3s", 3_723_000],
  ];
  for (const [text, ms] of cases) assert.equal(parseDuration(text), ms, text);
  for (const bad of ["", "5", "1x", "s", "1m 30s", "--1s"]) assert.throws(() => parseDuration(bad), bad);
  assert.equal(formatDuration(90_000), "1m30s");
  assert.equal(formatDuration(15_000), "15s");
  assert.equal(formatDuration(0), "0s");
  assert.equal(formatDuration(3_600_000), "1h0m0s");
});

test("a string flag with a bare value reads alone as that value and never consumes the next word", () => {
  const walk: FlagSpecs = { walkthrough: { type: "string", default: "", bare: "all", help: "Walk." } };
  assert.equal(new Flags(parseFlags(walk, ["--walkthrough", "x"])).string("walkthrough"), "all");
  assert.deepEqual(parseFlags(walk, ["--walkthrough", "x"]).positionals, ["x"]);
  assert.equal(new Flags(parseFlags(walk, ["--walkthrough=expand"])).string("walkthrough"), "expand");
  assert.equal(new Flags(parseFlags(walk, [])).string("walkthrough"), "");
  assert.match(formatHelp("x", walk), /alone: "all"/);
});
