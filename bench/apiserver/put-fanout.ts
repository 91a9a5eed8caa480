// The watch fan-out suite of the API server benchmark (issue 9 §2): serial 1 KB PUTs of one
// ConfigMap while N watch streams on its namespace read every event, for each watcher count
// and for JSON and protobuf streams, on one state directory (tmpfs by default, so the disk does
// not hide the fan-out cost). Rounds alternate over the watcher counts so that load from other
// processes on a shared machine falls on every count alike; each cell is the median over rounds,
// and the ratio to the 0-watcher rate of the same format is printed beside it with the targets.
// The watchers run in a child process of their own (watcher-child.ts), as
// other components' informers would. (Delivery itself — every event once, in order — is counted by watch-fanout.ts and the tests.)

import { mkdtemp, rm } from "node:fs/promises";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { RawClient } from "./raw-client.ts";
import { startServerProcess, type ServerProcess } from "./server-process.ts";
import { runBounded } from "../stats.ts";
import { startWatcherProcess } from "./watcher-process.ts";
import { filesystemOf } from "../where.ts";

export interface PutFanoutOptions {
  /** Parent of the state directory. */
  dir: string;
  watcherCounts: readonly number[];
  formats: readonly ("json" | "protobuf")[];
  puts: number;
  rounds: number;
  cpuProfileDir?: string;
  out: (text: string) => void;
  progress: (text: string) => void;
}

const NS = "bench-fanout";

export async function runPutFanout(options: PutFanoutOptions): Promise<void> {
  const base = await mkdtemp(join(options.dir, "csikit-bench-fanout-"));
  let server: ServerProcess | undefined;
  let client: RawClient | undefined;
  try {
    const fsType = filesystemOf(base);
    server = await startServerProcess({
      stateDir: join(base, "state"),
      ...(options.cpuProfileDir ? { cpuProfileDir: options.cpuProfileDir } : {}),
    });
    client = new RawClient({ ...server, maxSockets: 4 });
    await client.send("POST", "/api/v1/namespaces", { metadata: { name: NS } });
    await client.send("POST", `/api/v1/namespaces/${NS}/configmaps`, configMap("0"));
    // rate[format][watchers] = samples over rounds; cpu = server µs per PUT, likewise.
    const rates = new Map<string, number[]>();
    const cpu = new Map<string, number[]>();
    const clientCpu = new Map<string, number[]>();
    let generation = 1;
    for (let round = 0; round < options.rounds; round++) {
      for (const format of options.formats) {
        for (const watchers of options.watcherCounts) {
          options.progress(`fan-out round ${round + 1}/${options.rounds}: ${format}, ${watchers} watchers`);
          const streams = await startWatcherProcess(
            server,
            `/api/v1/namespaces/${NS}/configmaps?watch=1`,
            watchers,
            format,
          );
          try {
            const cpuBefore = server.cpuSeconds();
            const watcherCpuBefore = streams.cpuSeconds();
            const c = client;
            const result = await runBounded(options.puts, 1, async () => {
              await c.send(
                "PUT",
                `/api/v1/namespaces/${NS}/configmaps/target`,
                configMap(String(generation++)),
              );
            });
            const key = `${format} ${watchers}`;
            push(rates, key, options.puts / result.seconds);
            push(cpu, key, ((server.cpuSeconds() - cpuBefore) * 1e6) / options.puts);
            push(clientCpu, key, ((streams.cpuSeconds() - watcherCpuBefore) * 1e6) / options.puts);
          } finally {
            streams.destroy();
          }
        }
      }
    }
    const median = (values: number[] | undefined): number => {
      if (!values || values.length === 0) return Number.NaN;
      const sorted = [...values].sort((a, b) => a - b);
      return sorted[Math.floor(sorted.length / 2)]!;
    };
    const rows: string[][] = [];
    for (const format of options.formats) {
      const zero = median(rates.get(`${format} 0`));
      for (const watchers of options.watcherCounts) {
        const key = `${format} ${watchers}`;
        const rate = median(rates.get(key));
        const target = watchers === 100 ? "≥ 0.70x" : watchers === 500 ? "≥ 0.40x" : "";
        rows.push([
          `${format} watch streams, ${watchers} watchers`,
          rate.toFixed(0),
          Number.isFinite(rate / zero) ? `${(rate / zero).toFixed(2)}x` : "-",
          target,
          median(cpu.get(key)).toFixed(0),
          median(clientCpu.get(key)).toFixed(0),
          (rates.get(key) ?? []).map((r) => r.toFixed(0)).join(" "),
        ]);
      }
    }
    const c0 = cpus();
    options.out(
      [
        `### Watch fan-out: serial 1 KB PUTs with N watchers`,
        "",
        `cores: ${c0.length} × ${c0[0]?.model.trim() ?? "unknown"}; load average at the end: ${loadavg()
          .map((l) => l.toFixed(1))
          .join(" ")}; state dir: ${base} (${fsType}); ${options.puts} PUTs per cell, ` +
          `median of ${options.rounds} round(s), counts interleaved`,
        "",
        table(
          [
            "scenario",
            "PUTs/s",
            "x of 0 watchers",
            "target",
            "server CPU µs/PUT",
            "watchers CPU µs/PUT",
            "rounds /s",
          ],
          rows,
        ),
        "",
      ].join("\n"),
    );
  } finally {
    client?.close();
    await server?.stop();
    await rm(base, { recursive: true, force: true });
  }
}

function push(map: Map<string, number[]>, key: string, value: number): void {
  const list = map.get(key) ?? [];
  list.push(value);
  map.set(key, list);
}

function configMap(generation: string): object {
  return {
    metadata: { name: "target", labels: { app: "bench-fanout" } },
    data: { payload: "x".repeat(1024), generation },
  };
}

function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]): string =>
    "| " + cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(" | ") + " |";
  const rule =
    "|" + widths.map((w, i) => (i === 0 ? "-".repeat(w + 2) : "-".repeat(w + 1) + ":")).join("|") + "|";
  return [line(header), rule, ...rows.map(line)].join("\n");
}
