// `npm run bench:kube-start`: what a component process pays to get from nothing to its first
// answered API request — Node start, importing src/kube/index.ts, loading the kubeconfig and
// one GET — as CPU time (user + system), wall time and peak RSS. Every component of `csikit up`
// pays this once per process. `--tree DIR` measures another checkout (e.g. an older commit
// extracted with `git archive`, node_modules linked) against the same API server, for a
// before/after table. Each row is the median and max over --runs fresh processes, run one at a
// time; Node's compile cache is warmed by one unmeasured run and used for all. Nothing asserts.

import { spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { FlagSpecs } from "../src/base/index.ts";
import { benchFlags } from "./cli.ts";
import { startServerProcess } from "./apiserver/server-process.ts";
import { median } from "./stats.ts";
import { filesystemOf, machine } from "./where.ts";

interface Sample {
  cpuMs: number;
  wallMs: number;
  rssMiB: number;
}

const FLAGS: FlagSpecs = {
  tree: {
    type: "strings",
    help: "A checkout to measure (repeatable or comma-separated; default: this one), e.g. an older commit extracted with git archive, node_modules linked.",
  },
  runs: { type: "int", default: "7", help: "Fresh processes per tree; each cell is the median / max." },
};

const flags = benchFlags("kube-start", FLAGS);
const given = flags.strings("tree");
const trees = (given.length > 0 ? given : [join(import.meta.dirname, "..")]).map((tree) => resolve(tree));
const runs = Math.max(1, flags.number("runs"));

/** One fresh process: import the kube layer of `tree`, build the client from the kubeconfig, GET once. */
function sample(tree: string, kubeconfig: string, compileCache: string): Sample {
  const index = pathToFileURL(join(tree, "src/kube/index.ts")).href;
  const script = `
const kube = await import(${JSON.stringify(index)});
const client = kube.kubeClientFromOptions({ kubeconfig: ${JSON.stringify(kubeconfig)}, master: "", kubeApiQps: 5, kubeApiBurst: 10 });
await client.get({ group: "", version: "v1", resource: "namespaces" }, "default");
const cpu = process.cpuUsage();
process.stdout.write(JSON.stringify({
  cpuMs: (cpu.user + cpu.system) / 1000,
  wallMs: performance.now(),
  rssMiB: process.resourceUsage().maxRSS / 1024,
}));
process.exit(0);
`;
  const run = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
    encoding: "utf8",
    env: { ...process.env, NODE_COMPILE_CACHE: compileCache },
    timeout: 60_000,
  });
  if (run.status !== 0) throw new Error(`${tree}: ${run.stderr}`);
  return JSON.parse(run.stdout) as Sample;
}

const dir = await mkdtemp(join(tmpdir(), "csikit-bench-kube-start-"));
const server = await startServerProcess({ stateDir: join(dir, "apiserver") });
try {
  const rows: string[] = [];
  for (const tree of trees) {
    const cache = join(dir, `cache-${rows.length}`);
    sample(tree, server.kubeconfigPath, cache);
    const samples = Array.from({ length: runs }, () => sample(tree, server.kubeconfigPath, cache));
    const cell = (pick: (s: Sample) => number): string =>
      `${median(samples.map(pick)).toFixed(0)} / ${Math.max(...samples.map(pick)).toFixed(0)}`;
    rows.push(`| ${tree} | ${cell((s) => s.cpuMs)} | ${cell((s) => s.wallMs)} | ${cell((s) => s.rssMiB)} |`);
  }
  console.log(
    `Process start to first API request (${machine()}; API server state dir on ${filesystemOf(dir)}; ${runs} runs each, median / max)\n`,
  );
  console.log("| tree | CPU ms | wall ms | peak RSS MiB |");
  console.log("|---|---|---|---|");
  for (const row of rows) console.log(row);
} finally {
  await server.stop();
  await rm(dir, { recursive: true, force: true });
}
