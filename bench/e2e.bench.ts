// `npm run bench:e2e`: the whole of `csikit e2e` on csikit's hostpath (src/e2e/hostpath/test-driver.yaml),
// timed: the cluster's start, the run's wall time against the target (10 minutes on 2
// cores), and per suite the tests run, their outcomes, the sum and median of their times (tests
// of a suite run beside others' with --nodes, so a suite has no wall time of its own). Prints
// where it ran: cores, load, the filesystem of the cluster's state dir (under TMPDIR).

import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseProgramFlags } from "../src/cli/command.ts";
import { median } from "./stats.ts";
import { filesystemOf, machine } from "./where.ts";

const flags = parseProgramFlags(
  "bench:e2e",
  "npm run bench:e2e -- [--nodes=4] [--focus=REGEX] [--skip=REGEX]",
  {
    nodes: { type: "int", default: "4", help: "Tests at once (csikit e2e --nodes)." },
    focus: { type: "string", help: "Only these tests (csikit e2e --focus)." },
    skip: { type: "string", help: "Not these tests (csikit e2e --skip)." },
  },
);

const MAIN = join(import.meta.dirname, "..", "src", "cli", "main.ts");
const dir = await mkdtemp(join(tmpdir(), "bench-e2e-"));
try {
  const junit = join(dir, "junit.xml");
  const args = [MAIN, "e2e", `--junit=${junit}`, `--nodes=${flags.number("nodes")}`];
  if (flags.string("focus") !== "") args.push(`--focus=${flags.string("focus")}`);
  if (flags.string("skip") !== "") args.push(`--skip=${flags.string("skip")}`);
  const started = performance.now();
  let clusterSeconds = Number.NaN;
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
  child.stdout.on("data", (chunk: Buffer) => {
    const text = chunk.toString();
    process.stdout.write(text);
    const ready = /cluster ready in ([\d.]+)s/.exec(text);
    if (ready) clusterSeconds = Number(ready[1]);
  });
  const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
  const wall = (performance.now() - started) / 1000;
  const xml = await readFile(junit, "utf8");
  interface Row {
    tests: number;
    passed: number;
    failed: number;
    skipped: number;
    times: number[];
  }
  const suites = new Map<string, Row>();
  for (const match of xml.matchAll(
    /<testcase name="([^"]*)" classname="[^"]*" status="(\w+)" time="([\d.]+)"/g,
  )) {
    const suite = /\[Testpattern: [^\]]*\](?: \[[^\]]*\])* (\S+)/.exec(match[1]!)?.[1] ?? "?";
    const row = suites.get(suite) ?? { tests: 0, passed: 0, failed: 0, skipped: 0, times: [] };
    row.tests++;
    row[match[2] as "passed" | "failed" | "skipped"]++;
    if (match[2] !== "skipped") row.times.push(Number(match[3]));
    suites.set(suite, row);
  }
  const pad = (cells: (string | number)[]): string => `| ${cells.join(" | ")} |`;
  const out = [
    "",
    `csikit e2e on hostpath — ${machine()}; state dir on ${filesystemOf(dir)}; --nodes=${flags.number("nodes")}`,
    "",
    pad(["suite", "tests", "passed", "failed", "skipped", "test time sum (s)", "median test (s)"]),
    pad(["---", "---:", "---:", "---:", "---:", "---:", "---:"]),
  ];
  for (const [suite, row] of suites)
    out.push(
      pad([
        suite,
        row.tests,
        row.passed,
        row.failed,
        row.skipped,
        row.times.reduce((a, b) => a + b, 0).toFixed(1),
        row.times.length > 0 ? median(row.times).toFixed(1) : "-",
      ]),
    );
  out.push(
    "",
    `cluster start ${clusterSeconds.toFixed(1)} s; whole run ${wall.toFixed(1)} s (${(wall / 60).toFixed(1)} min; target ≤ 10 min on 2 cores: ${(wall / 600).toFixed(2)}× the target); exit code ${code}`,
  );
  process.stdout.write(out.join("\n") + "\n");
  process.exitCode = code ?? 1;
} finally {
  await rm(dir, { recursive: true, force: true });
}
