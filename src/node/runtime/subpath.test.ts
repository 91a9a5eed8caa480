import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { resolveSubPath } from "./subpath.ts";

const where = { mount: "data", container: "app" };

test("a subPath resolves inside its volume, creating what is missing; a way out fails naming the subPath", async (t) => {
  const root = await mkdtemp(join(tmpdir(), "csikit-subpath-"));
  t.after(() => rm(root, { recursive: true, force: true }));
  const volume = join(root, "volume");
  await mkdir(join(volume, "dir"), { recursive: true });
  await writeFile(join(volume, "file"), "x");
  await symlink("dir", join(volume, "inner"));
  await symlink("/bin", join(volume, "bin"));
  await symlink("/bin/sh", join(volume, "sh"));
  await symlink("/bin/notanexistingpath", join(volume, "missing"));
  await symlink("../", join(volume, "up"));

  assert.equal(await resolveSubPath(volume, "dir", where), join(volume, "dir"));
  assert.equal(await resolveSubPath(volume, "file", where), join(volume, "file"));
  assert.equal(await resolveSubPath(volume, "inner", where), join(volume, "dir"));
  assert.equal(await resolveSubPath(volume, "new/deeper", where), join(volume, "new", "deeper"));
  assert.ok((await stat(join(volume, "new", "deeper"))).isDirectory());
  for (const bad of ["bin", "sh", "missing", "up", "up/volume", "../volume", "/etc", "a/../b"])
    await assert.rejects(resolveSubPath(volume, bad, where), (error: Error) => {
      assert.match(error.message, /failed to prepare subPath for volumeMount "data" of container "app"/);
      return true;
    });
});
