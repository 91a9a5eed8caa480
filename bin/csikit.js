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
