// The SnapshotMetadata service (CSI alpha; on with --enable-snapshot-metadata, as upstream):
// which blocks of a block-volume snapshot hold data (GetMetadataAllocated), and which differ
// between two snapshots of the same volume (GetMetadataDelta), streamed. A block snapshot is a
// sparse copy of the volume's file, so "allocated" means a block that is not all zeroes, and
// "changed" a block whose bytes differ (a shorter snapshot reads as zeroes past its end).
// Blocks are 4 KiB. FIXED_LENGTH answers one tuple per block; VARIABLE_LENGTH merges adjacent
// blocks into extents (--snapshot-metadata-block-type). Filesystem snapshots (tar archives)
// have no block layout: INVALID_ARGUMENT.

import { open, type FileHandle } from "node:fs/promises";
import {
  CsiError,
  GrpcStatus,
  type BlockMetadataInput,
  type CallContext,
  type GetMetadataAllocatedRequest,
  type GetMetadataAllocatedResponseInput,
  type GetMetadataDeltaRequest,
  type GetMetadataDeltaResponseInput,
  type SnapshotMetadataService,
} from "../../csi/index.ts";
import type { ControllerContext } from "./controller-context.ts";
import { isSnapshotId } from "./ids.ts";
import { invalid, required } from "./requests.ts";
import type { SnapshotRecord } from "./state.ts";

/** Size of one block of metadata. */
export const METADATA_BLOCK_SIZE = 4096;
/** Tuples per message when the request leaves max_results at 0. */
const DEFAULT_MAX_RESULTS = 256;
/** Bytes read per step while scanning. */
const CHUNK = 256 * METADATA_BLOCK_SIZE;

function blockSnapshot(context: ControllerContext, id: string, field: string): SnapshotRecord {
  const snapshot = isSnapshotId(id) ? context.store.current.snapshots[id] : undefined;
  if (!snapshot || snapshot.phase !== "ready")
    throw new CsiError(GrpcStatus.NOT_FOUND, `${field} ${JSON.stringify(id)}: snapshot does not exist`);
  if (snapshot.accessType !== "block")
    throw invalid(
      `${field} ${JSON.stringify(id)} is a snapshot of a filesystem volume; snapshot metadata covers block volumes only`,
    );
  return snapshot;
}

function startingOffset(value: string, capacity: number): number {
  const offset = Number(value);
  if (!Number.isSafeInteger(offset) || offset < 0 || offset > capacity)
    throw new CsiError(
      GrpcStatus.OUT_OF_RANGE,
      `starting_offset ${value} is negative or beyond the volume size ${capacity}`,
    );
  return offset;
}

function maxResults(value: number): number {
  if (value < 0) throw invalid(`max_results ${value} must not be negative`);
  return value === 0 ? DEFAULT_MAX_RESULTS : value;
}

/** Reads up to `length` bytes at `position`; bytes past the end of the file read as zero. */
async function readAt(file: FileHandle | undefined, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.alloc(length);
  if (file) await file.read(buffer, 0, length, position);
  return buffer;
}

/** Offsets of the blocks from `start` to `end` where `differs` says the block is reported. */
async function* blocks(
  files: readonly (FileHandle | undefined)[],
  start: number,
  end: number,
  differs: (views: Buffer[]) => boolean,
  signal: AbortSignal,
): AsyncGenerator<number> {
  for (let chunk = start - (start % METADATA_BLOCK_SIZE); chunk < end; chunk += CHUNK) {
    signal.throwIfAborted();
    const length = Math.min(CHUNK, end - chunk);
    const buffers = await Promise.all(files.map((file) => readAt(file, chunk, length)));
    for (let at = 0; at < length; at += METADATA_BLOCK_SIZE) {
      const size = Math.min(METADATA_BLOCK_SIZE, length - at);
      if (differs(buffers.map((b) => b.subarray(at, at + size)))) yield chunk + at;
    }
  }
}

/** Turns block offsets into tuples (merged into extents for VARIABLE_LENGTH), `limit` per message. */
async function* messages(
  offsets: AsyncIterable<number>,
  options: { type: "FIXED_LENGTH" | "VARIABLE_LENGTH"; capacity: number; limit: number },
): AsyncGenerator<GetMetadataAllocatedResponseInput> {
  let tuples: BlockMetadataInput[] = [];
  let extent: { offset: number; size: number } | undefined;
  const message = (): GetMetadataAllocatedResponseInput => ({
    blockMetadataType: options.type,
    volumeCapacityBytes: String(options.capacity),
    blockMetadata: tuples,
  });
  const push = (offset: number, size: number): boolean => {
    tuples.push({ byteOffset: String(offset), sizeBytes: String(size) });
    return tuples.length >= options.limit;
  };
  for await (const offset of offsets) {
    const size = Math.min(METADATA_BLOCK_SIZE, options.capacity - offset);
    if (options.type === "FIXED_LENGTH") {
      // FIXED_LENGTH: every tuple is one whole block, also the last one of the volume.
      if (push(offset, METADATA_BLOCK_SIZE)) {
        yield message();
        tuples = [];
      }
      continue;
    }
    if (extent && extent.offset + extent.size === offset) {
      extent.size += size;
      continue;
    }
    if (extent && push(extent.offset, extent.size)) {
      yield message();
      tuples = [];
    }
    extent = { offset, size };
  }
  if (extent) push(extent.offset, extent.size);
  if (tuples.length > 0) yield message();
}

const isAllZero = (view: Buffer): boolean => view.every((byte) => byte === 0);

async function openSnapshot(context: ControllerContext, snapshot: SnapshotRecord): Promise<FileHandle> {
  return open(context.layout.snapshotPath(snapshot.id, "block"), "r");
}

/** SnapshotMetadata.GetMetadataAllocated: the blocks of a block snapshot that hold data. */
async function* getMetadataAllocated(
  context: ControllerContext,
  request: GetMetadataAllocatedRequest,
  call: CallContext,
): AsyncIterable<GetMetadataAllocatedResponseInput> {
  const type = context.config.snapshotMetadataBlockType;
  const id = required(request.snapshotId, "snapshot_id");
  const snapshot = blockSnapshot(context, id, "snapshot_id");
  const capacity = snapshot.sizeBytes;
  const start = startingOffset(request.startingOffset, capacity);
  const limit = maxResults(request.maxResults);
  const file = await openSnapshot(context, snapshot);
  try {
    const allocated = blocks([file], start, capacity, ([view]) => !isAllZero(view!), call.signal);
    yield* messages(allocated, { type, capacity, limit });
  } finally {
    await file.close();
  }
}

/** SnapshotMetadata.GetMetadataDelta: the blocks that differ between two snapshots of a volume. */
async function* getMetadataDelta(
  context: ControllerContext,
  request: GetMetadataDeltaRequest,
  call: CallContext,
): AsyncIterable<GetMetadataDeltaResponseInput> {
  const type = context.config.snapshotMetadataBlockType;
  const baseId = required(request.baseSnapshotId, "base_snapshot_id");
  const targetId = required(request.targetSnapshotId, "target_snapshot_id");
  const base = blockSnapshot(context, baseId, "base_snapshot_id");
  const target = blockSnapshot(context, targetId, "target_snapshot_id");
  if (base.sourceVolumeId !== target.sourceVolumeId)
    throw invalid(
      `base_snapshot_id ${baseId} and target_snapshot_id ${targetId} are snapshots of different volumes`,
    );
  const capacity = target.sizeBytes;
  const start = startingOffset(request.startingOffset, capacity);
  const limit = maxResults(request.maxResults);
  const baseFile = await openSnapshot(context, base);
  try {
    const targetFile = await openSnapshot(context, target);
    try {
      const changed = blocks(
        [baseFile, targetFile],
        start,
        capacity,
        ([a, b]) => !a!.equals(b!),
        call.signal,
      );
      yield* messages(changed, { type, capacity, limit });
    } finally {
      await targetFile.close();
    }
  } finally {
    await baseFile.close();
  }
}

/** The service as grpc-js serves it: each RPC is one function above. */
export function snapshotMetadataHandlers(context: ControllerContext): SnapshotMetadataService {
  return {
    getMetadataAllocated: (request, call) => getMetadataAllocated(context, request, call),
    getMetadataDelta: (request, call) => getMetadataDelta(context, request, call),
  };
}
