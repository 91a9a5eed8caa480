// Leader-election fixture for the sidecars' failover tests: election flags short enough for a
// takeover within seconds, the current holder of a Lease, and a sidecar leader started as a real
// `csikit <sidecar>` child process (so it can be killed with SIGKILL, as a crashed pod is),
// killed and reaped when the test ends.

import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { GVR } from "../../src/api/index.ts";
import type { KubeClient, Lease } from "../../src/kube/index.ts";
import { defer } from "./cleanup.ts";
import { until } from "./until.ts";

const MAIN = join(import.meta.dirname, "..", "..", "src", "cli", "main.ts");

/** Leader-election flags with a 3 s lease, so a standby takes over within seconds. */
export const FAST_ELECTION: readonly string[] = [
  "--leader-election",
  "--leader-election-namespace=default",
  "--leader-election-lease-duration=3s",
  "--leader-election-renew-deadline=2s",
  "--leader-election-retry-period=500ms",
];

/** The Lease's holderIdentity, or undefined while there is no Lease (or no holder). */
export async function leaseHolder(
  client: KubeClient,
  lease: string,
  namespace = "default",
): Promise<string | undefined> {
  try {
    const object = await client.get<Lease>(GVR.leases, lease, { namespace });
    return object.spec?.holderIdentity ?? undefined;
  } catch {
    return undefined;
  }
}

/** Runs `csikit <command> <args>` as a child process; SIGKILLed and reaped when the test ends. */
export function spawnCsikit(t: TestContext, command: string, args: readonly string[]): ChildProcess {
  const child = spawn(process.execPath, [MAIN, command, ...args], { stdio: "ignore" });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  defer(t, async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await exited;
  });
  return child;
}

/** A sidecar leading from a child process, and its identity in the Lease. */
export interface ChildLeader {
  child: ChildProcess;
  identity: string;
  /** SIGKILL (a crashed pod: the Lease is not released) and wait until the process is gone. */
  kill(): Promise<void>;
}

/**
 * Starts `csikit <sidecar>` against the driver at csiAddress with FAST_ELECTION and waits until
 * it holds the Lease.
 */
export async function startChildLeader(
  t: TestContext,
  options: { sidecar: string; csiAddress: string; kubeconfig: string; client: KubeClient; lease: string },
): Promise<ChildLeader> {
  const child = spawnCsikit(t, options.sidecar, [
    `--csi-address=${options.csiAddress}`,
    `--kubeconfig=${options.kubeconfig}`,
    "--kube-api-qps=100",
    ...FAST_ELECTION,
  ]);
  const identity = await until(() => leaseHolder(options.client, options.lease), "the child leads", {
    timeoutMs: 30_000,
  });
  return {
    child,
    identity,
    kill: async () => {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      else return;
      await exited;
    },
  };
}

/** Waits until someone other than `previous` holds the Lease, and returns the new holder. */
export function untilNewLeader(client: KubeClient, lease: string, previous: string): Promise<string> {
  return until(async () => {
    const now = await leaseHolder(client, lease);
    return now !== undefined && now !== previous ? now : undefined;
  }, "a new leader");
}
