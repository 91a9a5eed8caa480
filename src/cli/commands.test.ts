// Subcommands load lazily: the command list needs no command module, each entry's summary is
// the loaded command's own, and a CSI-only process (hostpath, sanity) never loads the
// Kubernetes client or the API server — checked by a module hook in a real child process.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";
import { commands } from "./commands.ts";

const MAIN = join(import.meta.dirname, "main.ts");

/** A preload that reports every npm package and src/ folder the process resolved, at exit. */
const HOOK = `data:text/javascript,${encodeURIComponent(`
import { registerHooks } from "node:module";
const seen = new Set();
registerHooks({
  resolve(specifier, context, next) {
    const result = next(specifier, context);
    const pkg = /node_modules\\/((@[^/]+\\/)?[^/]+)/.exec(result.url);
    if (pkg) seen.add(pkg[1]);
    const dir = /\\/src\\/([a-z]+)\\//.exec(result.url);
    if (dir && !pkg) seen.add("src/" + dir[1]);
    return result;
  },
});
process.on("exit", () => process.stderr.write("LOADED " + [...seen].sort().join(" ") + "\\n"));
`)}`;

function loadedBy(args: string[]): string[] {
  const run = spawnSync(process.execPath, ["--import", HOOK, MAIN, ...args], { encoding: "utf8" });
  assert.equal(run.status, 0, run.stderr);
  const line = run.stderr.split("\n").find((l) => l.startsWith("LOADED "));
  assert.ok(line, run.stderr);
  return line.slice("LOADED ".length).split(" ");
}

test("each entry's summary is its command's own, and names are unique", async () => {
  assert.equal(new Set(commands.map((c) => c.name)).size, commands.length);
  for (const entry of commands) {
    const command = await entry.load();
    assert.equal(command.name, entry.name);
    assert.equal(command.summary, entry.summary, entry.name);
  }
});

test("csikit --help loads no command; hostpath, sanity and the node sidecars never load the Kubernetes client (hostpath and sanity not the YAML parser either); no component loads client-node", () => {
  const top = loadedBy(["--help"]);
  assert.ok(!top.includes("@grpc/grpc-js"), `--help loaded ${top.join(" ")}`);
  for (const name of ["hostpath", "sanity"]) {
    const loaded = loadedBy([name, "--help"]);
    assert.ok(loaded.includes("@grpc/grpc-js"), `${name} loads its own dependencies: ${loaded.join(" ")}`);
    for (const heavy of ["@kubernetes/client-node", "src/apiserver", "src/kube", "yaml"])
      assert.ok(!loaded.includes(heavy), `csikit ${name} loaded ${heavy}`);
  }
  // Node sidecars that never talk to the API server stay off the Kubernetes client too.
  for (const name of ["registrar", "livenessprobe"]) {
    const loaded = loadedBy([name, "--help"]);
    assert.ok(loaded.includes("@grpc/grpc-js"), `${name} loads its own dependencies: ${loaded.join(" ")}`);
    for (const heavy of ["@kubernetes/client-node", "src/apiserver"])
      assert.ok(!loaded.includes(heavy), `csikit ${name} loaded ${heavy}`);
  }
  // Components that do talk to the API server use csikit's own client, not client-node's.
  for (const name of ["provisioner", "attacher", "resizer", "controllers"]) {
    const loaded = loadedBy([name, "--help"]);
    assert.ok(loaded.includes("src/kube"), `${name} loads the Kubernetes client: ${loaded.join(" ")}`);
    assert.ok(!loaded.includes("@kubernetes/client-node"), `csikit ${name} loaded @kubernetes/client-node`);
  }
  // The hook does see what a command loads: the API server's process has its dependencies.
  assert.ok(loadedBy(["apiserver", "--help"]).includes("src/apiserver"));
});
