// The launcher (bin/csikit.js) starts the processes that speak only CSI with the V8 flags and
// malloc setting that keep their memory down, per command, and leaves alone what the user set.
// Checked in a real child process: a preload reports the final process's V8 flags and
// environment at exit (the preload runs in both the first process and the re-executed one;
// the last report is the one that ran the command).

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";

const LAUNCHER = join(import.meta.dirname, "..", "..", "bin", "csikit.js");

const REPORT = `data:text/javascript,${encodeURIComponent(`
process.on("exit", () => process.stderr.write("STARTED " + JSON.stringify({
  pid: process.pid,
  execArgv: process.execArgv,
  arena: process.env.MALLOC_ARENA_MAX ?? null,
}) + "\\n"));
`)}`;

interface Started {
  pid: number;
  execArgv: string[];
  arena: string | null;
}

function launch(args: string[], env: Record<string, string> = {}, nodeArgs: string[] = []): Started[] {
  const base = { ...process.env };
  delete base.MALLOC_ARENA_MAX;
  const result = spawnSync(process.execPath, [...nodeArgs, LAUNCHER, ...args, "--help"], {
    encoding: "utf8",
    timeout: 60_000,
    env: { ...base, NODE_OPTIONS: `--import=${REPORT}`, ...env },
  });
  assert.equal(result.status, 0, result.stderr);
  const reports = [...result.stderr.matchAll(/^STARTED (.*)$/gm)].map((m) => JSON.parse(m[1]!) as Started);
  assert.ok(reports.length > 0, `no report from the launched process: ${result.stderr}`);
  return reports;
}

function final(reports: Started[]): Started {
  return reports.at(-1)!;
}

test("launcher: the idle node daemons and sanity run without an optimising compiler, in one malloc arena", () => {
  for (const command of ["registrar", "livenessprobe", "sanity"]) {
    const reports = launch([command]);
    const last = final(reports);
    assert.ok(last.execArgv.includes("--max-opt=1"), `${command}: ${JSON.stringify(last.execArgv)}`);
    assert.ok(
      last.execArgv.includes("--max-semi-space-size=1"),
      `${command}: ${JSON.stringify(last.execArgv)}`,
    );
    assert.equal(last.arena, "1", command);
    // Re-executed in place: the same process, not a child.
    assert.ok(
      reports.every((r) => r.pid === last.pid),
      JSON.stringify(reports),
    );
  }
});

test("launcher: hostpath keeps V8's optimising compilers (volume traffic needs them)", () => {
  for (const command of ["hostpath"]) {
    const last = final(launch([command]));
    assert.ok(
      last.execArgv.includes("--max-semi-space-size=1"),
      `${command}: ${JSON.stringify(last.execArgv)}`,
    );
    assert.ok(
      !last.execArgv.some((a) => a.startsWith("--max-opt")),
      `${command}: ${JSON.stringify(last.execArgv)}`,
    );
    assert.equal(last.arena, "1", command);
  }
});

test("launcher: what the user set wins, and commands with a Kubernetes client are left as started", () => {
  const userFlags = final(launch(["livenessprobe"], { MALLOC_ARENA_MAX: "4" }, ["--max-opt=4"]));
  assert.ok(userFlags.execArgv.includes("--max-opt=4"), JSON.stringify(userFlags.execArgv));
  assert.ok(!userFlags.execArgv.includes("--max-opt=1"), JSON.stringify(userFlags.execArgv));
  assert.equal(userFlags.arena, "4");

  const reports = launch(["provisioner"]);
  assert.equal(reports.length, 1, "not re-executed");
  assert.deepEqual(final(reports).execArgv, []);
  assert.equal(final(reports).arena, null);
});
