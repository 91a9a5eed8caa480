// CsiClient.waitForReady against real servers on real Unix sockets, with a FakeClock for the 1s
// probe interval: which Probe outcomes keep waiting (connection not up, ready:false,
// DEADLINE_EXCEEDED) and which reject at once (any other code), as csi-lib-utils' ProbeForever.

import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import { createServer } from "node:http2";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { FakeClock, errorMessage, memoryLogger, settle } from "../base/index.ts";
import {
  CsiError,
  GrpcStatus,
  serveCsi,
  type CsiServer,
  type IdentityService,
  type ProbeResponseInput,
} from "./index.ts";
import { connect } from "../../test/harness/csi.ts";
import { PROBE_INTERVAL_MS, untilNextTick } from "./ready.ts";
import { until } from "../../test/harness/until.ts";
import { defer, tempDir } from "../../test/harness/cleanup.ts";

/** A server whose Probe is `probe`; returns the server and the number of probes it answered. */
async function serveProbe(
  t: TestContext,
  endpoint: string,
  probe: IdentityService["probe"],
): Promise<{ server: CsiServer; probes: () => number }> {
  let count = 0;
  const server = await serveCsi({
    endpoint,
    identity: {
      getPluginInfo: async () => ({ name: "ready.csi.k8s.io", vendorVersion: "1" }),
      getPluginCapabilities: async () => ({ capabilities: [] }),
      probe: (request, context) => {
        count++;
        return probe(request, context);
      },
    },
  });
  defer(t, () => server.close());
  return { server, probes: () => count };
}

/** Tracks a promise so a test can say "still pending" without waiting on it. */
function track(promise: Promise<void>): { settled: () => boolean; result: Promise<unknown> } {
  let settled = false;
  const result = promise.then(
    () => {
      settled = true;
      return undefined;
    },
    (error: unknown) => {
      settled = true;
      return error;
    },
  );
  return { settled: () => settled, result };
}

function assertCode(error: unknown, code: number, pattern: RegExp): void {
  assert.ok(error instanceof Error, `expected an error, got ${String(error)}`);
  assert.ok("code" in error, errorMessage(error));
  assert.equal(error.code, code, errorMessage(error));
  assert.match(error.message, pattern);
}

const failFast: [string, number][] = [
  ["INTERNAL", GrpcStatus.INTERNAL],
  ["FAILED_PRECONDITION", GrpcStatus.FAILED_PRECONDITION],
  ["UNIMPLEMENTED", GrpcStatus.UNIMPLEMENTED],
  // Sent by the driver on a live connection: not "the connection is not up", so it ends the wait.
  ["UNAVAILABLE from the driver", GrpcStatus.UNAVAILABLE],
];

for (const [name, code] of failFast) {
  test(`Probe failing with ${name} rejects at once with that code, without a second probe`, async (t) => {
    const dir = await tempDir(t);
    const { server, probes } = await serveProbe(t, join(dir, "csi.sock"), async () => {
      throw new CsiError(code, "the backing store is broken");
    });
    const clock = new FakeClock();
    const client = connect(t, server.path);
    // The clock never moves: rejecting proves no interval was waited.
    const error = await client.waitForReady({ clock }).then(
      () => assert.fail("waitForReady resolved"),
      (reason: unknown) => reason,
    );
    assertCode(error, code, /csi\.sock failed Probe with .*: the backing store is broken/);
    assert.equal(probes(), 1);
    assert.equal(clock.pendingTimers, 0, "no timer is left behind");
  });
}

test("a socket that is not up yet (UNAVAILABLE) keeps waiting, warns every 10s, and resolves once it comes up", async (t) => {
  const dir = await tempDir(t);
  const endpoint = join(dir, "late.sock");
  const { logger, lines } = memoryLogger({ verbosity: 4 });
  const clock = new FakeClock();
  const client = connect(t, endpoint, { logger });
  const wait = track(client.waitForReady({ clock }));
  await until(() => lines.some((line) => line.includes("Connecting to CSI driver")), "the connect wait", {
    timeoutMs: 30_000,
  });
  await clock.advance(10_000);
  assert.equal(lines.filter((line) => line.includes("Still connecting to CSI driver")).length, 1);
  assert.equal(wait.settled(), false, "still waiting for the socket");
  const { probes } = await serveProbe(t, endpoint, async () => ({ ready: { value: true } }));
  assert.equal(await wait.result, undefined);
  assert.equal(probes(), 1);
  assert.ok(lines.some((line) => line.includes("CSI driver is ready")));
  assert.ok(!lines.some((line) => line.includes("GRPC call")), "per-call traces stay at -v 5");
});

test("ready:false keeps waiting, probing once per interval, until ready:true", async (t) => {
  const dir = await tempDir(t);
  const answers: ProbeResponseInput[] = [
    { ready: { value: false } },
    { ready: { value: false } },
    { ready: { value: true } },
  ];
  const { server, probes } = await serveProbe(t, join(dir, "csi.sock"), async () => answers.shift() ?? {});
  const { logger, lines } = memoryLogger({ verbosity: 4 });
  const clock = new FakeClock();
  const client = connect(t, server.path, { logger });
  const wait = track(client.waitForReady({ clock }));
  await until(() => probes() === 1 && clock.pendingTimers === 1, "the wait after the first probe", {
    timeoutMs: 30_000,
  });
  assert.equal(probes(), 1);
  await clock.advance(PROBE_INTERVAL_MS - 1);
  await settle();
  assert.equal(probes(), 1, "no probe before the interval has passed");
  await clock.advance(1);
  await until(() => probes() === 2 && clock.pendingTimers === 1, "the second probe", { timeoutMs: 30_000 });
  assert.equal(wait.settled(), false);
  await clock.advance(PROBE_INTERVAL_MS);
  assert.equal(await wait.result, undefined);
  assert.equal(probes(), 3);
  assert.equal(lines.filter((line) => line.includes("ready: false")).length, 2);
});

test("DEADLINE_EXCEEDED keeps waiting, whether the driver sends it or the probe's own deadline passes", async (t) => {
  const dir = await tempDir(t);
  let call = 0;
  const { server, probes } = await serveProbe(t, join(dir, "csi.sock"), async (_request, context) => {
    call++;
    if (call === 1) throw new CsiError(GrpcStatus.DEADLINE_EXCEEDED, "the backend is slow");
    if (call === 2) {
      // Never answers: the client's 50ms per-call deadline ends this probe.
      await new Promise<void>((resolve) => context.signal.addEventListener("abort", () => resolve()));
      return {};
    }
    return { ready: { value: true } };
  });
  const clock = new FakeClock();
  const client = connect(t, server.path, { timeoutMs: 50 });
  const wait = track(client.waitForReady({ clock }));
  await until(() => probes() === 1 && clock.pendingTimers === 1, "the first probe", { timeoutMs: 30_000 });
  await clock.advance(PROBE_INTERVAL_MS);
  await until(() => probes() === 2 && clock.pendingTimers === 1, "the timed-out second probe", {
    timeoutMs: 30_000,
  });
  assert.equal(wait.settled(), false);
  // Probe 3 answers ready, but on a loaded machine its own 50ms deadline may pass first; that
  // only means one more probe (what this test is about), so keep moving the grid, bounded.
  const deadline = Date.now() + 30_000;
  while (!wait.settled()) {
    assert.ok(Date.now() < deadline, "waitForReady did not resolve after the driver became ready");
    if (clock.pendingTimers === 1) await clock.advance(PROBE_INTERVAL_MS);
    else await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.equal(await wait.result, undefined);
  assert.ok(probes() >= 3, `probes: ${probes()}`);
});

test("ready:true and a response without `ready` both resolve on the first probe", async (t) => {
  const dir = await tempDir(t);
  for (const [name, answer] of [
    ["explicit", { ready: { value: true } }],
    ["absent", {}],
  ] as const) {
    const { server, probes } = await serveProbe(t, join(dir, `${name}.sock`), async () => answer);
    const clock = new FakeClock();
    await connect(t, server.path).waitForReady({ clock });
    assert.equal(probes(), 1, name);
    assert.equal(clock.pendingTimers, 0, name);
  }
});

test("a connection lost between probes is waited for again, as a restarted driver", async (t) => {
  const dir = await tempDir(t);
  const endpoint = join(dir, "csi.sock");
  const first = await serveProbe(t, endpoint, async () => ({ ready: { value: false } }));
  const clock = new FakeClock();
  const client = connect(t, endpoint);
  const wait = track(client.waitForReady({ clock }));
  await until(() => first.probes() === 1 && clock.pendingTimers === 1, "the first probe", {
    timeoutMs: 30_000,
  });
  await first.server.close();
  await clock.advance(PROBE_INTERVAL_MS);
  const second = await serveProbe(t, endpoint, async () => ({ ready: { value: true } }));
  await until(() => wait.settled(), "the wait to end", { timeoutMs: 30_000 });
  assert.equal(await wait.result, undefined);
  assert.equal(first.probes(), 1);
  assert.equal(second.probes(), 1);
});

test("a connection dropped under a probe (UNAVAILABLE, channel no longer READY) is waited for again", async (t) => {
  const dir = await tempDir(t);
  const endpoint = join(dir, "csi.sock");
  // A hostile HTTP/2 server: it accepts the connection, then cuts it when the Probe arrives and
  // stops listening, as a driver that crashes mid-call.
  const hostile = createServer();
  let cut = 0;
  hostile.on("stream", (stream) => {
    cut++;
    hostile.close();
    stream.session?.socket.destroy();
  });
  await new Promise<void>((resolve) => hostile.listen(endpoint, resolve));
  defer(t, () => new Promise<void>((resolve) => hostile.close(() => resolve())));
  const { logger, lines } = memoryLogger({ verbosity: 4 });
  const clock = new FakeClock();
  const client = connect(t, endpoint, { logger });
  const wait = track(client.waitForReady({ clock }));
  await until(() => lines.some((line) => line.includes("connection was lost")), "the dropped probe", {
    timeoutMs: 30_000,
  });
  assert.equal(cut, 1);
  assert.equal(wait.settled(), false);
  await rm(endpoint, { force: true });
  const { probes } = await serveProbe(t, endpoint, async () => ({}));
  await clock.advance(PROBE_INTERVAL_MS);
  assert.equal(await wait.result, undefined);
  assert.equal(probes(), 1);
});

test("timeoutMs gives up with DEADLINE_EXCEEDED naming the last reason; an abort rejects with its reason", async (t) => {
  const dir = await tempDir(t);
  const { server, probes } = await serveProbe(t, join(dir, "csi.sock"), async () => ({
    ready: { value: false },
  }));
  const clock = new FakeClock();
  const client = connect(t, server.path);
  const wait = track(client.waitForReady({ clock, timeoutMs: 2500 }));
  await until(() => probes() === 1 && clock.pendingTimers === 2, "the first probe", { timeoutMs: 30_000 });
  await clock.advance(2500);
  assertCode(
    await wait.result,
    GrpcStatus.DEADLINE_EXCEEDED,
    /csi\.sock was not ready within 2500ms: the driver answered ready: false/,
  );
  assert.equal(clock.pendingTimers, 0);

  const absent = connect(t, join(dir, "absent.sock"));
  const controller = new AbortController();
  const aborted = track(absent.waitForReady({ signal: controller.signal, clock }));
  controller.abort(new Error("stop waiting"));
  assert.match(String(await aborted.result), /stop waiting/);
  await assert.rejects(absent.waitForReady({ signal: controller.signal }), /stop waiting/);
  assert.equal(clock.pendingTimers, 0);
});

test("ticks form a fixed grid: a probe that overran a tick is followed at once, never by a burst", () => {
  const anchor = 10_000;
  const cases: [string, number, number, number][] = [
    ["quick probe on the first tick", anchor, anchor + 5, 995],
    ["quick probe on a later tick", anchor + 3000, anchor + 3010, 990],
    ["probe overran one tick", anchor, anchor + 1500, 0],
    ["probe overran many ticks", anchor + 1000, anchor + 12_345, 0],
    ["late probe after a reconnect", anchor + 2400, anchor + 2450, 550],
  ];
  for (const [name, started, now, expected] of cases) {
    assert.equal(untilNextTick(anchor, started, now), expected, name);
  }
});
