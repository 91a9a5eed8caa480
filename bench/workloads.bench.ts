// `npm run bench:workloads`: a StatefulSet on the whole cluster of `csikit up` (real mounts in its
// own mount namespace as root), measured from outside as a user sees it:
// - a StatefulSet of --replicas replicas (Parallel) with one claim per replica (the default
//   WaitForFirstConsumer class) → every pod Running: per pod, from its creation to Running;
// - scale to 0 with whenScaled: Delete → every pod gone, every claim deleted by the garbage
//   collector, every volume deleted by the provisioner: per ordinal, from the scale to its
//   claim gone and to its volume gone.
// Prints one table (total, per second, p50/p99 per pod), cores, load and the state dir's
// filesystem. Asserts nothing.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  GVR,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
  type StatefulSet,
} from "../src/api/index.ts";
import type { FlagSpecs } from "../src/base/index.ts";
import { KubeClient, loadKubeConfig } from "../src/kube/index.ts";
import { benchFlags } from "./cli.ts";
import { startUpChild } from "./up-child.ts";
import { percentile } from "./stats.ts";
import { filesystemOf, machine } from "./where.ts";

const FLAGS: FlagSpecs = {
  replicas: { type: "int", default: "100", help: "Replicas of the StatefulSet (one claim each)." },
  nodes: { type: "int", default: "3", help: "Virtual nodes." },
};
const TIMEOUT_MS = 900_000;
const NS = "default";
const SET = "bench";

async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + TIMEOUT_MS;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

interface Row {
  phase: string;
  n: number;
  totalMs: number;
  samples: number[];
}

function table(rows: readonly Row[]): string {
  const header = ["phase", "n", "total s", "per s", "p50 ms", "p99 ms"];
  const cells = rows.map((r) => {
    const sorted = [...r.samples].sort((a, b) => a - b);
    return [
      r.phase,
      String(r.n),
      (r.totalMs / 1000).toFixed(2),
      (r.n / (r.totalMs / 1000)).toFixed(1),
      sorted.length ? percentile(sorted, 50).toFixed(0) : "-",
      sorted.length ? percentile(sorted, 99).toFixed(0) : "-",
    ];
  });
  const all = [header, ...cells];
  const widths = header.map((_, i) => Math.max(...all.map((r) => r[i]!.length)));
  const line = (r: string[]): string =>
    "| " + r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(" | ") + " |";
  return [
    line(header),
    "|" + widths.map((w, i) => (i === 0 ? "-".repeat(w + 2) : "-".repeat(w + 1) + ":")).join("|") + "|",
    ...cells.map(line),
  ].join("\n");
}

function statefulSet(replicas: number): StatefulSet {
  return {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: { name: SET, namespace: NS },
    spec: {
      replicas,
      serviceName: SET,
      podManagementPolicy: "Parallel",
      persistentVolumeClaimRetentionPolicy: { whenScaled: "Delete", whenDeleted: "Delete" },
      selector: { matchLabels: { app: SET } },
      template: {
        metadata: { labels: { app: SET } },
        spec: {
          containers: [
            { name: "app", image: "busybox", volumeMounts: [{ name: "data", mountPath: "/data" }] },
          ],
        },
      },
      volumeClaimTemplates: [
        {
          metadata: { name: "data" },
          spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Mi" } } },
        },
      ],
    },
  };
}

async function run(client: KubeClient, replicas: number): Promise<Row[]> {
  const start = performance.now();
  const firstSeen = new Map<string, number>();
  const running = new Map<string, number>();
  await client.create(GVR.statefulSets, statefulSet(replicas));
  await until(`${replicas} pods Running`, async () => {
    const pods = await client.list<Pod>(GVR.pods, { namespace: NS, labelSelector: `app=${SET}` });
    const now = performance.now();
    for (const pod of pods.items) {
      const name = pod.metadata.name ?? "";
      // The pod's own creation time (second resolution) or when this poll first saw it.
      if (!firstSeen.has(name)) firstSeen.set(name, now);
      if (!running.has(name) && pod.status?.phase === "Running") running.set(name, now);
    }
    return running.size === replicas ? true : undefined;
  });
  const allRunning = performance.now();
  const scaleStart = performance.now();
  await client.patch(GVR.statefulSets, SET, { spec: { replicas: 0 } }, { namespace: NS });
  const podGone = new Map<string, number>();
  const claimGone = new Map<string, number>();
  const volumeGone = new Map<string, number>();
  const claims = [...running.keys()].map((pod) => `data-${pod}`);
  const volumeOf = new Map<string, string>();
  for (const claim of (
    await client.list<PersistentVolumeClaim>(GVR.persistentVolumeClaims, { namespace: NS })
  ).items)
    if (claim.spec?.volumeName) volumeOf.set(claim.metadata.name ?? "", claim.spec.volumeName);
  await until("every pod, claim and volume gone", async () => {
    const [pods, left, volumes] = await Promise.all([
      client.list<Pod>(GVR.pods, { namespace: NS, labelSelector: `app=${SET}` }),
      client.list<PersistentVolumeClaim>(GVR.persistentVolumeClaims, { namespace: NS }),
      client.list<PersistentVolume>(GVR.persistentVolumes),
    ]);
    const now = performance.now() - scaleStart;
    const podNames = new Set(pods.items.map((p) => p.metadata.name ?? ""));
    const claimNames = new Set(left.items.map((c) => c.metadata.name ?? ""));
    const volumeNames = new Set(volumes.items.map((v) => v.metadata.name ?? ""));
    for (const pod of running.keys()) if (!podNames.has(pod) && !podGone.has(pod)) podGone.set(pod, now);
    for (const claim of claims)
      if (!claimNames.has(claim) && !claimGone.has(claim)) claimGone.set(claim, now);
    for (const [claim, volume] of volumeOf)
      if (!volumeNames.has(volume) && !volumeGone.has(claim)) volumeGone.set(claim, now);
    return podGone.size === replicas && claimGone.size === replicas && volumeGone.size === volumeOf.size
      ? true
      : undefined;
  });
  const end = performance.now();
  return [
    {
      phase: `StatefulSet ${replicas} replicas (Parallel) → all Running`,
      n: replicas,
      totalMs: allRunning - start,
      samples: [...running.keys()].map((pod) => running.get(pod)! - firstSeen.get(pod)!),
    },
    {
      phase: `scale ${replicas} → 0: pod gone`,
      n: replicas,
      totalMs: Math.max(...podGone.values()),
      samples: [...podGone.values()],
    },
    {
      phase: `scale ${replicas} → 0 (whenScaled Delete): claim gone`,
      n: replicas,
      totalMs: Math.max(...claimGone.values()),
      samples: [...claimGone.values()],
    },
    {
      phase: `scale ${replicas} → 0: volume gone (DeleteVolume)`,
      n: volumeOf.size,
      totalMs: end - scaleStart,
      samples: [...volumeGone.values()],
    },
  ];
}

async function main(): Promise<void> {
  const flags = benchFlags("workloads", FLAGS);
  const base = await mkdtemp(join(tmpdir(), "csikit-bw-"));
  const stateDir = join(base, "state");
  const isRoot = process.getuid?.() === 0;
  const up = startUpChild(stateDir, [`--nodes=${flags.number("nodes")}`, "--component-v=0"]);
  const { child, exited } = up;
  try {
    await up.ready(TIMEOUT_MS);
    const client = new KubeClient({
      kubeConfig: loadKubeConfig({ kubeconfig: join(stateDir, "kubeconfig") }),
      qps: 1000,
      burst: 2000,
    });
    const rows = await run(client, flags.number("replicas"));
    client.close();
    process.stdout.write(
      [
        "",
        table(rows),
        "",
        "Running: per pod, from the pod first seen to Running; scale-down: per ordinal, from the scale to gone.",
        `nodes: ${flags.number("nodes")}; ${machine()}; state dir filesystem: ${filesystemOf(base)}${isRoot ? "" : " (user + mount namespace)"}`,
        "",
      ].join("\n"),
    );
  } finally {
    child.kill("SIGTERM");
    await exited;
    await rm(base, { recursive: true, force: true });
  }
}

await main();
