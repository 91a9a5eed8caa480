// The SnapshotMetadata service against real block snapshots: data written into the volume's
// file is reported as allocated, the blocks that changed between two snapshots as the delta,
// in FIXED_LENGTH blocks or VARIABLE_LENGTH extents, with max_results, starting_offset and the
// spec's errors.

import assert from "node:assert/strict";
import { open } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { GrpcStatus, type CsiClient, type GetMetadataAllocatedResponse } from "../../csi/index.ts";
import { BLOCK_RW, MOUNT_RW, rejectsWith, startTestDriver } from "./test-helpers.ts";

const KIB = 1024;

async function collect(
  stream: AsyncIterable<GetMetadataAllocatedResponse>,
): Promise<GetMetadataAllocatedResponse[]> {
  const messages: GetMetadataAllocatedResponse[] = [];
  for await (const message of stream) messages.push(message);
  return messages;
}

function tuples(messages: readonly GetMetadataAllocatedResponse[]): [number, number][] {
  return messages.flatMap((m) =>
    m.blockMetadata.map((b): [number, number] => [Number(b.byteOffset), Number(b.sizeBytes)]),
  );
}

async function writeAt(file: string, offset: number, byte: number): Promise<void> {
  const handle = await open(file, "r+");
  try {
    await handle.write(Buffer.alloc(4 * KIB, byte), 0, 4 * KIB, offset);
  } finally {
    await handle.close();
  }
}

/** A 64 KiB block volume with blocks 0 and 2 written, snapshot 1; block 2 rewritten and 3 written, snapshot 2. */
async function twoSnapshots(client: CsiClient, stateDir: string): Promise<{ first: string; second: string }> {
  const volume = (
    await client.controller.createVolume({
      name: "meta",
      volumeCapabilities: [BLOCK_RW],
      capacityRange: { requiredBytes: 64 * KIB },
    })
  ).volume!;
  const file = join(stateDir, "volumes", `${volume.volumeId}.img`);
  await writeAt(file, 0, 1);
  await writeAt(file, 8 * KIB, 2);
  const first = (await client.controller.createSnapshot({ sourceVolumeId: volume.volumeId, name: "m1" }))
    .snapshot!;
  await writeAt(file, 8 * KIB, 3);
  await writeAt(file, 12 * KIB, 4);
  const second = (await client.controller.createSnapshot({ sourceVolumeId: volume.volumeId, name: "m2" }))
    .snapshot!;
  return { first: first.snapshotId, second: second.snapshotId };
}

test("allocated and changed blocks of block snapshots, FIXED_LENGTH", async (t) => {
  const driver = await startTestDriver(t, { enableSnapshotMetadata: true });
  const { client } = driver;
  const plugin = await client.identity.getPluginCapabilities({});
  assert.ok(plugin.capabilities.some((c) => c.service?.type === "SNAPSHOT_METADATA_SERVICE"));
  const { first, second } = await twoSnapshots(client, driver.stateDir);
  const allocated = await collect(client.snapshotMetadata.getMetadataAllocated({ snapshotId: first }));
  assert.deepEqual(tuples(allocated), [
    [0, 4 * KIB],
    [8 * KIB, 4 * KIB],
  ]);
  assert.ok(
    allocated.every(
      (m) => m.blockMetadataType === "FIXED_LENGTH" && m.volumeCapacityBytes === String(64 * KIB),
    ),
  );
  const delta = await collect(
    client.snapshotMetadata.getMetadataDelta({
      baseSnapshotId: first,
      targetSnapshotId: second,
      maxResults: 1,
    }),
  );
  assert.deepEqual(tuples(delta), [
    [8 * KIB, 4 * KIB],
    [12 * KIB, 4 * KIB],
  ]);
  assert.equal(delta.length, 2, "max_results 1: one tuple per message");
  // starting_offset inside block 2: the first tuple is block 2, which ends after it.
  const resumed = await collect(
    client.snapshotMetadata.getMetadataDelta({
      baseSnapshotId: first,
      targetSnapshotId: second,
      startingOffset: 9 * KIB,
    }),
  );
  assert.deepEqual(tuples(resumed)[0], [8 * KIB, 4 * KIB]);

  await rejectsWith(
    collect(client.snapshotMetadata.getMetadataAllocated({ snapshotId: "" })),
    GrpcStatus.INVALID_ARGUMENT,
  );
  await rejectsWith(
    collect(
      client.snapshotMetadata.getMetadataAllocated({ snapshotId: "snap-00000000000000000000000000000000" }),
    ),
    GrpcStatus.NOT_FOUND,
  );
  await rejectsWith(
    collect(client.snapshotMetadata.getMetadataAllocated({ snapshotId: first, startingOffset: 65 * KIB })),
    GrpcStatus.OUT_OF_RANGE,
  );
  const fs = (await client.controller.createVolume({ name: "fs", volumeCapabilities: [MOUNT_RW] })).volume!;
  const fsSnap = (await client.controller.createSnapshot({ sourceVolumeId: fs.volumeId, name: "fs1" }))
    .snapshot!;
  await rejectsWith(
    collect(client.snapshotMetadata.getMetadataAllocated({ snapshotId: fsSnap.snapshotId })),
    GrpcStatus.INVALID_ARGUMENT,
  );
});

test("VARIABLE_LENGTH merges adjacent changed blocks into extents; off by default", async (t) => {
  const driver = await startTestDriver(t, {
    enableSnapshotMetadata: true,
    snapshotMetadataBlockType: "VARIABLE_LENGTH",
  });
  const { first, second } = await twoSnapshots(driver.client, driver.stateDir);
  const delta = await collect(
    driver.client.snapshotMetadata.getMetadataDelta({ baseSnapshotId: first, targetSnapshotId: second }),
  );
  assert.deepEqual(tuples(delta), [[8 * KIB, 8 * KIB]]);
  assert.equal(delta[0]?.blockMetadataType, "VARIABLE_LENGTH");

  const off = await startTestDriver(t);
  await rejectsWith(
    collect(off.client.snapshotMetadata.getMetadataAllocated({ snapshotId: first })),
    GrpcStatus.UNIMPLEMENTED,
  );
});
