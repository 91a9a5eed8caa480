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

// Start-up memory settings of the CSI-only processes (src/cli/memory-settings.ts says which and
// why). Heap sizes and malloc's arenas are fixed when the process starts, so the launcher
// re-executes itself in place (process.execve: same pid, same stdio, no second process) with
// them; a flag or variable the user already gave (command line, NODE_OPTIONS, environment)
// wins. `up` passes them itself when it starts a component (an execve would close the pipe it
// watches its children by). Node >= 24 from here on: it loads the TypeScript table as is.
nodeModule.enableCompileCache();
const { memorySettingsOf } = await import(join(root, "src", "cli", "memory-settings.ts"));
const settings = memorySettingsOf(process.argv[2] ?? "");
if (settings !== undefined && typeof process.execve === "function") {
  const given = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? "").split(/\s+/)];
  const missing = settings.v8Flags.filter((flag) => {
    const name = flag.split("=")[0];
    return !given.some((arg) => arg === name || arg.startsWith(`${name}=`));
  });
  const missingEnv = Object.entries(settings.env).filter(([name]) => process.env[name] === undefined);
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
// uncached. (Enabled above, before the settings table is read.)
await import(main);
