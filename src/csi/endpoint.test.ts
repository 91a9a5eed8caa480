import assert from "node:assert/strict";
import { resolve } from "node:path";
import { test } from "node:test";
import { ValidationError } from "../base/index.ts";
import { parseEndpoint } from "./index.ts";

test("parseEndpoint accepts the unix socket forms the sidecars take", () => {
  assert.equal(parseEndpoint("unix:///run/csi/socket"), "/run/csi/socket");
  assert.equal(parseEndpoint("unix:/run/csi/socket"), "/run/csi/socket");
  assert.equal(parseEndpoint("/run/csi/socket"), "/run/csi/socket");
  assert.equal(parseEndpoint("unix:csi.sock"), resolve("csi.sock"));
  assert.equal(parseEndpoint(".csikit/csi.sock"), resolve(".csikit/csi.sock"));
  assert.equal(parseEndpoint("  unix:///a/../b/csi.sock "), "/b/csi.sock");
});

test("parseEndpoint refuses tcp and malformed endpoints, naming them", () => {
  for (const [endpoint, pattern] of [
    [
      "tcp://127.0.0.1:10000",
      /"tcp:\/\/127\.0\.0\.1:10000" is not supported: CSI runs over Unix domain sockets/,
    ],
    ["dns:///example.com:443", /is not supported/],
    ["unix://relative/csi.sock", /unix:\/\/ must be followed by an absolute path/],
    ["", /CSI endpoint is empty/],
    ["unix:", /empty socket path/],
    [`/tmp/${"x".repeat(120)}.sock`, /longer than 107 bytes/],
  ] as const) {
    assert.throws(
      () => parseEndpoint(endpoint),
      (error: unknown) => {
        assert.ok(error instanceof ValidationError, `${endpoint}: ${String(error)}`);
        assert.match(error.message, pattern);
        return true;
      },
    );
  }
});
