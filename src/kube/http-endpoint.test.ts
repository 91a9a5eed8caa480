import { test } from "node:test";
import assert from "node:assert/strict";
import { networkInterfaces } from "node:os";
import { Registry } from "prom-client";
import { FlagError } from "../base/index.ts";
import { parseListenAddress, startHttpEndpoint } from "./http-endpoint.ts";
import { CsiOperationMetrics } from "./metrics.ts";

test("listen addresses follow Go: ':port' is all interfaces, host:port, [v6]:port", () => {
  assert.deepEqual(parseListenAddress(":8080"), { host: "", port: 8080 });
  assert.deepEqual(parseListenAddress("127.0.0.1:0"), { host: "127.0.0.1", port: 0 });
  assert.deepEqual(parseListenAddress("[::1]:9808"), { host: "::1", port: 9808 });
  assert.deepEqual(parseListenAddress("localhost:80"), { host: "localhost", port: 80 });
  for (const bad of ["8080", "", "host:", "1.2.3.4:99999", "::1:80", "a:b"])
    assert.throws(() => parseListenAddress(bad), FlagError, bad);
});

test("serves metrics, aggregate and named health checks; failures are 500 with reason withheld", async (t) => {
  const registry = new Registry();
  const metrics = new CsiOperationMetrics({ registry });
  metrics.observeCsiCall("/csi.v1.Identity/Probe", 0, 0.01);
  let leaderHealthy = true;
  const controller = new AbortController();
  const endpoint = await startHttpEndpoint(
    {
      address: "127.0.0.1:0",
      registry,
      metricsPath: "/custom-metrics",
      healthChecks: {
        ping: () => {},
        "leader-election": () => {
          if (!leaderHealthy) throw new Error("lease renewal overdue by 30s");
        },
      },
    },
    controller.signal,
  );
  t.after(async () => {
    controller.abort();
    await endpoint.stopped;
  });
  const get = async (path: string): Promise<{ status: number; body: string }> => {
    const res = await fetch(endpoint.url + path);
    return { status: res.status, body: await res.text() };
  };
  const m = await get("/custom-metrics");
  assert.equal(m.status, 200);
  assert.match(
    m.body,
    /csi_sidecar_operations_seconds_count\{driver_name="unknown-driver",method_name="\/csi.v1.Identity\/Probe",grpc_status_code="OK"\} 1/,
  );
  assert.equal((await get("/metrics")).status, 404);
  assert.deepEqual(await get("/healthz"), { status: 200, body: "ok" });
  assert.deepEqual(await get("/healthz/leader-election"), { status: 200, body: "ok" });
  assert.equal((await get("/healthz/nope")).status, 404);

  leaderHealthy = false;
  const failed = await get("/healthz");
  assert.equal(failed.status, 500);
  assert.match(failed.body, /\[\+\]ping ok/);
  assert.match(failed.body, /\[-\]leader-election failed: reason withheld/);
  assert.doesNotMatch(failed.body, /overdue/);
  const verbose = await get("/healthz/leader-election?verbose");
  assert.equal(verbose.status, 500);
  assert.match(verbose.body, /lease renewal overdue by 30s/);
  assert.equal((await get("/healthz/ping")).status, 200);
  const post = await fetch(endpoint.url + "/healthz", { method: "POST" });
  assert.equal(post.status, 405);
});

test("the server closes on abort and frees its port", async () => {
  const controller = new AbortController();
  const endpoint = await startHttpEndpoint(
    { address: "127.0.0.1:0", registry: new Registry() },
    controller.signal,
  );
  controller.abort();
  await endpoint.stopped;
  await assert.rejects(fetch(endpoint.url + "/healthz"));
});

test("a port in use is an error at start, not a crash later", async (t) => {
  const controller = new AbortController();
  t.after(() => controller.abort());
  const first = await startHttpEndpoint(
    { address: "127.0.0.1:0", registry: new Registry() },
    controller.signal,
  );
  await assert.rejects(
    startHttpEndpoint({ address: `127.0.0.1:${first.port}`, registry: new Registry() }, controller.signal),
    /EADDRINUSE/,
  );
});

test("':port' binds all interfaces as Go does (drop-in for kubelet probes on the pod IP)", async (t) => {
  const controller = new AbortController();
  const endpoint = await startHttpEndpoint({ address: ":0", registry: new Registry() }, controller.signal);
  t.after(async () => {
    controller.abort();
    await endpoint.stopped;
  });
  assert.equal(endpoint.host, "");
  assert.equal(endpoint.url, `http://127.0.0.1:${endpoint.port}`);
  const external = Object.values(networkInterfaces())
    .flat()
    .find((i) => i && !i.internal && i.family === "IPv4");
  const res = await fetch(endpoint.url + "/healthz");
  assert.equal(res.status, 200);
  if (external) {
    const viaPodIp = await fetch(`http://${external.address}:${endpoint.port}/healthz`);
    assert.equal(viaPodIp.status, 200, `reachable on ${external.address}`);
  }
});

test("a loopback address is reachable on loopback only", async (t) => {
  const controller = new AbortController();
  const endpoint = await startHttpEndpoint(
    { address: "127.0.0.1:0", registry: new Registry() },
    controller.signal,
  );
  t.after(async () => {
    controller.abort();
    await endpoint.stopped;
  });
  const external = Object.values(networkInterfaces())
    .flat()
    .find((i) => i && !i.internal && i.family === "IPv4");
  if (!external) {
    t.skip("no non-loopback IPv4 interface to check against");
    return;
  }
  await assert.rejects(fetch(`http://${external.address}:${endpoint.port}/healthz`));
});
