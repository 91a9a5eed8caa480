// The kube layer's module graph stays off @kubernetes/client-node: every component process
// imports src/kube/index.ts, and client-node alone costs ~0.65 s CPU and ~1000 modules to load.
// Checked in a real child process with a resolve hook that records every npm package resolved.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { test } from "node:test";

const INDEX = pathToFileURL(join(import.meta.dirname, "index.ts")).href;

/** npm packages a fresh process resolves while importing `module` (and running `then`). */
function packagesLoadedBy(module: string, then = ""): string[] {
  const script = `
import { registerHooks } from "node:module";
const seen = new Set();
registerHooks({
  resolve(specifier, context, next) {
    const result = next(specifier, context);
    const pkg = /node_modules\\/((@[^/]+\\/)?[^/]+)/.exec(result.url);
    if (pkg) seen.add(pkg[1]);
    return result;
  },
});
const kube = await import(${JSON.stringify(module)});
${then}
process.stdout.write(JSON.stringify([...seen].sort()));
`;
  const run = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
    encoding: "utf8",
    timeout: 60_000,
  });
  assert.equal(run.status, 0, run.stderr);
  return JSON.parse(run.stdout) as string[];
}

test("importing src/kube/index.ts and building a client does not load @kubernetes/client-node", () => {
  const loaded = packagesLoadedBy(
    INDEX,
    `const client = kube.kubeClientFromOptions({ kubeconfig: "", master: "https://127.0.0.1:1", kubeApiQps: 5, kubeApiBurst: 10 });
     if (client.server !== "https://127.0.0.1:1") throw new Error("unexpected server " + client.server);`,
  );
  assert.ok(loaded.includes("yaml"), `the hook sees npm packages: ${loaded.join(" ")}`);
  assert.ok(!loaded.includes("@kubernetes/client-node"), `loaded ${loaded.join(" ")}`);
});
