#!/usr/bin/env node
// Launcher for the csikit command: runs src/cli/main.ts with the Node 24 that npm installed
// (type stripping needs Node >= 22.18), whatever `node` is first on PATH. This file itself must
// load on any Node from 18 on, so that an older one gets this launcher's help instead of a
// SyntaxError: it imports only what Node 18 exports (no named import of a newer API; those are
// looked up on the module namespace when the Node is new enough) and uses no newer syntax.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import * as nodeModule from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const NEEDED_MAJOR = 24;
const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const major = Number(process.versions.node.split(".")[0]);
const main = join(root, "src", "cli", "main.ts");

if (major < NEEDED_MAJOR) {
  // An older Node (the system's, first on PATH): run the command with the project's own.
  const node = join(root, "node_modules", ".bin", "node");
  if (!existsSync(node)) {
    process.stderr.write(
      `csikit needs Node.js ${NEEDED_MAJOR} or later, this is ${process.version} (${process.execPath}); ` +
        `run \`npm ci\` in ${root}, then \`npx csikit …\` or \`npm run csikit -- …\` (they use the project's Node ${NEEDED_MAJOR})\n`,
    );
    process.exit(1);
  }
  const result = spawnSync(node, [main, ...process.argv.slice(2)], { stdio: "inherit" });
  if (result.error) {
    process.stderr.write(`csikit: cannot run the project's Node (${node}): ${result.error.message}\n`);
    process.exit(1);
  }
  process.exit(result.status ?? 1);
}

// Start-up settings for the processes that speak only CSI: the daemons a node DaemonSet runs
// once per driver on every node, and `csikit sanity`. Each is memory a node pays per process
// (`npm run bench:rss`; README, "Benchmarks"):
// - A young generation capped at 1 MiB per semi-space (V8 grows it to 8 by default): hostpath
//   1.5 MiB lower idle and 15 MiB lower after 1,000 volumes at no measurable throughput cost,
//   sanity's peak 3.5 MiB lower.
// - For the registrar and the livenessprobe, which make a few calls a minute, and sanity, whose
//   time goes to waiting on the driver: no optimising compiler (--max-opt=1: interpreter and
//   Sparkplug). Start-up alone makes the module loader hot enough for Maglev and TurboFan,
//   which pages in 8 MiB of their machine code; after 1,000 probes the livenessprobe holds
//   72 MiB instead of 97 for 10% more CPU, and a whole sanity run peaks at 70 MiB instead of
//   91–99 in the same 3 s. Not for hostpath: its volume traffic costs a third more CPU without.
// - One malloc arena (MALLOC_ARENA_MAX=1): glibc gives every thread that allocates an arena of
//   its own; Node's JS runs on one thread, and the others' arenas are 0.5–1 MiB of idle RSS.
// Heap sizes and malloc's arenas are fixed when the process starts, so the launcher
// re-executes itself in place (process.execve: same pid, same stdio, no second process) with
// them; a flag or variable the user already gave (command line, NODE_OPTIONS, environment)
// wins.
const SEMI_SPACE = "--max-semi-space-size=1";
const NO_OPTIMISING_COMPILER = "--max-opt=1";
const CSI_ONLY_V8_FLAGS = new Map([
  ["hostpath", [SEMI_SPACE]],
  ["sanity", [SEMI_SPACE, NO_OPTIMISING_COMPILER]],
  ["registrar", [SEMI_SPACE, NO_OPTIMISING_COMPILER]],
  ["livenessprobe", [SEMI_SPACE, NO_OPTIMISING_COMPILER]],
]);
const CSI_ONLY_ENV = { MALLOC_ARENA_MAX: "1" };
const v8Flags = CSI_ONLY_V8_FLAGS.get(process.argv[2] ?? "");
if (v8Flags !== undefined && typeof process.execve === "function") {
  const given = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? "").split(/\s+/)];
  const missing = v8Flags.filter((flag) => {
    const name = flag.split("=")[0];
    return !given.some((arg) => arg === name || arg.startsWith(`${name}=`));
  });
  const missingEnv = Object.entries(CSI_ONLY_ENV).filter(([name]) => process.env[name] === undefined);
  if (missing.length > 0 || missingEnv.length > 0) {
    process.execve(
      process.execPath,
      [process.execPath, ...missing, ...process.execArgv, ...process.argv.slice(1)],
      { ...process.env, ...Object.fromEntries(missingEnv) },
    );
  }
}

// Node's compile cache keeps the type-stripped sources too: a process started after the first
// never loads the TypeScript stripper, about 25 MiB of RSS less for every csikit process on a
// node (`npm run bench:rss`). NODE_COMPILE_CACHE picks the dir; without a writable one Node runs
// uncached.
nodeModule.enableCompileCache();
await import(main);
