// Test-only helpers for the hostpath tests: a driver on a temp socket and state dir with a
// connected client, all torn down by the test's after hook. Not exported from index.ts.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CsiClient, grpcCode } from "../../csi/index.ts";
import { serveHostpathDriver, type HostpathServer, type HostpathServerOptions } from "./server.ts";
import { DEFAULT_MUTABLE_PARAMETERS } from "./driver.ts";

export interface TestDriver {
  client: CsiClient;
  server: HostpathServer;
  dir: string;
  stateDir: string;
  restart(overrides?: Partial<HostpathServerOptions>): Promise<void>;
}

interface AfterHook {
  after(fn: () => Promise<void>): void;
}

export async function startTestDriver(
  t: AfterHook,
  options: Partial<HostpathServerOptions> = {},
): Promise<TestDriver> {
  const dir = await mkdtemp(join(tmpdir(), "hostpath-test-"));
  const stateDir = join(dir, "state");
  const endpoint = `unix://${join(dir, "csi.sock")}`;
  const make = (extra: Partial<HostpathServerOptions>): Promise<HostpathServer> =>
    serveHostpathDriver({
      nodeId: "node-1",
      stateDir,
      endpoint,
      shutdownGraceMs: 1000,
      // Tests stage and publish under their own temp dir, never under /var/lib/kubelet.
      allowedPathRoots: [dir],
      // ModifyVolume on, in csikit's strict mode (the upstream defaults have a test of their own).
      enableControllerModifyVolume: true,
      acceptedMutableParameterNames: DEFAULT_MUTABLE_PARAMETERS,
      ...options,
      ...extra,
    });
  const driver: TestDriver = {
    client: CsiClient.connect(endpoint, { timeoutMs: 20_000 }),
    server: await make({}),
    dir,
    stateDir,
    async restart(overrides = {}) {
      await driver.server.close();
      driver.server = await make(overrides);
    },
  };
  t.after(async () => {
    driver.client.close();
    await driver.server.close();
    await rm(dir, { recursive: true, force: true });
  });
  return driver;
}

/** Asserts `promise` rejects with gRPC status `code`; returns the error message. */
export async function rejectsWith(promise: Promise<unknown>, code: number): Promise<string> {
  try {
    await promise;
  } catch (error) {
    const actual = grpcCode(error);
    if (actual !== code)
      throw new Error(
        `expected gRPC code ${code}, got ${String(actual)}: ${error instanceof Error ? error.message : String(error)}`,
      );
    return error instanceof Error ? error.message : String(error);
  }
  throw new Error(`expected gRPC code ${code}, but the call succeeded`);
}

export const MOUNT_RW = { mount: {}, accessMode: { mode: "SINGLE_NODE_WRITER" as const } };
export const BLOCK_RW = { block: {}, accessMode: { mode: "SINGLE_NODE_WRITER" as const } };
export const MIB = 1024 * 1024;
