// SPDY/3.1 framing: the byte layout of each frame kind, a reader fed in arbitrary pieces, and
// header blocks through one compression context per direction with the SPDY/3 dictionary.

import assert from "node:assert/strict";
import { test } from "node:test";
import { inflateSync, constants } from "node:zlib";
import {
  FLAG_FIN,
  FrameReader,
  HeaderCompressor,
  HeaderDecompressor,
  SPDY3_DICTIONARY,
  SpdyProtocolError,
  decodeHeaderBlock,
  encodeFrame,
  encodeHeaderBlock,
  type SpdyFrame,
} from "./spdy-frames.ts";

test("control frames carry the version 3 and their type in the first word, flags and length in the second", () => {
  assert.equal(encodeFrame({ type: "ping", id: 7 }).toString("hex"), "80030006" + "00000004" + "00000007");
  assert.equal(
    encodeFrame({ type: "rst_stream", streamId: 5, status: 5 }).toString("hex"),
    "80030003" + "00000008" + "00000005" + "00000005",
  );
  assert.equal(
    encodeFrame({ type: "goaway", lastGoodStreamId: 9, status: 0 }).toString("hex"),
    "80030007" + "00000008" + "00000009" + "00000000",
  );
  // SYN_STREAM: stream id, associated id, 3 bits of priority, a slot byte, then the headers.
  assert.equal(
    encodeFrame({
      type: "syn_stream",
      streamId: 1,
      associatedId: 0,
      priority: 7,
      flags: FLAG_FIN,
      headerBlock: Buffer.from("ab"),
    }).toString("hex"),
    "80030001" + "0100000c" + "00000001" + "00000000" + "e000" + "6162",
  );
});

test("data frames have the control bit clear: stream id, flags, 24-bit length", () => {
  assert.equal(
    encodeFrame({ type: "data", streamId: 3, flags: FLAG_FIN, data: Buffer.from("hi") }).toString("hex"),
    "00000003" + "01000002" + "6869",
  );
});

test("every frame kind decodes to what was encoded, whatever pieces the bytes arrive in", () => {
  const frames: SpdyFrame[] = [
    {
      type: "syn_stream",
      streamId: 1,
      associatedId: 0,
      priority: 3,
      flags: 0,
      headerBlock: Buffer.from([1, 2]),
    },
    { type: "syn_reply", streamId: 1, flags: 0, headerBlock: Buffer.from([3]) },
    { type: "headers", streamId: 1, flags: FLAG_FIN, headerBlock: Buffer.alloc(0) },
    { type: "data", streamId: 1, flags: 0, data: Buffer.alloc(70_000, 0x61) },
    { type: "data", streamId: 3, flags: FLAG_FIN, data: Buffer.alloc(0) },
    { type: "rst_stream", streamId: 3, status: 2 },
    { type: "settings", flags: 1, entries: [{ flags: 0, id: 7, value: 65536 }] },
    { type: "ping", id: 0xfffffffe },
    { type: "goaway", lastGoodStreamId: 3, status: 1 },
    { type: "window_update", streamId: 1, delta: 1000 },
  ];
  const bytes = Buffer.concat(frames.map(encodeFrame));
  for (const piece of [1, 7, 4096, bytes.length]) {
    const reader = new FrameReader();
    const decoded: SpdyFrame[] = [];
    for (let at = 0; at < bytes.length; at += piece)
      decoded.push(...reader.push(bytes.subarray(at, at + piece)));
    assert.deepEqual(decoded, frames, `pieces of ${piece} bytes`);
  }
});

test("a frame of another SPDY version or an unknown type is handed back as unknown", () => {
  const other = Buffer.from("80020006" + "00000004" + "00000001", "hex");
  const [frame] = new FrameReader().push(other);
  assert.equal(frame?.type, "unknown");
  const unknownType = Buffer.from("8003000a" + "00000000", "hex");
  assert.equal(new FrameReader().push(unknownType)[0]?.type, "unknown");
});

test("a control frame too short for its kind is a protocol error", () => {
  assert.throws(
    () => new FrameReader().push(Buffer.from("80030003" + "00000004" + "00000001", "hex")),
    SpdyProtocolError,
  );
});

test("the SPDY/3 dictionary: 1423 bytes, header names length-prefixed, common values after", () => {
  assert.equal(SPDY3_DICTIONARY.length, 1423);
  assert.equal(SPDY3_DICTIONARY.subarray(0, 11).toString("latin1"), "\0\0\0\u0007options");
  assert.ok(SPDY3_DICTIONARY.toString("latin1").endsWith(",enq=0."));
});

test("a header block: count, length-prefixed lower-case names, NUL-joined values", () => {
  const block = encodeHeaderBlock([
    ["StreamType", ["stdout"]],
    ["x-multi", ["a", "b"]],
  ]);
  assert.equal(
    block.toString("hex"),
    "00000002" +
      "0000000a" +
      Buffer.from("streamtype").toString("hex") +
      "00000006" +
      Buffer.from("stdout").toString("hex") +
      "00000007" +
      Buffer.from("x-multi").toString("hex") +
      "00000003" +
      "610062",
  );
  assert.deepEqual(
    decodeHeaderBlock(block),
    new Map([
      ["streamtype", ["stdout"]],
      ["x-multi", ["a", "b"]],
    ]),
  );
  assert.throws(() => decodeHeaderBlock(block.subarray(0, 10)), SpdyProtocolError);
});

test("header blocks share one zlib context per direction, primed with the dictionary", async () => {
  const compressor = new HeaderCompressor();
  const decompressor = new HeaderDecompressor();
  try {
    const blocks: Buffer[] = [];
    for (const type of ["error", "stdin", "stdout", "stderr"]) {
      const block = await compressor.compress([["streamtype", [type]]]);
      blocks.push(block);
      assert.deepEqual(await decompressor.decompress(block), new Map([["streamtype", [type]]]));
    }
    // The first block opens a zlib stream that names the dictionary (FDICT); later blocks
    // continue it and cannot be read alone.
    assert.equal(blocks[0]![0]! & 0x0f, 8, "deflate");
    assert.ok(blocks[0]![1]! & 0x20, "FDICT set");
    const all = Buffer.concat(blocks);
    const plain = inflateSync(all, { dictionary: SPDY3_DICTIONARY, finishFlush: constants.Z_SYNC_FLUSH });
    const expected = ["error", "stdin", "stdout", "stderr"].map((type) =>
      encodeHeaderBlock([["streamtype", [type]]]),
    );
    assert.deepEqual(plain, Buffer.concat(expected));
    await assert.rejects(new HeaderDecompressor().decompress(blocks[1]!), SpdyProtocolError);
  } finally {
    compressor.close();
    decompressor.close();
  }
});

test("garbage where a header block should be is a protocol error", async () => {
  const decompressor = new HeaderDecompressor();
  try {
    await assert.rejects(decompressor.decompress(Buffer.from("not zlib at all")), SpdyProtocolError);
  } finally {
    decompressor.close();
  }
});
