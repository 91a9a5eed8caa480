// `npm run bench:provision`: the provisioner's throughput, API cost and memory, against the
// embedded API server (own process, real SQLite state dir) with `csikit provisioner` run as its
// own process through the real CLI, and the driver either `csikit hostpath` (own process,
// controller service) or a bench-only CSI stub that answers CreateVolume at once (in this
// process) to show the provisioner's own ceiling when the driver is not the limit.
//
// Per row: N claims (immediate binding) created at once → PV created: throughput (claims / time
// from the first claim to the last PV), p50/p99 claim-to-PV latency, API writes per volume
// counted at the server (revision delta minus the bench's own claim creates), and for the
// default-QPS rows the bound the QPS allows for those writes (qps / writes per volume).
// Each row runs --runs times (fresh namespace, driver and provisioner each time) and prints the
// medians. Writes are also counted per verb and resource from the API server's audit (every
// request of a user agent containing "provisioner"), and the provisioner's CPU (user + system,
// /proc) over the run is divided by the claims. With CSIKIT_BENCH_GO_PROVISIONER set to an
// upstream csi-provisioner binary, every row also runs it with the same flags (its column is
// skipped otherwise: no Go peer is assumed on the machine).
// Memory: the provisioner's RSS after syncing 10,000 bound claims + PVs vs an empty cluster,
// in KiB per volume. Prints Markdown tables, cores and the state dir's filesystem; asserts
// nothing. The PV controller is not part of this branch, so claims are not bound here.

import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { createServer } from "node:net";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { GVR, type PersistentVolume, type PersistentVolumeClaim } from "../src/api/index.ts";
import type { FlagSpecs } from "../src/base/index.ts";
import { benchFlags } from "./cli.ts";
import { serveCsi, type CsiServer } from "../src/csi/index.ts";
import { KubeClient, loadKubeConfig } from "../src/kube/index.ts";
import { processCpuSeconds, startServerProcess, type ServerProcess } from "./apiserver/server-process.ts";
import { median, percentile } from "./stats.ts";
import { filesystemOf } from "./where.ts";

const FLAGS: FlagSpecs = {
  quick: { type: "bool", help: "Small counts for a smoke run." },
  claims: { type: "int", default: "1000", help: "Claims per lifted-QPS row." },
  "default-qps-claims": { type: "int", default: "100", help: "Claims per default-QPS (5/10) row." },
  "lifted-qps": {
    type: "int",
    default: "10000",
    help: "--kube-api-qps and --kube-api-burst of the lifted rows.",
  },
  "memory-volumes": {
    type: "int",
    default: "10000",
    help: "Claims + PVs in the informers for the memory row.",
  },
  "worker-threads": { type: "int", default: "100", help: "--worker-threads of the provisioner." },
  runs: { type: "int", default: "3", help: "Runs per row (medians are printed)." },
  "in-flight-record": {
    type: "string",
    default: "finalizer",
    help: "--in-flight-record of csikit's provisioner (finalizer or ledger).",
  },
  skip: {
    type: "strings",
    help: "Rows to skip: hostpath-default, hostpath-lifted, stub-default, stub-lifted, memory.",
  },
};

const MAIN = join(import.meta.dirname, "..", "src", "cli", "main.ts");
const HOSTPATH = "hostpath.csi.k8s.io";
const STUB = "stub.bench.csikit.io";

/** A provisioner to measure: csikit's, or an upstream binary (CSIKIT_BENCH_GO_PROVISIONER). */
interface Impl {
  name: string;
  /** Spawns the provisioner with the given upstream-style flags. */
  spawn: (flags: string[]) => ChildProcess;
}

const WRITE_VERBS = new Set(["create", "update", "patch", "delete", "deletecollection"]);

/** Writes by `verb resource` of provisioner user agents in the audit file from `offset` on. */
async function auditWrites(file: string, offset: number): Promise<Map<string, number>> {
  const text = (await readFile(file)).subarray(offset).toString("utf8");
  const counts = new Map<string, number>();
  for (const line of text.split("\n")) {
    const [agent, verb, resource] = line.split("\t");
    if (!agent?.includes("provisioner") || !verb || !WRITE_VERBS.has(verb)) continue;
    const key = `${verb} ${resource}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

async function fileSize(file: string): Promise<number> {
  return stat(file).then(
    (s) => s.size,
    () => 0,
  );
}

interface Row {
  label: string;
  impl: string;
  claims: number;
  seconds: number;
  perSecond: number;
  /** Claims per second counting until every write of every volume was done (events included). */
  settledPerSecond: number;
  p50: number;
  p99: number;
  writesPerVolume: number;
  /** Audit-counted writes of the provisioner per volume, by `verb resource`. */
  writesBy: Map<string, number>;
  /** Provisioner CPU seconds (user + system) over the run, per volume, in ms. */
  cpuMsPerVolume: number;
  bound?: number;
}

async function revision(client: KubeClient): Promise<number> {
  const list = await client.list(GVR.namespaces, { limit: 1 });
  return Number(list.metadata?.resourceVersion ?? "0");
}

function rssKiB(pid: number): Promise<number> {
  return readFile(`/proc/${pid}/status`, "utf8").then((text) =>
    Number(/VmRSS:\s+(\d+)/.exec(text)?.[1] ?? "NaN"),
  );
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

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function startStub(socket: string): Promise<CsiServer> {
  return serveCsi({
    endpoint: socket,
    identity: {
      probe: async () => ({ ready: { value: true } }),
      getPluginInfo: async () => ({ name: STUB, vendorVersion: "1" }),
      getPluginCapabilities: async () => ({ capabilities: [{ service: { type: "CONTROLLER_SERVICE" } }] }),
    },
    controller: {
      controllerGetCapabilities: async () => ({ capabilities: [{ rpc: { type: "CREATE_DELETE_VOLUME" } }] }),
      createVolume: async (request) => ({
        volume: {
          volumeId: request.name,
          capacityBytes: request.capacityRange?.requiredBytes ?? "0",
          volumeContext: {},
        },
      }),
      deleteVolume: async () => ({}),
    },
  });
}

interface Scenario {
  label: string;
  driver: "hostpath" | "stub";
  qps: number;
  burst: number;
  claims: number;
}

function claimObject(
  name: string,
  namespace: string,
  driver: string,
  className: string,
): PersistentVolumeClaim {
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name, namespace, annotations: { "volume.kubernetes.io/storage-provisioner": driver } },
    spec: {
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage: "1Mi" } },
      storageClassName: className,
    },
  };
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

interface RunSetup {
  server: ServerProcess;
  client: KubeClient;
  dir: string;
  auditFile: string;
  workers: number;
}

async function runScenario(setup: RunSetup, index: number, scenario: Scenario, impl: Impl): Promise<Row> {
  const { server, client, dir, workers } = setup;
  const namespace = `bench-${index}`;
  const className = `sc-${index}`;
  const driverName = scenario.driver === "hostpath" ? HOSTPATH : STUB;
  await client.create(GVR.namespaces, { metadata: { name: namespace } });
  await client.create(GVR.storageClasses, {
    metadata: { name: className },
    provisioner: driverName,
    reclaimPolicy: "Delete",
  });
  const socket = join(dir, `driver-${index}.sock`);
  let stub: CsiServer | undefined;
  let driverProc: ChildProcess | undefined;
  if (scenario.driver === "stub") stub = await startStub(socket);
  else
    driverProc = child([
      "hostpath",
      "--nodeid=bench",
      `--endpoint=${socket}`,
      `--state-dir=${join(dir, `hostpath-${index}`)}`,
      "--node-service=false",
      "--enable-topology=false",
      `--allowed-path-roots=${dir}`,
    ]);
  const provisioner = impl.spawn([
    `--csi-address=${socket}`,
    `--kubeconfig=${server.kubeconfigPath}`,
    `--kube-api-qps=${scenario.qps}`,
    `--kube-api-burst=${scenario.burst}`,
    `--worker-threads=${workers}`,
  ]);
  try {
    // Warm-up: one claim through the whole path (driver up, caches synced), not measured.
    await client.create(GVR.persistentVolumeClaims, claimObject("warmup", namespace, driverName, className));
    await waitUntil(
      "warm-up PV",
      async () => {
        const list = await client.list<PersistentVolume>(GVR.persistentVolumes, { limit: 100000 });
        return list.items.some((pv) => pv.spec?.claimRef?.namespace === namespace) ? true : undefined;
      },
      120_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 1500)); // the warm-up's trailing writes, and a refilled bucket
    const rev0 = await revision(client);
    const auditOffset = await fileSize(setup.auditFile);
    const cpu0 = processCpuSeconds(provisioner.pid);
    const created = new Map<string, number>();
    const seen = new Map<string, number>();
    const watchAbort = new AbortController();
    const watching = (async () => {
      for await (const event of client.watch<PersistentVolume>(
        GVR.persistentVolumes,
        { resourceVersion: String(rev0) },
        watchAbort.signal,
      )) {
        const uid = event.object.spec?.claimRef?.uid;
        if (event.type === "ADDED" && uid && !seen.has(uid)) seen.set(uid, performance.now());
      }
    })().catch(() => undefined);
    const started = performance.now();
    await runBounded(scenario.claims, 64, async (i) => {
      const claim = await client.create<PersistentVolumeClaim>(
        GVR.persistentVolumeClaims,
        claimObject(`c-${i}`, namespace, driverName, className),
      );
      created.set(claim.metadata.uid!, performance.now());
    });
    const budgetMs = 120_000 + (scenario.claims * 8 * 1000) / scenario.qps;
    await waitUntil(
      `${scenario.claims} PVs`,
      async () => ([...created.keys()].every((uid) => seen.has(uid)) ? true : undefined),
      budgetMs,
    );
    const last = Math.max(...[...created.keys()].map((uid) => seen.get(uid)!));
    // Trailing writes: wait until every claim is unmarked, then for the revision to settle (Events
    // beyond the recorder's 1000-deep queue are dropped, as client-go's broadcaster drops them).
    await waitUntil(
      "unmarks",
      async () => {
        const claimsLeft = await client.list<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
          namespace,
        });
        const marked = claimsLeft.items.some((c) =>
          c.metadata?.finalizers?.includes("provisioner.csikit.io/volume-in-flight"),
        );
        return marked ? undefined : true;
      },
      budgetMs,
    );
    const allDone = performance.now();
    let settled = await revision(client);
    for (let i = 0; i < 100; i++) {
      await new Promise((resolve) => setTimeout(resolve, 2000));
      const now = await revision(client);
      if (now === settled) break;
      settled = now;
    }
    watchAbort.abort();
    await watching;
    const cpuSeconds = processCpuSeconds(provisioner.pid) - cpu0;
    const audited = await auditWrites(setup.auditFile, auditOffset);
    const writesBy = new Map([...audited].map(([key, count]) => [key, count / scenario.claims]));
    const latencies = [...created].map(([uid, at]) => seen.get(uid)! - at).sort((a, b) => a - b);
    const seconds = (last - started) / 1000;
    const writesPerVolume = (settled - rev0 - scenario.claims) / scenario.claims;
    return {
      label: scenario.label,
      impl: impl.name,
      writesBy,
      cpuMsPerVolume: (cpuSeconds * 1000) / scenario.claims,
      claims: scenario.claims,
      seconds,
      perSecond: scenario.claims / seconds,
      settledPerSecond: scenario.claims / ((allDone - started) / 1000),
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      writesPerVolume,
      ...(scenario.qps < 1000 ? { bound: scenario.qps / writesPerVolume } : {}),
    };
  } finally {
    await stopChild(provisioner);
    if (driverProc) await stopChild(driverProc);
    await stub?.close();
  }
}

async function memoryRow(dir: string, volumes: number): Promise<string> {
  const server = await startServerProcess({ stateDir: join(dir, "apiserver-memory") });
  const client = new KubeClient({
    kubeConfig: loadKubeConfig({ kubeconfig: server.kubeconfigPath }),
    qps: 1e6,
    burst: 1e6,
  });
  const socket = join(dir, "memory-stub.sock");
  const stub = await startStub(socket);
  const measure = async (expected: number): Promise<{ rss: number; heap: number }> => {
    const port = await freePort();
    const proc = child([
      "provisioner",
      `--csi-address=${socket}`,
      `--kubeconfig=${server.kubeconfigPath}`,
      "--kube-api-qps=10000",
      "--kube-api-burst=10000",
      `--http-endpoint=127.0.0.1:${port}`,
      "--enable-pprof",
    ]);
    try {
      const synced = async (): Promise<true | undefined> => {
        const text = await fetch(`http://127.0.0.1:${port}/metrics`).then(
          (r) => r.text(),
          () => "",
        );
        const adds = Number(/workqueue_adds_total\{name="volumes"\} (\d+)/.exec(text)?.[1] ?? "-1");
        const depth = Number(/workqueue_depth\{name="claims"\} (\d+)/.exec(text)?.[1] ?? "-1");
        return adds >= expected && depth === 0 ? true : undefined;
      };
      if (expected > 0) await waitUntil("informers synced", synced, 300_000);
      else
        await waitUntil(
          "endpoint",
          async () =>
            await fetch(`http://127.0.0.1:${port}/metrics`).then(
              () => true,
              () => undefined,
            ),
          60_000,
        );
      await new Promise((resolve) => setTimeout(resolve, 3000));
      const rss = await rssKiB(proc.pid!);
      // A heap snapshot forces a full GC: what is left is what the caches hold (it also grows
      // RSS, hence RSS is read before).
      await fetch(`http://127.0.0.1:${port}/debug/pprof/heap`).then((r) => r.arrayBuffer());
      const text = await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text());
      const heap = Number(/^nodejs_heap_size_used_bytes (\S+)/m.exec(text)?.[1] ?? "NaN") / 1024;
      return { rss, heap };
    } finally {
      await stopChild(proc);
    }
  };
  try {
    await client.create(GVR.storageClasses, {
      metadata: { name: "mem" },
      provisioner: STUB,
      reclaimPolicy: "Delete",
    });
    const empty = await measure(0);
    await runBounded(volumes, 64, async (i) => {
      const claim = await client.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
        ...claimObject(`m-${i}`, "default", STUB, "mem"),
        spec: { ...claimObject("", "", STUB, "mem").spec, volumeName: `pv-m-${i}` },
      });
      await client.create<PersistentVolume>(GVR.persistentVolumes, {
        metadata: {
          name: `pv-m-${i}`,
          annotations: { "pv.kubernetes.io/provisioned-by": STUB },
          finalizers: ["external-provisioner.volume.kubernetes.io/finalizer"],
        },
        spec: {
          accessModes: ["ReadWriteOnce"],
          capacity: { storage: "1Mi" },
          persistentVolumeReclaimPolicy: "Delete",
          storageClassName: "mem",
          volumeMode: "Filesystem",
          claimRef: {
            kind: "PersistentVolumeClaim",
            namespace: "default",
            name: `m-${i}`,
            uid: claim.metadata.uid!,
          },
          csi: {
            driver: STUB,
            volumeHandle: `pv-m-${i}`,
            volumeAttributes: { "storage.kubernetes.io/csiProvisionerIdentity": "1-1-x" },
          },
        },
      });
    });
    const full = await measure(volumes);
    const rssPerVolume = (full.rss - empty.rss) / volumes;
    const heapPerVolume = (full.heap - empty.heap) / volumes;
    return [
      "### Memory: provisioner with bound claims + PVs in its informers (after a forced full GC)",
      "",
      "| objects | RSS empty KiB | RSS full KiB | RSS KiB/volume | V8 heap used empty KiB | full KiB | heap KiB/volume | target |",
      "|---:|---:|---:|---:|---:|---:|---:|---:|",
      `| ${volumes} claims + ${volumes} PVs | ${empty.rss} | ${full.rss} | ${rssPerVolume.toFixed(1)} | ${empty.heap.toFixed(0)} | ${full.heap.toFixed(0)} | ${heapPerVolume.toFixed(1)} | ≤ 40 |`,
      "",
    ].join("\n");
  } finally {
    client.close();
    await stub.close();
    await server.stop();
  }
}

/** The median of each measure over the runs of one row and implementation. */
function medianRow(runs: readonly Row[]): Row {
  const first = runs[0]!;
  const keys = new Set(runs.flatMap((r) => [...r.writesBy.keys()]));
  const pick = (f: (r: Row) => number): number => median(runs.map(f));
  const bound = first.bound === undefined ? undefined : pick((r) => r.bound ?? Number.NaN);
  return {
    label: first.label,
    impl: first.impl,
    claims: first.claims,
    seconds: pick((r) => r.seconds),
    perSecond: pick((r) => r.perSecond),
    settledPerSecond: pick((r) => r.settledPerSecond),
    p50: pick((r) => r.p50),
    p99: pick((r) => r.p99),
    writesPerVolume: pick((r) => r.writesPerVolume),
    writesBy: new Map([...keys].sort().map((k) => [k, pick((r) => r.writesBy.get(k) ?? 0)])),
    cpuMsPerVolume: pick((r) => r.cpuMsPerVolume),
    ...(bound === undefined ? {} : { bound }),
  };
}

function renderRows(rows: readonly Row[], runs: number): string {
  const header =
    "| row | provisioner | claims | seconds | PV/s | p50 ms | p99 ms | volumes/s incl. trailing writes | API writes/volume (revisions) | provisioner writes/volume by verb, resource (audit) | CPU ms/volume | QPS bound PV/s |";
  const rule = "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|";
  const body = rows.map((r) => {
    const total = [...r.writesBy.values()].reduce((a, b) => a + b, 0);
    const by = [...r.writesBy].map(([k, v]) => `${k} ${v.toFixed(2)}`).join("; ");
    return `| ${r.label} | ${r.impl} | ${r.claims} | ${r.seconds.toFixed(1)} | ${r.perSecond.toFixed(2)} | ${r.p50.toFixed(0)} | ${r.p99.toFixed(0)} | ${r.settledPerSecond.toFixed(2)} | ${r.writesPerVolume.toFixed(2)} | ${total.toFixed(2)}: ${by} | ${r.cpuMsPerVolume.toFixed(1)} | ${r.bound?.toFixed(2) ?? "-"} |`;
  });
  return [
    `### Provisioning: claims (immediate binding) → PV created (median of ${runs} run(s))`,
    "",
    header,
    rule,
    ...body,
    "",
  ].join("\n");
}

function implementations(record: string): Impl[] {
  const impls: Impl[] = [
    {
      name: `csikit (${record})`,
      spawn: (flags) => child(["provisioner", `--in-flight-record=${record}`, ...flags]),
    },
  ];
  const go = process.env["CSIKIT_BENCH_GO_PROVISIONER"];
  if (go) impls.push({ name: "upstream Go", spawn: (flags) => spawnBinary(go, flags) });
  return impls;
}

function spawnBinary(path: string, flags: string[]): ChildProcess {
  const proc = spawn(path, flags, { stdio: ["ignore", "ignore", "pipe"] });
  proc.stderr?.resume();
  return proc;
}

async function main(): Promise<void> {
  const flags = benchFlags("provision", FLAGS);
  const quick = flags.bool("quick");
  const claims = quick ? 100 : flags.number("claims");
  const defaultClaims = quick ? 20 : flags.number("default-qps-claims");
  const lifted = flags.number("lifted-qps");
  const memoryVolumes = quick && !flags.isSet("memory-volumes") ? 1000 : flags.number("memory-volumes");
  const workers = flags.number("worker-threads");
  const runs = quick && !flags.isSet("runs") ? 1 : flags.number("runs");
  const skip = new Set(flags.strings("skip"));
  const dir = await mkdtemp(join(tmpdir(), "csikit-bench-provision-"));
  const fs = filesystemOf(dir);
  const impls = implementations(flags.string("in-flight-record"));
  process.stdout.write(
    `# bench:provision\n\ncores: ${cpus().length} × ${cpus()[0]?.model ?? "?"}; node ${process.version}; load average at start ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}; state dir filesystem: ${fs}; worker-threads ${workers}; ${runs} run(s) per row` +
      `${impls.length === 1 ? "; upstream Go column skipped (set CSIKIT_BENCH_GO_PROVISIONER to a csi-provisioner binary)" : ""}\n\n`,
  );
  const auditFile = join(dir, "audit.tsv");
  const server = await startServerProcess({ stateDir: join(dir, "apiserver"), auditFile });
  const client = new KubeClient({
    kubeConfig: loadKubeConfig({ kubeconfig: server.kubeconfigPath }),
    qps: 1e6,
    burst: 1e6,
  });
  const rows: Row[] = [];
  try {
    const scenarios: (Scenario & { key: string })[] = [
      {
        key: "hostpath-default",
        label: "hostpath, QPS 5 / burst 10",
        driver: "hostpath",
        qps: 5,
        burst: 10,
        claims: defaultClaims,
      },
      {
        key: "hostpath-lifted",
        label: `hostpath, QPS ${lifted}`,
        driver: "hostpath",
        qps: lifted,
        burst: lifted,
        claims,
      },
      {
        key: "stub-default",
        label: "fast stub, QPS 5 / burst 10",
        driver: "stub",
        qps: 5,
        burst: 10,
        claims: defaultClaims,
      },
      {
        key: "stub-lifted",
        label: `fast stub, QPS ${lifted}`,
        driver: "stub",
        qps: lifted,
        burst: lifted,
        claims,
      },
    ];
    const setup: RunSetup = { server, client, dir, auditFile, workers };
    let index = 0;
    for (const scenario of scenarios) {
      if (skip.has(scenario.key)) continue;
      const byImpl = new Map<string, Row[]>(impls.map((impl) => [impl.name, []]));
      // Alternating implementations run by run, so drift in load hits both alike.
      for (let run = 0; run < runs; run++) {
        for (const impl of impls) {
          const row = await runScenario(setup, ++index, scenario, impl);
          byImpl.get(impl.name)!.push(row);
          process.stderr.write(
            `done: ${row.label} [${impl.name}] run ${run + 1}: ${row.perSecond.toFixed(2)} PV/s, load ${loadavg()[0]!.toFixed(2)}\n`,
          );
        }
      }
      const medians = [...byImpl.values()].map(medianRow);
      rows.push(...medians);
      process.stdout.write(renderRows(medians, runs) + "\n");
    }
    process.stdout.write(renderRows(rows, runs) + "\n");
    process.stdout.write(
      `load average at end ${loadavg()
        .map((l) => l.toFixed(2))
        .join(" ")}\n\n` +
        "QPS bound = --kube-api-qps / API writes per volume (the burst of 10 is spent in the first seconds).\n" +
        "API writes/volume (revisions) = the server's revision delta minus the bench's claim creates (every\n" +
        "writer, the leader election lease included); the audit column counts the provisioner's own requests\n" +
        "(failed ones too) by verb and resource. csikit's writes per volume: Provisioning event, in-flight\n" +
        "finalizer added, PV create, finalizer removed, ProvisioningSucceeded event (events beyond the\n" +
        "recorder's queue of 1000 are dropped, as upstream's).\n\n",
    );
  } finally {
    client.close();
    await server.stop();
  }
  try {
    if (!skip.has("memory")) process.stdout.write((await memoryRow(dir, memoryVolumes)) + "\n");
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
