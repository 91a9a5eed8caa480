// The launcher (bin/csikit.js) starts the processes that speak only CSI with the V8 flags and
// malloc setting that keep their memory down, per command, and leaves alone what the user set.
// Checked in a real child process: a preload reports the final process's V8 flags and
// environment at exit (the preload runs in both the first process and the re-executed one;
// the last report is the one that ran the command). And on an older Node (the system's, when the
// machine has one): the launcher still runs the command with the project's Node 24, or says in
// one line which Node it needs and how to use the project's.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFile, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { nodeVersionProblem } from "./node-version.ts";

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

/** The first `node` on PATH (or a usual system path) older than Node 24, if the machine has one. */
function olderSystemNode(): { path: string; version: string } | undefined {
  const which = spawnSync("which", ["-a", "node"], { encoding: "utf8" });
  const candidates = [...(which.stdout ?? "").split("\n"), "/usr/bin/node", "/usr/local/bin/node"];
  for (const path of candidates.filter((p) => p !== "")) {
    const result = spawnSync(path, ["--version"], { encoding: "utf8", timeout: 10_000 });
    const version = (result.stdout ?? "").trim();
    if (result.status === 0 && Number(/^v(\d+)/.exec(version)?.[1] ?? "99") < 24) return { path, version };
  }
  return undefined;
}

const older = olderSystemNode();
const noOlderNode = older ? false : "no Node older than 24 on this machine (which -a node, /usr/bin/node)";

test(
  "launcher: an older system Node runs the command with the project's Node 24",
  { skip: noOlderNode },
  () => {
    const result = spawnSync(older!.path, [LAUNCHER, "--version"], { encoding: "utf8", timeout: 60_000 });
    assert.equal(result.status, 0, `${older!.version}: ${result.stderr}`);
    assert.match(result.stdout, /^csikit \d+\.\d+\.\d+/);
  },
);

test(
  "launcher: an older Node without the project's Node says in one line which Node it needs and how to get it",
  { skip: noOlderNode },
  async (t) => {
    // The launcher alone in a checkout without node_modules.
    const dir = await mkdtemp(join(tmpdir(), "csikit-launcher-"));
    t.after(() => rm(dir, { recursive: true, force: true }));
    await mkdir(join(dir, "bin"));
    await copyFile(LAUNCHER, join(dir, "bin", "csikit.js"));
    await writeFile(join(dir, "package.json"), JSON.stringify({ type: "module" }));
    const result = spawnSync(older!.path, [join(dir, "bin", "csikit.js"), "up"], {
      encoding: "utf8",
      timeout: 60_000,
    });
    assert.equal(result.status, 1, result.stderr);
    const lines = result.stderr.trimEnd().split("\n");
    assert.equal(lines.length, 1, result.stderr);
    assert.match(lines[0]!, /needs Node\.js 24 or later, this is v\d+/);
    assert.match(lines[0]!, /npx csikit/);
    assert.match(lines[0]!, /npm run csikit --/);
  },
);

test("main.ts: a Node that loads it but is older than 24 is told in one line which it needs", () => {
  assert.equal(nodeVersionProblem("v24.0.0", "/n"), undefined);
  assert.equal(nodeVersionProblem("v25.1.0", "/n"), undefined);
  const problem = nodeVersionProblem("v22.18.0", "/usr/bin/node");
  assert.ok(problem);
  assert.doesNotMatch(problem, /\n/);
  assert.match(problem, /needs Node\.js 24 or later, this is v22\.18\.0 \(\/usr\/bin\/node\)/);
  assert.match(problem, /npx csikit/);
  assert.match(problem, /npm run csikit --/);
});
