// The durable-write suite of the API server benchmark: the same scenarios against a server whose
// state directory is on a real disk and against one on tmpfs, side by side, so the table shows
// what the disk costs. Per filesystem: the disk's own fsync time (the floor of one durable
// write), creates with 1 / 16 / 64 keep-alive clients, GET latency while 16 writers run, an
// unpaged list of 5,000 objects, continue pages read at a past revision (from the revision log) while
// 16 writers run, serial 1 KB PUTs with 0 / 10 / 100 / 500 watchers (in a process of their own), and GET
// latency while other clients block the event loop with huge lists and huge bodies. Each state
// directory's filesystem type (statfs) and the core count are printed with the tables.
// Nothing here asserts on a number; the targets are printed next to the figures.

import { closeSync, fsyncSync, openSync, rmSync, writeSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { startProbeProcess } from "./probe-process.ts";
import { RawClient } from "./raw-client.ts";
import { startServerProcess, type ServerProcess } from "./server-process.ts";
import { percentile, runBounded, summarize, type Summary } from "../stats.ts";
import { startWatcherProcess } from "./watcher-process.ts";
import { filesystemOf } from "../where.ts";

export interface DiskSuiteOptions {
  /** Parent of the real-disk state directory. */
  diskDir: string;
  /** Parent of the tmpfs state directory. */
  tmpfsDir: string;
  quick: boolean;
  /** Watcher counts of the fan-out scenario. */
  watcherCounts: readonly number[];
  out: (text: string) => void;
  progress: (text: string) => void;
  /** Write a V8 CPU profile of each server process into `<dir>/real-disk` and `<dir>/tmpfs`. */
  cpuProfileDir?: string;
}

interface FsFigures {
  dir: string;
  fsType: string;
  fsyncMs: number;
  creates: Map<number, Summary>;
  getUnderWrites: Summary;
  writesDuringGets: number;
  list5k: Summary;
  pageUnderWrites: Summary;
  putsByWatchers: Map<number, Summary>;
  getUnderHog: Summary;
  hogOps: number;
}

const NS = "bench-disk";
const LIST_NS = "bench-list";
/** Untimed lists before the timed ones (warm-up). */
const LIST_WARMUP = 5;
/** The fan-out scenario's namespace: one object, so a watch starts without a large initial list. */
const PUT_NS = "bench-put";
const LIST_OBJECTS = 5_000;
/** Page size of the paginated-list scenario. */
const PAGE = 100;

export async function runDiskSuite(options: DiskSuiteOptions): Promise<void> {
  const { out } = options;
  const real = await runOnFilesystem(options, options.diskDir, "real disk");
  const tmpfs = await runOnFilesystem(options, options.tmpfsDir, "tmpfs");
  out(renderDiskTables(real, tmpfs, options));
}

async function runOnFilesystem(options: DiskSuiteOptions, parent: string, label: string): Promise<FsFigures> {
  const base = await mkdtemp(join(parent, "csikit-bench-disk-"));
  let server: ServerProcess | undefined;
  let raw: RawClient | undefined;
  try {
    const fsType = filesystemOf(base);
    options.progress(`${label}: ${base} (${fsType}): fsync`);
    const fsyncMs = measureFsync(base, options.quick ? 50 : 200);
    server = await startServerProcess({
      stateDir: join(base, "state"),
      ...(options.cpuProfileDir
        ? { cpuProfileDir: join(options.cpuProfileDir, label.replace(" ", "-")) }
        : {}),
    });
    raw = new RawClient({ ...server, maxSockets: 64 });
    const client = raw;
    await runBounded(50, 8, async () => void (await client.send("GET", "/api/v1/namespaces/default")));
    for (const ns of [NS, LIST_NS, PUT_NS])
      await client.send("POST", "/api/v1/namespaces", { metadata: { name: ns } });

    const creates = new Map<number, Summary>();
    let serial = 0;
    for (const clients of [1, 16, 64]) {
      const count = options.quick ? 100 : clients === 1 ? 500 : 3_000;
      options.progress(`${label}: ${count} creates, ${clients} client(s)`);
      const result = await runBounded(count, clients, async () => {
        await client.send("POST", cms(NS), configMap(`c-${serial++}`, 256));
      });
      creates.set(clients, summarize(result));
    }

    options.progress(`${label}: GET while 16 writers run`);
    const { gets: getUnderWrites, background: writesDuringGets } = await underLoad(
      client,
      16,
      async (i) => void (await client.send("POST", cms(NS), configMap(`w-${i}-${serial++}`, 256))),
      options.quick ? 200 : 2_000,
      server,
    );

    options.progress(`${label}: list of ${LIST_OBJECTS} objects`);
    const listCount = options.quick ? 500 : LIST_OBJECTS;
    await runBounded(listCount, 32, async (i) => {
      await client.send("POST", cms(LIST_NS), configMap(`l-${i}`, 256));
    });
    const listOnce = async (): Promise<void> => void (await client.send("GET", cms(LIST_NS)));
    // Not timed: the first lists of a fresh server run its list path before V8 has optimised it.
    await runBounded(LIST_WARMUP, 1, listOnce);
    const list5k = summarize(await runBounded(options.quick ? 3 : 20, 1, listOnce));

    // Pages after the first are read at the first page's revision: from the revision log on
    // disk, not from memory, while the writers keep the newest revision moving.
    options.progress(`${label}: continue pages of ${PAGE} at a past revision while 16 writers run`);
    const first = JSON.parse((await client.send("GET", `${cms(LIST_NS)}?limit=${PAGE}`)).text) as {
      metadata: { continue?: string };
    };
    const token = first.metadata.continue ?? "";
    const { gets: pageUnderWrites } = await underLoad(
      client,
      16,
      async (i) => void (await client.send("POST", cms(NS), configMap(`p-${i}-${serial++}`, 256))),
      options.quick ? 20 : 200,
      async () =>
        void (await client.send(
          "GET",
          `${cms(LIST_NS)}?limit=${PAGE}&continue=${encodeURIComponent(token)}`,
        )),
    );

    const putsByWatchers = new Map<number, Summary>();
    await client.send("POST", cms(PUT_NS), configMap("target", 1024));
    for (const watchers of options.watcherCounts) {
      options.progress(`${label}: serial 1 KB PUTs with ${watchers} watchers`);
      const streams = await startWatcherProcess(server, `${cms(PUT_NS)}?watch=1`, watchers, "json");
      try {
        const count = options.quick ? 100 : 1_000;
        const result = await runBounded(count, 1, async (i) => {
          await retryReset(() =>
            client.send("PUT", `${cms(PUT_NS)}/target`, configMap("target", 1024, String(i))),
          );
        });
        putsByWatchers.set(watchers, summarize(result));
      } finally {
        streams.destroy();
      }
    }

    options.progress(`${label}: GET while clients list ${listCount} objects and post 2 MiB bodies`);
    const bigBody = configMap("big", 2 * 1024 * 1024 - 4096);
    const { gets: getUnderHog, background: hogOps } = await underLoad(
      client,
      2,
      async (i) => {
        if (i % 2 === 0) await client.send("GET", cms(LIST_NS));
        // Rejected or accepted, the server has to read and parse all of it first. A server that
        // refuses a body before reading all of it closes the connection after its answer (as
        // Go's net/http does), so the client may see a reset while still sending: that is an
        // answer too.
        else
          await client.sendRaw("PUT", `${cms(NS)}/big`, bigBody).catch((error: unknown) => {
            const code = (error as NodeJS.ErrnoException).code;
            if (code !== "ECONNRESET" && code !== "EPIPE") throw error;
          });
      },
      // Few: each GET may wait behind a whole list or body, and only the percentiles matter.
      options.quick ? 50 : 200,
      server,
    );
    return {
      dir: base,
      fsType,
      fsyncMs,
      creates,
      getUnderWrites,
      writesDuringGets,
      list5k,
      pageUnderWrites,
      putsByWatchers,
      getUnderHog,
      hogOps,
    };
  } finally {
    raw?.close();
    await server?.stop();
    await rm(base, { recursive: true, force: true });
  }
}

function cms(ns: string): string {
  return `/api/v1/namespaces/${ns}/configmaps`;
}

function configMap(name: string, payloadBytes: number, generation = "0"): object {
  return {
    metadata: { name, labels: { app: "bench-disk" } },
    data: { payload: "x".repeat(payloadBytes), generation },
  };
}

/** Median time of one small write + fsync on the directory's filesystem, in ms. */
function measureFsync(dir: string, rounds: number): number {
  const path = join(dir, "fsync-probe");
  const fd = openSync(path, "w");
  const block = Buffer.alloc(4096, 1);
  const samples: number[] = [];
  try {
    for (let i = 0; i < rounds; i++) {
      const t0 = performance.now();
      writeSync(fd, block);
      fsyncSync(fd);
      samples.push(performance.now() - t0);
    }
  } finally {
    closeSync(fd);
    rmSync(path, { force: true });
  }
  samples.sort((a, b) => a - b);
  return percentile(samples, 50);
}

/**
 * `gets` sequential GETs of one small object (or runs of `probe`) while `workers` loops run
 * `background` until the GETs are done; returns the GET latencies and how many background
 * operations completed. With `server`, the GETs of /api/v1/namespaces/default run in a process
 * of their own (probe-child.ts), so they time the server and not this process's event loop.
 */
async function underLoad(
  client: RawClient,
  workers: number,
  background: (index: number) => Promise<void>,
  gets: number,
  probe: ServerProcess | (() => Promise<void>),
): Promise<{ gets: Summary; background: number }> {
  const child =
    typeof probe === "function"
      ? undefined
      : await startProbeProcess(probe, "/api/v1/namespaces/default", gets);
  let done = false;
  let completed = 0;
  let index = 0;
  const loops = Array.from({ length: workers }, async () => {
    while (!done) {
      await background(index++);
      completed++;
    }
  });
  try {
    // Let the background load reach its steady state before timing.
    const deadline = Date.now() + 10_000;
    while (completed < workers * 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    const result = child ? await child.measure() : await runBounded(gets, 1, probe as () => Promise<void>);
    return { gets: summarize(result), background: completed };
  } finally {
    done = true;
    child?.destroy();
    await Promise.all(loops);
  }
}

/**
 * Runs `op` again once if a kept-alive socket was reset under it: the server closes idle
 * keep-alive sockets, and a request can race that close. Only for requests safe to repeat.
 */
async function retryReset<T>(op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ECONNRESET") throw error;
    return op();
  }
}

function ms(value: number): string {
  return Number.isFinite(value) ? value.toFixed(2) : "-";
}

function rate(value: number): string {
  return Number.isFinite(value) ? value.toFixed(0) : "-";
}

function x(value: number, base: number): string {
  return Number.isFinite(value / base) ? `${(value / base).toFixed(2)}x` : "-";
}

function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]): string =>
    "| " + cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(" | ") + " |";
  const rule =
    "|" + widths.map((w, i) => (i === 0 ? "-".repeat(w + 2) : "-".repeat(w + 1) + ":")).join("|") + "|";
  return [line(header), rule, ...rows.map(line)].join("\n");
}

function renderDiskTables(real: FsFigures, tmpfs: FsFigures, options: DiskSuiteOptions): string {
  const cpu = cpus();
  const header = [
    "scenario",
    `real disk (${real.fsType})`,
    `tmpfs (${tmpfs.fsType})`,
    "disk/tmpfs",
    "target",
  ];
  const rows: string[][] = [];
  rows.push(["fsync of a 4 KiB append, median ms", ms(real.fsyncMs), ms(tmpfs.fsyncMs), "", ""]);
  rows.push(["1/fsync, /s", rate(1000 / real.fsyncMs), rate(1000 / tmpfs.fsyncMs), "", ""]);
  for (const clients of [1, 16, 64]) {
    const r = real.creates.get(clients)!;
    const t = tmpfs.creates.get(clients)!;
    const target =
      clients === 64
        ? "≥ 0.8x tmpfs and ≥ 3000/s"
        : clients === 1
          ? `≥ 0.9x 1/fsync (${rate(900 / real.fsyncMs)}/s)`
          : "";
    rows.push([
      `creates, ${clients} client(s), /s`,
      rate(r.opsPerSecond),
      rate(t.opsPerSecond),
      x(r.opsPerSecond, t.opsPerSecond),
      target,
    ]);
    rows.push([`creates, ${clients} client(s), p99 ms`, ms(r.p99), ms(t.p99), "", ""]);
  }
  rows.push([
    "GET p50 ms, 16 writers running",
    ms(real.getUnderWrites.p50),
    ms(tmpfs.getUnderWrites.p50),
    "",
    "",
  ]);
  rows.push([
    "GET p99 ms, 16 writers running",
    ms(real.getUnderWrites.p99),
    ms(tmpfs.getUnderWrites.p99),
    "",
    "≤ 5 ms",
  ]);
  rows.push([
    "writes done by the 16 writers meanwhile",
    String(real.writesDuringGets),
    String(tmpfs.writesDuringGets),
    "",
    "",
  ]);
  rows.push([
    `unpaged list of ${options.quick ? 500 : LIST_OBJECTS} objects (after ${LIST_WARMUP} untimed), p50 ms`,
    ms(real.list5k.p50),
    ms(tmpfs.list5k.p50),
    "",
    "≤ 15 ms",
  ]);
  rows.push(["  same, p99 ms", ms(real.list5k.p99), ms(tmpfs.list5k.p99), "", ""]);
  rows.push([
    `continue page of ${PAGE} at a past revision, 16 writers running, p50 ms`,
    ms(real.pageUnderWrites.p50),
    ms(tmpfs.pageUnderWrites.p50),
    "",
    "",
  ]);
  rows.push(["  same, p99 ms", ms(real.pageUnderWrites.p99), ms(tmpfs.pageUnderWrites.p99), "", ""]);
  const base = (figures: FsFigures): number => figures.putsByWatchers.get(0)?.opsPerSecond ?? Number.NaN;
  for (const watchers of options.watcherCounts) {
    const r = real.putsByWatchers.get(watchers)!;
    const t = tmpfs.putsByWatchers.get(watchers)!;
    const target = watchers === 100 ? "≥ 0.7x of 0 watchers" : watchers === 500 ? "≥ 0.4x of 0 watchers" : "";
    rows.push([
      `serial 1 KB PUTs, ${watchers} watchers, /s (x of 0)`,
      `${rate(r.opsPerSecond)} (${x(r.opsPerSecond, base(real))})`,
      `${rate(t.opsPerSecond)} (${x(t.opsPerSecond, base(tmpfs))})`,
      x(r.opsPerSecond, t.opsPerSecond),
      target,
    ]);
  }
  rows.push([
    "GET p50 ms, lists + 2 MiB bodies running",
    ms(real.getUnderHog.p50),
    ms(tmpfs.getUnderHog.p50),
    "",
    "",
  ]);
  rows.push([
    "GET p99 ms, lists + 2 MiB bodies running",
    ms(real.getUnderHog.p99),
    ms(tmpfs.getUnderHog.p99),
    "",
    "",
  ]);
  rows.push(["lists + big bodies done meanwhile", String(real.hogOps), String(tmpfs.hogOps), "", ""]);
  return [
    `### Durable writes: real disk vs tmpfs${options.quick ? " (--quick)" : ""}`,
    "",
    `cores: ${cpu.length} × ${cpu[0]?.model.trim() ?? "unknown"}; load average at the end: ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}; server: child process, HTTPS, SQLite WAL synchronous=FULL`,
    `real disk state dir: ${real.dir} (${real.fsType}); tmpfs state dir: ${tmpfs.dir} (${tmpfs.fsType})`,
    "",
    table(header, rows),
    "",
    "creates: 256 B ConfigMaps over raw keep-alive HTTPS, one socket per client. GETs: one small object, " +
      "sequential, from a client process of their own, while the background load runs. PUTs: one 1 KB ConfigMap replaced serially while N watch " +
      "streams on its namespace, in a process of their own (as other components' informers), read every event.",
    "",
  ].join("\n");
}
