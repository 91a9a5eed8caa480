// Numbers in the README and docs are checked against the code, not typed and left to go stale:
// the conformance suite's size (the sanity catalogue) and the process count of `csikit up`
// (its component plan for the default three nodes).

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { catalogue } from "../src/sanity/index.ts";
import { ClusterLayout, nodeSpecs, planComponents } from "../src/cluster/index.ts";
import { commands } from "../src/cli/commands.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const read = (path: string): Promise<string> => readFile(ROOT + path, "utf8");

/** Every number `pattern` captures in `text` (the pattern's first group). */
function numbersIn(text: string, pattern: RegExp): number[] {
  return [...text.matchAll(pattern)].map((match) => Number(match[1]!.replace(/,/g, "")));
}

test("the README and docs/sanity.md give the conformance suite's real size", async () => {
  const size = catalogue().length;
  const readme = numbersIn(await read("README.md"), /done: ([\d,]+) tests/g);
  assert.ok(readme.length > 0, "README.md states the suite's size as `done: N tests`");
  assert.deepEqual(
    readme,
    readme.map(() => size),
    `README.md: the catalogue has ${size} tests`,
  );
  const sanity = numbersIn(await read("docs/sanity.md"), /all ([\d,]+) tests/g);
  assert.deepEqual(
    sanity,
    sanity.map(() => size),
    `docs/sanity.md: the catalogue has ${size} tests`,
  );
});

/** Processes `up` starts for `nodes` nodes: its component plan plus the API server. */
function processesFor(nodes: number): number {
  const { instances } = planComponents({
    layout: new ClusterLayout("/state"),
    nodes: nodeSpecs(nodes),
    driverName: "hostpath.csi.k8s.io",
    commands: new Set(commands.map((command) => command.name)),
    verbosity: 0,
    featureGates: "",
    ports: new Map(),
  });
  return instances.length + 1;
}

test("the README and docs/up.md give the process count `csikit up` really starts", async () => {
  for (const path of ["README.md", "docs/up.md"]) {
    const text = await read(path);
    let checked = 0;
    for (const match of text.matchAll(/\b(\d+) (?:Node )?processes\b/g)) {
      // A transcript line counts for the node count its own run printed; prose means 3 nodes.
      const before = text.slice(0, match.index);
      const transcript = /^starting \d+ processes/.test(text.slice(match.index - "starting ".length));
      const printed = [...before.matchAll(/\((\d+) nodes?, driver /g)].at(-1)?.[1];
      const nodes = transcript ? Number(printed ?? "3") : 3;
      assert.equal(Number(match[1]), processesFor(nodes), `${path}: "${match[0]}" (${nodes} nodes)`);
      checked++;
    }
    assert.ok(checked > 0, `${path} states how many processes up starts`);
  }
});
