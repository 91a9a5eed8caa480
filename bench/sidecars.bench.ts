// `npm run bench:sidecars`: the controller sidecars as ONE `csikit sidecars` process against the
// five separate csikit processes (and, when their binaries are given, the separate Go
// sidecars), each against a fresh embedded API server (state on the --state-dir filesystem,
// RBAC on, audit recording every request) and csikit's hostpath over a Unix socket. Per run:
// --volumes claims are provisioned (Immediate binding, no topology), then the processes' RSS
// is read (sum of VmRSS), they are stopped, and the audit log gives the watches they opened,
// their list calls and their writes (every verb but get/list/watch). --reps runs alternate the
// forms; the table shows medians, with cores, load and the state filesystem.
//
// Go sidecars: CSI_PROVISIONER, CSI_ATTACHER, CSI_RESIZER, CSI_SNAPSHOTTER,
// CSI_HEALTH_MONITOR name their binaries; without all five the Go column is skipped.

import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { GVR, type PersistentVolume } from "../src/api/index.ts";
import { startApiServer, type AuditEvent } from "../src/apiserver/index.ts";
import { silentLogger } from "../src/base/index.ts";
import {
  ClusterLayout,
  RBAC_DIR,
  applyManifests,
  clusterOfAdminKubeconfig,
  readManifests,
  requestServiceAccountToken,
  writeComponentKubeconfig,
} from "../src/cluster/index.ts";
import { CsiClient } from "../src/csi/index.ts";
import { KubeClient, loadKubeConfig } from "../src/kube/index.ts";
import { benchFlags } from "./cli.ts";
import { median } from "./stats.ts";
import { filesystemOf, machine } from "./where.ts";

const MAIN = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url));
const DRIVER = "hostpath.csi.k8s.io";
const ACCOUNTS = {
  provisioner: "csi-provisioner",
  attacher: "csi-attacher",
  resizer: "csi-resizer",
  snapshotter: "csi-snapshotter",
  "health-monitor": "csi-external-health-monitor-controller",
} as const;
type Component = keyof typeof ACCOUNTS;
const COMPONENTS = Object.keys(ACCOUNTS) as Component[];
const GO_ENV: Record<Component, string> = {
  provisioner: "CSI_PROVISIONER",
  attacher: "CSI_ATTACHER",
  resizer: "CSI_RESIZER",
  snapshotter: "CSI_SNAPSHOTTER",
  "health-monitor": "CSI_HEALTH_MONITOR",
};

const flags = benchFlags("sidecars", {
  volumes: { type: "int", default: "1000", help: "Claims provisioned per run (the issue asks 10,000)." },
  reps: { type: "int", default: "3", help: "Runs of each form (alternating); the table shows medians." },
  "state-dir": {
    type: "string",
    default: tmpdir(),
    help: "Where the API server keeps its state (its filesystem is printed).",
  },
  "timeout-s": { type: "int", default: "1800", help: "Bound on provisioning one run's volumes, in seconds." },
});

type Form = "combined" | "separate" | "go";
interface RunResult {
  rssMiB: number;
  watches: number;
  lists: number;
  writes: number;
  seconds: number;
}

function spawnProcess(command: string, args: string[], env: Record<string, string>): ChildProcess {
  const child = spawn(command, args, {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, ...env },
  });
  child.stderr?.resume();
  return child;
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const closed = new Promise<void>((resolve) => child.once("close", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await closed;
  clearTimeout(timer);
}

async function rssMiB(pid: number): Promise<number> {
  const text = await readFile(`/proc/${pid}/status`, "utf8").catch(() => "");
  const kib = Number(/VmRSS:\s+(\d+)/.exec(text)?.[1] ?? 0);
  return kib / 1024;
}

async function waitUntil(check: () => Promise<boolean>, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function run(form: Form, volumes: number): Promise<RunResult> {
  const dir = await mkdtemp(join(flags.string("state-dir"), "csikit-bench-sidecars-"));
  const stop = new AbortController();
  const audit: AuditEvent[] = [];
  const children: ChildProcess[] = [];
  try {
    const layout = new ClusterLayout(join(dir, "state"));
    await layout.create();
    await writeFile(layout.tokenAuthFile, "");
    const server = await startApiServer(
      {
        stateDir: layout.stateDir,
        port: 0,
        logger: silentLogger,
        authorizationMode: "RBAC",
        tokenAuthFile: layout.tokenAuthFile,
        admission: [],
        audit: (event) => audit.push(event),
      },
      stop.signal,
    );
    const admin = new KubeClient({
      kubeConfig: loadKubeConfig({ kubeconfig: server.kubeconfigPath }),
      qps: 1000,
      burst: 1000,
    });
    await applyManifests(admin, await readManifests(RBAC_DIR));
    const cluster = await clusterOfAdminKubeconfig(layout);
    const kubeconfigOf = async (account: string): Promise<string> =>
      writeComponentKubeconfig(
        layout,
        account,
        cluster,
        await requestServiceAccountToken(admin, "default", account),
      );
    const socket = join(dir, "csi.sock");
    const driver = spawnProcess(
      process.execPath,
      [
        MAIN,
        "hostpath",
        `--endpoint=unix://${socket}`,
        "--nodeid=node-1",
        `--state-dir=${join(dir, "hp")}`,
        `--allowed-path-roots=${dir}`,
        "--enable-attach",
      ],
      {},
    );
    children.push(driver);
    const csi = CsiClient.connect(socket, { timeoutMs: 5000 });
    await csi.waitForReady({ timeoutMs: 60_000 });
    csi.close();
    await admin.create(GVR.storageClasses, {
      apiVersion: "storage.k8s.io/v1",
      kind: "StorageClass",
      metadata: { name: "sc" },
      provisioner: DRIVER,
      volumeBindingMode: "Immediate",
    });
    const qps = ["--kube-api-qps=100", "--kube-api-burst=200"];
    const env = { POD_NAMESPACE: "default", NAMESPACE: "default" };
    const sidecars: ChildProcess[] = [];
    if (form === "combined") {
      const args = [
        MAIN,
        "sidecars",
        `--csi-address=${socket}`,
        `--kubeconfig=${await kubeconfigOf("csikit-sidecars")}`,
        ...qps,
        "--provisioner.feature-gates=Topology=false",
      ];
      for (const c of COMPONENTS) args.push(`--${c}`, `--${c}.kubeconfig=${await kubeconfigOf(ACCOUNTS[c])}`);
      sidecars.push(spawnProcess(process.execPath, args, env));
    } else {
      for (const c of COMPONENTS) {
        const args = [`--csi-address=${socket}`, `--kubeconfig=${await kubeconfigOf(ACCOUNTS[c])}`, ...qps];
        if (c === "provisioner") args.push("--feature-gates=Topology=false");
        sidecars.push(
          form === "go"
            ? spawnProcess(process.env[GO_ENV[c]]!, args, env)
            : spawnProcess(process.execPath, [MAIN, c, ...args], env),
        );
      }
    }
    children.push(...sidecars);
    const started = performance.now();
    for (let i = 0; i < volumes; i += 50) {
      await Promise.all(
        Array.from({ length: Math.min(50, volumes - i) }, (_, j) =>
          admin.create(GVR.persistentVolumeClaims, {
            apiVersion: "v1",
            kind: "PersistentVolumeClaim",
            metadata: {
              name: `c-${i + j}`,
              namespace: "default",
              annotations: { "volume.kubernetes.io/storage-provisioner": DRIVER },
            },
            spec: {
              accessModes: ["ReadWriteOnce"],
              resources: { requests: { storage: "1Mi" } },
              storageClassName: "sc",
            },
          }),
        ),
      );
    }
    await waitUntil(
      async () => (await admin.list<PersistentVolume>(GVR.persistentVolumes)).items.length >= volumes,
      `${volumes} PVs`,
      flags.number("timeout-s") * 1000,
    );
    const seconds = (performance.now() - started) / 1000;
    // Let the settled writes (in-flight marks cleared, events) land before measuring.
    await new Promise((resolve) => setTimeout(resolve, 5000));
    let rss = 0;
    for (const child of sidecars) rss += await rssMiB(child.pid!);
    for (const child of sidecars) await stopProcess(child);
    // A watch is audited when the server sees it close: give the closes a moment to land.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const users = new Set([
      "system:serviceaccount:default:csikit-sidecars",
      ...Object.values(ACCOUNTS).map((a) => `system:serviceaccount:default:${a}`),
    ]);
    const mine = audit.filter((e) => users.has(e.user.username) && e.objectRef);
    admin.close();
    return {
      rssMiB: rss,
      watches: mine.filter((e) => e.verb === "watch").length,
      lists: mine.filter((e) => e.verb === "list").length,
      writes: mine.filter(
        (e) => !["get", "list", "watch"].includes(e.verb) && e.objectRef?.resource !== "leases",
      ).length,
      seconds,
    };
  } finally {
    for (const child of children) await stopProcess(child);
    stop.abort();
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

const volumes = flags.number("volumes");
const forms: Form[] = ["combined", "separate"];
if (COMPONENTS.every((c) => process.env[GO_ENV[c]])) forms.push("go");
else process.stdout.write(`Go sidecars: set ${Object.values(GO_ENV).join(", ")} for that column; skipped.\n`);
const results = new Map<Form, RunResult[]>(forms.map((f) => [f, []]));
for (let rep = 0; rep < flags.number("reps"); rep++)
  for (const form of forms) {
    const result = await run(form, volumes);
    results.get(form)!.push(result);
    process.stdout.write(`${form} #${rep + 1}: ${JSON.stringify(result)}\n`);
  }
const med = (form: Form, key: keyof RunResult): number => median(results.get(form)!.map((r) => r[key]));
const ROWS = [
  ["RSS of the sidecar processes (MiB)", "rssMiB", 1],
  ["watches opened", "watches", 0],
  ["list calls", "lists", 0],
  ["writes (leases excluded)", "writes", 0],
  [`time to ${volumes} PVs (s)`, "seconds", 1],
] as const;
const lines = [
  `csikit sidecars vs separate processes, ${volumes} volumes, median of ${flags.number("reps")}`,
  "",
  `| measure | ${forms.join(" | ")} |`,
  `|---|${forms.map(() => "---").join("|")}|`,
  ...ROWS.map(
    ([label, key, digits]) =>
      `| ${label} | ${forms.map((form) => med(form, key).toFixed(digits)).join(" | ")} |`,
  ),
  "",
  `${machine()}; state filesystem: ${filesystemOf(flags.string("state-dir"))}`,
];
process.stdout.write(lines.join("\n") + "\n");
