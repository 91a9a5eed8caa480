// `npm run bench:apiserver`: throughput and latency of the embedded API server, run as its own
// process over HTTPS with a real SQLite state directory (a temp dir, removed at the end even on
// failure). Scenarios: create / get / update-with-resourceVersion / merge patch of ConfigMaps at
// bounded concurrency, list of the created set unpaged and paged, and watch fan-out (W watchers ×
// E events, per-delivery latency). Raw keep-alive HTTPS is the baseline; one row per scenario
// family goes through @kubernetes/client-node, which is what real components pay. Results are
// printed as Markdown tables; nothing here asserts on a number. `--quick` is a smoke run.

import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { mkdtemp, rm } from "node:fs/promises";
import { join } from "node:path";
import {
  CoreV1Api,
  KubeConfig,
  ServerConfiguration,
  createConfiguration,
  type RequestContext,
  type ResponseContext,
} from "@kubernetes/client-node";
// client-node's own HTTP library; imported only to hand it one shared keep-alive pool.
import { Agent as UndiciAgent } from "undici";
import { GVR } from "../src/api/index.ts";
import { KubeClient, loadKubeConfig } from "../src/kube/index.ts";
import type { FlagSpecs } from "../src/base/index.ts";
import { benchFlags } from "./cli.ts";
import { RawClient } from "./apiserver/raw-client.ts";
import { startServerProcess, type ServerProcess } from "./apiserver/server-process.ts";
import {
  medianOf,
  ratio,
  renderTable,
  runBounded,
  summarize,
  type RunResult,
  type Summary,
} from "./stats.ts";
import { runWatchFanout } from "./apiserver/watch-fanout.ts";
import { runDiskSuite } from "./apiserver/disk-suite.ts";
import { runPutFanout } from "./apiserver/put-fanout.ts";
// The benchmark's protobuf client encodes with the server's own codec (a Go client would use
// k8s.io/api's generated marshalers; the bytes are the same).
import { encodeProtobufObject, PROTOBUF_MEDIA_TYPE } from "../src/apiserver/encoding/protobuf.ts";

const PB_ACCEPT = `${PROTOBUF_MEDIA_TYPE}, application/json`;

const FLAGS: FlagSpecs = {
  quick: { type: "bool", help: "Small counts for a smoke run (well under 20 s)." },
  watchers: { type: "int", default: "100", help: "Watch streams in the fan-out scenario." },
  events: { type: "int", default: "10000", help: "Events written in the fan-out scenario." },
  rate: {
    type: "int",
    default: "400",
    help: "Target write rate of the fan-out scenario, events/s; 0 = unpaced.",
  },
  reps: { type: "int", default: "3", help: "Repetitions of the short scenarios; each cell is the median." },
  concurrency: { type: "int", default: "16", help: "Requests in flight in the throughput scenarios." },
  suite: {
    type: "string",
    default: "all",
    help:
      "Which scenarios: disk (durable writes, real disk vs tmpfs), fanout (PUTs with N JSON/protobuf watchers), " +
      "classic (per-verb and client tables), all.",
  },
  "disk-dir": {
    type: "string",
    default: "",
    help: "Parent of the real-disk state dir of the disk suite (default: the OS temp dir).",
  },
  "tmpfs-dir": {
    type: "string",
    default: "/dev/shm",
    help: "Parent of the tmpfs state dir of the disk suite.",
  },
  "watcher-counts": {
    type: "string",
    default: "0,10,100,500",
    help: "Watcher counts of the disk suite's PUT fan-out scenario, comma-separated.",
  },
  "server-cpu-prof": {
    type: "string",
    help: "Write a V8 CPU profile of the server process into this directory (open it in Chrome DevTools).",
  },
};

interface Sizes {
  creates: number;
  gets: number;
  updates: number;
  patches: number;
  lists: number;
  pageSize: number;
  watchers: number;
  events: number;
  reps: number;
}

const CLIENT_NOTE =
  "ratio: ops/s against raw https. client-node: kc.makeApiClient(CoreV1Api) as is (a new undici Agent, " +
  "so a new TLS connection, per request; runs 1/4 of the count). shared pool: the same API with a " +
  "middleware that sets one keep-alive undici Agent (what src/kube's KubeClient does for its typed APIs). " +
  "KubeClient.get: src/kube's generic path (one keep-alive node:https agent per client; 1/4 of the count), " +
  "qps/burst unlimited. " +
  "srv CPU µs/op: server process CPU time over all reps ÷ ops.";
const PAYLOAD = "x".repeat(256); // a ConfigMap of ordinary size, not an empty shell
const NS = "bench-objects";

async function main(): Promise<number> {
  const flags = benchFlags(
    "apiserver",
    FLAGS,
    "Benchmarks the embedded API server (child process, HTTPS, SQLite) and prints Markdown tables.",
  );
  const quick = flags.bool("quick");
  const positive = (name: string): number => {
    const value = flags.number(name);
    if (!Number.isInteger(value) || value < 1)
      throw new Error(`--${name}: want a positive integer, got ${value}`);
    return value;
  };
  const sizes: Sizes = quick
    ? {
        creates: 200,
        gets: 500,
        updates: 200,
        patches: 100,
        lists: 3,
        pageSize: 50,
        watchers: flags.isSet("watchers") ? positive("watchers") : 10,
        events: flags.isSet("events") ? positive("events") : 500,
        reps: flags.isSet("reps") ? positive("reps") : 1,
      }
    : {
        creates: 2000,
        gets: 5000,
        updates: 2000,
        patches: 1000,
        lists: 5,
        pageSize: 500,
        watchers: positive("watchers"),
        events: positive("events"),
        reps: positive("reps"),
      };
  const concurrency = positive("concurrency");
  const rate = flags.number("rate");
  if (!Number.isInteger(rate) || rate < 0) throw new Error(`--rate: want an integer >= 0, got ${rate}`);

  const suite = flags.string("suite");
  if (!["all", "disk", "fanout", "classic"].includes(suite))
    throw new Error(`--suite: want all, disk, fanout or classic, got ${JSON.stringify(suite)}`);
  const watcherCounts = flags
    .string("watcher-counts")
    .split(",")
    .map((part) => Number(part.trim()));
  if (watcherCounts.some((n) => !Number.isInteger(n) || n < 0))
    throw new Error(
      `--watcher-counts: want comma-separated integers >= 0, got ${flags.string("watcher-counts")}`,
    );
  if (suite === "fanout") {
    const cpuProfileDir = flags.string("server-cpu-prof");
    await runPutFanout({
      dir: flags.string("tmpfs-dir"),
      watcherCounts,
      formats: ["json", "protobuf"],
      puts: quick ? 200 : 1_000,
      rounds: sizes.reps,
      ...(cpuProfileDir !== "" ? { cpuProfileDir } : {}),
      out: (text) => void process.stdout.write(text + "\n"),
      progress,
    });
    return 0;
  }
  if (suite !== "classic") {
    await runDiskSuite({
      diskDir: flags.string("disk-dir") || tmpdir(),
      tmpfsDir: flags.string("tmpfs-dir"),
      quick,
      watcherCounts,
      out: (text) => void process.stdout.write(text + "\n"),
      progress,
      ...(flags.string("server-cpu-prof") !== "" ? { cpuProfileDir: flags.string("server-cpu-prof") } : {}),
    });
    if (suite === "disk") return 0;
  }

  const cpu = cpus();
  process.stdout.write(
    `## csikit API server benchmark${quick ? " (--quick)" : ""}\n\n` +
      `machine: ${cpu.length} × ${cpu[0]?.model.trim() ?? "unknown cpu"}, ` +
      `${(totalmem() / 2 ** 30).toFixed(1)} GiB, load ${loadavg()
        .map((l) => l.toFixed(2))
        .join(" ")}; node ${process.version} (${process.platform}/${process.arch})\n` +
      `server: child process, HTTPS on 127.0.0.1, SQLite (WAL, synchronous=FULL) in ${tmpdir()}\n` +
      `clients: raw node:https keep-alive (${concurrency} sockets, ${concurrency} in flight) and ` +
      `@kubernetes/client-node (same bound); short scenarios: median of ${sizes.reps} rep(s)\n\n`,
  );

  const stateDir = await mkdtemp(join(tmpdir(), "csikit-bench-apiserver-"));
  let server: ServerProcess | undefined;
  let raw: RawClient | undefined;
  let dispatcher: UndiciAgent | undefined;
  const interrupted = (): void => {
    // The finally below cleans up too (both are idempotent); this path exits without waiting
    // for the scenarios, whose in-flight requests now fail with resets nobody needs to read.
    stopping = true;
    process.stderr.write("interrupted; stopping the server and removing the state dir\n");
    // A server still starting is not known here; it stops itself when our stdin pipe closes.
    void (server?.stop() ?? Promise.resolve())
      .finally(() => rm(stateDir, { recursive: true, force: true }))
      .finally(() => process.exit(130));
  };
  process.once("SIGINT", interrupted);
  process.once("SIGTERM", interrupted);
  try {
    const cpuProfileDir = flags.string("server-cpu-prof");
    server = await startServerProcess({
      stateDir: join(stateDir, "state"),
      ...(cpuProfileDir !== "" ? { cpuProfileDir } : {}),
    });
    raw = new RawClient({ ...server, maxSockets: concurrency });
    const kc = new KubeConfig();
    kc.loadFromFile(server.kubeconfigPath);
    const core = kc.makeApiClient(CoreV1Api);
    dispatcher = new UndiciAgent({ connect: { ca: server.caCertPem }, connections: concurrency });
    const sharedPool = dispatcher;
    const coreShared = new CoreV1Api(
      createConfiguration({
        baseServer: new ServerConfiguration(server.url, {}),
        authMethods: { default: kc },
        promiseMiddleware: [
          {
            // Runs after the kubeconfig's auth set a fresh per-request dispatcher: replace it.
            pre: (context: RequestContext) => {
              context.setDispatcher(sharedPool);
              return Promise.resolve(context);
            },
            post: (context: ResponseContext) => Promise.resolve(context),
          },
        ],
      }),
    );
    const kube = new KubeClient({
      kubeConfig: loadKubeConfig({ kubeconfig: server.kubeconfigPath }),
      qps: 1e9,
      burst: 1e9,
      userAgent: "csikit-bench",
    });
    await runScenarios({ server, raw, core, coreShared, kube, sizes, concurrency, rate });
    return 0;
  } finally {
    await dispatcher?.close();
    raw?.close();
    await server?.stop();
    await rm(stateDir, { recursive: true, force: true });
    process.off("SIGINT", interrupted);
    process.off("SIGTERM", interrupted);
  }
}

interface ScenarioContext {
  server: ServerProcess;
  raw: RawClient;
  core: CoreV1Api;
  /** client-node with one shared keep-alive connection pool. */
  coreShared: CoreV1Api;
  /** csikit's own client (src/kube), its generic path, throttling out of the way. */
  kube: KubeClient;
  sizes: Sizes;
  concurrency: number;
  rate: number;
}

function progress(text: string): void {
  process.stderr.write(`… ${text}\n`);
}

/**
 * Runs `rep` `reps` times and reduces to medians; the server's CPU time over all reps, per
 * operation, comes along (it is what one request costs the server, whatever the client).
 */
async function repeated(
  server: ServerProcess,
  reps: number,
  rep: (r: number) => Promise<RunResult>,
): Promise<Summary> {
  const results: Summary[] = [];
  const cpuBefore = server.cpuSeconds();
  let ops = 0;
  for (let r = 0; r < reps; r++) {
    const result = await rep(r);
    ops += result.ops;
    results.push(summarize(result));
  }
  return { ...medianOf(results), serverCpuUsPerOp: ((server.cpuSeconds() - cpuBefore) * 1e6) / ops };
}

function configMap(name: string, extra: Record<string, string> = {}): object {
  return { metadata: { name, labels: { app: "bench" } }, data: { payload: PAYLOAD, ...extra } };
}

async function runScenarios(context: ScenarioContext): Promise<void> {
  const { server, raw, core, coreShared, kube, sizes, concurrency } = context;
  const measure = (rep: (r: number) => Promise<RunResult>): Promise<Summary> =>
    repeated(server, sizes.reps, rep);
  // Clients that open a TLS connection per request run a quarter of the count: their rate is
  // what matters, and the full count would dominate the whole run.
  const slow = (count: number): number => Math.max(1, Math.ceil(count / 4));
  const objects = (ns: string): string => `/api/v1/namespaces/${ns}/configmaps`;
  const out = (text: string): void => void process.stdout.write(text + "\n");

  // Warm-up: TLS sessions, JIT, the server's first-request paths.
  await runBounded(100, concurrency, async () => void (await raw.send("GET", "/api/v1/namespaces/default")));
  await raw.send("POST", "/api/v1/namespaces", { metadata: { name: NS } });

  // create — rep r fills its own namespace; rep 0's objects serve every later scenario.
  progress(`create ${sizes.creates} × ${sizes.reps}`);
  const resourceVersions: string[] = [];
  const createRaw = await measure(async (r) => {
    const ns = r === 0 ? NS : `bench-create-${r}`;
    if (r !== 0) await raw.send("POST", "/api/v1/namespaces", { metadata: { name: ns } });
    return runBounded(sizes.creates, concurrency, async (i) => {
      const created = await raw.send("POST", objects(ns), configMap(`cm-${i}`));
      if (r === 0) resourceVersions[i] = rv(created.text);
    });
  });
  const createNode = await measure(async (r) => {
    const ns = `bench-create-kc-${r}`;
    await core.createNamespace({ body: { metadata: { name: ns } } });
    return runBounded(slow(sizes.creates), concurrency, async (i) => {
      await core.createNamespacedConfigMap({ namespace: ns, body: configMap(`cm-${i}`) });
    });
  });
  const createShared = await measure(async (r) => {
    const ns = `bench-create-pool-${r}`;
    await coreShared.createNamespace({ body: { metadata: { name: ns } } });
    return runBounded(sizes.creates, concurrency, async (i) => {
      await coreShared.createNamespacedConfigMap({ namespace: ns, body: configMap(`cm-${i}`) });
    });
  });
  const createPb = await measure(async (r) => {
    const ns = `bench-create-pb-${r}`;
    await raw.send("POST", "/api/v1/namespaces", { metadata: { name: ns } });
    return runBounded(sizes.creates, concurrency, async (i) => {
      const bytes = encodeProtobufObject({ apiVersion: "v1", kind: "ConfigMap", ...configMap(`cm-${i}`) });
      await raw.sendBytes("POST", objects(ns), PB_ACCEPT, { bytes, contentType: PROTOBUF_MEDIA_TYPE });
    });
  });
  out(
    renderTable(
      `create ConfigMap (POST, ${concurrency} in flight)`,
      [
        { label: "raw https", summary: createRaw },
        {
          label: "raw https, protobuf",
          summary: createPb,
          ratio: ratio(createPb.opsPerSecond, createRaw.opsPerSecond),
        },
        {
          label: "client-node",
          summary: createNode,
          ratio: ratio(createNode.opsPerSecond, createRaw.opsPerSecond),
        },
        {
          label: "client-node, shared pool",
          summary: createShared,
          ratio: ratio(createShared.opsPerSecond, createRaw.opsPerSecond),
        },
      ],
      [CLIENT_NOTE],
    ),
  );

  progress(`get ${sizes.gets} × ${sizes.reps}`);
  const getRaw = await measure(() =>
    runBounded(sizes.gets, concurrency, async (i) => {
      await raw.send("GET", `${objects(NS)}/cm-${i % sizes.creates}`);
    }),
  );
  const getNode = await measure(() =>
    runBounded(slow(sizes.gets), concurrency, async (i) => {
      await core.readNamespacedConfigMap({ namespace: NS, name: `cm-${i % sizes.creates}` });
    }),
  );
  const getShared = await measure(() =>
    runBounded(sizes.gets, concurrency, async (i) => {
      await coreShared.readNamespacedConfigMap({ namespace: NS, name: `cm-${i % sizes.creates}` });
    }),
  );
  const getPb = await measure(() =>
    runBounded(sizes.gets, concurrency, async (i) => {
      await raw.sendBytes("GET", `${objects(NS)}/cm-${i % sizes.creates}`, PB_ACCEPT);
    }),
  );
  const getKube = await measure(() =>
    runBounded(slow(sizes.gets), concurrency, async (i) => {
      await kube.get(GVR.configMaps, `cm-${i % sizes.creates}`, { namespace: NS });
    }),
  );
  out(
    renderTable(
      `get ConfigMap (${concurrency} in flight)`,
      [
        { label: "raw https", summary: getRaw },
        {
          label: "raw https, protobuf",
          summary: getPb,
          ratio: ratio(getPb.opsPerSecond, getRaw.opsPerSecond),
        },
        { label: "client-node", summary: getNode, ratio: ratio(getNode.opsPerSecond, getRaw.opsPerSecond) },
        {
          label: "client-node, shared pool",
          summary: getShared,
          ratio: ratio(getShared.opsPerSecond, getRaw.opsPerSecond),
        },
        {
          label: "csikit KubeClient.get",
          summary: getKube,
          ratio: ratio(getKube.opsPerSecond, getRaw.opsPerSecond),
        },
      ],
      [CLIENT_NOTE],
    ),
  );

  progress(`update ${sizes.updates} × ${sizes.reps}`);
  const updateRaw = await measure((r) =>
    runBounded(sizes.updates, concurrency, async (i) => {
      const index = i % sizes.creates;
      const body = configMap(`cm-${index}`, { rep: String(r) }) as { metadata: Record<string, unknown> };
      body.metadata.resourceVersion = resourceVersions[index];
      const updated = await raw.send("PUT", `${objects(NS)}/cm-${index}`, body);
      resourceVersions[index] = rv(updated.text);
    }),
  );
  out(
    renderTable(`update ConfigMap (PUT with resourceVersion, ${concurrency} in flight)`, [
      { label: "raw https", summary: updateRaw },
    ]),
  );

  progress(`merge patch ${sizes.patches} × ${sizes.reps}`);
  const patchRaw = await measure((r) =>
    runBounded(sizes.patches, concurrency, async (i) => {
      await raw.send(
        "PATCH",
        `${objects(NS)}/cm-${i % sizes.creates}`,
        { metadata: { annotations: { "bench.csikit.io/patched": String(r) } }, data: { patched: String(r) } },
        "application/merge-patch+json",
      );
    }),
  );
  out(
    renderTable(`patch ConfigMap (application/merge-patch+json, ${concurrency} in flight)`, [
      { label: "raw https", summary: patchRaw },
    ]),
  );

  progress(`list ${sizes.creates} objects × ${sizes.lists} × ${sizes.reps}`);
  const listAll = async (pageSize: number | undefined): Promise<void> => {
    let token = "";
    let items = 0;
    do {
      const query = new URLSearchParams();
      if (pageSize !== undefined) query.set("limit", String(pageSize));
      if (token !== "") query.set("continue", token);
      const page = JSON.parse((await raw.send("GET", `${objects(NS)}?${query.toString()}`)).text) as {
        items: unknown[];
        metadata: { continue?: string };
      };
      items += page.items.length;
      token = page.metadata.continue ?? "";
    } while (token !== "");
    if (items !== sizes.creates) throw new Error(`list returned ${items} items, want ${sizes.creates}`);
  };
  const listUnpaged = await measure(() => runBounded(sizes.lists, 1, () => listAll(undefined)));
  const listPaged = await measure(() => runBounded(sizes.lists, 1, () => listAll(sizes.pageSize)));
  // Bytes only, no client-side decoding, in both formats: the server's cost is compared.
  const listJsonBytes = await measure(() =>
    runBounded(sizes.lists, 1, async () => {
      await raw.sendBytes("GET", objects(NS), "application/json");
    }),
  );
  const listPb = await measure(() =>
    runBounded(sizes.lists, 1, async () => {
      await raw.sendBytes("GET", objects(NS), PB_ACCEPT);
    }),
  );
  const listNode = await measure(() =>
    runBounded(sizes.lists, 1, async () => {
      const list = await core.listNamespacedConfigMap({ namespace: NS });
      if (list.items.length !== sizes.creates)
        throw new Error(`client-node list: ${list.items.length} items`);
    }),
  );
  out(
    renderTable(
      `list ${sizes.creates} ConfigMaps (one op = the whole set; sequential)`,
      [
        { label: "raw https, unpaged", summary: listUnpaged },
        {
          label: `raw https, limit=${sizes.pageSize}`,
          summary: listPaged,
          ratio: ratio(listPaged.opsPerSecond, listUnpaged.opsPerSecond),
        },
        {
          label: "raw https JSON, unpaged, bytes only",
          summary: listJsonBytes,
          ratio: ratio(listJsonBytes.opsPerSecond, listUnpaged.opsPerSecond),
        },
        {
          label: "raw https protobuf, unpaged, bytes only",
          summary: listPb,
          ratio: ratio(listPb.opsPerSecond, listUnpaged.opsPerSecond),
        },
        {
          label: "client-node, unpaged",
          summary: listNode,
          ratio: ratio(listNode.opsPerSecond, listUnpaged.opsPerSecond),
        },
      ],
      ["ratio: ops/s against raw https unpaged."],
    ),
  );

  const pace = context.rate > 0 ? `target ${context.rate} writes/s` : "unpaced";
  progress(`watch fan-out: ${sizes.watchers} watchers × ${sizes.events} events, ${pace}`);
  const fanoutCpuBefore = server.cpuSeconds();
  const fanout = await runWatchFanout({
    client: raw,
    namespace: "bench-watch",
    watchers: sizes.watchers,
    events: sizes.events,
    rate: context.rate,
    concurrency: Math.min(8, concurrency),
    idleTimeoutMs: 15_000,
  });
  const fanoutCpu = server.cpuSeconds() - fanoutCpuBefore;
  const lossless =
    fanout.delivered === fanout.expected && fanout.duplicates === 0 && fanout.problems.length === 0;
  const notes = [
    `delivered ${fanout.delivered} of ${fanout.expected} expected (${fanout.watchers} × ${fanout.events}), ` +
      `${fanout.duplicates} duplicates, ${fanout.outOfOrder} out of order` +
      (lossless ? " — lossless" : ""),
    `writes: POST latency (send → ack), ${pace}, ≤ ${Math.min(8, concurrency)} in flight. ` +
      "delivery rows: seconds = first send → last delivery; ops/s = deliveries per second.",
    "from ack: negative when the watch event reached the client before the write's own response.",
    `server CPU over the fan-out: ${fanoutCpu.toFixed(1)} s = ` +
      `${((fanoutCpu * 1e6) / fanout.events).toFixed(0)} µs per event, ` +
      `${((fanoutCpu * 1e6) / Math.max(1, fanout.delivered)).toFixed(1)} µs per delivery.`,
  ];
  if (!lossless) {
    notes.push(
      `!!! LOSS OR ERRORS IN WATCH FAN-OUT: ${fanout.expected - fanout.delivered} deliveries missing, ` +
        `${fanout.duplicates} duplicates`,
      ...fanout.problems.slice(0, 20).map((p) => `!!! ${p}`),
      ...(fanout.problems.length > 20 ? [`!!! … and ${fanout.problems.length - 20} more problems`] : []),
    );
  }
  out(
    renderTable(
      `watch fan-out (${fanout.watchers} watchers × ${fanout.events} events, ${pace})`,
      [
        { label: "writes (create)", summary: fanout.writes },
        { label: "delivery, from send", summary: fanout.fromSend },
        { label: "delivery, from write ack", summary: fanout.fromAck },
      ],
      notes,
    ),
  );
  if (!lossless) process.exitCode = 1;

  progress(`watch fan-out, protobuf: ${sizes.watchers} watchers × ${sizes.events} events, ${pace}`);
  const pbCpuBefore = server.cpuSeconds();
  const pbFanout = await runWatchFanout({
    client: raw,
    namespace: "bench-watch-pb",
    watchers: sizes.watchers,
    events: sizes.events,
    rate: context.rate,
    concurrency: Math.min(8, concurrency),
    idleTimeoutMs: 15_000,
    format: "protobuf",
  });
  const pbCpu = server.cpuSeconds() - pbCpuBefore;
  const pbLossless =
    pbFanout.delivered === pbFanout.expected && pbFanout.duplicates === 0 && pbFanout.problems.length === 0;
  out(
    renderTable(
      `watch fan-out, JSON vs protobuf streams (${pbFanout.watchers} watchers × ${pbFanout.events} events, ${pace})`,
      [
        { label: "JSON delivery, from write ack", summary: fanout.fromAck },
        { label: "protobuf delivery, from write ack", summary: pbFanout.fromAck },
        { label: "protobuf writes (create)", summary: pbFanout.writes },
      ],
      [
        `protobuf: delivered ${pbFanout.delivered} of ${pbFanout.expected}` +
          (pbLossless ? " — lossless" : " — LOSS OR ERRORS"),
        `server CPU: JSON ${((fanoutCpu * 1e6) / Math.max(1, fanout.delivered)).toFixed(1)} µs per delivery, ` +
          `protobuf ${((pbCpu * 1e6) / Math.max(1, pbFanout.delivered)).toFixed(1)} µs per delivery.`,
        ...pbFanout.problems.slice(0, 10).map((p) => `!!! ${p}`),
      ],
    ),
  );
  if (!pbLossless) process.exitCode = 1;
}

function rv(text: string): string {
  const object = JSON.parse(text) as { metadata?: { resourceVersion?: string } };
  const version = object.metadata?.resourceVersion;
  if (version === undefined)
    throw new Error(`response without metadata.resourceVersion: ${text.slice(0, 200)}`);
  return version;
}

/** Set once SIGINT/SIGTERM arrived: failures after it are the interruption's echo, not news. */
let stopping = false;

try {
  process.exitCode ??= await main();
} catch (error) {
  if (!stopping)
    process.stderr.write(
      `bench:apiserver: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
  process.exitCode = 1;
}
