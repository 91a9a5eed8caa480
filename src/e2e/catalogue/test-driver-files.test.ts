// A class manifest a test driver file names by a relative path is looked for next to that file
// (so `csikit e2e` finds src/e2e/hostpath's from any working directory); an absolute path is kept.

import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { loadTestDriver } from "./index.ts";

test("relative FromFile paths resolve against the test driver file's directory", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "csikit-testdriver-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, "driver.yaml");
  await writeFile(
    path,
    [
      "StorageClass:",
      "  FromFile: /abs/sc.yaml",
      "VolumeAttributesClass:",
      "  FromFile: vac.yaml",
      "SnapshotClass:",
      "  FromName: true",
      "DriverInfo:",
      "  Name: example.csi.test",
      "",
    ].join("\n"),
  );
  const { definition } = await loadTestDriver(path);
  assert.equal(definition.VolumeAttributesClass.FromFile, join(dir, "vac.yaml"));
  assert.equal(definition.StorageClass.FromFile, "/abs/sc.yaml");
  assert.equal(definition.SnapshotClass.FromFile, "");
});
