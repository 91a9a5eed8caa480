// `npm run chaos [-- --runs 20 --seed N ...]`: randomized, seeded fault runs on one
// `csikit up --driver-fault-proxy` cluster (scenario.ts), the invariants checked after each
// (invariants.ts), a table printed as runs end, and at the end everything deleted and checked
// gone: backend volumes and snapshots, API objects, mounts, loop devices and processes. A failing
// run prints the seed that replays its plan (`--seed S --runs 1`). Exit 0 only when every run
// settled with no violation.

import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { availableParallelism, cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { CsiClient } from "../src/csi/index.ts";
import { KubeClient, loadKubeConfig } from "../src/kube/index.ts";
import { sandboxUnavailable } from "../src/node/index.ts";
import { alive, isRoot, pids, SKIP, START_MS, startUp, stopUp } from "../test/harness/up.ts";
import { cleanUpAll, runChaos, type ChaosCluster, type RunReport } from "./scenario.ts";

const HELP = `npm run chaos -- [flags]

Starts a csikit up cluster (2 nodes, a fault proxy before every driver), then runs --runs seeded
rounds of claim + pod lifecycles under kill -9 and injected CSI faults, checking after each that
the cluster settled with no leak, nothing lost and nothing stuck; then deletes everything and
checks nothing is left (backend volumes, snapshots, mounts, loop devices, processes).

  --runs N        rounds (default 20)
  --seed S        seed of the first round; round i uses S+i (default: random, printed)
  --claims N      claims (each with a pod) per round (default 4)
  --kills N       kill -9 per round (default 3)
  --rules N       fault-proxy rules per round (default 3)
  --window SEC    how long faults go on per round (default 30)
  --settle SEC    the bound on settling after the faults (default 240)
  --nodes N       virtual nodes (default 2)
  --keep          keep the state dir (printed) at the end
  --help          this text
`;

function numberFlag(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0)
    throw new Error(`--${name}: want a whole number, got ${value}`);
  return parsed;
}

const seconds = (ms: number | undefined): string => (ms === undefined ? "—" : `${(ms / 1000).toFixed(1)} s`);

function row(cells: readonly (string | number)[]): string {
  const widths = [5, 11, 6, 34, 8, 10, 5, 5, 5, 5, 6];
  return cells.map((cell, i) => String(cell).padEnd(widths[i] ?? 8)).join(" ");
}

function count(report: RunReport, kind: string): number {
  return report.violations.filter((v) => v.kind === kind).length;
}

/** Loop devices whose backing file is under dir (root only: listing needs no privilege, detaching does). */
function loopsUnder(dir: string): string[] {
  try {
    return execFileSync("losetup", ["-a"], { encoding: "utf8" })
      .split("\n")
      .filter((line) => line.includes(dir));
  } catch {
    return [];
  }
}

/** Cores, load and the state dir's filesystem, as every table of figures says where it ran. */
function whereItRuns(dir: string): string {
  let filesystem = "unknown filesystem";
  try {
    filesystem =
      execFileSync("df", ["-T", dir], { encoding: "utf8" }).split("\n")[1]?.split(/\s+/)[1] ?? filesystem;
  } catch {
    // df missing: said as unknown.
  }
  const load = loadavg()
    .map((n) => n.toFixed(1))
    .join(" ");
  return `${availableParallelism()} cores (${cpus()[0]?.model.trim() ?? "?"}), load ${load}, state dir on ${filesystem}`;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      runs: { type: "string" },
      seed: { type: "string" },
      claims: { type: "string" },
      kills: { type: "string" },
      rules: { type: "string" },
      window: { type: "string" },
      settle: { type: "string" },
      nodes: { type: "string" },
      keep: { type: "boolean" },
      help: { type: "boolean" },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (SKIP) {
    process.stderr.write(`chaos: cannot run here: ${SKIP}\n`);
    return 2;
  }
  const runs = numberFlag(values.runs, 20, "runs");
  const firstSeed = numberFlag(values.seed, Math.floor(Math.random() * 1e6), "seed");
  const plan = {
    claims: numberFlag(values.claims, 4, "claims"),
    kills: numberFlag(values.kills, 3, "kills"),
    faultRules: numberFlag(values.rules, 3, "rules"),
    windowMs: numberFlag(values.window, 30, "window") * 1000,
    settleMs: numberFlag(values.settle, 240, "settle") * 1000,
  };
  const nodes = numberFlag(values.nodes, 2, "nodes");
  const base = await mkdtemp(join(tmpdir(), "csikit-chaos-"));
  const stateDir = join(base, "state");
  const podsRun = (await sandboxUnavailable()) === undefined;
  await mkdir(stateDir, { recursive: true, mode: 0o700 });
  process.stdout.write(
    `chaos: ${runs} runs from seed ${firstSeed}; ${plan.claims} claims, ${plan.kills} kills, ${plan.faultRules} fault rules, ` +
      `${plan.windowMs / 1000} s of faults per run; ${nodes} nodes; state ${stateDir}; ${isRoot ? "root" : "unprivileged"}` +
      `${podsRun ? "" : "; pods run no commands here (no sandbox): no read-back of data"}\n`,
  );
  process.stdout.write(`where: ${whereItRuns(stateDir)}\n`);
  const up = startUp(stateDir, [`--nodes=${nodes}`, "--driver-fault-proxy"]);
  let failed = 0;
  let client: KubeClient | undefined;
  let csi: CsiClient | undefined;
  try {
    const ready = performance.now();
    for (;;) {
      const text = up.output();
      if (/cluster ready in/.test(text)) break;
      if (up.child.exitCode !== null || /✗/.test(text)) throw new Error(`up failed:\n${text}`);
      if (performance.now() - ready > START_MS)
        throw new Error(`up not ready within ${START_MS} ms:\n${text}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const proxies = [...up.output().matchAll(/^ {2}.* driver: (http:\/\/127\.0\.0\.1:\d+\/rules)$/gm)].map(
      (m) => m[1]!,
    );
    const kubeconfig = join(stateDir, "kubeconfig");
    client = new KubeClient({ kubeConfig: loadKubeConfig({ kubeconfig }), qps: 100, burst: 200 });
    csi = CsiClient.connect(`unix://${join(stateDir, "sockets", "driver-controller.sock")}`, {
      timeoutMs: 10_000,
    });
    const cluster: ChaosCluster = { stateDir, kubeconfig, client, csi, proxies, podsRun };
    process.stdout.write(`cluster ready; ${proxies.length} fault proxies\n\n`);
    process.stdout.write(
      row([
        "run",
        "seed",
        "kills",
        "killed",
        "injected",
        "settled",
        "leak",
        "lost",
        "stuck",
        "data",
        "result",
      ]) + "\n",
    );
    const reports: RunReport[] = [];
    for (let i = 0; i < runs; i++) {
      const seed = firstSeed + i;
      const report = await runChaos(cluster, seed, plan);
      reports.push(report);
      const ok = report.violations.length === 0 && report.settledMs !== undefined;
      if (!ok) failed++;
      process.stdout.write(
        row([
          i + 1,
          seed,
          report.kills.length,
          report.kills.join(",").slice(0, 34),
          report.injected,
          seconds(report.settledMs),
          count(report, "leak"),
          count(report, "lost"),
          count(report, "stuck"),
          podsRun ? report.dataChecked : "—",
          ok ? "ok" : "FAIL",
        ]) + "\n",
      );
      for (const violation of report.violations)
        process.stdout.write(`      ${violation.kind}: ${violation.what}\n`);
      if (!ok) process.stdout.write(`      replay: npm run chaos -- --seed ${seed} --runs 1\n`);
    }
    const final = await cleanUpAll(cluster, plan.settleMs);
    const clean = final.violations.length === 0;
    if (!clean) failed++;
    process.stdout.write(
      `\ncleanup: everything deleted, ${clean ? `nothing left (settled in ${seconds(final.settledMs)})` : "LEFT BEHIND:"}\n`,
    );
    for (const violation of final.violations)
      process.stdout.write(`      ${violation.kind}: ${violation.what}\n`);
    const settled = reports
      .flatMap((r) => (r.settledMs !== undefined ? [r.settledMs] : []))
      .sort((a, b) => a - b);
    const median = settled[Math.floor(settled.length / 2)];
    process.stdout.write(
      `\n${runs - reports.filter((r) => r.violations.length > 0 || r.settledMs === undefined).length}/${runs} runs ok; ` +
        `${reports.reduce((n, r) => n + r.kills.length, 0)} kills, ${reports.reduce((n, r) => n + r.injected, 0)} faults injected; ` +
        `median settle ${seconds(median)}\n`,
    );
  } finally {
    csi?.close();
    client?.close();
    const known = Object.values(await pids(stateDir).catch(() => ({})));
    await stopUp(up, stateDir);
    const survivors = known.filter(alive);
    const loops = isRoot ? loopsUnder(stateDir) : [];
    if (survivors.length > 0 || loops.length > 0) {
      failed++;
      process.stdout.write(
        `after stop: ${survivors.length} process(es) alive, ${loops.length} loop device(s): ${loops.join("; ")}\n`,
      );
    } else process.stdout.write("after stop: no process and no loop device left\n");
    if (values.keep) process.stdout.write(`state kept in ${stateDir}\n`);
    else await rm(base, { recursive: true, force: true });
  }
  return failed === 0 ? 0 : 1;
}

process.exitCode = await main().catch((error: unknown) => {
  process.stderr.write(`chaos: ${(error as Error).stack ?? String(error)}\n`);
  return 1;
});
