// Resolve-beneath without mounts (runs for every user): where a CO path really leads is checked
// against the roots, symlinks at any level that lead out are refused naming where they lead, a
// final symlink is never followed, and acting through the held parent stays put when the path
// is swapped for a symlink afterwards.

import assert from "node:assert/strict";
import { mkdir, mkdtemp, readdir, realpath, rename, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { openBeneath, type Beneath } from "./beneath.ts";

async function sandbox(t: {
  after: (fn: () => Promise<void>) => void;
}): Promise<{ root: string; outside: string }> {
  const dir = await realpath(await mkdtemp(join(tmpdir(), "hostpath-beneath-")));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const root = join(dir, "root");
  const outside = join(dir, "outside");
  await mkdir(join(root, "a", "b"), { recursive: true });
  await mkdir(join(root, "state"));
  await mkdir(outside);
  return { root, outside };
}

test("symlinks that lead out at any level are refused; inside links resolve; the final one is never followed", async (t) => {
  const { root, outside } = await sandbox(t);
  const rules = { stateDir: join(root, "state"), allowedRoots: [root] };
  await symlink(outside, join(root, "abs"));
  await symlink(outside, join(root, "a", "b", "deep"));
  await symlink("../../outside", join(root, "a", "rel"));
  await symlink(join(root, "state"), join(root, "to-state"));
  await symlink(join(root, "a"), join(root, "to-a"));
  await symlink(join(root, "a"), join(root, "final"));
  const refused: [string, RegExp][] = [
    [join(root, "abs", "x"), /resolves to .*outside\/x, outside the allowed roots/],
    [join(root, "a", "b", "deep", "x"), /resolves to .*outside\/x, outside the allowed roots/],
    [join(root, "a", "rel", "x"), /resolves to .*outside\/x, outside the allowed roots/],
    [join(root, "to-state", "x"), /inside the driver's state directory/],
    [join(root, "final"), /is a symlink/],
    [join(root, "abs"), /is a symlink/],
  ];
  for (const [path, reason] of refused) {
    const result = await openBeneath(path, rules);
    assert.equal(typeof result, "string", path);
    assert.match(result as string, reason, path);
  }
  const inside = (await openBeneath(join(root, "to-a", "x"), rules)) as Beneath;
  assert.equal(typeof inside, "object");
  assert.equal(inside.real, join(root, "a", "x"));
  await inside.close();
});

test("acting through the held parent: a parent swapped for a symlink afterwards is not followed", async (t) => {
  const { root, outside } = await sandbox(t);
  const rules = { stateDir: join(root, "state"), allowedRoots: [root] };
  const held = (await openBeneath(join(root, "a", "pod"), rules)) as Beneath;
  t.after(() => held.close());
  await rename(join(root, "a"), join(root, "moved"));
  await symlink(outside, join(root, "a"));
  await mkdir(held.at);
  assert.deepEqual(await readdir(outside), []);
  assert.deepEqual(await readdir(join(root, "moved")), ["b", "pod"]);
  const missing = (await openBeneath(join(root, "nowhere", "pod"), rules)) as Beneath;
  assert.equal(missing.missing, true);
});
