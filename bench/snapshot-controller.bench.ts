// `npm run bench:snapshot-controller`: the snapshot controller's throughput behind its client-side
// rate limit (external-snapshotter#1344: 80 snapshots took 143 s at the default QPS 5 / burst 10).
// The embedded API server runs in this process with an audit hook (so every request of the
// controller is counted by its user agent); `csikit snapshot-controller` runs as its own process
// through the real CLI; the test stand-in of the upstream-behaving sidecar cuts snapshots at once
// (the driver is not what is measured). Per row: N bound claims snapshotted at once → all
// readyToUse. Prints throughput, p50/p99 create-to-ready, the controller's API requests and writes
// per snapshot (Events included in requests), the bound its QPS sets (QPS ÷ the requests per
// snapshot of its busier token bucket, burst aside: one for the snapshot API groups, one for the
// core API, as upstream's two clientsets) and how close the row came to it. Asserts nothing.

import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GVR, type PersistentVolumeClaim, type VolumeSnapshot } from "../src/api/index.ts";
import { silentLogger, type FlagSpecs } from "../src/base/index.ts";
import { startApiServer, type AuditEvent } from "../src/apiserver/index.ts";
import { KubeClient, loadKubeConfig, type KubeObject } from "../src/kube/index.ts";
import { installSnapshotCrds } from "../test/harness/snapshots.ts";
import { startSnapshotterStandIn } from "../test/harness/snapshotter-stand-in.ts";
import { benchFlags } from "./cli.ts";
import { percentile, runBounded } from "./stats.ts";
import { filesystemOf, machine } from "./where.ts";

const FLAGS: FlagSpecs = {
  quick: { type: "bool", help: "Small counts for a smoke run." },
  snapshots: { type: "int", default: "200", help: "Snapshots taken at once in the lifted-QPS row." },
  "default-qps-snapshots": { type: "int", default: "100", help: "Snapshots of the default-QPS (5/10) row." },
};

const MAIN = join(import.meta.dirname, "..", "src", "cli", "main.ts");
const DRIVER = "hostpath.csi.k8s.io";
const WRITE_VERBS = new Set(["create", "update", "patch", "delete"]);
/** Resources the controller reaches through its core client (its own token bucket). */
const CORE_RESOURCES = new Set(["events", "persistentvolumeclaims", "persistentvolumes", "nodes"]);

interface Row {
  label: string;
  snapshots: number;
  qps: number;
  seconds: number;
  perSecond: number;
  p50: number;
  p99: number;
  requests: number;
  /** Requests per snapshot of the busier of the controller's two token buckets. */
  busiestBucket: number;
  writes: number;
}

async function seed(client: KubeClient, namespace: string, count: number): Promise<void> {
  await client.create(GVR.namespaces, { metadata: { name: namespace } });
  await runBounded(count, 32, async (i) => {
    const name = `c-${i}`;
    const claim = await client.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
      metadata: { name, namespace },
      spec: {
        accessModes: ["ReadWriteOnce"],
        resources: { requests: { storage: "1Mi" } },
        storageClassName: "",
        volumeName: `pv-${namespace}-${name}`,
      },
    });
    await client.create(GVR.persistentVolumes, {
      metadata: { name: `pv-${namespace}-${name}` },
      spec: {
        capacity: { storage: "1Mi" },
        accessModes: ["ReadWriteOnce"],
        storageClassName: "",
        claimRef: { kind: "PersistentVolumeClaim", namespace, name, uid: claim.metadata?.uid ?? "" },
        csi: { driver: DRIVER, volumeHandle: `${namespace}-${name}` },
      },
    } as KubeObject);
    await client.updateStatus(GVR.persistentVolumeClaims, { ...claim, status: { phase: "Bound" } });
  });
}

async function runRow(
  client: KubeClient,
  kubeconfig: string,
  audit: AuditEvent[],
  index: number,
  row: { label: string; snapshots: number; qps: number; burst: number },
): Promise<Row> {
  const namespace = `bench-${index}`;
  // One more claim than measured: c-<snapshots> is the warm-up (process start, caches synced).
  await seed(client, namespace, row.snapshots + 1);
  const controller: ChildProcess = spawn(
    process.execPath,
    [
      MAIN,
      "snapshot-controller",
      `--kubeconfig=${kubeconfig}`,
      `--kube-api-qps=${row.qps}`,
      `--kube-api-burst=${row.burst}`,
      "--retry-interval-start=100ms",
    ],
    { stdio: "ignore" },
  );
  const ready = new Map<string, number>();
  const watchAbort = new AbortController();
  try {
    const list = await client.list(GVR.volumeSnapshots, { namespace });
    const watching = (async () => {
      for await (const event of client.watch<VolumeSnapshot>(
        GVR.volumeSnapshots,
        { namespace, resourceVersion: list.metadata?.resourceVersion ?? "0" },
        watchAbort.signal,
      )) {
        const name = event.object.metadata?.name ?? "";
        if (event.object.status?.readyToUse === true && !ready.has(name)) ready.set(name, performance.now());
      }
    })().catch(() => undefined);
    const warmup = `s-${row.snapshots}`;
    await client.create(GVR.volumeSnapshots, {
      apiVersion: "snapshot.storage.k8s.io/v1",
      kind: "VolumeSnapshot",
      metadata: { name: warmup, namespace },
      spec: { source: { persistentVolumeClaimName: `c-${row.snapshots}` }, volumeSnapshotClassName: "bench" },
    } as KubeObject);
    while (!ready.has(warmup)) await new Promise((resolve) => setTimeout(resolve, 100));
    ready.delete(warmup);
    // Let the warm-up's own writes (claim release) pass before counting.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const before = audit.length;
    const created = new Map<string, number>();
    const started = performance.now();
    await runBounded(row.snapshots, 64, async (i) => {
      await client.create(GVR.volumeSnapshots, {
        apiVersion: "snapshot.storage.k8s.io/v1",
        kind: "VolumeSnapshot",
        metadata: { name: `s-${i}`, namespace },
        spec: { source: { persistentVolumeClaimName: `c-${i}` }, volumeSnapshotClassName: "bench" },
      } as KubeObject);
      created.set(`s-${i}`, performance.now());
    });
    const deadline = Date.now() + 60_000 + (row.snapshots * 15 * 1000) / row.qps;
    while (ready.size < row.snapshots) {
      if (Date.now() > deadline)
        throw new Error(`${row.label}: only ${ready.size} of ${row.snapshots} ready`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const seconds = (Math.max(...ready.values()) - started) / 1000;
    watchAbort.abort();
    await watching;
    const ours = audit
      .slice(before)
      .filter(
        (e) =>
          (e.userAgent ?? "").startsWith("snapshot-controller") && !(e.userAgent ?? "").includes("leader"),
      );
    const latencies = [...created].map(([name, at]) => ready.get(name)! - at).sort((a, b) => a - b);
    return {
      label: row.label,
      snapshots: row.snapshots,
      qps: row.qps,
      seconds,
      perSecond: row.snapshots / seconds,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      requests: ours.length / row.snapshots,
      busiestBucket:
        Math.max(
          ours.filter((e) => CORE_RESOURCES.has(e.objectRef?.resource ?? "")).length,
          ours.filter((e) => !CORE_RESOURCES.has(e.objectRef?.resource ?? "")).length,
        ) / row.snapshots,
      writes: ours.filter((e) => WRITE_VERBS.has(e.verb)).length / row.snapshots,
    };
  } finally {
    watchAbort.abort();
    const exited = new Promise((resolve) => controller.once("exit", resolve));
    if (controller.exitCode === null) controller.kill("SIGTERM");
    await exited;
  }
}

async function main(): Promise<void> {
  const flags = benchFlags("snapshot-controller", FLAGS);
  const quick = flags.bool("quick");
  const lifted = quick ? 40 : flags.number("snapshots");
  const atDefault = quick ? 20 : flags.number("default-qps-snapshots");
  const dir = await mkdtemp(join(tmpdir(), "csikit-bench-snapshot-"));
  const audit: AuditEvent[] = [];
  const stop = new AbortController();
  const server = await startApiServer(
    { stateDir: join(dir, "apiserver"), port: 0, logger: silentLogger, audit: (e) => audit.push(e) },
    stop.signal,
  );
  const client = new KubeClient({
    kubeConfig: loadKubeConfig({ kubeconfig: server.kubeconfigPath }),
    qps: 1e6,
    burst: 1e6,
  });
  const sidecar = startSnapshotterStandIn({ client, driver: DRIVER });
  const rows: Row[] = [];
  try {
    await installSnapshotCrds(client);
    await client.create(GVR.volumeSnapshotClasses, {
      apiVersion: "snapshot.storage.k8s.io/v1",
      kind: "VolumeSnapshotClass",
      metadata: { name: "bench" },
      driver: DRIVER,
      deletionPolicy: "Delete",
    } as KubeObject);
    const scenarios = [
      { label: "QPS 5 / burst 10 (upstream's defaults)", snapshots: atDefault, qps: 5, burst: 10 },
      { label: "QPS 1000 / burst 2000", snapshots: lifted, qps: 1000, burst: 2000 },
    ];
    for (const [index, scenario] of scenarios.entries())
      rows.push(await runRow(client, server.kubeconfigPath, audit, index, scenario));
  } finally {
    await sidecar.stop();
    client.close();
    stop.abort();
    await server.stopped;
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
  const lines = [
    "# bench:snapshot-controller",
    "",
    `${machine()}; state dir filesystem: ${filesystemOf(tmpdir())}`,
    "",
    "### Snapshots taken at once → all readyToUse (sidecar: the upstream-behaving stand-in, instant)",
    "",
    "| row | snapshots | seconds | snapshots/s | p50 ms | p99 ms | requests/snapshot | writes/snapshot | QPS bound (snapshots/s) | of bound |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...rows.map((r) => {
      const bound = r.qps / r.busiestBucket;
      return `| ${r.label} | ${r.snapshots} | ${r.seconds.toFixed(2)} | ${r.perSecond.toFixed(2)} | ${r.p50.toFixed(0)} | ${r.p99.toFixed(0)} | ${r.requests.toFixed(1)} | ${r.writes.toFixed(1)} | ${bound.toFixed(2)} | ${((100 * r.perSecond) / bound).toFixed(0)}% |`;
    }),
    "",
  ];
  process.stdout.write(lines.join("\n"));
}

await main();
