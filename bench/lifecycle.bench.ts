// `npm run bench:lifecycle`: the whole cluster of `csikit up` (17 processes, RBAC identities,
// real mounts in its own mount namespace) measured from outside, as a user sees it:
// - `up` ready: spawn → every node Ready with its driver registered in CSINode;
// - one pod with a new claim (default class, WaitForFirstConsumer) → Running, repeated;
// - N pods each with a new claim created at once → all Running → all deleted (volumes
//   unpublished, unstaged, detached) → claims deleted → every volume gone.
// Prints a table (throughput, p50/p99 per phase), where the time goes per step
// (lifecycle-phases.ts), the CPU time start-up took, cores, load and the state dir's filesystem.
// Asserts nothing (issue 11 §6 targets are for reading, not for failing).

import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { GVR, type PersistentVolume, type PersistentVolumeClaim, type Pod } from "../src/api/index.ts";
import type { FlagSpecs } from "../src/base/index.ts";
import { benchFlags } from "./cli.ts";
import { startUpChild } from "./up-child.ts";
import { KubeClient, loadKubeConfig } from "../src/kube/index.ts";
import { PhaseRecorder } from "./lifecycle-phases.ts";
import { percentile } from "./stats.ts";
import { filesystemOf } from "./where.ts";

const FLAGS: FlagSpecs = {
  pods: { type: "int", default: "100", help: "Pods (each with a new claim) of the at-once row." },
  single: { type: "int", default: "10", help: "Repetitions of the one-pod row." },
  nodes: { type: "int", default: "3", help: "Virtual nodes." },
};
const TIMEOUT_MS = 600_000;

async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + TIMEOUT_MS;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
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

function claim(name: string): PersistentVolumeClaim {
  return {
    metadata: { name, namespace: "default" },
    spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Mi" } } },
  };
}

function pod(name: string, claimName: string): Pod {
  return {
    metadata: { name, namespace: "default" },
    spec: {
      containers: [{ name: "app", image: "busybox" }],
      volumes: [{ name: "data", persistentVolumeClaim: { claimName } }],
    },
  };
}

/**
 * CPU seconds (user + system) the cluster's processes have used, from /proc: how much work
 * start-up is, which unlike the wall time hardly depends on what else the machine runs.
 */
async function cpuSecondsOf(pidsFile: string): Promise<string> {
  try {
    const pids = JSON.parse(await readFile(pidsFile, "utf8")) as Record<string, number>;
    const ticks = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout.trim()) || 100;
    let total = 0;
    for (const pid of Object.values(pids)) {
      // Fields after the command name: utime and stime are the 12th and 13th.
      const fields = (await readFile(`/proc/${pid}/stat`, "utf8")).split(") ")[1]?.split(" ") ?? [];
      total += (Number(fields[11]) + Number(fields[12])) / ticks;
    }
    return `${total.toFixed(1)} s over ${Object.keys(pids).length} processes`;
  } catch {
    return "n/a (no /proc)";
  }
}

/**
 * Failed syncs each component retried (its work queue's "processing failed, will retry" lines)
 * and how many of them were 409 Conflicts (a write on a stale object): each costs a rate-limited
 * requeue, so many of them show up as waiting no watch event explains.
 */
async function retriesOf(logsDir: string): Promise<string> {
  const parts: string[] = [];
  for (const file of (await readdir(logsDir).catch(() => [])).sort()) {
    if (!file.endsWith(".log")) continue;
    const lines = (await readFile(join(logsDir, file), "utf8")).split("\n");
    const retries = lines.filter((line) => line.includes("will retry"));
    if (retries.length === 0) continue;
    const conflicts = retries.filter((line) => /conflict|409|has been modified/i.test(line)).length;
    parts.push(`${file.replace(/\.log$/, "")} ${retries.length} (${conflicts} conflicts)`);
  }
  return parts.length > 0 ? parts.join(", ") : "none";
}

/** Creates n claims + pods at once and takes them through the whole lifecycle. */
async function lifecycle(
  client: KubeClient,
  phases: PhaseRecorder,
  prefix: string,
  n: number,
): Promise<Row[]> {
  const names = Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
  const created = new Map<string, number>();
  const running = new Map<string, number>();
  const start = performance.now();
  await Promise.all(
    names.map(async (name) => {
      phases.mark(name, "created");
      await client.create(GVR.persistentVolumeClaims, claim(name));
      created.set(name, performance.now());
      await client.create(GVR.pods, pod(name, name));
    }),
  );
  await until(`${n} pods Running`, async () => {
    const pods = await client.list<Pod>(GVR.pods, { namespace: "default" });
    const now = performance.now();
    for (const p of pods.items) {
      const name = p.metadata?.name ?? "";
      if (created.has(name) && !running.has(name) && p.status?.phase === "Running") running.set(name, now);
    }
    return running.size === n ? true : undefined;
  });
  const allRunning = performance.now();
  const deleteStart = performance.now();
  const deleted = new Map<string, number>();
  for (const name of names) phases.mark(name, "pod delete");
  await Promise.all(names.map((name) => client.delete(GVR.pods, name, { namespace: "default" })));
  await until(`${n} pods gone`, async () => {
    const pods = await client.list<Pod>(GVR.pods, { namespace: "default" });
    const left = new Set(pods.items.map((p) => p.metadata?.name ?? ""));
    const now = performance.now();
    for (const name of names) if (!left.has(name) && !deleted.has(name)) deleted.set(name, now - deleteStart);
    return deleted.size === n ? true : undefined;
  });
  const podsGone = performance.now();
  const volumeGone = new Map<string, number>();
  for (const name of names) phases.mark(name, "claim delete");
  await Promise.all(
    names.map((name) => client.delete(GVR.persistentVolumeClaims, name, { namespace: "default" })),
  );
  await until(`${n} volumes gone`, async () => {
    const volumes = await client.list<PersistentVolume>(GVR.persistentVolumes);
    const left = new Set(volumes.items.map((v) => `${v.spec?.claimRef?.name}`));
    const now = performance.now();
    for (const name of names)
      if (!left.has(name) && !volumeGone.has(name)) volumeGone.set(name, now - podsGone);
    return volumeGone.size === n ? true : undefined;
  });
  const end = performance.now();
  return [
    {
      phase: `${n} × claim+pod created → Running`,
      n,
      totalMs: allRunning - start,
      samples: names.map((x) => running.get(x)! - created.get(x)!),
    },
    {
      phase: `${n} × pod deleted → gone (unpublish, unstage, detach)`,
      n,
      totalMs: podsGone - deleteStart,
      samples: [...deleted.values()],
    },
    {
      phase: `${n} × claim deleted → volume gone (DeleteVolume)`,
      n,
      totalMs: end - podsGone,
      samples: [...volumeGone.values()],
    },
  ];
}

async function main(): Promise<void> {
  const flags = benchFlags("lifecycle", FLAGS);
  const base = await mkdtemp(join(tmpdir(), "csikit-bl-"));
  const stateDir = join(base, "state");
  const isRoot = process.getuid?.() === 0;
  const spawnedAt = performance.now();
  const up = startUpChild(stateDir, [`--nodes=${flags.number("nodes")}`, "--component-v=0"]);
  const { child, exited } = up;
  try {
    await up.ready(TIMEOUT_MS);
    const readyMs = performance.now() - spawnedAt;
    const reported = /cluster ready in ([\d.]+)s/.exec(up.output())?.[1] ?? "?";
    const startCpu = await cpuSecondsOf(join(stateDir, "pids.json"));
    const client = new KubeClient({
      kubeConfig: loadKubeConfig({ kubeconfig: join(stateDir, "kubeconfig") }),
      qps: 1000,
      burst: 2000,
    });
    const stopPhases = new AbortController();
    const phases = new PhaseRecorder(client);
    await phases.start(stopPhases.signal);
    const rows: Row[] = [
      {
        phase: "`csikit up` spawn → ready (nodes Ready, driver in CSINode)",
        n: 1,
        totalMs: readyMs,
        samples: [readyMs],
      },
    ];
    const single: number[] = [];
    for (let i = 0; i < flags.number("single"); i++) {
      const [toRunning] = await lifecycle(client, phases, `one-${i}`, 1);
      single.push(toRunning!.samples[0]!);
    }
    rows.push({
      phase: "1 × claim+pod → Running (sequential)",
      n: single.length,
      totalMs: single.reduce((a, b) => a + b, 0),
      samples: single,
    });
    rows.push(...(await lifecycle(client, phases, "many", flags.number("pods"))));
    stopPhases.abort();
    client.close();
    const fsType = filesystemOf(base);
    process.stdout.write(
      [
        "",
        table(rows),
        "",
        "Where the time goes, one claim + pod at a time (p50/p99 of each step's share):",
        "",
        phases.table("one-"),
        "",
        `Where the time goes, ${flags.number("pods")} at once:`,
        "",
        phases.table("many-"),
        "",
        `retried syncs per component: ${await retriesOf(join(stateDir, "logs"))}`,
        `up's own ready figure: ${reported}s; CPU time of the components at ready: ${startCpu}; nodes: ${flags.number("nodes")}; processes: ${1 + 1 + 3 + 4 * flags.number("nodes") + 1}`,
        `cores: ${cpus().length} (${cpus()[0]?.model ?? "?"}), load average ${loadavg()
          .map((l) => l.toFixed(2))
          .join(" ")}, state dir filesystem: ${fsType}${isRoot ? "" : " (user + mount namespace)"}`,
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
