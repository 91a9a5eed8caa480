// The repository's own programs (every `npm run bench:*` and every script under scripts/) answer
// `--help` with their usage and a flag they do not know with one line and exit code 2, as the
// csikit commands do: nothing starts measuring or writing files on a typo, and no stack trace.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

const ROOT = join(import.meta.dirname, "..");
const PROGRAMS = [
  ...readdirSync(join(ROOT, "bench"))
    .filter((name) => name.endsWith(".bench.ts"))
    .map((name) => join("bench", name)),
  ...readdirSync(join(ROOT, "scripts"))
    .filter((name) => name.endsWith(".ts"))
    .map((name) => join("scripts", name)),
];

function run(program: string, ...args: string[]): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, [join(ROOT, program), ...args], {
    cwd: ROOT,
    encoding: "utf8",
    timeout: 60_000,
  });
}

test("every bench and script is found", () => {
  assert.ok(PROGRAMS.filter((p) => p.startsWith("bench")).length >= 9, PROGRAMS.join(" "));
  assert.ok(PROGRAMS.filter((p) => p.startsWith("scripts")).length >= 5, PROGRAMS.join(" "));
});

for (const program of PROGRAMS) {
  test(`${program}: --help prints the usage; an unknown flag is one line and exit 2`, () => {
    const help = run(program, "--help");
    assert.equal(help.status, 0, help.stderr);
    assert.match(help.stdout, /^Usage: /);
    assert.match(help.stdout, /--help\n/);

    const bad = run(program, "--no-such-flag");
    assert.equal(bad.status, 2, `${bad.stdout}\n${bad.stderr}`);
    assert.match(bad.stderr, /^[a-z0-9:-]+: flag provided but not defined: -no-such-flag \(see --help\)\n$/);
    assert.equal(bad.stdout, "");
  });
}
