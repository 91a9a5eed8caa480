// Test fixture shared by the csi tests (no tests of its own): temp dirs, servers and clients
// that are closed when the test ends, and a gRPC status-code matcher for assert.rejects.

import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { errorMessage } from "../../src/base/index.ts";
import { CsiClient, serveCsi, type CsiServer, type CsiServerOptions } from "../../src/csi/index.ts";

/** A fresh temp dir, removed when the test ends. */
export async function tempDir(t: TestContext, prefix = "csikit-csi-"): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** serveCsi, closed when the test ends. */
export async function serve(t: TestContext, options: CsiServerOptions): Promise<CsiServer> {
  const server = await serveCsi(options);
  t.after(() => server.close());
  return server;
}

/** CsiClient.connect, closed when the test ends. */
export function connect(
  t: TestContext,
  endpoint: string,
  options?: Parameters<typeof CsiClient.connect>[1],
): CsiClient {
  const client = CsiClient.connect(endpoint, options);
  t.after(() => client.close());
  return client;
}

/** An assert.rejects validator: the error carries gRPC status `code`. */
export function codeIs(code: number) {
  return (error: unknown): boolean => {
    assert.ok(typeof error === "object" && error !== null && "code" in error, String(error));
    assert.equal(error.code, code, errorMessage(error));
    return true;
  };
}
