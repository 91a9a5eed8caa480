// `npm run bench:resize`: the resizer's throughput and latency against the embedded API server
// (own process, real SQLite state dir), with `csikit resizer` run as its own process through the
// real CLI. Per row: N bound claims grown at once (one PATCH each) → done, where done is
//   - stub rows (a bench-only driver answering ControllerExpandVolume at once with
//     node_expansion_required=false): status.capacity updated — the whole resize;
//   - hostpath rows (`csikit hostpath` as its own process, which asks for node expansion):
//     PV grown and NodeResizePending set — the resizer's part; the kubelet's NodeExpandVolume
//     follows on the node (bench:node measures node operations).
// Prints throughput (claims / time from the first grow to the last done), p50/p99 grow-to-done
// latency, cores, load average and the state dir's filesystem. Asserts nothing.

import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { GVR, type PersistentVolumeClaim } from "../src/api/index.ts";
import type { FlagSpecs } from "../src/base/index.ts";
import { benchFlags } from "./cli.ts";
import { CsiClient, serveCsi, type CsiServer } from "../src/csi/index.ts";
import { KubeClient, loadKubeConfig } from "../src/kube/index.ts";
import { startServerProcess, type ServerProcess } from "./apiserver/server-process.ts";
import { percentile, runBounded } from "./stats.ts";
import { filesystemOf } from "./where.ts";

const FLAGS: FlagSpecs = {
  quick: { type: "bool", help: "Small counts for a smoke run." },
  claims: { type: "int", default: "200", help: "Claims grown at once per row." },
  "default-qps-claims": { type: "int", default: "50", help: "Claims of the default-QPS (5/10) row." },
  workers: { type: "int", default: "10", help: "--workers of the resizer." },
};

const MAIN = join(import.meta.dirname, "..", "src", "cli", "main.ts");
const HOSTPATH = "hostpath.csi.k8s.io";
const STUB = "stub.resize-bench.csikit.io";
const MI = 1024 * 1024;

interface Scenario {
  label: string;
  driver: "stub" | "hostpath";
  claims: number;
  qps: number;
  burst: number;
}

interface Row extends Scenario {
  seconds: number;
  perSecond: number;
  p50: number;
  p99: number;
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

async function waitUntil(what: string, check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function startStub(socket: string): Promise<CsiServer> {
  return serveCsi({
    endpoint: socket,
    shutdownGraceMs: 100,
    identity: {
      probe: async () => ({ ready: { value: true } }),
      getPluginInfo: async () => ({ name: STUB, vendorVersion: "1" }),
      getPluginCapabilities: async () => ({
        capabilities: [{ service: { type: "CONTROLLER_SERVICE" } }, { volumeExpansion: { type: "ONLINE" } }],
      }),
    },
    controller: {
      controllerGetCapabilities: async () => ({ capabilities: [{ rpc: { type: "EXPAND_VOLUME" } }] }),
      controllerExpandVolume: async (request) => ({
        capacityBytes: request.capacityRange?.requiredBytes ?? "0",
        nodeExpansionRequired: false,
      }),
    },
  });
}

/** The claims and PVs as the PV controller leaves them bound; hostpath volumes created first. */
async function seed(
  client: KubeClient,
  namespace: string,
  driver: string,
  count: number,
  csi: CsiClient | undefined,
): Promise<void> {
  await runBounded(count, 32, async (i) => {
    const name = `c-${i}`;
    let handle = `${namespace}-${name}`;
    if (csi) {
      const created = await csi.controller.createVolume({
        name: handle,
        capacityRange: { requiredBytes: String(MI) },
        volumeCapabilities: [{ mount: {}, accessMode: { mode: "SINGLE_NODE_WRITER" } }],
      });
      handle = created.volume!.volumeId;
    }
    const claim = await client.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
      metadata: { name, namespace },
      spec: {
        accessModes: ["ReadWriteOnce"],
        resources: { requests: { storage: "1Mi" } },
        storageClassName: "sc",
        volumeName: `pv-${namespace}-${name}`,
      },
    });
    const pv = await client.create(GVR.persistentVolumes, {
      metadata: { name: `pv-${namespace}-${name}` },
      spec: {
        capacity: { storage: "1Mi" },
        accessModes: ["ReadWriteOnce"],
        storageClassName: "sc",
        claimRef: { kind: "PersistentVolumeClaim", namespace, name, uid: claim.metadata.uid! },
        csi: { driver, volumeHandle: handle },
      },
    });
    await client.updateStatus(GVR.persistentVolumes, { ...pv, status: { phase: "Bound" } });
    await client.updateStatus(GVR.persistentVolumeClaims, {
      ...claim,
      status: { phase: "Bound", capacity: { storage: "1Mi" } },
    });
  });
}

async function runRow(
  server: ServerProcess,
  client: KubeClient,
  dir: string,
  index: number,
  scenario: Scenario,
  workers: number,
): Promise<Row> {
  const namespace = `bench-${index}`;
  await client.create(GVR.namespaces, { metadata: { name: namespace } });
  const socket = join(dir, `driver-${index}.sock`);
  let stub: CsiServer | undefined;
  let driverProc: ChildProcess | undefined;
  let csi: CsiClient | undefined;
  const driverName = scenario.driver === "stub" ? STUB : HOSTPATH;
  if (scenario.driver === "stub") stub = await startStub(socket);
  else {
    driverProc = child([
      "hostpath",
      "--nodeid=bench",
      `--endpoint=${socket}`,
      `--state-dir=${join(dir, `hostpath-${index}`)}`,
      "--node-service=false",
      "--enable-topology=false",
      `--allowed-path-roots=${dir}`,
    ]);
    csi = CsiClient.connect(socket, {});
    await csi.waitForReady({});
  }
  let resizer: ChildProcess | undefined;
  try {
    // One more claim than measured: c-<claims> is the warm-up.
    await seed(client, namespace, driverName, scenario.claims + 1, csi);
    const target = "2Mi";
    const done = new Map<string, number>();
    const settled = new Set<string>();
    const watchAbort = new AbortController();
    const list = await client.list(GVR.persistentVolumeClaims, { namespace });
    const watching = (async () => {
      for await (const event of client.watch<PersistentVolumeClaim>(
        GVR.persistentVolumeClaims,
        { namespace, resourceVersion: list.metadata?.resourceVersion ?? "0" },
        watchAbort.signal,
      )) {
        const status = event.object.status;
        const finished =
          scenario.driver === "stub"
            ? status?.capacity?.storage === target
            : status?.allocatedResourceStatuses?.storage === "NodeResizePending";
        const name = event.object.metadata?.name ?? "";
        if (finished && !done.has(name) && !settled.has(name)) {
          done.set(name, performance.now());
          settled.add(name);
        }
      }
    })().catch(() => undefined);
    resizer = child([
      "resizer",
      `--csi-address=${socket}`,
      `--kubeconfig=${server.kubeconfigPath}`,
      `--kube-api-qps=${scenario.qps}`,
      `--kube-api-burst=${scenario.burst}`,
      `--workers=${workers}`,
    ]);
    // Warm-up, not measured: one claim through the whole path (driver up, caches synced).
    const warmup = `c-${scenario.claims}`;
    await client.patch(
      GVR.persistentVolumeClaims,
      warmup,
      { spec: { resources: { requests: { storage: target } } } },
      { namespace },
    );
    await waitUntil("warm-up claim", () => done.has(warmup), 120_000);
    done.delete(warmup);
    const grown = new Map<string, number>();
    const started = performance.now();
    await runBounded(scenario.claims, 64, async (i) => {
      await client.patch(
        GVR.persistentVolumeClaims,
        `c-${i}`,
        { spec: { resources: { requests: { storage: target } } } },
        { namespace },
      );
      grown.set(`c-${i}`, performance.now());
    });
    const budgetMs = 120_000 + (scenario.claims * 6 * 1000) / scenario.qps;
    await waitUntil(`${scenario.claims} claims done`, () => done.size >= scenario.claims, budgetMs);
    watchAbort.abort();
    await watching;
    const latencies = [...grown].map(([name, at]) => done.get(name)! - at).sort((a, b) => a - b);
    const seconds = (Math.max(...done.values()) - started) / 1000;
    return {
      ...scenario,
      seconds,
      perSecond: scenario.claims / seconds,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
    };
  } finally {
    if (resizer) await stopChild(resizer);
    csi?.close();
    if (driverProc) await stopChild(driverProc);
    await stub?.close();
  }
}

async function main(): Promise<void> {
  const flags = benchFlags("resize", FLAGS);
  const quick = flags.bool("quick");
  const claims = quick ? 20 : flags.number("claims");
  const defaultClaims = quick ? 10 : flags.number("default-qps-claims");
  const workers = flags.number("workers");
  const dir = await mkdtemp(join(tmpdir(), "csikit-bench-resize-"));
  const fs = filesystemOf(dir);
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");
  process.stdout.write(
    `# bench:resize\n\ncores: ${cpus().length} × ${cpus()[0]?.model ?? "?"}; load average at start: ${load}; node ${process.version}; state dir filesystem: ${fs}; --workers ${workers}\n\n`,
  );
  const server = await startServerProcess({ stateDir: join(dir, "apiserver") });
  const client = new KubeClient({
    kubeConfig: loadKubeConfig({ kubeconfig: server.kubeconfigPath }),
    qps: 1e6,
    burst: 1e6,
  });
  const rows: Row[] = [];
  try {
    // PersistentVolumeClaimResize admission: only classes that allow expansion may grow.
    await client.create(GVR.storageClasses, {
      metadata: { name: "sc" },
      provisioner: "bench",
      allowVolumeExpansion: true,
    });
    const scenarios: Scenario[] = [
      { label: "stub (controller only), QPS 10000", driver: "stub", claims, qps: 10000, burst: 10000 },
      {
        label: "hostpath (node expansion next), QPS 10000",
        driver: "hostpath",
        claims,
        qps: 10000,
        burst: 10000,
      },
      {
        label: "stub (controller only), QPS 5 / burst 10",
        driver: "stub",
        claims: defaultClaims,
        qps: 5,
        burst: 10,
      },
    ];
    for (const [index, scenario] of scenarios.entries())
      rows.push(await runRow(server, client, dir, index, scenario, workers));
  } finally {
    client.close();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
  const lines = [
    "### Claims grown at once → done (stub: status.capacity updated; hostpath: PV grown + NodeResizePending)",
    "",
    "| row | claims | seconds | claims/s | p50 ms | p99 ms |",
    "|---|---:|---:|---:|---:|---:|",
    ...rows.map(
      (r) =>
        `| ${r.label} | ${r.claims} | ${r.seconds.toFixed(2)} | ${r.perSecond.toFixed(1)} | ${r.p50.toFixed(0)} | ${r.p99.toFixed(0)} |`,
    ),
    "",
    `load average at end: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
    "",
  ];
  process.stdout.write(lines.join("\n"));
}

await main();
