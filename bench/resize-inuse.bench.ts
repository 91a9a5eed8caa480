// `npm run bench:resize-inuse`: what --handle-volume-inuse-error costs the resizer in memory in a
// cluster with many pods (external-resizer#211: upstream's cluster-wide pod informer, built for
// this option, made the sidecar run out of memory). The embedded API server runs as its own
// process with --pods small pods (each mounting a claim, all in the namespace of the claims the
// resizer waits on, the worst case for csikit's on-demand lookup); a stub driver answers every
// ControllerExpandVolume with FAILED_PRECONDITION, so --claims claims stay "in use" and are
// retried (pods listed) throughout. Each row starts a fresh resizer process
// (resize-inuse-child.ts) --reps times and prints the medians (lowest–highest) of RSS and V8 heap
// after it settled, and its peak RSS (VmHWM):
//   off      --handle-volume-inuse-error=false
//   on       --handle-volume-inuse-error=true (csikit: namespaced pod lists on demand, no cache)
//   informer on + a cluster-wide pod informer, the cache upstream keeps (emulated: same client
//            and informer code as csikit's, so the difference is the cached pods).
// Prints cores, load, Node and the state dir's filesystem. Asserts nothing.

import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { GVR, type PersistentVolumeClaim } from "../src/api/index.ts";
import type { FlagSpecs } from "../src/base/index.ts";
import { CsiError, GrpcStatus, serveCsi } from "../src/csi/index.ts";
import { KubeClient, loadKubeConfig } from "../src/kube/index.ts";
import { startServerProcess } from "./apiserver/server-process.ts";
import { benchFlags } from "./cli.ts";
import { median, runBounded } from "./stats.ts";
import { filesystemOf, machine } from "./where.ts";

const FLAGS: FlagSpecs = {
  pods: { type: "int", default: "10000", help: "Pods in the cluster." },
  claims: { type: "int", default: "10", help: "Claims of the resizer's driver waiting as in use." },
  reps: { type: "int", default: "3", help: "Fresh resizer processes per row (medians printed)." },
  "settle-ms": { type: "int", default: "5000", help: "Idle time before memory is read." },
};

const CHILD = join(import.meta.dirname, "resize-inuse-child.ts");
const STUB = "stub.resize-inuse-bench.csikit.io";
const NS = "default";

interface Sample {
  rssMiB: number;
  heapUsedMiB: number;
  peakRssMiB: number;
  podsCached: number;
}

function measure(kubeconfig: string, socket: string, mode: string, settleMs: number): Promise<Sample> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ["--expose-gc", CHILD, kubeconfig, socket, mode, String(settleMs)], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    proc.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk;
      const line = out.split("\n").find((l) => l.startsWith("{"));
      if (line) {
        proc.kill("SIGTERM");
        resolve(JSON.parse(line) as Sample);
      }
    });
    proc.stderr.setEncoding("utf8").on("data", (chunk: string) => (err = (err + chunk).slice(-2000)));
    const timer = setTimeout(() => proc.kill("SIGKILL"), settleMs + 120_000);
    proc.once("exit", (code) => {
      clearTimeout(timer);
      if (!out.includes("{")) reject(new Error(`child ${mode} exited ${code}: ${err}`));
    });
  });
}

async function seed(client: KubeClient, pods: number, claims: number): Promise<void> {
  await client.create(GVR.storageClasses, {
    metadata: { name: "sc" },
    provisioner: STUB,
    allowVolumeExpansion: true,
  });
  await runBounded(claims, 16, async (i) => {
    const name = `c-${i}`;
    const claim = await client.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
      metadata: { name, namespace: NS },
      spec: {
        accessModes: ["ReadWriteOnce"],
        resources: { requests: { storage: "1Mi" } },
        storageClassName: "sc",
        volumeName: `pv-${name}`,
      },
    });
    const pv = await client.create(GVR.persistentVolumes, {
      metadata: { name: `pv-${name}` },
      spec: {
        capacity: { storage: "1Mi" },
        accessModes: ["ReadWriteOnce"],
        storageClassName: "sc",
        claimRef: { kind: "PersistentVolumeClaim", namespace: NS, name, uid: claim.metadata.uid! },
        csi: { driver: STUB, volumeHandle: name },
      },
    });
    await client.updateStatus(GVR.persistentVolumes, { ...pv, status: { phase: "Bound" } });
    await client.updateStatus(GVR.persistentVolumeClaims, {
      ...claim,
      status: { phase: "Bound", capacity: { storage: "1Mi" } },
    });
    await client.patch(
      GVR.persistentVolumeClaims,
      name,
      { spec: { resources: { requests: { storage: "2Mi" } } } },
      { namespace: NS },
    );
  });
  // Small pods, each mounting a claim; the first `claims` of them use the resizer's claims.
  await runBounded(pods, 64, async (i) => {
    await client.create(GVR.pods, {
      metadata: { name: `p-${i}`, namespace: NS, labels: { app: "bench" } },
      spec: {
        containers: [{ name: "c", image: "busybox" }],
        volumes: [{ name: "data", persistentVolumeClaim: { claimName: `c-${i % Math.max(claims, 100)}` } }],
      },
    });
  });
}

async function main(): Promise<void> {
  const flags = benchFlags("resize-inuse", FLAGS);
  const pods = flags.number("pods");
  const claims = flags.number("claims");
  const reps = flags.number("reps");
  const settleMs = flags.number("settle-ms");
  const dir = await mkdtemp(join(tmpdir(), "csikit-bench-resize-inuse-"));
  process.stdout.write(
    `# bench:resize-inuse\n\n${machine()}; state dir filesystem: ${filesystemOf(dir)}; ${pods} pods, ${claims} claims waiting as in use; ${reps} resizer processes per row, settled ${settleMs} ms\n\n`,
  );
  const server = await startServerProcess({ stateDir: join(dir, "apiserver") });
  const client = new KubeClient({
    kubeConfig: loadKubeConfig({ kubeconfig: server.kubeconfigPath }),
    qps: 1e6,
    burst: 1e6,
  });
  let expandCalls = 0;
  const stub = await serveCsi({
    endpoint: join(dir, "stub.sock"),
    shutdownGraceMs: 100,
    identity: {
      probe: async () => ({ ready: { value: true } }),
      getPluginInfo: async () => ({ name: STUB, vendorVersion: "1" }),
      getPluginCapabilities: async () => ({
        capabilities: [{ service: { type: "CONTROLLER_SERVICE" } }, { volumeExpansion: { type: "OFFLINE" } }],
      }),
    },
    controller: {
      controllerGetCapabilities: async () => ({ capabilities: [{ rpc: { type: "EXPAND_VOLUME" } }] }),
      controllerExpandVolume: async () => {
        expandCalls++;
        throw new CsiError(GrpcStatus.FAILED_PRECONDITION, "volume is published");
      },
    },
  });
  const rows: { mode: string; samples: Sample[] }[] = [];
  try {
    const seeded = performance.now();
    await seed(client, pods, claims);
    process.stdout.write(`seeded in ${((performance.now() - seeded) / 1000).toFixed(1)} s\n\n`);
    for (const mode of ["off", "on", "informer"]) {
      const samples: Sample[] = [];
      for (let rep = 0; rep < reps; rep++)
        samples.push(await measure(server.kubeconfigPath, stub.path, mode, settleMs));
      rows.push({ mode, samples });
    }
  } finally {
    client.close();
    await stub.close();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
  const cell = (values: number[]): string =>
    `${median(values).toFixed(1)} (${Math.min(...values).toFixed(1)}–${Math.max(...values).toFixed(1)})`;
  const label: Record<string, string> = {
    off: "--handle-volume-inuse-error=false",
    on: "--handle-volume-inuse-error=true (csikit: on-demand namespaced lists)",
    informer: "true + cluster-wide pod informer (upstream's cache, emulated)",
  };
  const lines = [
    "| resizer | RSS MiB | V8 heap used MiB | peak RSS MiB | pods cached |",
    "|---|---:|---:|---:|---:|",
    ...rows.map(
      (r) =>
        `| ${label[r.mode]} | ${cell(r.samples.map((s) => s.rssMiB))} | ${cell(r.samples.map((s) => s.heapUsedMiB))} | ${cell(r.samples.map((s) => s.peakRssMiB))} | ${median(r.samples.map((s) => s.podsCached))} |`,
    ),
    "",
    `ControllerExpandVolume calls answered FAILED_PRECONDITION: ${expandCalls}; load average at end: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
    "",
  ];
  process.stdout.write(lines.join("\n"));
}

await main();
