// `npm run bench:rss`: the memory each csikit subcommand costs as a process, because a node
// DaemonSet pays it once per node. Each row starts `csikit <command>` as a child process, waits
// until it is up (hostpath: Probe answers; apiserver: /readyz answers), lets it idle, and reads
// VmRSS from /proc/<pid>/status; hostpath is measured again after 1,000 volumes were created.
// The registrar and the livenessprobe are measured idle against a running hostpath driver, as
// a node DaemonSet runs them. "private" is the part of RSS no other process shares (smaps_rollup
// Private_*): the node binary's text, most of a Node process's RSS, is one page-cache copy for
// every process started from the same image.
// `csikit sanity` is measured by its peak (VmHWM) over a focused run against the driver, as it
// is a batch process. Targets (issue 10): processes that speak only CSI ≤ 64 MiB idle, with a
// Kubernetes client ≤ 100 MiB. Nothing here asserts.
// One start of one process varies by a few MiB (when V8 happens to collect, which code paths
// tier up during start-up), so every row is measured over --reps fresh starts (default 3) and
// printed as the median with the lowest and highest.

import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import type { FlagSpecs } from "../src/base/index.ts";
import { benchFlags } from "./cli.ts";
import { CsiClient } from "../src/csi/index.ts";
import { median } from "./stats.ts";
import { filesystemOf } from "./where.ts";

const FLAGS: FlagSpecs = {
  reps: {
    type: "int",
    default: "3",
    help: "Fresh starts per row; each row prints the median, lowest and highest.",
  },
};

// As users run it: through the launcher, which enables Node's compile cache.
const CSIKIT = fileURLToPath(new URL("../bin/csikit.js", import.meta.url));
const IDLE_MS = 2000;
const VOLUMES = 1000;
const IN_FLIGHT = 32;

interface Row {
  command: string;
  when: string;
  rssMiB: number;
  privateMiB?: number;
  target: string;
}

/** RSS not shared with any other process: Private_Clean + Private_Dirty of smaps_rollup. */
async function privateMiB(pid: number): Promise<number> {
  const text = await readFile(`/proc/${pid}/smaps_rollup`, "utf8");
  let kB = 0;
  for (const match of text.matchAll(/^Private_(?:Clean|Dirty):\s+(\d+) kB/gm)) kB += Number(match[1]);
  return kB / 1024;
}

async function status(pid: number, field: "VmRSS" | "VmHWM"): Promise<number> {
  const text = await readFile(`/proc/${pid}/status`, "utf8");
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text);
  if (!match) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(match[1]) / 1024;
}

/** Node's compile cache for the measured processes; warmed first (see `warm`) unless `cold`. */
let compileCache = "";

function start(args: string[], options: { cold?: boolean } = {}): ChildProcess {
  const cache = options.cold ? join(compileCache, `cold-${Date.now()}`) : compileCache;
  return spawn(process.execPath, [CSIKIT, ...args], {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, NODE_COMPILE_CACHE: cache },
  });
}

/** `csikit <command> --help` loads everything the command will: the cache a restart would find. */
function warm(command: string): void {
  spawnSync(process.execPath, [CSIKIT, command, "--help"], {
    stdio: "ignore",
    env: { ...process.env, NODE_COMPILE_CACHE: compileCache },
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await exited;
}

async function hostpathRows(dir: string): Promise<Row[]> {
  const socket = join(dir, "hostpath.sock");
  const child = start([
    "hostpath",
    "--nodeid=bench-node",
    `--endpoint=unix://${socket}`,
    `--state-dir=${join(dir, "hostpath")}`,
  ]);
  const client = CsiClient.connect(`unix://${socket}`, { timeoutMs: 60_000 });
  try {
    await client.waitForReady({ timeoutMs: 60_000 });
    await sleep(IDLE_MS);
    const idle = await status(child.pid!, "VmRSS");
    const idlePrivate = await privateMiB(child.pid!);
    const capability = { mount: {}, accessMode: { mode: "SINGLE_NODE_WRITER" as const } };
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < VOLUMES) {
        const i = next++;
        await client.controller.createVolume({
          name: `rss-${i}`,
          volumeCapabilities: [capability],
          capacityRange: { requiredBytes: 4096 },
        });
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    await sleep(IDLE_MS);
    const loaded = await status(child.pid!, "VmRSS");
    const loadedPrivate = await privateMiB(child.pid!);
    return [
      {
        command: "hostpath",
        when: "idle after start-up",
        rssMiB: idle,
        privateMiB: idlePrivate,
        target: CSI_ONLY,
      },
      {
        command: "hostpath",
        when: `idle with ${VOLUMES} volumes`,
        rssMiB: loaded,
        privateMiB: loadedPrivate,
        target: CSI_ONLY,
      },
    ];
  } finally {
    client.close();
    await stop(child);
  }
}

async function sanityRow(dir: string): Promise<Row> {
  const socket = join(dir, "sanity-driver.sock");
  const driver = start([
    "hostpath",
    "--nodeid=bench-node",
    `--endpoint=unix://${socket}`,
    `--state-dir=${join(dir, "sanity-state")}`,
    `--allowed-path-roots=${dir}`,
  ]);
  const client = CsiClient.connect(`unix://${socket}`, { timeoutMs: 60_000 });
  try {
    await client.waitForReady({ timeoutMs: 60_000 });
    const sanity = start([
      "sanity",
      `--endpoint=unix://${socket}`,
      `--target-dir=${join(dir, "target")}`,
      `--staging-dir=${join(dir, "staging")}`,
      "--focus=^(Identity|Controller CreateVolume) ",
    ]);
    let peak = 0;
    const exited = new Promise((resolve) => sanity.once("exit", resolve));
    const sample = async (): Promise<void> => {
      while (sanity.exitCode === null && sanity.signalCode === null) {
        peak = Math.max(peak, await status(sanity.pid!, "VmHWM").catch(() => peak));
        await sleep(50);
      }
    };
    await Promise.all([sample(), exited]);
    return { command: "sanity", when: "peak over a focused run", rssMiB: peak, target: CSI_ONLY };
  } finally {
    client.close();
    await stop(driver);
  }
}

/** The registrar and the livenessprobe, idle against a hostpath driver (a node DaemonSet's pod). */
async function nodeSidecarRows(dir: string): Promise<Row[]> {
  const socket = join(dir, "sidecar-driver.sock");
  const driver = start([
    "hostpath",
    "--nodeid=bench-node",
    `--endpoint=unix://${socket}`,
    `--state-dir=${join(dir, "sidecar-state")}`,
  ]);
  const client = CsiClient.connect(`unix://${socket}`, { timeoutMs: 60_000 });
  try {
    await client.waitForReady({ timeoutMs: 60_000 });
    return [
      await idleRow(dir, {
        command: "registrar",
        args: (d) => [
          "registrar",
          `--csi-address=${socket}`,
          "--kubelet-registration-path=/var/lib/kubelet/plugins/hostpath.csi.k8s.io/csi.sock",
          `--plugin-registration-path=${join(d, "plugins_registry")}`,
        ],
        up: /Registration Server started/,
        target: CSI_ONLY,
      }),
      await idleRow(dir, {
        command: "livenessprobe",
        args: () => ["livenessprobe", `--csi-address=${socket}`, "--http-endpoint=127.0.0.1:0"],
        up: /ServeMux listening/,
        target: CSI_ONLY,
      }),
    ];
  } finally {
    client.close();
    await stop(driver);
  }
}

/** Started until its stderr log says it serves (bounded), idles, then VmRSS. */
async function idleRow(dir: string, entry: IdleEntry): Promise<Row> {
  const child = start(entry.args(dir), { cold: entry.cold ?? false });
  try {
    const deadline = Date.now() + 60_000;
    let log = "";
    child.stderr?.on("data", (chunk: Buffer) => (log += chunk.toString()));
    while (!entry.up.test(log) && Date.now() < deadline) await sleep(100);
    await sleep(IDLE_MS);
    return {
      command: entry.command,
      when: entry.cold ? "idle, first start (compile cache cold)" : "idle after start-up",
      rssMiB: await status(child.pid!, "VmRSS"),
      privateMiB: await privateMiB(child.pid!),
      target: entry.target,
    };
  } finally {
    await stop(child);
  }
}

/** A long-running subcommand measured idle: adding a subcommand's row is one entry below. */
interface IdleEntry {
  command: string;
  args: (dir: string) => string[];
  /** Its log line that says it is up. */
  up: RegExp;
  target: string;
  /** Measure a first start: Node strips and compiles every module (the TypeScript stripper loads). */
  cold?: boolean;
}

/** Issue 10 §5 targets: CSI-only processes (hostpath, registrar, livenessprobe, sanity); with a Kubernetes client ≤ 100. */
const CSI_ONLY = "≤ 64";

/** Every row, in print order. */
const MEASURES: ReadonlyArray<(dir: string) => Promise<Row[]>> = [
  hostpathRows,
  nodeSidecarRows,
  async (dir) => [await sanityRow(dir)],
  ...[
    {
      command: "hostpath",
      args: (dir: string) => [
        "hostpath",
        "--nodeid=bench-node",
        `--endpoint=unix://${join(dir, "cold.sock")}`,
        `--state-dir=${join(dir, "cold-state")}`,
      ],
      up: /hostpath driver serving/,
      target: CSI_ONLY,
      cold: true,
    },
    {
      command: "apiserver",
      args: (dir: string) => ["apiserver", "--port=0", `--state-dir=${join(dir, "apiserver")}`],
      up: /serving|listening/i,
      target: "(API server)",
    },
  ].map((entry: IdleEntry) => async (dir: string) => [await idleRow(dir, entry)]),
];

/** One row per command and moment: the median over the repetitions, and their spread. */
function combine(reps: readonly Row[][]): Array<Row & { lowMiB: number; highMiB: number }> {
  return reps[0]!.map((first, i) => {
    const same = reps.map((rows) => rows[i]!);
    const rss = same.map((row) => row.rssMiB);
    const privates = same.flatMap((row) => (row.privateMiB === undefined ? [] : [row.privateMiB]));
    return {
      ...first,
      rssMiB: median(rss),
      ...(privates.length > 0 ? { privateMiB: median(privates) } : {}),
      lowMiB: Math.min(...rss),
      highMiB: Math.max(...rss),
    };
  });
}

async function main(): Promise<void> {
  const reps = Math.max(1, benchFlags("rss", FLAGS).number("reps"));
  const dir = await mkdtemp(join(tmpdir(), "csikit-bench-rss-"));
  try {
    compileCache = join(dir, "compile-cache");
    for (const command of ["hostpath", "registrar", "livenessprobe", "sanity", "apiserver"]) warm(command);
    const runs: Row[][] = [];
    for (let rep = 0; rep < reps; rep++) {
      const repDir = join(dir, `rep-${rep}`);
      await mkdir(repDir);
      const rows: Row[] = [];
      for (const measure of MEASURES) rows.push(...(await measure(repDir)));
      runs.push(rows);
    }
    const fsType = filesystemOf(dir);
    console.log(
      `csikit RSS per subcommand (node ${process.version}, ${cpus().length} cores, load ${loadavg()[0]!.toFixed(2)} at the end; state dirs under ${dir} (${fsType}); started as bin/csikit.js with Node's compile cache warm unless said; median of ${reps} fresh starts per row)\n`,
    );
    console.log("| command | when | RSS MiB (median) | lowest–highest | private MiB | target MiB |");
    console.log("|---|---|---|---|---|---|");
    for (const row of combine(runs))
      console.log(
        `| ${row.command} | ${row.when} | ${row.rssMiB.toFixed(1)} | ${row.lowMiB.toFixed(1)}–${row.highMiB.toFixed(1)} | ${row.privateMiB?.toFixed(1) ?? "–"} | ${row.target} |`,
      );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
