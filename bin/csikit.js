#!/usr/bin/env node
// Launcher for the csikit command: runs src/cli/main.ts with the Node 24 that npm installed
// (type stripping needs Node >= 22.18), whatever `node` is first on PATH.
import { spawnSync } from "node:child_process";
import { enableCompileCache } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const major = Number(process.versions.node.split(".")[0]);
const main = join(root, "src", "cli", "main.ts");

// V8 flags for the processes that speak only CSI: the daemons a node DaemonSet runs once per
// driver on every node, and `csikit sanity`. A young generation capped at 1 MiB per semi-space
// (V8 grows it to 8 by default) keeps hostpath 1.5 MiB lower idle and 15 MiB lower after 1,000
// volumes at no measurable throughput cost (1,000 creates with 32 in flight, alternating runs),
// and sanity's peak 3.5 MiB lower (`npm run bench:rss`; docs/hostpath.md). Heap sizes are
// fixed when V8 starts, so the launcher re-executes itself in place (process.execve: same pid,
// same stdio, no second process) with the flags; a flag the user already gave (command line
// or NODE_OPTIONS) wins.
const CSI_ONLY_V8_FLAGS = ["--max-semi-space-size=1"];
const CSI_ONLY = new Set(["hostpath", "registrar", "livenessprobe", "sanity"]);
if (major >= 24 && CSI_ONLY.has(process.argv[2] ?? "") && typeof process.execve === "function") {
  const given = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? "").split(/\s+/)];
  const missing = CSI_ONLY_V8_FLAGS.filter((flag) => {
    const name = flag.split("=")[0];
    return !given.some((arg) => arg === name || arg.startsWith(`${name}=`));
  });
  if (missing.length > 0) {
    process.execve(process.execPath, [
      process.execPath,
      ...missing,
      ...process.execArgv,
      ...process.argv.slice(1),
    ]);
  }
}

if (major >= 24) {
  // Node's compile cache keeps the type-stripped sources too: a process started after the
  // first never loads the TypeScript stripper, about 25 MiB of RSS less for every csikit
  // process on a node (`npm run bench:rss`). NODE_COMPILE_CACHE picks the dir; without a
  // writable one Node runs uncached.
  enableCompileCache();
  await import(main);
} else {
  const node = join(root, "node_modules", ".bin", "node");
  const result = spawnSync(node, [main, ...process.argv.slice(2)], { stdio: "inherit" });
  process.exit(result.status ?? 1);
}
