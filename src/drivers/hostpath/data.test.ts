import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, stat, writeFile, mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  DataLayout,
  createSnapshotData,
  createVolumeData,
  dataProblem,
  growFile,
  removeData,
} from "./data.ts";

async function tempDir(t: { after: (fn: () => Promise<void>) => void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "hostpath-data-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

test("data: directory volume → snapshot (tar) → restore and clone keep the content", async (t) => {
  const layout = new DataLayout(await tempDir(t));
  const source = layout.volumePath("vol-a", "mount");
  await createVolumeData({ path: source, accessType: "mount", sizeBytes: 1024, content: { type: "empty" } });
  await mkdir(join(source, "sub"));
  await writeFile(join(source, "sub", "file.txt"), "hello");
  const snapshot = layout.snapshotPath("snap-a", "mount");
  await createSnapshotData({ volumePath: source, snapshotPath: snapshot, accessType: "mount" });
  await writeFile(join(source, "sub", "file.txt"), "changed after the snapshot");

  const restored = layout.volumePath("vol-b", "mount");
  await createVolumeData({
    path: restored,
    accessType: "mount",
    sizeBytes: 1024,
    content: { type: "snapshot", path: snapshot },
  });
  assert.equal(await readFile(join(restored, "sub", "file.txt"), "utf8"), "hello");

  const clone = layout.volumePath("vol-c", "mount");
  await createVolumeData({
    path: clone,
    accessType: "mount",
    sizeBytes: 1024,
    content: { type: "volume", path: source },
  });
  assert.equal(await readFile(join(clone, "sub", "file.txt"), "utf8"), "changed after the snapshot");
  assert.equal(await dataProblem(clone, "mount"), undefined);

  await removeData(clone);
  await removeData(clone); // idempotent
  assert.equal(await dataProblem(clone, "mount"), "The source path of the volume doesn't exist");
});

test("data: block volumes are sparse files; copies grow but never shrink; a crashed temp is redone", async (t) => {
  const layout = new DataLayout(await tempDir(t));
  const path = layout.volumePath("vol-a", "block");
  // A leftover from a crashed earlier attempt must not leak into the result.
  await mkdir(layout.volumesDir, { recursive: true });
  await writeFile(`${path}.tmp`, "partial");
  await createVolumeData({ path, accessType: "block", sizeBytes: 4 << 20, content: { type: "empty" } });
  const info = await stat(path);
  assert.equal(info.size, 4 << 20);
  assert.ok(info.blocks * 512 < info.size, "block volume file is sparse");
  await writeFile(path, "data", { flag: "r+" });
  const clone = layout.volumePath("vol-b", "block");
  await createVolumeData({
    path: clone,
    accessType: "block",
    sizeBytes: 8 << 20,
    content: { type: "volume", path },
  });
  assert.equal((await stat(clone)).size, 8 << 20);
  assert.equal((await readFile(clone)).subarray(0, 4).toString(), "data");
  await growFile(clone, 1024);
  assert.equal((await stat(clone)).size, 8 << 20);
  await growFile(clone, 9 << 20);
  assert.equal((await stat(clone)).size, 9 << 20);
  assert.equal(await dataProblem(clone, "mount"), "data directory is not a directory");
});
