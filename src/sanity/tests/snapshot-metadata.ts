// SnapshotMetadata service (CSI alpha): GetMetadataAllocated and GetMetadataDelta. csi-sanity
// has no tests for it; these follow the spec's "Snapshot Metadata Service RPCs" section:
// argument errors, NOT_FOUND, OUT_OF_RANGE for a starting_offset that is negative or beyond the
// volume, and a stream whose messages keep one block_metadata_type (never UNKNOWN) and one
// volume_capacity_bytes, respect max_results and starting_offset, and carry tuples with
// size_bytes > 0 in strictly increasing, non-overlapping order (constant size for FIXED_LENGTH).
// The snapshots are of block volumes ("the changed blocks between a pair of snapshots of the
// same block volume"), served on the controller endpoint.

import { GrpcStatus } from "../../csi/index.ts";
import type { GetMetadataAllocatedResponse } from "../../csi/index.ts";
import type { TestContext } from "../context.ts";
import { check, expectCode, expectOk, int64 } from "../expect.ts";
import { describe } from "../framework.ts";
import type { SanityTest } from "../framework.ts";

const { INVALID_ARGUMENT, NOT_FOUND, OUT_OF_RANGE } = GrpcStatus;

const METADATA = {
  requires: [
    "plugin:CONTROLLER_SERVICE",
    "plugin:SNAPSHOT_METADATA_SERVICE",
    "controller:CREATE_DELETE_VOLUME",
    "controller:CREATE_DELETE_SNAPSHOT",
  ],
} as const;

/** Reads a whole response stream; rejects with the stream's error. */
async function collect<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const messages: T[] = [];
  for await (const message of stream) messages.push(message);
  return messages;
}

/** A snapshot of a fresh block volume (both cleaned up by the tracker). */
async function blockSnapshot(t: TestContext): Promise<{ snapshotId: string; volumeId: string }> {
  const volume = await t.createVolume({ volumeCapabilities: [t.blockCapability()] });
  const snapshot = await t.createSnapshot(volume.volumeId);
  return { snapshotId: snapshot.snapshotId, volumeId: volume.volumeId };
}

/** The spec's stream invariants; `start` is the requested starting_offset. */
function checkStream(
  messages: readonly GetMetadataAllocatedResponse[],
  what: string,
  options: { start: number; maxResults: number },
): void {
  let end = -1n;
  let fixedSize: bigint | undefined;
  const first = messages[0];
  for (const [i, message] of messages.entries()) {
    check(message.blockMetadataType !== "UNKNOWN", `${what}: message ${i} has block_metadata_type UNKNOWN`);
    check(
      message.blockMetadataType === first?.blockMetadataType,
      `${what}: block_metadata_type changed mid-stream`,
    );
    check(
      message.volumeCapacityBytes === first?.volumeCapacityBytes,
      `${what}: volume_capacity_bytes changed mid-stream`,
    );
    check(int64(message.volumeCapacityBytes) > 0n, `${what}: volume_capacity_bytes must be positive`);
    if (options.maxResults > 0)
      check(
        message.blockMetadata.length <= options.maxResults,
        `${what}: ${message.blockMetadata.length} tuples in one message, max_results was ${options.maxResults}`,
      );
    for (const tuple of message.blockMetadata) {
      const offset = int64(tuple.byteOffset);
      const size = int64(tuple.sizeBytes);
      check(size > 0n, `${what}: a tuple with size_bytes ${size}`);
      if (end < 0n)
        check(
          BigInt(options.start) < offset + size,
          `${what}: the first tuple ends at ${offset + size}, before starting_offset ${options.start}`,
        );
      check(offset >= end, `${what}: tuple at ${offset} overlaps or precedes the previous one (ends ${end})`);
      if (message.blockMetadataType === "FIXED_LENGTH") {
        fixedSize ??= size;
        check(size === fixedSize, `${what}: FIXED_LENGTH tuples of sizes ${fixedSize} and ${size}`);
      }
      end = offset + size;
    }
  }
}

export function snapshotMetadataTests(): SanityTest[] {
  return [
    ...describe("Controller", "GetMetadataAllocated", METADATA, ({ it }) => {
      const allocated = (
        t: TestContext,
        snapshotId: string,
        startingOffset: string | number = 0,
        maxResults = 0,
      ) => collect(t.metadata.getMetadataAllocated({ snapshotId, startingOffset, maxResults, secrets: {} }));
      it("fails with INVALID_ARGUMENT when the snapshot id is missing", async (t) => {
        await expectCode(allocated(t, ""), INVALID_ARGUMENT, "GetMetadataAllocated without snapshot_id");
      });
      it("fails with NOT_FOUND for a snapshot that does not exist", async (t) => {
        await expectCode(
          allocated(t, "sanity-no-such-snapshot"),
          NOT_FOUND,
          "GetMetadataAllocated of an unknown snapshot",
        );
      });
      it("fails with OUT_OF_RANGE for a negative starting_offset or one beyond the volume", async (t) => {
        const { snapshotId } = await blockSnapshot(t);
        await expectCode(allocated(t, snapshotId, -1), OUT_OF_RANGE, "GetMetadataAllocated at offset -1");
        await expectCode(
          allocated(t, snapshotId, String(2n ** 62n)),
          OUT_OF_RANGE,
          "GetMetadataAllocated beyond the volume",
        );
      });
      it("streams well-formed metadata that respects max_results and starting_offset", async (t) => {
        const { snapshotId } = await blockSnapshot(t);
        const whole = await expectOk(allocated(t, snapshotId), "GetMetadataAllocated");
        checkStream(whole, "GetMetadataAllocated", { start: 0, maxResults: 0 });
        const one = await expectOk(allocated(t, snapshotId, 0, 1), "GetMetadataAllocated max_results 1");
        checkStream(one, "GetMetadataAllocated max_results 1", { start: 0, maxResults: 1 });
        const capacity = whole[0] ? Number(whole[0].volumeCapacityBytes) : t.settings.testVolumeSize;
        const start = Math.floor(capacity / 2);
        const tail = await expectOk(allocated(t, snapshotId, start), "GetMetadataAllocated from the middle");
        checkStream(tail, "GetMetadataAllocated from the middle", { start, maxResults: 0 });
      });
    }),

    ...describe("Controller", "GetMetadataDelta", METADATA, ({ it }) => {
      const delta = (
        t: TestContext,
        baseSnapshotId: string,
        targetSnapshotId: string,
        startingOffset: string | number = 0,
        maxResults = 0,
      ) =>
        collect(
          t.metadata.getMetadataDelta({
            baseSnapshotId,
            targetSnapshotId,
            startingOffset,
            maxResults,
            secrets: {},
          }),
        );
      it("fails with INVALID_ARGUMENT when a snapshot id is missing", async (t) => {
        const { snapshotId } = await blockSnapshot(t);
        await expectCode(
          delta(t, "", snapshotId),
          INVALID_ARGUMENT,
          "GetMetadataDelta without base_snapshot_id",
        );
        await expectCode(
          delta(t, snapshotId, ""),
          INVALID_ARGUMENT,
          "GetMetadataDelta without target_snapshot_id",
        );
      });
      it("fails with NOT_FOUND for snapshots that do not exist", async (t) => {
        const { snapshotId } = await blockSnapshot(t);
        await expectCode(
          delta(t, "sanity-no-such-snapshot", snapshotId),
          NOT_FOUND,
          "GetMetadataDelta with an unknown base",
        );
        await expectCode(
          delta(t, snapshotId, "sanity-no-such-snapshot"),
          NOT_FOUND,
          "GetMetadataDelta with an unknown target",
        );
      });
      it("fails with OUT_OF_RANGE for a negative starting_offset", async (t) => {
        const { snapshotId, volumeId } = await blockSnapshot(t);
        const second = await t.createSnapshot(volumeId);
        await expectCode(
          delta(t, snapshotId, second.snapshotId, -1),
          OUT_OF_RANGE,
          "GetMetadataDelta at offset -1",
        );
      });
      it("streams well-formed metadata between two snapshots of one volume", async (t) => {
        const { snapshotId, volumeId } = await blockSnapshot(t);
        const second = await t.createSnapshot(volumeId);
        const messages = await expectOk(delta(t, snapshotId, second.snapshotId, 0, 1), "GetMetadataDelta");
        checkStream(messages, "GetMetadataDelta", { start: 0, maxResults: 1 });
      });
    }),
  ];
}
