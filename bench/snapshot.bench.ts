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
// counted at the server (revision delta minus the bench's own creates), requests per snapshot of
// each component (every verb: client-go's token bucket paces them all), and the bound the
// components' QPS allows: min over the two of qps / its requests per snapshot. Target: within
// 10% of the bound at the default 5/10; ≥ 200 snapshots/s with the QPS lifted. Prints Markdown
// tables with cores, load and the state dir's filesystem; asserts nothing.

import { spawn, type ChildProcess } from "node:child_process";
import { readdir, readFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { GVR, type PersistentVolumeClaim, type VolumeSnapshot } from "../src/api/index.ts";
import type { FlagSpecs } from "../src/base/index.ts";
import { CsiClient, serveCsi, type CsiServer } from "../src/csi/index.ts";
import { KubeClient, loadKubeConfig, type KubeObject } from "../src/kube/index.ts";
import { benchFlags } from "./cli.ts";
import { percentile } from "./stats.ts";
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
  writesPerSnapshot: number;
  controllerRequests: number;
  snapshotterRequests: number;
  bound: number;
}

function child(args: string[]): ChildProcess {
  const proc = spawn(process.execPath, [MAIN, ...args], { stdio: ["ignore", "ignore", "pipe"] });
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
  const proc = spawn(process.execPath, [join(import.meta.dirname, "snapshot-server-child.ts"), stateDir], {
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
  return { ...ready, stop: () => stopChild(proc) };
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

async function counts(server: Server): Promise<Counts> {
  return (await (await fetch(server.countsUrl)).json()) as Counts;
}

const total = (byVerb: Record<string, number> | undefined): number =>
  Object.values(byVerb ?? {}).reduce((sum, n) => sum + n, 0);

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
    const rev0 = await revision(client);
    const before = await counts(server);
    const created = new Map<string, number>();
    const ready = new Map<string, number>();
    const watchAbort = new AbortController();
    const watching = (async () => {
      for await (const event of client.watch<VolumeSnapshot & KubeObject>(
        GVR.volumeSnapshots,
        { namespace, resourceVersion: String(rev0) },
        watchAbort.signal,
      )) {
        const name = event.object.metadata?.name ?? "";
        if (event.object.status?.readyToUse === true && !ready.has(name)) ready.set(name, performance.now());
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
      async () => ([...created.keys()].every((name) => ready.has(name)) ? true : undefined),
      budgetMs,
    );
    const last = Math.max(...[...created.keys()].map((name) => ready.get(name)!));
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
    const after = await counts(server);
    const perSnapshot = (agent: string): number =>
      (total(after[agent]) - total(before[agent])) / scenario.snapshots;
    const controllerRequests = perSnapshot(CONTROLLER_AGENT);
    const snapshotterRequests = perSnapshot(SNAPSHOTTER_AGENT);
    const latencies = [...created].map(([name, at]) => ready.get(name)! - at).sort((a, b) => a - b);
    const seconds = (last - started) / 1000;
    return {
      ...scenario,
      seconds,
      perSecond: scenario.snapshots / seconds,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      writesPerSnapshot: (settled - rev0 - scenario.snapshots) / scenario.snapshots,
      controllerRequests,
      snapshotterRequests,
      bound: Math.min(scenario.qps / controllerRequests, scenario.qps / snapshotterRequests),
    };
  } finally {
    for (const proc of components) await stopChild(proc);
    csi.close();
    if (driver) await stopChild(driver);
    await stub?.close();
  }
}

function render(rows: readonly Row[], where: string): string {
  const lines = [
    `### ${rows[0]?.snapshots ?? 0} VolumeSnapshots created at once → all readyToUse (hostpath, own processes)`,
    "",
    where,
    "",
    "| row | QPS/burst | workers | snapshots | seconds | snapshots/s | p50 ms | p99 ms | API writes/snapshot | requests/snapshot controller · snapshotter | QPS bound snapshots/s | of bound |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ];
  for (const row of rows)
    lines.push(
      `| ${row.label} | ${row.qps}/${row.burst} | ${row.workers} | ${row.snapshots} | ${row.seconds.toFixed(2)} | ${row.perSecond.toFixed(1)} | ${row.p50.toFixed(0)} | ${row.p99.toFixed(0)} | ${row.writesPerSnapshot.toFixed(2)} | ${row.controllerRequests.toFixed(2)} · ${row.snapshotterRequests.toFixed(2)} | ${row.qps < 1000 ? `${row.bound.toFixed(2)} | ${((100 * row.perSecond) / row.bound).toFixed(0)}%` : `(${row.bound.toFixed(0)}) | —`} |`,
    );
  lines.push(
    "",
    "QPS bound: each component has its own token bucket (`--kube-api-qps`), and every request it makes, reads included, takes a token; the bound is the smaller of qps / requests per snapshot over the two. Targets: within 10% of it at 5/10; ≥ 200 snapshots/s lifted on 2 cores.",
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
    const rows: Row[] = [];
    for (const [index, scenario] of scenarios.entries()) {
      process.stderr.write(`bench:snapshot: row ${scenario.label}…\n`);
      rows.push(await runRow(server, client, dir, index, scenario));
    }
    process.stdout.write(render(rows, `${machine()}; state dir on ${filesystemOf(dir)}`));
  } finally {
    client.close();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
