// The scale part of `npm run bench:csi` (issue 10 §4): `csikit hostpath` as its own process,
// as a cluster runs it, driven by one grpc-js client. Sequential CreateVolume+DeleteVolume
// pairs (p50/p99), then 10,000 CreateVolume calls with 32 in flight, reported per 1,000 so a
// cost that grows with the number of volumes shows as a falling rate. The state dir is put on
// a real disk: /tmp is not used when it is tmpfs (fsync would cost nothing there); set
// CSIKIT_BENCH_DIR to choose. Prints cores, load and the state dir's filesystem.

import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CsiClient } from "../src/csi/index.ts";
import type { VolumeCapabilityInput } from "../src/csi/index.ts";
import { percentile } from "./stats.ts";
import { filesystemOf } from "./where.ts";

// Through the launcher, as users run it: it sets hostpath's V8 and malloc start-up settings.
const CSIKIT = fileURLToPath(new URL("../bin/csikit.js", import.meta.url));
const SCALE_VOLUMES = 10_000;
const SCALE_SLICE = 1_000;
const IN_FLIGHT = 32;
const SEQUENTIAL_PAIRS = 300;
const CAPABILITY: VolumeCapabilityInput = { accessMode: { mode: "SINGLE_NODE_WRITER" }, mount: {} };

/** A temp dir on a real disk: $CSIKIT_BENCH_DIR, else the OS temp dir unless tmpfs, else ./. */
async function diskTempDir(): Promise<string> {
  const base =
    process.env.CSIKIT_BENCH_DIR ?? (filesystemOf(tmpdir()) === "tmpfs" ? process.cwd() : tmpdir());
  return mkdtemp(join(base, "csikit-bench-scale-"));
}

/** CPU seconds (user + system) a process used so far, from /proc (Linux; clock ticks of 1/100 s). */
async function cpuSeconds(pid: number): Promise<number> {
  const fields = (await readFile(`/proc/${pid}/stat`, "utf8")).split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await exited;
}

async function sequentialPairs(client: CsiClient): Promise<string> {
  const samples: number[] = [];
  for (let i = -20; i < SEQUENTIAL_PAIRS; i++) {
    const started = performance.now();
    const created = await client.controller.createVolume({
      name: `seq-${i}`,
      volumeCapabilities: [CAPABILITY],
      capacityRange: { requiredBytes: String(1024 * 1024) },
    });
    await client.controller.deleteVolume({ volumeId: created.volume?.volumeId ?? "" });
    if (i >= 0) samples.push(performance.now() - started);
  }
  samples.sort((a, b) => a - b);
  return `| sequential CreateVolume+DeleteVolume | ${SEQUENTIAL_PAIRS} pairs | p50 ${percentile(samples, 50).toFixed(2)} ms, p99 ${percentile(samples, 99).toFixed(2)} ms |`;
}

async function scaleCreates(client: CsiClient): Promise<string[]> {
  const sliceEnds: number[] = [];
  let next = 0;
  let done = 0;
  const started = performance.now();
  const worker = async (): Promise<void> => {
    while (next < SCALE_VOLUMES) {
      const i = next++;
      await client.controller.createVolume({
        name: `scale-${i}`,
        volumeCapabilities: [CAPABILITY],
        capacityRange: { requiredBytes: "4096" },
      });
      done++;
      if (done % SCALE_SLICE === 0) sliceEnds.push(performance.now());
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const total = performance.now() - started;
  const rates = sliceEnds.map(
    (end, i) => SCALE_SLICE / ((end - (i === 0 ? started : sliceEnds[i - 1]!)) / 1000),
  );
  const rows = rates.map(
    (rate, i) =>
      `| creates ${i * SCALE_SLICE + 1}–${(i + 1) * SCALE_SLICE} | ${IN_FLIGHT} in flight | ${rate.toFixed(0)} creates/s |`,
  );
  const first = rates[0]!;
  const last = rates.at(-1)!;
  rows.push(
    `| all ${SCALE_VOLUMES} creates | ${IN_FLIGHT} in flight | ${(SCALE_VOLUMES / (total / 1000)).toFixed(0)} creates/s overall; last ${SCALE_SLICE} at ${((last / first) * 100).toFixed(0)}% of the first (target ≥ 1000/s, ≥ 80%) |`,
  );
  return rows;
}

/** Runs the scale part; returns the lines to print. */
export async function scaleReport(): Promise<string> {
  const dir = await diskTempDir();
  const socket = join(dir, "csi.sock");
  const stateDir = join(dir, "state");
  const child = spawn(
    process.execPath,
    [CSIKIT, "hostpath", "--nodeid=bench-node", `--endpoint=unix://${socket}`, `--state-dir=${stateDir}`],
    { stdio: ["ignore", "ignore", "inherit"] },
  );
  const client = CsiClient.connect(`unix://${socket}`, { timeoutMs: 120_000 });
  try {
    await client.waitForReady({ timeoutMs: 60_000 });
    const load = loadavg()
      .map((l) => l.toFixed(2))
      .join(" ");
    const lines = [
      `csikit hostpath as its own process, one grpc-js client; ${cpus().length} cores, load ${load} at start; state dir ${stateDir} on ${filesystemOf(dir)}`,
      "",
      "| operation | concurrency | result |",
      "|---|---|---|",
      await sequentialPairs(client),
    ];
    const cpuBefore = await cpuSeconds(child.pid!);
    lines.push(...(await scaleCreates(client)));
    const cpuPerCreate = ((await cpuSeconds(child.pid!)) - cpuBefore) / SCALE_VOLUMES;
    lines.push(
      "",
      `driver CPU: ${(cpuPerCreate * 1000).toFixed(2)} ms per create over the ${SCALE_VOLUMES} (the client's is not counted)`,
      `load at end: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(" ")}`,
    );
    return lines.join("\n") + "\n";
  } finally {
    client.close();
    await stop(child);
    await rm(dir, { recursive: true, force: true });
  }
}
