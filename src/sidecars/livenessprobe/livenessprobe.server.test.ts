// The livenessprobe against real drivers on real sockets: the hostpath driver (200 "ok", the
// CSI call metric labelled with its name), a scripted identity server for the states hostpath
// does not reach on demand (ready:false, a Probe that hangs, a failing GetPluginInfo), a driver
// that goes away and comes back, and `csikit livenessprobe` started before its driver.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { silentLogger } from "../../base/index.ts";
import { CsiError, GrpcStatus, serveCsi, type CsiServer, type IdentityService } from "../../csi/index.ts";
import { serveHostpathDriver } from "../../drivers/index.ts";
import { NOT_READY, startLivenessProbe } from "./index.ts";
import { until } from "../../../test/harness/until.ts";
import { defer, tempDir } from "../../../test/harness/cleanup.ts";

const MAIN = join(import.meta.dirname, "..", "..", "cli", "main.ts");

async function hostpath(t: TestContext, endpoint: string) {
  const dir = await tempDir(t, "csikit-lp-driver-");
  const driver = await serveHostpathDriver({ endpoint, nodeId: "lp-node", stateDir: join(dir, "state") });
  defer(t, () => driver.close());
  return driver;
}

async function scriptedIdentity(
  t: TestContext,
  endpoint: string,
  identity: Partial<IdentityService>,
): Promise<CsiServer> {
  const server = await serveCsi({
    endpoint,
    identity: {
      getPluginInfo: () => Promise.resolve({ name: "scripted.csi.k8s.io", vendorVersion: "1" }),
      ...identity,
    },
    shutdownGraceMs: 100,
  });
  defer(t, () => server.close());
  return server;
}

/** startLivenessProbe in-process on a loopback port; stopped when the test ends. */
async function runProbe(
  t: TestContext,
  csiAddress: string,
  options: { probeTimeoutMs?: number } = {},
): Promise<{ url: string; done: Promise<void> }> {
  const controller = new AbortController();
  let serving!: (url: string) => void;
  const url = new Promise<string>((resolve) => (serving = resolve));
  const done = startLivenessProbe(
    {
      csiAddress,
      address: "127.0.0.1:0",
      metricsOnAddress: true,
      logger: silentLogger,
      ...options,
      onServing: (info) => serving(info.url),
    },
    controller.signal,
  );
  defer(t, async () => {
    controller.abort();
    await done.catch(() => undefined);
  });
  return {
    url: await Promise.race([url, done.then(() => Promise.reject(new Error("livenessprobe ended")))]),
    done,
  };
}

async function healthz(url: string): Promise<[number, string]> {
  const response = await fetch(`${url}/healthz`);
  return [response.status, await response.text()];
}

test("hostpath ready: 200 ok, and csi_sidecar_operations_seconds carries the driver's name", async (t) => {
  const dir = await tempDir(t);
  const driver = await hostpath(t, join(dir, "csi.sock"));
  const { url } = await runProbe(t, driver.path);
  assert.deepEqual(await healthz(url), [200, "ok"]);
  const metrics = await (await fetch(`${url}/metrics`)).text();
  assert.match(
    metrics,
    /csi_sidecar_operations_seconds_count\{driver_name="hostpath\.csi\.k8s\.io",method_name="\/csi\.v1\.Identity\/Probe",grpc_status_code="OK"\} 1/,
  );
  assert.match(metrics, /method_name="\/csi\.v1\.Identity\/GetPluginInfo"/);
  assert.match(metrics, /process_start_time_seconds/);
});

test("ready:false → 500 'driver responded but is not ready'; a hanging Probe → 500 DeadlineExceeded", async (t) => {
  const dir = await tempDir(t);
  let mode: "not-ready" | "hang" = "not-ready";
  const server = await scriptedIdentity(t, join(dir, "csi.sock"), {
    probe: async (_request, context) => {
      if (mode === "not-ready") return { ready: { value: false } };
      await new Promise<void>((resolve) =>
        context.signal.addEventListener("abort", () => resolve(), { once: true }),
      );
      throw new CsiError(GrpcStatus.CANCELLED, "cancelled");
    },
  });
  const { url } = await runProbe(t, server.path, { probeTimeoutMs: 200 });
  assert.deepEqual(await healthz(url), [500, NOT_READY]);
  mode = "hang";
  const [status, body] = await healthz(url);
  assert.equal(status, 500);
  assert.match(body, /^rpc error: code = DeadlineExceeded desc = /);
});

test("driver gone → 500 Unavailable; back on the same socket → 200 ok again", async (t) => {
  const dir = await tempDir(t);
  const endpoint = join(dir, "csi.sock");
  const first = await scriptedIdentity(t, endpoint, {
    probe: () => Promise.resolve({ ready: { value: true } }),
  });
  const { url } = await runProbe(t, endpoint);
  assert.deepEqual(await healthz(url), [200, "ok"]);
  await first.close();
  const [status, body] = await healthz(url);
  assert.equal(status, 500);
  assert.match(body, /^rpc error: code = Unavailable desc = /);
  await scriptedIdentity(t, endpoint, { probe: () => Promise.resolve({}) });
  await until(async () => (await healthz(url))[0] === 200, "healthy again");
});

test("GetPluginInfo failing at start-up is fatal, naming the error", async (t) => {
  const dir = await tempDir(t);
  const server = await scriptedIdentity(t, join(dir, "csi.sock"), {
    getPluginInfo: () => Promise.reject(new CsiError(GrpcStatus.INTERNAL, "identity broken")),
  });
  await assert.rejects(runProbe(t, server.path), /failed to get CSI driver name: .*identity broken/);
});

test("csikit livenessprobe started before its driver waits without crashing, then answers 200 ok", async (t) => {
  const dir = await tempDir(t);
  const endpoint = join(dir, "csi.sock");
  const child = spawn(
    process.execPath,
    [
      MAIN,
      "livenessprobe",
      `--csi-address=${endpoint}`,
      "--http-endpoint=127.0.0.1:0",
      "--probe-timeout=2s",
      "-v=1",
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  defer(t, async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await exit;
  });
  // No driver yet: it waits for the connection (and keeps running until the SIGTERM below: an
  // exit before it would not be 0 through SIGTERM).
  await until(() => stderr.includes("Connecting to CSI driver") || child.exitCode !== null, "connecting", {
    timeoutMs: 60_000,
  });
  assert.equal(child.exitCode, null, stderr);
  await hostpath(t, endpoint);
  const port = await until(
    () => /diagnostics endpoint listening.*port=(\d+)/.exec(stderr)?.[1],
    "listening",
    { timeoutMs: 60_000 },
  );
  assert.deepEqual(await healthz(`http://127.0.0.1:${port}`), [200, "ok"]);
  child.kill("SIGTERM");
  assert.equal(await exit, 0, stderr);
});
