import { test } from "node:test";
import assert from "node:assert/strict";
import { isReadOnly, mountAt, parseMountInfo, sameData } from "./mountinfo.ts";

const SAMPLE = [
  "22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw",
  "40 22 259:2 /srv/state/volumes/vol-1 /mnt/staging rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw",
  "41 22 259:2 /srv/state/volumes/vol-1 /mnt/with\\040space ro,relatime - ext4 /dev/nvme0n1p2 rw",
  "42 22 0:5 /loop3 /mnt/block rw,nosuid master:2 - devtmpfs udev rw,size=1k",
  "43 22 259:2 /other /mnt/staging rw - ext4 /dev/nvme0n1p2 rw",
  "garbage line",
].join("\n");

test("mountinfo: parses fields, escapes, and stacked mounts", () => {
  const entries = parseMountInfo(SAMPLE);
  assert.equal(entries.length, 5);
  const spaced = mountAt(entries, "/mnt/with space");
  assert.ok(spaced);
  assert.equal(isReadOnly(spaced), true);
  assert.equal(spaced.root, "/srv/state/volumes/vol-1");
  const block = mountAt(entries, "/mnt/block");
  assert.equal(block?.fsType, "devtmpfs");
  assert.equal(block?.source, "udev");
  // The later of two mounts at one point is the visible one.
  assert.equal(mountAt(entries, "/mnt/staging")?.root, "/other");
  assert.equal(sameData(entries[1]!, spaced), true);
  assert.equal(sameData(entries[1]!, entries[4]!), false);
  assert.equal(mountAt(entries, "/mnt/none"), undefined);
});
