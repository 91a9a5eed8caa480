// The kubelet's WebSocket channel protocols: which subprotocol is picked, and each message's
// channel prefix (a byte, or an ASCII digit before base64), v5's CLOSE signal included.

import assert from "node:assert/strict";
import { test } from "node:test";
import { CLOSE_SIGNAL, decodeMessage, encodeMessage, selectProtocol } from "./ws-channels.ts";

test("the first protocol the client offers that the kubelet speaks is picked; none offered is the plain channel protocol", () => {
  assert.equal(selectProtocol(["v5.channel.k8s.io", "v4.channel.k8s.io"]), "v5.channel.k8s.io");
  assert.equal(selectProtocol(["v9.channel.k8s.io", "v4.channel.k8s.io"]), "v4.channel.k8s.io");
  assert.equal(selectProtocol(["base64.channel.k8s.io", "v5.channel.k8s.io"]), "base64.channel.k8s.io");
  assert.equal(selectProtocol([]), "");
  assert.equal(selectProtocol(["v9.channel.k8s.io"]), false);
});

test("binary protocols prefix the channel byte; base64 ones an ASCII digit and base64 data", () => {
  assert.deepEqual(
    encodeMessage("v5.channel.k8s.io", 1, Buffer.from("out")),
    Buffer.from([1, 0x6f, 0x75, 0x74]),
  );
  assert.equal(encodeMessage("v4.base64.channel.k8s.io", 2, Buffer.from("err")), "2ZXJy");
  assert.deepEqual(decodeMessage("v4.channel.k8s.io", Buffer.from([0, 0x68, 0x69]), true), {
    channel: 0,
    data: Buffer.from("hi"),
  });
  assert.deepEqual(decodeMessage("base64.channel.k8s.io", Buffer.from("0aGk="), false), {
    channel: 0,
    data: Buffer.from("hi"),
  });
  assert.equal(decodeMessage("v5.channel.k8s.io", Buffer.alloc(0), true), undefined);
});

test("v5's CLOSE signal names the channel the client is done with; v4 has no such signal", () => {
  assert.deepEqual(decodeMessage("v5.channel.k8s.io", Buffer.from([CLOSE_SIGNAL, 0]), true), { close: 0 });
  assert.deepEqual(decodeMessage("v4.channel.k8s.io", Buffer.from([CLOSE_SIGNAL, 0]), true), {
    channel: 255,
    data: Buffer.from([0]),
  });
});
