// `npm run bench:node [-- --pods=N]`: N pods (default 100) with pre-provisioned, pre-bound,
// pre-attached volumes on one virtual node (`csikit node` as its own process, the API server as
// another), from "scheduled" (the pod created with spec.nodeName, playing the scheduler) to
// Running and back to gone. A recording CSI proxy in front of the hostpath driver timestamps
// each NodeStage/NodePublish/NodeUnpublish/NodeUnstage completion; a pod watch timestamps
// Running and deletion. Prints p50/p99 per step, wall totals, cores, the agent's RSS per
// mounted volume and the state dir's filesystem. As root it re-executes itself in a private
// mount namespace and mounts for real; unprivileged, the proxy answers without mounting (and
// says so). Nothing here asserts on timings.

import { spawn, type ChildProcess } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  GVR,
  type CSINode,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
} from "../src/api/index.ts";
import type { FlagSpecs } from "../src/base/index.ts";
import { benchFlags, rerunInPrivateMountNamespace } from "./cli.ts";
import {
  CsiClient,
  serveCsi,
  type CsiServer,
  type NodeService,
  type VolumeCapabilityInput,
} from "../src/csi/index.ts";
import { serveHostpathDriver } from "../src/drivers/index.ts";
import { KubeClient, loadKubeConfig } from "../src/kube/index.ts";
import { attachmentName } from "../src/node/index.ts";
import { startServerProcess } from "./apiserver/server-process.ts";
import { percentile } from "./stats.ts";
import { filesystemOf } from "./where.ts";

const DRIVER = "hostpath.csi.k8s.io";
const NODE = "bench-node";
const NS = "default";
const MIB = 1024 * 1024;
const CLI = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url));
const WAIT_MS = 300_000;

const FLAGS: FlagSpecs = {
  pods: { type: "int", default: "100", help: "Pods (each with its own volume) on the one node." },
  "no-mount": {
    type: "bool",
    default: "false",
    help: "Answer node calls in the proxy without the hostpath driver (what an unprivileged run does): measures the node agent alone.",
  },
};

const isRoot = process.getuid?.() === 0;
let mounting = isRoot;

function row(step: string, samples: number[]): string[] {
  const sorted = [...samples].sort((a, b) => a - b);
  return [
    step,
    String(samples.length),
    percentile(sorted, 50).toFixed(1),
    percentile(sorted, 99).toFixed(1),
    (sorted.at(-1) ?? NaN).toFixed(1),
  ];
}

function table(rows: string[][]): string {
  const header = ["step", "n", "p50 ms", "p99 ms", "max ms"];
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => r[i]!.length)));
  const line = (r: string[]) =>
    r.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join("  ");
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}

async function rssBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8").catch(() => "");
  const match = /VmRSS:\s+(\d+) kB/.exec(status);
  return match ? Number(match[1]) * 1024 : NaN;
}

async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = WAIT_MS,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** The node-side CSI calls, recorded by volume ID with their completion time. */
type Completions = Map<string, Map<string, number>>;

async function serveRecordingProxy(
  endpoint: string,
  backend: CsiClient | undefined,
  completions: Completions,
): Promise<CsiServer> {
  const done = (method: string, volumeId: string) => {
    const byVolume = completions.get(method) ?? new Map<string, number>();
    byVolume.set(volumeId, performance.now());
    completions.set(method, byVolume);
  };
  const { rm: remove, mkdir: makeDir } = await import("node:fs/promises");
  const node: Partial<NodeService> = {
    nodeGetInfo: async () =>
      backend
        ? backend.node.nodeGetInfo({})
        : { nodeId: NODE, maxVolumesPerNode: "0", accessibleTopology: null },
    nodeGetCapabilities: async () =>
      backend
        ? backend.node.nodeGetCapabilities({})
        : { capabilities: [{ rpc: { type: "STAGE_UNSTAGE_VOLUME" } }] },
    nodeStageVolume: async (request) => {
      if (backend) await backend.node.nodeStageVolume(request);
      done("NodeStageVolume", request.volumeId);
      return {};
    },
    nodePublishVolume: async (request) => {
      if (backend) await backend.node.nodePublishVolume(request);
      else await makeDir(request.targetPath, { recursive: true });
      done("NodePublishVolume", request.volumeId);
      return {};
    },
    nodeUnpublishVolume: async (request) => {
      if (backend) await backend.node.nodeUnpublishVolume(request);
      else await remove(request.targetPath, { recursive: true, force: true });
      done("NodeUnpublishVolume", request.volumeId);
      return {};
    },
    nodeUnstageVolume: async (request) => {
      if (backend) await backend.node.nodeUnstageVolume(request);
      done("NodeUnstageVolume", request.volumeId);
      return {};
    },
  };
  return serveCsi({ endpoint, node, shutdownGraceMs: 1000 });
}

async function run(pods: number): Promise<void> {
  const base = await mkdtemp(join(tmpdir(), "csikit-bench-node-"));
  const cleanups: (() => Promise<unknown>)[] = [];
  try {
    const root = join(base, "kubelet");
    const server = await startServerProcess({ stateDir: join(base, "apiserver") });
    cleanups.push(() => server.stop());
    const client = new KubeClient({
      kubeConfig: loadKubeConfig({ kubeconfig: server.kubeconfigPath }),
      qps: 5000,
      burst: 5000,
    });

    let driverClient: CsiClient | undefined;
    if (mounting) {
      const driver = await serveHostpathDriver({
        endpoint: join(base, "hostpath.sock"),
        nodeId: NODE,
        stateDir: join(base, "hostpath"),
        allowedPathRoots: [root],
        enableTopology: false,
      });
      cleanups.push(() => driver.close());
      driverClient = CsiClient.connect(driver.path);
      cleanups.push(async () => driverClient?.close());
    }
    const completions: Completions = new Map();
    const proxy = await serveRecordingProxy(join(base, "proxy.sock"), driverClient, completions);
    cleanups.push(() => proxy.close());
    await mkdir(join(root, "plugins_registry"), { recursive: true });
    const registration = await serveCsi({
      endpoint: join(root, "plugins_registry", `${DRIVER}-reg.sock`),
      registration: {
        getInfo: async () => ({
          type: "CSIPlugin",
          name: DRIVER,
          endpoint: proxy.path,
          supportedVersions: ["1.0.0"],
        }),
        notifyRegistrationStatus: async () => ({}),
      },
    });
    cleanups.push(() => registration.close());
    await client.create(GVR.csiDrivers, {
      apiVersion: "storage.k8s.io/v1",
      kind: "CSIDriver",
      metadata: { name: DRIVER },
      spec: { attachRequired: true, podInfoOnMount: true },
    });

    const agent: ChildProcess = spawn(
      process.execPath,
      [
        CLI,
        "node",
        `--node-name=${NODE}`,
        `--root-dir=${root}`,
        `--kubeconfig=${server.kubeconfigPath}`,
        "--volume-stats-agg-period=10m",
      ],
      { stdio: ["ignore", "ignore", "inherit"] },
    );
    cleanups.push(
      () =>
        new Promise<void>((resolve) => {
          if (agent.exitCode !== null || agent.signalCode !== null) return resolve();
          agent.once("exit", () => resolve());
          agent.kill("SIGTERM");
        }),
    );
    await until("driver registered", async () => {
      const csiNode = await client.get<CSINode>(GVR.csiNodes, NODE).catch(() => undefined);
      return csiNode?.spec.drivers.some((d) => d.name === DRIVER) ?? false;
    });

    // Pre-provision: volume, PV bound to a claim, VolumeAttachment attached (attacher's role).
    const capability: VolumeCapabilityInput = { mount: {}, accessMode: { mode: "SINGLE_NODE_WRITER" } };
    const handles: string[] = [];
    await Promise.all(
      Array.from({ length: pods }, async (_, i) => {
        const name = `claim-${i}`;
        let handle = `vol-${i}`;
        let publishContext: Record<string, string> = {};
        if (driverClient) {
          const created = await driverClient.controller.createVolume({
            name,
            capacityRange: { requiredBytes: String(MIB) },
            volumeCapabilities: [capability],
          });
          handle = created.volume?.volumeId ?? "";
          publishContext = (
            await driverClient.controller.controllerPublishVolume({
              volumeId: handle,
              nodeId: NODE,
              volumeCapability: capability,
              readonly: false,
            })
          ).publishContext;
        }
        handles[i] = handle;
        const claim = await client.create<PersistentVolumeClaim>(GVR.persistentVolumeClaims, {
          apiVersion: "v1",
          kind: "PersistentVolumeClaim",
          metadata: { name, namespace: NS },
          spec: {
            accessModes: ["ReadWriteOnce"],
            resources: { requests: { storage: "1Mi" } },
            storageClassName: "",
            volumeName: `pv-${i}`,
          },
        });
        await client.create<PersistentVolume>(GVR.persistentVolumes, {
          apiVersion: "v1",
          kind: "PersistentVolume",
          metadata: { name: `pv-${i}` },
          spec: {
            capacity: { storage: "1Mi" },
            accessModes: ["ReadWriteOnce"],
            persistentVolumeReclaimPolicy: "Retain",
            claimRef: { kind: "PersistentVolumeClaim", namespace: NS, name, uid: claim.metadata?.uid ?? "" },
            csi: { driver: DRIVER, volumeHandle: handle },
          },
        });
        await client.patch(
          GVR.persistentVolumeClaims,
          name,
          { status: { phase: "Bound", capacity: { storage: "1Mi" } } },
          { namespace: NS, subresource: "status" },
        );
        const vaName = attachmentName(handle, DRIVER, NODE);
        await client.create(GVR.volumeAttachments, {
          apiVersion: "storage.k8s.io/v1",
          kind: "VolumeAttachment",
          metadata: { name: vaName },
          spec: { attacher: DRIVER, nodeName: NODE, source: { persistentVolumeName: `pv-${i}` } },
        });
        await client.patch(
          GVR.volumeAttachments,
          vaName,
          { status: { attached: true, attachmentMetadata: publishContext } },
          { subresource: "status" },
        );
      }),
    );

    // Watch pods from now on: Running and deletion times.
    const running = new Map<string, number>();
    const gone = new Map<string, number>();
    const list = await client.list<Pod>(GVR.pods, { namespace: NS });
    const watchAbort = new AbortController();
    cleanups.push(async () => watchAbort.abort());
    const watching = (async () => {
      for await (const event of client.watch<Pod>(
        GVR.pods,
        { namespace: NS, resourceVersion: list.metadata?.resourceVersion ?? "0" },
        watchAbort.signal,
      )) {
        const name = event.object.metadata?.name ?? "";
        if (event.type === "DELETED") gone.set(name, performance.now());
        else if (event.object.status?.phase === "Running" && !running.has(name))
          running.set(name, performance.now());
      }
    })().catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const rssBefore = await rssBytes(agent.pid ?? 0);
    const cpuBefore = await cpuSeconds(agent.pid ?? 0);

    // Scheduled: each pod is created already bound to the node (the scheduler's role).
    const scheduled = new Map<string, number>();
    const upStart = performance.now();
    await Promise.all(
      Array.from({ length: pods }, async (_, i) => {
        const name = `pod-${i}`;
        await client.create<Pod>(GVR.pods, {
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name, namespace: NS },
          spec: {
            nodeName: NODE,
            containers: [{ name: "app", image: "busybox" }],
            volumes: [{ name: "data", persistentVolumeClaim: { claimName: `claim-${i}` } }],
          },
        });
        // Scheduled = the moment the API server has the pod bound to the node.
        scheduled.set(name, performance.now());
      }),
    );
    const createdMs = Math.max(...scheduled.values()) - upStart;
    await until("all pods Running", () => running.size >= pods);
    const upMs = Math.max(...running.values()) - upStart;
    await new Promise((resolve) => setTimeout(resolve, 500));
    const rssAfter = await rssBytes(agent.pid ?? 0);
    const cpuUp = (await cpuSeconds(agent.pid ?? 0)) - cpuBefore;

    const deleted = new Map<string, number>();
    const downStart = performance.now();
    await Promise.all(
      Array.from({ length: pods }, async (_, i) => {
        const name = `pod-${i}`;
        deleted.set(name, performance.now());
        await client.delete(GVR.pods, name, { namespace: NS });
      }),
    );
    await until("all pods gone", () => gone.size >= pods);
    await until("all volumes unstaged", () => (completions.get("NodeUnstageVolume")?.size ?? 0) >= pods);
    const downMs =
      Math.max(...gone.values(), ...(completions.get("NodeUnstageVolume")?.values() ?? [])) - downStart;
    const cpuAll = (await cpuSeconds(agent.pid ?? 0)) - cpuBefore;
    watchAbort.abort();
    await watching;

    const at = (method: string, i: number) => completions.get(method)?.get(handles[i] ?? "") ?? NaN;
    const steps: Record<string, number[]> = {
      "scheduled → staged": [],
      "staged → published": [],
      "published → Running": [],
      "scheduled → Running": [],
      "deleted → unpublished": [],
      "unpublished → unstaged": [],
      "deleted → pod gone": [],
    };
    for (let i = 0; i < pods; i++) {
      const name = `pod-${i}`;
      const s0 = scheduled.get(name)!;
      steps["scheduled → staged"]!.push(at("NodeStageVolume", i) - s0);
      steps["staged → published"]!.push(at("NodePublishVolume", i) - at("NodeStageVolume", i));
      steps["published → Running"]!.push(running.get(name)! - at("NodePublishVolume", i));
      steps["scheduled → Running"]!.push(running.get(name)! - s0);
      const d0 = deleted.get(name)!;
      steps["deleted → unpublished"]!.push(at("NodeUnpublishVolume", i) - d0);
      steps["unpublished → unstaged"]!.push(at("NodeUnstageVolume", i) - at("NodeUnpublishVolume", i));
      steps["deleted → pod gone"]!.push(gone.get(name)! - d0);
    }
    const fsType = filesystemOf(base);
    const out = [
      `csikit node bench: ${pods} pods, one volume each, one node (${mounting ? "hostpath, real bind mounts in a private mount namespace" : isRoot ? "--no-mount: the proxy answers without mounting" : "NOT root: the proxy answers without mounting"})`,
      `cores: ${cpus().length} (${cpus()[0]?.model ?? "?"}), state dir filesystem: ${fsType}`,
      "attach: VolumeAttachments pre-attached (attacher's role played by the bench); scheduler's role: pods created with spec.nodeName",
      "",
      table(Object.entries(steps).map(([step, samples]) => row(step, samples))),
      "",
      `creating the ${pods} pods took ${createdMs.toFixed(0)} ms (API server under the same load)`,
      `all ${pods} Running: ${upMs.toFixed(0)} ms wall (${((pods / upMs) * 1000).toFixed(0)} pods/s)`,
      `teardown of ${pods} (to pods gone and volumes unstaged): ${downMs.toFixed(0)} ms wall`,
      `node agent CPU: ${cpuUp.toFixed(2)} s for the way up, ${(cpuAll - cpuUp).toFixed(2)} s for the teardown; load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(" ")}`,
      `node agent RSS: ${(rssBefore / MIB).toFixed(1)} MiB idle, ${(rssAfter / MIB).toFixed(1)} MiB with ${pods} volumes mounted → ${((rssAfter - rssBefore) / pods / 1024).toFixed(1)} KiB per mounted volume`,
    ];
    process.stdout.write(out.join("\n") + "\n");
    await writeFile(join(base, "result.txt"), out.join("\n"));
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    await rm(base, { recursive: true, force: true });
  }
}

const flags = benchFlags("node", FLAGS);
const pods = flags.number("pods");
if (flags.bool("no-mount")) mounting = false;
const rerun = rerunInPrivateMountNamespace(fileURLToPath(import.meta.url));
if (rerun !== undefined) process.exit(rerun);
await run(pods);
