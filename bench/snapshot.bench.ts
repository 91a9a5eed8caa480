// `npm run bench:snapshot`: how fast the snapshot stack turns VolumeSnapshots ready, and where
// that stands against the client-side rate limits (external-snapshotter #1344: 80 snapshots took
// 143 s at the default limits). The embedded API server runs as its own process
// (bench/snapshot-server-child.ts, real SQLite state dir, every request counted by user agent);
// `csikit hostpath` (controller service), `csikit snapshot-controller` and `csikit snapshotter`
// run as their own processes through the real CLI, as `csikit up` runs them; the stub rows swap
// hostpath for a bench-only driver answering CreateSnapshot at once (the components' own ceiling).
//
// Per row: N claims bound to N real hostpath volumes (written directly, the PV controller's part)
// → N VolumeSnapshots created at once → all readyToUse: throughput (snapshots / time from the
// first create to the last ready), p50/p99 create-to-ready latency, API writes per snapshot
// counted at the server (revision delta, the bench's create included), requests per snapshot of
// each client-side token bucket (every verb: client-go's token bucket paces them all), and:
//   - the QPS bound: the least time the buckets allow for the requests they made until the last
//     snapshot was ready (burst), and min over buckets of qps / requests per snapshot (sustained);
//   - the API server's own bound for the same writes: N chains of one create and (writes − 1)
//     patches at once, sent by the bench alone after the row;
//   - CPU ms per snapshot of every process (/proc), and the rate that would allow on the cores.
// Target: within 10% of the QPS bound at the default 5/10; ≥ 200 snapshots/s with the QPS lifted.
// `--runs` repeats each row and prints medians; `--detail` adds requests by verb and resource;
// `--cpu-prof=DIR` profiles every process. Prints Markdown tables with cores, load and the state
// dir's filesystem; asserts nothing.

import { spawn, type ChildProcess } from "node:child_process";
import { readdir, readFile, mkdtemp, rm } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { GVR, type PersistentVolumeClaim, type VolumeSnapshot } from "../src/api/index.ts";
import type { FlagSpecs } from "../src/base/index.ts";
import { CsiClient, serveCsi, type CsiServer } from "../src/csi/index.ts";
import { KubeClient, loadKubeConfig, type KubeObject } from "../src/kube/index.ts";
import { benchFlags } from "./cli.ts";
import { processCpuSeconds } from "./apiserver/server-process.ts";
import { median, percentile } from "./stats.ts";
import { filesystemOf, machine } from "./where.ts";

const FLAGS: FlagSpecs = {
  quick: { type: "bool", help: "10 snapshots per row: a smoke run." },
  snapshots: { type: "int", default: "100", help: "Snapshots created at once per row." },
  "lifted-qps": {
    type: "int",
    default: "10000",
    help: "--kube-api-qps and --kube-api-burst of the lifted row.",
  },
  "lifted-workers": {
    type: "int",
    default: "100",
    help: "--worker-threads of both components in the lifted row.",
  },
  detail: {
    type: "bool",
    help: "Also print each component's requests per snapshot by verb, resource and response code.",
  },
  "cpu-prof": {
    type: "string",
    help: "Directory for V8 CPU profiles (node --cpu-prof) of the API server and the components.",
  },
  runs: { type: "int", default: "1", help: "Runs of each row; the table shows medians." },
  skip: {
    type: "strings",
    help: "Rows to skip: hostpath-default, hostpath-lifted, stub-default, stub-lifted.",
  },
};

const MAIN = join(import.meta.dirname, "..", "src", "cli", "main.ts");
const CRDS = join(import.meta.dirname, "..", "deploy", "crds");
const DRIVER = "hostpath.csi.k8s.io";
const CONTROLLER_AGENT = "snapshot-controller";
const SNAPSHOTTER_AGENT = "csi-snapshotter";

interface Server {
  pid: number | undefined;
  url: string;
  kubeconfig: string;
  countsUrl: string;
  stop(): Promise<void>;
}

type Counts = Record<string, Record<string, number>>;

interface Scenario {
  label: string;
  driver: "hostpath" | "stub";
  qps: number;
  burst: number;
  workers: number;
  snapshots: number;
}

interface Row {
  label: string;
  qps: number;
  burst: number;
  workers: number;
  snapshots: number;
  seconds: number;
  perSecond: number;
  p50: number;
  p99: number;
  /** Writes per snapshot at the server (revision delta), the bench's own create included. */
  writesPerSnapshot: number;
  /** Requests per snapshot of each client-side token bucket, start to settled. */
  bucketRequests: Record<string, number>;
  /** Snapshots/s the QPS limits allow for what the buckets spent until the last snapshot was ready. */
  burstBound: number;
  /** Snapshots/s the QPS limits allow in a steady stream: min over buckets of qps / requests per snapshot. */
  sustainedBound: number;
  /** CPU ms per snapshot of each process (the API server's threads included), start to settled. */
  cpuMs: Record<string, number>;
  /** Snapshots/s of the same writes sent as plain create + patch chains by the bench alone. */
  serverBound: number;
  loadStart: number;
  loadEnd: number;
  /** Each component's requests per snapshot by "verb resource code", with --detail. */
  detail?: string;
}

/**
 * The client-side token buckets, as the components build their clients: the snapshot-controller
 * one for the snapshot API groups and one for the core API (upstream's two clientsets); the
 * csi-snapshotter one for everything (csikit's sidecars share one client).
 */
const CORE_RESOURCES = new Set(["events", "persistentvolumeclaims", "persistentvolumes", "nodes"]);
function bucketOf(agent: string, resource: string): string | undefined {
  if (agent === CONTROLLER_AGENT)
    return CORE_RESOURCES.has(resource) ? "controller core" : "controller snapshot";
  if (agent === SNAPSHOTTER_AGENT) return "snapshotter";
  return undefined;
}

/** Requests per bucket between two detail counts (keys "verb resource[/sub] code"). */
function bucketTotals(before: Counts, after: Counts): Record<string, number> {
  const totals: Record<string, number> = {};
  for (const [agent, byKey] of Object.entries(after))
    for (const [key, n] of Object.entries(byKey)) {
      const bucket = bucketOf(agent, (key.split(" ")[1] ?? "").split("/")[0]!);
      if (bucket === undefined) continue;
      totals[bucket] = (totals[bucket] ?? 0) + n - (before[agent]?.[key] ?? 0);
    }
  return totals;
}

/** What the command line asks beyond the rows, set once by main(). */
const settings = {
  /** node --cpu-prof into --cpu-prof's directory, for every process the bench starts. */
  profileArgs: [] as string[],
  /** --detail: the requests per snapshot by verb, resource and code. */
  detail: false,
};

function child(args: string[]): ChildProcess {
  const proc = spawn(process.execPath, [...settings.profileArgs, MAIN, ...args], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let tail = "";
  proc.stderr?.setEncoding("utf8");
  proc.stderr?.on("data", (chunk: string) => (tail = (tail + chunk).slice(-4000)));
  proc.once("exit", (code, signal) => {
    if (code !== 0 && signal !== "SIGTERM" && signal !== "SIGKILL")
      process.stderr.write(`child ${args[0]} exited ${code}:\n${tail}\n`);
  });
  return proc;
}

async function stopChild(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise((resolve) => proc.once("exit", resolve));
  proc.kill("SIGTERM");
  const timer = setTimeout(() => proc.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(timer);
}

async function startServer(stateDir: string): Promise<Server> {
  const script = join(import.meta.dirname, "snapshot-server-child.ts");
  const proc = spawn(process.execPath, [...settings.profileArgs, script, stateDir], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  proc.stderr.setEncoding("utf8");
  proc.stderr.on("data", (chunk: string) => (stderr = (stderr + chunk).slice(-16_384)));
  const ready = await new Promise<{ url: string; kubeconfig: string; countsUrl: string }>(
    (resolve, reject) => {
      let stdout = "";
      const timer = setTimeout(() => reject(new Error(`API server did not start:\n${stderr}`)), 60_000);
      proc.stdout.setEncoding("utf8");
      proc.stdout.on("data", (chunk: string) => {
        stdout += chunk;
        const newline = stdout.indexOf("\n");
        if (newline < 0) return;
        clearTimeout(timer);
        resolve(
          JSON.parse(stdout.slice(0, newline)) as { url: string; kubeconfig: string; countsUrl: string },
        );
      });
      proc.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`API server exited at start (code ${code}):\n${stderr}`));
      });
    },
  );
  return { ...ready, pid: proc.pid, stop: () => stopChild(proc) };
}

async function waitUntil<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function runBounded(
  count: number,
  concurrency: number,
  task: (i: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) await task(next++);
    }),
  );
}

async function revision(client: KubeClient): Promise<number> {
  const list = await client.list(GVR.namespaces, { limit: 1 });
  return Number(list.metadata?.resourceVersion ?? "0");
}

/** Requests so far by user agent, then by "verb resource[/subresource] code". */
async function counts(server: Server): Promise<Counts> {
  return (await (await fetch(server.countsUrl)).json()) as Counts;
}

async function installCrds(client: KubeClient): Promise<void> {
  for (const file of (await readdir(CRDS)).filter((f) => f.endsWith(".yaml")).sort())
    await client.create(
      GVR.customResourceDefinitions,
      parse(await readFile(join(CRDS, file), "utf8")) as KubeObject,
    );
  await waitUntil(
    "snapshot CRDs served",
    async () => {
      try {
        await client.list(GVR.volumeSnapshots, { namespace: "default" });
        await client.list(GVR.volumeSnapshotContents);
        return true;
      } catch {
        return undefined;
      }
    },
    60_000,
  );
}

/** N claims bound to N real hostpath volumes, written as the provisioner and PV controller leave them. */
async function boundClaims(
  client: KubeClient,
  csi: CsiClient,
  namespace: string,
  count: number,
): Promise<void> {
  await runBounded(count, 16, async (i) => {
    const name = `c-${i}`;
    const volume = (
      await csi.controller.createVolume({
        name: `${namespace}-${name}`,
        volumeCapabilities: [{ mount: {}, accessMode: { mode: "SINGLE_NODE_WRITER" } }],
        capacityRange: { requiredBytes: 1024 * 1024 },
      })
    ).volume!;
    const claim = await client.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
      apiVersion: "v1",
      kind: "PersistentVolumeClaim",
      metadata: { name, namespace },
      spec: {
        accessModes: ["ReadWriteOnce"],
        resources: { requests: { storage: "1Mi" } },
        storageClassName: "",
        volumeName: `pv-${namespace}-${name}`,
      },
    });
    await client.create(GVR.persistentVolumes, {
      apiVersion: "v1",
      kind: "PersistentVolume",
      metadata: { name: `pv-${namespace}-${name}` },
      spec: {
        capacity: { storage: "1Mi" },
        accessModes: ["ReadWriteOnce"],
        storageClassName: "",
        persistentVolumeReclaimPolicy: "Delete",
        csi: { driver: DRIVER, volumeHandle: volume.volumeId },
        claimRef: {
          kind: "PersistentVolumeClaim",
          apiVersion: "v1",
          namespace,
          name,
          uid: claim.metadata.uid!,
        },
      },
    } as KubeObject);
    await client.updateStatus(GVR.persistentVolumeClaims, { ...claim, status: { phase: "Bound" } });
  });
}

/**
 * A bench-only CSI driver answering at once (in this process): shows the snapshot components'
 * own ceiling when the driver is not the limit (hostpath archives each volume's directory).
 */
async function startStub(socket: string): Promise<CsiServer> {
  return serveCsi({
    endpoint: socket,
    identity: {
      probe: async () => ({ ready: { value: true } }),
      getPluginInfo: async () => ({ name: DRIVER, vendorVersion: "stub" }),
      getPluginCapabilities: async () => ({ capabilities: [{ service: { type: "CONTROLLER_SERVICE" } }] }),
    },
    controller: {
      controllerGetCapabilities: async () => ({
        capabilities: [
          { rpc: { type: "CREATE_DELETE_VOLUME" } },
          { rpc: { type: "CREATE_DELETE_SNAPSHOT" } },
        ],
      }),
      createVolume: async (request) => ({
        volume: {
          volumeId: request.name,
          capacityBytes: request.capacityRange?.requiredBytes ?? "0",
          volumeContext: {},
        },
      }),
      deleteVolume: async () => ({}),
      createSnapshot: async (request) => ({
        snapshot: {
          snapshotId: `snap-${request.name}`,
          sourceVolumeId: request.sourceVolumeId,
          sizeBytes: String(1024 * 1024),
          creationTime: { seconds: String(Math.floor(Date.now() / 1000)), nanos: 0 },
          readyToUse: true,
        },
      }),
      deleteSnapshot: async () => ({}),
    },
  });
}

function snapshotObject(name: string, namespace: string, claim: string): VolumeSnapshot & KubeObject {
  return {
    apiVersion: "snapshot.storage.k8s.io/v1",
    kind: "VolumeSnapshot",
    metadata: { name, namespace },
    spec: { volumeSnapshotClassName: "bench", source: { persistentVolumeClaimName: claim } },
  };
}

async function runRow(
  server: Server,
  client: KubeClient,
  dir: string,
  index: number,
  scenario: Scenario,
): Promise<Row> {
  const namespace = `bench-${index}`;
  await client.create(GVR.namespaces, { metadata: { name: namespace } });
  const socket = join(dir, `driver-${index}.sock`);
  const stub = scenario.driver === "stub" ? await startStub(socket) : undefined;
  const driver = stub
    ? undefined
    : child([
        "hostpath",
        "--nodeid=bench",
        `--drivername=${DRIVER}`,
        `--endpoint=${socket}`,
        `--state-dir=${join(dir, `hostpath-${index}`)}`,
        "--node-service=false",
        "--enable-topology=false",
      ]);
  const csi = CsiClient.connect(socket, { timeoutMs: 60_000 });
  const limits = [
    `--kube-api-qps=${scenario.qps}`,
    `--kube-api-burst=${scenario.burst}`,
    `--worker-threads=${scenario.workers}`,
  ];
  const components: ChildProcess[] = [];
  try {
    await csi.waitForReady({ timeoutMs: 60_000 });
    await boundClaims(client, csi, namespace, scenario.snapshots + 1);
    components.push(child(["snapshot-controller", `--kubeconfig=${server.kubeconfig}`, ...limits]));
    components.push(
      child(["snapshotter", `--csi-address=${socket}`, `--kubeconfig=${server.kubeconfig}`, ...limits]),
    );
    // Warm-up: one snapshot through the whole path (caches synced, driver up), not measured.
    await client.create(GVR.volumeSnapshots, snapshotObject("warmup", namespace, `c-${scenario.snapshots}`));
    await waitUntil(
      "the warm-up snapshot",
      async () => {
        const s = await client.get<VolumeSnapshot & KubeObject>(GVR.volumeSnapshots, "warmup", { namespace });
        return s.status?.readyToUse === true ? true : undefined;
      },
      180_000,
    );
    // The warm-up's trailing writes, and refilled token buckets.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const loadStart = loadavg()[0]!;
    const processes: Record<string, number | undefined> = {
      "API server": server.pid,
      controller: components[0]!.pid,
      snapshotter: components[1]!.pid,
      ...(driver ? { hostpath: driver.pid } : {}),
    };
    const cpu0 = Object.fromEntries(Object.entries(processes).map(([k, pid]) => [k, processCpuSeconds(pid)]));
    const rev0 = await revision(client);
    const before = await counts(server);
    const created = new Map<string, number>();
    const ready = new Map<string, number>();
    let atReady: Promise<Counts> | undefined;
    const watchAbort = new AbortController();
    const watching = (async () => {
      for await (const event of client.watch<VolumeSnapshot & KubeObject>(
        GVR.volumeSnapshots,
        { namespace, resourceVersion: String(rev0) },
        watchAbort.signal,
      )) {
        const name = event.object.metadata?.name ?? "";
        if (event.object.status?.readyToUse !== true || ready.has(name) || !name.startsWith("s-")) continue;
        ready.set(name, performance.now());
        // What each bucket had spent when the last snapshot turned ready.
        if (ready.size === scenario.snapshots) atReady = counts(server);
      }
    })().catch(() => undefined);
    const started = performance.now();
    await runBounded(scenario.snapshots, 64, async (i) => {
      created.set(`s-${i}`, performance.now());
      await client.create(GVR.volumeSnapshots, snapshotObject(`s-${i}`, namespace, `c-${i}`));
    });
    const budgetMs = 180_000 + (scenario.snapshots * 20 * 1000) / scenario.qps;
    await waitUntil(
      `${scenario.snapshots} snapshots readyToUse`,
      async () => (atReady !== undefined ? true : undefined),
      budgetMs,
    );
    const last = Math.max(...ready.values());
    const untilReady = bucketTotals(before, await atReady!);
    // Trailing writes (finalizers, events): until the revision settles.
    let settled = await revision(client);
    for (let i = 0; i < 60; i++) {
      await new Promise((resolve) => setTimeout(resolve, 2000));
      const now = await revision(client);
      if (now === settled) break;
      settled = now;
    }
    watchAbort.abort();
    await watching;
    const n = scenario.snapshots;
    const cpuMs = Object.fromEntries(
      Object.entries(processes).map(([k, pid]) => [k, ((processCpuSeconds(pid) - cpu0[k]!) * 1000) / n]),
    );
    const after = await counts(server);
    const loadEnd = loadavg()[0]!;
    const all = bucketTotals(before, after);
    const bucketRequests = Object.fromEntries(Object.entries(all).map(([k, v]) => [k, v / n]));
    // The least time the buckets allow for what they spent until the last ready: a full bucket
    // of `burst` tokens at the start, then `qps` per second.
    const minSeconds = Math.max(
      0,
      ...Object.values(untilReady).map((used) => (used - scenario.burst) / scenario.qps),
    );
    const latencies = [...created].map(([name, at]) => ready.get(name)! - at).sort((a, b) => a - b);
    const seconds = (last - started) / 1000;
    const writesPerSnapshot = (settled - rev0) / n;
    return {
      ...scenario,
      seconds,
      perSecond: n / seconds,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      writesPerSnapshot,
      bucketRequests,
      burstBound: minSeconds > 0 ? n / minSeconds : Number.POSITIVE_INFINITY,
      sustainedBound: Math.min(...Object.values(bucketRequests).map((r) => scenario.qps / r)),
      cpuMs,
      serverBound: await plainWrites(client, `plain-${index}`, n, Math.round(writesPerSnapshot)),
      loadStart,
      loadEnd,
      ...(settings.detail ? { detail: breakdown(before, after, n) } : {}),
    };
  } finally {
    for (const proc of components) await stopChild(proc);
    csi.close();
    if (driver) await stopChild(driver);
    await stub?.close();
  }
}

/**
 * What the API server alone sustains for the same writes: `count` chains at once, each a
 * VolumeSnapshot created and then merge-patched `writes - 1` times in a row (a snapshot's
 * writes follow one another too), sent by the bench with no controller and no watcher.
 * Connections are opened before the clock starts. Returns chains (snapshots' worth) per second.
 */
async function plainWrites(
  client: KubeClient,
  namespace: string,
  count: number,
  writes: number,
): Promise<number> {
  await client.create(GVR.namespaces, { metadata: { name: namespace } });
  await Promise.all(Array.from({ length: count }, () => client.list(GVR.namespaces, { limit: 1 })));
  const started = performance.now();
  await runBounded(count, count, async (i) => {
    const name = `p-${i}`;
    await client.create(GVR.volumeSnapshots, snapshotObject(name, namespace, `c-${i}`));
    for (let step = 1; step < writes; step++)
      await client.patch(
        GVR.volumeSnapshots,
        name,
        { metadata: { annotations: { "bench.csikit.io/step": String(step) } } },
        { namespace, type: "merge" },
      );
  });
  return count / ((performance.now() - started) / 1000);
}

/** Per agent, its requests per snapshot by "verb resource code" between two detail counts. */
function breakdown(before: Counts, after: Counts, snapshots: number): string {
  const lines: string[] = [];
  for (const agent of Object.keys(after).sort()) {
    const deltas = Object.entries(after[agent]!)
      .map(([key, n]) => [key, (n - (before[agent]?.[key] ?? 0)) / snapshots] as const)
      .filter(([, perSnapshot]) => perSnapshot > 0)
      .sort((a, b) => b[1] - a[1]);
    if (deltas.length === 0) continue;
    lines.push(`- ${agent}: ${deltas.map(([key, n]) => `${key} ×${n.toFixed(2)}`).join(", ")}`);
  }
  return lines.join("\n");
}

/** Each number of a row is the median of that number over the runs. */
function medianRow(runs: readonly Row[]): Row {
  const first = runs[0]!;
  const of = (pick: (row: Row) => number): number => median(runs.map(pick));
  const each = (pick: (row: Row) => Record<string, number>): Record<string, number> =>
    Object.fromEntries(Object.keys(pick(first)).map((k) => [k, of((row) => pick(row)[k] ?? Number.NaN)]));
  return {
    ...first,
    seconds: of((r) => r.seconds),
    perSecond: of((r) => r.perSecond),
    p50: of((r) => r.p50),
    p99: of((r) => r.p99),
    writesPerSnapshot: of((r) => r.writesPerSnapshot),
    bucketRequests: each((r) => r.bucketRequests),
    burstBound: of((r) => r.burstBound),
    sustainedBound: of((r) => r.sustainedBound),
    cpuMs: each((r) => r.cpuMs),
    serverBound: of((r) => r.serverBound),
    loadStart: Math.min(...runs.map((r) => r.loadStart)),
    loadEnd: Math.max(...runs.map((r) => r.loadEnd)),
  };
}

const percent = (value: number): string => (Number.isFinite(value) ? `${(100 * value).toFixed(0)}%` : "—");

function render(rows: readonly Row[], runs: number, where: string): string {
  const cores = cpus().length;
  const lines = [
    `### ${rows[0]?.snapshots ?? 0} VolumeSnapshots created at once → all readyToUse (own processes; median of ${runs} run${runs === 1 ? "" : "s"})`,
    "",
    where,
    "",
    "| row | QPS/burst | workers | load (1 min) | seconds | snapshots/s | p50 ms | p99 ms | QPS bound (burst · sustained) | of QPS bound | API writes/snapshot | API server alone, same writes, snapshots/s | of it | CPU ms/snapshot: server · controller · snapshotter · driver | CPU bound on " +
      `${cores} cores |`,
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ];
  for (const row of rows) {
    const limited = row.qps < 1000;
    const cpu = row.cpuMs;
    const cpuTotal = Object.values(cpu).reduce((sum, ms) => sum + ms, 0);
    lines.push(
      [
        "",
        row.label,
        `${row.qps}/${row.burst}`,
        row.workers,
        `${row.loadStart.toFixed(1)}–${row.loadEnd.toFixed(1)}`,
        row.seconds.toFixed(2),
        row.perSecond.toFixed(1),
        row.p50.toFixed(0),
        row.p99.toFixed(0),
        limited ? `${row.burstBound.toFixed(2)} · ${row.sustainedBound.toFixed(2)}` : "—",
        limited ? percent(row.perSecond / row.burstBound) : "—",
        row.writesPerSnapshot.toFixed(2),
        row.serverBound.toFixed(1),
        limited ? "—" : percent(row.perSecond / row.serverBound),
        `${(cpu["API server"] ?? Number.NaN).toFixed(1)} · ${(cpu.controller ?? Number.NaN).toFixed(1)} · ${(cpu.snapshotter ?? Number.NaN).toFixed(1)} · ${cpu.hostpath === undefined ? "(in the bench)" : cpu.hostpath.toFixed(1)}`,
        ((cores * 1000) / cpuTotal).toFixed(0),
        "",
      ]
        .join(" | ")
        .trim(),
    );
  }
  lines.push("", "Requests per snapshot by client-side token bucket (start to settled):", "");
  for (const row of rows)
    lines.push(
      `- ${row.label}: ${Object.entries(row.bucketRequests)
        .sort()
        .map(([bucket, n]) => `${bucket} ${n.toFixed(2)}`)
        .join(" · ")}`,
    );
  for (const row of rows)
    if (row.detail !== undefined) lines.push("", `Requests per snapshot, ${row.label}:`, "", row.detail);
  lines.push(
    "",
    "QPS bound: every request a client makes, reads included, takes a token of its bucket (`--kube-api-qps` per second after a full `--kube-api-burst`); the snapshot-controller has one bucket for the snapshot API groups and one for the core API (claims, Events), as upstream's two clientsets, the csi-snapshotter one. Burst: N over the least time the buckets allow for the requests they made until the last snapshot was ready; sustained: min over buckets of qps / requests per snapshot (a steady stream pays the trailing writes too). " +
      "API server alone: N chains at once of one create and (writes − 1) merge patches of a VolumeSnapshot, sent by the bench with no controller or watcher: the machine's bound for those writes. CPU bound: cores × 1000 / the CPU ms per snapshot of all the processes, what the snapshots would reach with the cores to themselves. " +
      "Targets: within 10% of the QPS bound at 5/10; ≥ 200 snapshots/s lifted on 2 cores.",
    "",
  );
  return lines.join("\n");
}

async function main(): Promise<void> {
  const flags = benchFlags(
    "snapshot",
    FLAGS,
    "VolumeSnapshots created at once until all are readyToUse, at the default client QPS and lifted.",
  );
  const count = flags.bool("quick") ? 10 : flags.number("snapshots");
  const skip = new Set(flags.strings("skip"));
  const lifted = flags.number("lifted-qps");
  settings.detail = flags.bool("detail");
  const profileDir = flags.string("cpu-prof");
  if (profileDir !== "") settings.profileArgs = ["--cpu-prof", `--cpu-prof-dir=${profileDir}`];
  const dir = await mkdtemp(join(tmpdir(), "csikit-bench-snapshot-"));
  const server = await startServer(join(dir, "apiserver"));
  const client = new KubeClient({
    kubeConfig: loadKubeConfig({ kubeconfig: server.kubeconfig }),
    qps: 1e6,
    burst: 1e6,
  });
  try {
    await installCrds(client);
    await client.create(GVR.volumeSnapshotClasses, {
      apiVersion: "snapshot.storage.k8s.io/v1",
      kind: "VolumeSnapshotClass",
      metadata: { name: "bench" },
      driver: DRIVER,
      deletionPolicy: "Delete",
    } as KubeObject);
    const workers = flags.number("lifted-workers");
    const all: Scenario[] = [
      { label: "hostpath-default", driver: "hostpath", qps: 5, burst: 10, workers: 10, snapshots: count },
      { label: "hostpath-lifted", driver: "hostpath", qps: lifted, burst: lifted, workers, snapshots: count },
      { label: "stub-default", driver: "stub", qps: 5, burst: 10, workers: 10, snapshots: count },
      { label: "stub-lifted", driver: "stub", qps: lifted, burst: lifted, workers, snapshots: count },
    ];
    const scenarios = all.filter((s) => !skip.has(s.label));
    const runs = flags.number("runs");
    const rows: Row[] = [];
    let index = 0;
    for (const scenario of scenarios) {
      const reps: Row[] = [];
      for (let run = 1; run <= runs; run++) {
        process.stderr.write(`bench:snapshot: row ${scenario.label}, run ${run}/${runs}…\n`);
        reps.push(await runRow(server, client, dir, index++, scenario));
      }
      rows.push(medianRow(reps));
    }
    process.stdout.write(render(rows, runs, `${machine()}; state dir on ${filesystemOf(dir)}`));
  } finally {
    client.close();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
