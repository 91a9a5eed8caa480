// Test fixture shared by the csi tests (no tests of its own): temp dirs, servers and clients
// that are closed when the test ends, and a gRPC status-code matcher for assert.rejects.

import assert from "node:assert/strict";
import type { TestContext } from "node:test";
import { errorMessage } from "../../src/base/index.ts";
import { CsiClient, serveCsi, type CsiServer, type CsiServerOptions } from "../../src/csi/index.ts";
import { defer } from "./cleanup.ts";

/** A fresh temp dir, removed when the test ends. */
/** serveCsi, closed when the test ends. */
export async function serve(t: TestContext, options: CsiServerOptions): Promise<CsiServer> {
  const server = await serveCsi(options);
  defer(t, () => server.close());
  return server;
}

/** CsiClient.connect, closed when the test ends. */
export function connect(
  t: TestContext,
  endpoint: string,
  options?: Parameters<typeof CsiClient.connect>[1],
): CsiClient {
  const client = CsiClient.connect(endpoint, options);
  defer(t, () => client.close());
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
