// Tests of `csikit fault-proxy` as a CO meets it: a real `csikit hostpath` process behind a real
// `csikit fault-proxy` process, a real CSI client in front. Transparency (csikit sanity passes
// through it; bytes with unknown fields, metadata, unknown methods and streams reach a gRPC peer
// unchanged), every fault kind, rules changed at run time over the API, the Nth-call and seeded
// rate triggers (the pattern a seed gives is the one FaultRules predicts from the seed alone),
// the log line of each fault, and bad input refused naming what is wrong.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { silentLogger } from "../base/index.ts";
import { CsiClient, GrpcStatus } from "../csi/index.ts";
import { FaultRules, parseRuleSpec, startFaultProxy } from "../faultproxy/index.ts";
import { defer, tempDir } from "../../test/harness/cleanup.ts";
import { subtests } from "../../test/harness/subtests.ts";
import {
  MAIN,
  exitOf,
  startCsikit,
  startHostpathProcess,
  type CsikitProcess,
} from "../../test/harness/csikit-process.ts";
import { until } from "../../test/harness/until.ts";

const { subtest, runAll } = subtests();

const SEED = 42;
let dir = "";
let driverSocket = "";
let proxySocket = "";
let api = "";
let proxy: CsikitProcess;
let client: CsiClient;

interface LogLine {
  msg: string;
  [key: string]: unknown;
}

function logLines(process: CsikitProcess): LogLine[] {
  return process
    .output()
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as LogLine);
}

/** Starts `csikit fault-proxy` in front of the shared driver; resolves once it logs its API address. */
async function startProxy(
  t: TestContext,
  socket: string,
  args: readonly string[],
): Promise<{ process: CsikitProcess; api: string }> {
  const process = startCsikit(t, [
    "fault-proxy",
    `--listen=${socket}`,
    `--csi-address=${driverSocket}`,
    "--log-format=json",
    ...args,
  ]);
  const serving = await until(
    () => {
      if (process.child.exitCode !== null) throw new Error(`fault-proxy exited: ${process.output()}`);
      return logLines(process).find((line) => line.msg === "fault proxy serving");
    },
    "the fault proxy to serve",
    { timeoutMs: 60_000 },
  );
  return { process, api: String(serving.api) };
}

async function rulesApi(
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${api}${path}`, {
    method,
    signal: AbortSignal.timeout(10_000),
    ...(body === undefined
      ? {}
      : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
  });
  const text = await response.text();
  return { status: response.status, body: text === "" ? undefined : JSON.parse(text) };
}

async function setRules(rules: unknown[]): Promise<void> {
  const response = await rulesApi("PUT", "", { rules });
  assert.equal(response.status, 200, JSON.stringify(response.body));
}

const OK: number = GrpcStatus.OK;

/** The gRPC code a call ends with (0 = OK). */
async function codeOf(call: Promise<unknown>): Promise<number> {
  try {
    await call;
    return GrpcStatus.OK;
  } catch (error) {
    return (error as { code: number }).code;
  }
}

function injected(rule: string): LogLine[] {
  return logLines(proxy).filter((line) => line.msg === "fault injected" && line.rule === rule);
}

/** The rule's "fault injected" lines once there are `count` (the log arrives over a pipe, bounded wait). */
function injectedLines(rule: string, count: number): Promise<LogLine[]> {
  return until(
    () => injected(rule).length >= count && injected(rule),
    `${count} "fault injected" lines of rule ${rule}`,
  );
}

subtest("a rule from the flags fires on the Nth call only, with its message, and is logged", async () => {
  assert.equal((await client.identity.getPluginInfo({})).name, "hostpath.csi.k8s.io");
  await assert.rejects(client.identity.getPluginInfo({}), (error: { code: number; details: string }) => {
    assert.equal(error.code, GrpcStatus.UNAVAILABLE);
    assert.equal(error.details, "injected: the second call");
    return true;
  });
  assert.equal((await client.identity.getPluginInfo({})).name, "hostpath.csi.k8s.io");
  const lines = await injectedLines("r1", 1);
  assert.equal(lines.length, 1);
  assert.deepEqual(
    { method: lines[0]!.method, call: lines[0]!.call, action: lines[0]!.action, code: lines[0]!.code },
    { method: "/csi.v1.Identity/GetPluginInfo", call: 2, action: "code", code: "UNAVAILABLE" },
  );
});

subtest("transparent: csikit sanity passes through the proxy", async () => {
  await setRules([]);
  // The driver runs in a private mount namespace (its mounts vanish with it), so the suite's
  // checks of mounts from outside (Lifecycle) cannot see them: they are left out here and run
  // in hostpath's own sanity tests.
  const sanity = spawn(
    process.execPath,
    [
      MAIN,
      "sanity",
      `--endpoint=${proxySocket}`,
      `--target-dir=${join(dir, "mnt")}`,
      `--staging-dir=${join(dir, "stg")}`,
      "--ginkgo.skip=Lifecycle",
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  sanity.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  sanity.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  const code = await new Promise<number | null>((resolve) => sanity.on("close", resolve));
  const summary = /^(\d+) passed, (\d+) failed, (\d+) skipped$/m.exec(output);
  assert.ok(summary, output);
  assert.equal(summary[2], "0", output);
  assert.ok(Number(summary[1]) > 100, output);
  assert.equal(code, 0, output);
});

subtest("bytes, unknown fields, metadata, unknown methods and streams pass unchanged", async (t) => {
  const scratch = await tempDir(t, "csikit-fault-proxy-echo-");
  const peerSocket = join(scratch, "peer.sock");
  // A gRPC peer that answers every call with the request's own bytes and metadata.
  const peer = new grpc.Server();
  const raw = { serialize: (b: Buffer) => b, deserialize: (b: Buffer) => b };
  peer.register(
    "/csi.v1.Identity/GetPluginInfo",
    (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
      call.sendMetadata(new grpc.Metadata());
      const trailer = new grpc.Metadata();
      trailer.set("x-echo", String(call.metadata.get("x-test")[0] ?? ""));
      callback(null, call.request, trailer);
    },
    raw.serialize,
    raw.deserialize,
    "unary",
  );
  peer.register(
    "/example.Future/Stream",
    (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
      for (let i = 0; i < 3; i++) call.write(Buffer.concat([call.request, Buffer.from([i])]));
      call.end();
    },
    raw.serialize,
    raw.deserialize,
    "serverStream",
  );
  await new Promise<void>((resolve, reject) =>
    peer.bindAsync(`unix://${peerSocket}`, grpc.ServerCredentials.createInsecure(), (error) =>
      error ? reject(error) : resolve(),
    ),
  );
  defer(t, () => new Promise<void>((resolve) => peer.tryShutdown(() => resolve())));
  const front = await startFaultProxy({
    listen: join(scratch, "front.sock"),
    target: peerSocket,
    rules: new FaultRules(1),
    logger: silentLogger,
    onExit: () => assert.fail("no exit rule"),
  });
  defer(t, () => front.close());
  const channel = new grpc.Client(`unix://${front.path}`, grpc.credentials.createInsecure());
  defer(t, () => channel.close());
  // Field 1 (a string GetPluginInfoRequest does not have) and field 99 (no message has it).
  const request = Buffer.from([0x0a, 0x03, 0x61, 0x62, 0x63, 0x98, 0x06, 0x2a]);
  const metadata = new grpc.Metadata();
  metadata.set("x-test", "through-the-proxy");
  const trailers = new Promise<grpc.Metadata>((resolve, reject) => {
    const call = channel.makeUnaryRequest(
      "/csi.v1.Identity/GetPluginInfo",
      raw.serialize,
      raw.deserialize,
      request,
      metadata,
      { deadline: Date.now() + 10_000 },
      (error, response) => {
        if (error) reject(error);
        else assert.deepEqual(response, request);
      },
    );
    call.on("status", (status: grpc.StatusObject) => resolve(status.metadata));
  });
  assert.equal((await trailers).get("x-echo")[0], "through-the-proxy");
  const stream = channel.makeServerStreamRequest(
    "/example.Future/Stream",
    raw.serialize,
    raw.deserialize,
    request,
    new grpc.Metadata(),
    {
      deadline: Date.now() + 10_000,
    },
  );
  const messages: Buffer[] = [];
  for await (const message of stream as AsyncIterable<Buffer>) messages.push(message);
  assert.deepEqual(
    messages,
    [0, 1, 2].map((i) => Buffer.concat([request, Buffer.from([i])])),
  );
  // A method the peer does not serve: its UNIMPLEMENTED comes back as the peer sent it.
  const missing = await codeOf(
    new Promise((resolve, reject) =>
      channel.makeUnaryRequest(
        "/example.Future/Nothing",
        raw.serialize,
        raw.deserialize,
        request,
        new grpc.Metadata(),
        { deadline: Date.now() + 10_000 },
        (error, value) => (error ? reject(error) : resolve(value)),
      ),
    ),
  );
  assert.equal(missing, GrpcStatus.UNIMPLEMENTED);
});

subtest(
  "code before the driver: the driver never sees the call; after: it did the work, the caller sees the fault",
  async () => {
    const count = async (): Promise<number> => (await client.controller.listVolumes({})).entries.length;
    const capability = [{ mount: {}, accessMode: { mode: "SINGLE_NODE_WRITER" as const } }];
    await setRules([
      { id: "full", method: "CreateVolume", action: "code", code: "RESOURCE_EXHAUSTED", message: "no space" },
    ]);
    const before = await count();
    assert.equal(
      await codeOf(client.controller.createVolume({ name: "fp-before", volumeCapabilities: capability })),
      GrpcStatus.RESOURCE_EXHAUSTED,
    );
    assert.equal(await count(), before);
    await setRules([{ id: "lost", spec: "CreateVolume:code=DEADLINE_EXCEEDED:after" }]);
    assert.equal(
      await codeOf(client.controller.createVolume({ name: "fp-after", volumeCapabilities: capability })),
      GrpcStatus.DEADLINE_EXCEEDED,
    );
    assert.equal(await count(), before + 1);
    assert.equal((await injectedLines("lost", 1))[0]!.driverStatus, "0");
    // The CO retries, as a provisioner does: CreateVolume is idempotent, the retry finds the volume.
    await setRules([]);
    const retried = await client.controller.createVolume({
      name: "fp-after",
      volumeCapabilities: capability,
    });
    assert.equal(await count(), before + 1);
    await client.controller.deleteVolume({ volumeId: retried.volume!.volumeId });
  },
);

subtest(
  "latency delays a call; timeout and hang leave it unanswered until the caller's deadline",
  async () => {
    await setRules([{ id: "slow", method: "Identity/Probe", action: "latency", latency: "3s" }]);
    // Past a deadline shorter than the latency; answered within a longer one.
    assert.equal(await codeOf(client.identity.probe({}, { timeoutMs: 500 })), GrpcStatus.DEADLINE_EXCEEDED);
    assert.equal(await codeOf(client.identity.probe({}, { timeoutMs: 60_000 })), GrpcStatus.OK);
    assert.equal((await injectedLines("slow", 2)).at(-1)!.latency, "3s");
    for (const action of ["timeout", "hang"]) {
      await setRules([{ id: action, method: "/csi.v1.Identity/Probe", action }]);
      assert.equal(
        await codeOf(client.identity.probe({}, { timeoutMs: 1000 })),
        GrpcStatus.DEADLINE_EXCEEDED,
        action,
      );
      await injectedLines(action, 1);
    }
    // A hung call the caller cancels is released at the proxy (and the rule counted it).
    const abort = new AbortController();
    const hung = codeOf(client.identity.probe({}, { signal: abort.signal, timeoutMs: 60_000 }));
    await injectedLines("hang", 2);
    abort.abort();
    assert.equal(await hung, GrpcStatus.CANCELLED);
    await setRules([]);
    assert.equal(await codeOf(client.identity.probe({})), GrpcStatus.OK);
  },
);

subtest("drop closes the caller's connection (UNAVAILABLE); the next call reconnects", async () => {
  await setRules([{ id: "cut", spec: "Node/*:drop:nth=1" }]);
  assert.equal(await codeOf(client.node.nodeGetInfo({})), GrpcStatus.UNAVAILABLE);
  assert.equal((await client.node.nodeGetInfo({})).nodeId, "csi-node");
});

subtest(
  "rules change at run time over the API, with counters; bad rules are refused naming the field",
  async () => {
    await setRules([]);
    const added = await rulesApi("POST", "", { spec: "ControllerGetCapabilities:code=INTERNAL:times=1" });
    assert.equal(added.status, 201);
    const id = (added.body as { id: string }).id;
    assert.equal(await codeOf(client.controller.controllerGetCapabilities({})), GrpcStatus.INTERNAL);
    assert.equal(await codeOf(client.controller.controllerGetCapabilities({})), GrpcStatus.OK);
    const one = await rulesApi("GET", `/${id}`);
    assert.deepEqual(
      {
        calls: (one.body as { calls: number }).calls,
        injected: (one.body as { injected: number }).injected,
        spec: (one.body as { spec: string }).spec,
      },
      { calls: 2, injected: 1, spec: "ControllerGetCapabilities:code=INTERNAL:times=1" },
    );
    assert.equal((await rulesApi("POST", "", { id, method: "Probe", action: "hang" })).status, 409);
    assert.equal(
      (await rulesApi("PUT", `/${id}`, { method: "Probe", action: "code", code: "ABORTED" })).status,
      200,
    );
    assert.equal(await codeOf(client.identity.probe({})), GrpcStatus.ABORTED);
    assert.equal((await rulesApi("DELETE", `/${id}`)).status, 204);
    assert.equal((await rulesApi("DELETE", `/${id}`)).status, 404);
    assert.equal(await codeOf(client.identity.probe({})), GrpcStatus.OK);
    const bad: [unknown, RegExp][] = [
      [
        { method: "Probe", action: "explode" },
        /rule\.action: want one of latency, code, timeout, hang, drop, exit/,
      ],
      [{ method: "Probe", action: "code", code: "TEAPOT" }, /rule\.code: "TEAPOT" is not a gRPC error code/],
      [
        { method: "Probe", action: "code", code: "INTERNAL", rate: 2 },
        /rule\.rate: want a probability from 0 to 1, got 2/,
      ],
      [{ method: "Probe", action: "hang", colour: "red" }, /rule\.colour: unknown field/],
      [{ spec: "Probe:latency" }, /latency needs a duration/],
      [
        { method: "Probe", action: "code", code: "INTERNAL", nth: 1, rate: 0.5 },
        /give nth or rate, not both/,
      ],
    ];
    for (const [body, message] of bad) {
      const response = await rulesApi("POST", "", body);
      assert.equal(response.status, 400, JSON.stringify(body));
      assert.match((response.body as { error: string }).error, message);
    }
    const garbled = await fetch(api, {
      method: "PUT",
      body: "{rules: [",
      signal: AbortSignal.timeout(10_000),
    });
    assert.equal(garbled.status, 400);
    assert.equal((await rulesApi("GET", "")).status, 200);
    await until(
      () =>
        logLines(proxy).some((line) => line.msg === "fault rules changed" && line.change === `remove ${id}`),
      "the rule removal in the log",
    );
  },
);

subtest(
  "a seeded rate replays: the same seed gives the same faults, the one predicted from the seed",
  async () => {
    const spec = "Identity/Probe:code=UNAVAILABLE:rate=0.5";
    const run = async (): Promise<boolean[]> => {
      await setRules([{ id: "coin", spec }]);
      const pattern: boolean[] = [];
      for (let i = 0; i < 16; i++) pattern.push((await codeOf(client.identity.probe({}))) !== OK);
      return pattern;
    };
    const predict = (seed: number): boolean[] => {
      const rules = new FaultRules(seed, [{ ...parseRuleSpec(spec, () => "x"), id: "coin" }]);
      return Array.from({ length: 16 }, () => rules.decide("/csi.v1.Identity/Probe") !== undefined);
    };
    const first = await run();
    assert.deepEqual(await run(), first);
    assert.deepEqual(first, predict(SEED));
    assert.notDeepEqual(predict(SEED + 1), first);
    assert.ok(first.includes(true) && first.includes(false), JSON.stringify(first));
    await setRules([]);
  },
);

subtest("exit ends the proxy with its code; the caller sees the connection go", async (t) => {
  const socket = join(dir, "exit.sock");
  const exiting = await startProxy(t, socket, ["--fault=Probe:exit=3", "--api-address="]);
  const viaExiting = CsiClient.connect(socket, { timeoutMs: 30_000 });
  defer(t, () => viaExiting.close());
  assert.equal(await codeOf(viaExiting.identity.probe({})), GrpcStatus.UNAVAILABLE);
  assert.equal(await exitOf(exiting.process), 3);
  // Exited: its output is complete.
  assert.ok(
    logLines(exiting.process).some((line) => line.msg === "fault proxy exiting by rule" && line.code === 3),
  );
});

subtest("bad flags are refused naming the problem", async (t) => {
  const cases: [string[], RegExp][] = [
    [["--csi-address=/x.sock"], /flag -listen is required/],
    [["--listen=/tmp/x.sock", "--csi-address=/tmp/x.sock"], /cannot serve the driver's own socket/],
    [
      ["--listen=/tmp/a.sock", "--csi-address=/tmp/b.sock", "--fault=Probe:explode"],
      /flag -fault: fault "Probe:explode": unknown action "explode"/,
    ],
    [
      ["--listen=/tmp/a.sock", "--csi-address=/tmp/b.sock", "--fault=Probe:code=INTERNAL:nth=0"],
      /nth: want a whole number >= 1/,
    ],
    [
      ["--listen=/tmp/a.sock", "--csi-address=tcp://h:1"],
      /flag -csi-address: CSI endpoint "tcp:\/\/h:1" is not supported/,
    ],
  ];
  for (const [args, message] of cases) {
    const run = startCsikit(t, ["fault-proxy", ...args]);
    assert.equal(await exitOf(run), 2, run.output());
    assert.match(run.output(), message);
  }
  const open = startCsikit(t, [
    "fault-proxy",
    `--listen=${join(dir, "open.sock")}`,
    `--csi-address=${driverSocket}`,
    "--api-address=0.0.0.0:0",
  ]);
  assert.equal(await exitOf(open), 2);
  assert.match(open.output(), /flag -api-address: API address "0\.0\.0\.0:0" is not on loopback/);
});

test("csikit fault-proxy between a real client and a real csikit hostpath process", async (t) => {
  dir = await tempDir(t, "csikit-fault-proxy-");
  driverSocket = (await startHostpathProcess(t, dir)).socket;
  proxySocket = join(dir, "proxy.sock");
  const started = await startProxy(t, proxySocket, [
    `--seed=${SEED}`,
    "--fault=GetPluginInfo:code=UNAVAILABLE:nth=2:message=injected: the second call",
  ]);
  proxy = started.process;
  api = started.api;
  client = CsiClient.connect(proxySocket, { timeoutMs: 30_000 });
  defer(t, () => client.close());

  await runAll(t);
});
