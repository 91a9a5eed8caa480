// One chaos run on a running `csikit up --driver-fault-proxy` cluster: from a seed, a plan of
// claim + pod lifecycles (provision, attach, stage, publish, write; then snapshot, grow or
// delete), kill -9 of random components (the API server included) and fault-proxy rules
// (errors, timeouts, answers lost after the driver did the work) while the plan runs. Then the
// faults stop and the run waits, bounded, for the cluster to settle: every invariant of
// invariants.ts holds and every kept pod reads back what it wrote.

import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { GVR, type PersistentVolumeClaim, type Pod, type VolumeSnapshot } from "../src/api/index.ts";
import type { CsiClient } from "../src/csi/index.ts";
import type { KubeClient } from "../src/kube/index.ts";
import { seededRandom } from "../test/harness/random.ts";
import { kubectl } from "../test/harness/kubectl.ts";
import { clusterMounts } from "../test/harness/up.ts";
import { checkInvariants, collectState, type RunIntent, type Violation } from "./invariants.ts";

export interface ChaosCluster {
  stateDir: string;
  kubeconfig: string;
  client: KubeClient;
  /** The controller driver's own socket (behind its fault proxy): the checks list through it. */
  csi: CsiClient;
  /** Each fault proxy's rules URL. */
  proxies: readonly string[];
  /** Whether pods run their commands (bubblewrap present): the data check needs it. */
  podsRun: boolean;
}

export interface ChaosPlanOptions {
  claims: number;
  kills: number;
  /** Fault-proxy rules installed for the run. */
  faultRules: number;
  /** How long the faults go on, from the run's start. */
  windowMs: number;
  /** The bound on settling once faults stop. */
  settleMs: number;
}

export interface RunReport {
  seed: number;
  kills: string[];
  rules: string[];
  injected: number;
  /** ms from the faults' end to every invariant holding; undefined: not within settleMs. */
  settledMs: number | undefined;
  violations: Violation[];
  dataChecked: number;
}

type Fate = "keep" | "snapshot" | "grow" | "delete";
const FATES: readonly Fate[] = ["keep", "snapshot", "grow", "delete"];
const NAMESPACE = "default";
const SIZE = "1Mi";
const GROWN = "2Mi";

/**
 * Rules drawn from: each fails a step of the lifecycle some of the time; `after` lets the driver
 * do the work and loses the answer (the retry must find it done, not do it twice or leak it).
 */
const RULE_MENU: readonly string[] = [
  "CreateVolume:code=UNAVAILABLE:rate=0.3:times=3",
  "CreateVolume:code=DEADLINE_EXCEEDED:after:rate=0.4:times=2",
  "DeleteVolume:code=DEADLINE_EXCEEDED:after:rate=0.4:times=2",
  "DeleteVolume:code=UNAVAILABLE:rate=0.3:times=2",
  "ControllerExpandVolume:code=UNAVAILABLE:rate=0.3:times=2",
  "CreateSnapshot:code=DEADLINE_EXCEEDED:after:rate=0.4:times=2",
  "DeleteSnapshot:code=DEADLINE_EXCEEDED:after:rate=0.4:times=2",
  "NodeStageVolume:code=UNAVAILABLE:rate=0.3:times=2",
  "NodePublishVolume:code=DEADLINE_EXCEEDED:after:rate=0.3:times=2",
  "NodeUnpublishVolume:code=UNAVAILABLE:rate=0.3:times=2",
  "NodeUnstageVolume:code=DEADLINE_EXCEEDED:after:rate=0.3:times=2",
  "NodeExpandVolume:code=UNAVAILABLE:rate=0.3:times=2",
  "*:latency=300ms:rate=0.2:times=10",
];

/** A volume's mount as the node agent makes them: a pod's publish target or a staging path. */
const VOLUME_MOUNT = /\/pods\/[0-9a-f-]{36}\/|\/globalmount$|\/volumeDevices\//;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `action` ignoring failures a fault may cause (a killed API server refuses a while). */
async function tolerant<T>(action: () => Promise<T>, attempts = 30): Promise<T | undefined> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await action();
    } catch (error) {
      const status = (error as { status?: number }).status;
      if (status === 404 || status === 409 || attempt >= attempts) return undefined;
      await sleep(1000);
    }
  }
}

async function proxyRequest(url: string, method: string, body?: unknown): Promise<unknown> {
  const response = await fetch(url, {
    method,
    ...(body !== undefined
      ? { body: JSON.stringify(body), headers: { "content-type": "application/json" } }
      : {}),
    signal: AbortSignal.timeout(5000),
  });
  if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${await response.text()}`);
  return response.status === 204 ? undefined : response.json();
}

function claimOf(name: string): PersistentVolumeClaim {
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name, namespace: NAMESPACE },
    spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: SIZE } } },
  };
}

/** A pod that writes its token once (a restarted container keeps the first) and stays up. */
function podOf(name: string, claim: string, token: string): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: NAMESPACE },
    spec: {
      terminationGracePeriodSeconds: 2,
      containers: [
        {
          name: "writer",
          image: "busybox",
          command: ["sh", "-c", `[ -f /data/token ] || echo ${token} > /data/token; exec sleep 100000`],
          volumeMounts: [{ name: "data", mountPath: "/data" }],
        },
      ],
      volumes: [{ name: "data", persistentVolumeClaim: { claimName: claim } }],
    },
  };
}

function snapshotOf(name: string, claim: string): VolumeSnapshot {
  return {
    apiVersion: "snapshot.storage.k8s.io/v1",
    kind: "VolumeSnapshot",
    metadata: { name, namespace: NAMESPACE },
    spec: { source: { persistentVolumeClaimName: claim } },
  };
}

async function killOne(stateDir: string, pick: () => number): Promise<string | undefined> {
  const pids = JSON.parse(await readFile(join(stateDir, "pids.json"), "utf8")) as Record<string, number>;
  const names = Object.keys(pids).sort();
  const victim = names[Math.floor(pick() * names.length)];
  if (victim === undefined) return undefined;
  try {
    process.kill(pids[victim]!, "SIGKILL");
    return victim;
  } catch {
    return undefined; // already restarting
  }
}

/**
 * Reads each kept pod's token back through `kubectl exec`, until `deadline` (performance.now()):
 * a container a killed node agent took down is started again, and exec reaches it only then. A
 * different token is lost data at once; no answer by the deadline is a pod that did not settle.
 */
async function readBack(
  cluster: ChaosCluster,
  tokens: ReadonlyMap<string, string>,
  deadline: number,
): Promise<{ violations: Violation[]; checked: number }> {
  const violations: Violation[] = [];
  let checked = 0;
  for (const [pod, token] of tokens) {
    for (;;) {
      const read = await kubectl(["exec", "-n", NAMESPACE, pod, "--", "cat", "/data/token"], {
        kubeconfig: cluster.kubeconfig,
        timeoutMs: 30_000,
      });
      const text = read.stdout.trim();
      if (read.code === 0 && text === token) break;
      if (read.code === 0 || performance.now() > deadline) {
        violations.push({
          kind: read.code === 0 ? "lost" : "stuck",
          what: `pod ${pod} reads ${JSON.stringify(text || read.stderr.trim())}, wrote ${token}`,
        });
        break;
      }
      await sleep(2000);
    }
    checked++;
  }
  return { violations, checked };
}

export async function runChaos(
  cluster: ChaosCluster,
  seed: number,
  options: ChaosPlanOptions,
): Promise<RunReport> {
  const random = seededRandom(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const tag = `r${seed.toString(36)}`;
  const client = cluster.client;
  const rules = Array.from({ length: options.faultRules }, () => pick(RULE_MENU));
  const fates = Array.from({ length: options.claims }, () => pick(FATES));
  const killAt = Array.from({ length: options.kills }, () => Math.floor(random() * options.windowMs)).sort(
    (a, b) => a - b,
  );
  const killPick = seededRandom(seed ^ 0x5eed);
  const report: RunReport = {
    seed,
    kills: [],
    rules,
    injected: 0,
    settledMs: undefined,
    violations: [],
    dataChecked: 0,
  };

  for (const url of cluster.proxies)
    await tolerant(
      () =>
        proxyRequest(
          url,
          "PUT",
          rules.map((spec) => ({ spec })),
        ),
      5,
    );

  const started = performance.now();
  const killer = (async () => {
    for (const at of killAt) {
      await sleep(Math.max(0, at - (performance.now() - started)));
      const victim = await killOne(cluster.stateDir, killPick);
      if (victim) report.kills.push(victim);
    }
  })();

  const intent = {
    namespace: NAMESPACE,
    keptClaims: new Map<string, string>(),
    keptPods: new Map<string, string>(),
    keptSnapshots: [] as string[],
    grown: new Map<string, number>(),
    deletedClaims: [] as string[],
    deletedPods: [] as string[],
    deletedSnapshots: [] as string[],
  } satisfies RunIntent;
  const tokens = new Map<string, string>();
  const names = fates.map((_, i) => `chaos-${tag}-${i}`);
  // Phase one: every claim and its pod.
  for (const [i, name] of names.entries()) {
    const token = `${tag}-${i}-${Math.floor(random() * 1e9).toString(36)}`;
    const claim = await tolerant(() => client.create(GVR.persistentVolumeClaims, claimOf(name)));
    const pod = await tolerant(() => client.create(GVR.pods, podOf(name, name, token)));
    if (claim?.metadata?.uid) intent.keptClaims.set(name, claim.metadata.uid);
    if (pod?.metadata?.uid) intent.keptPods.set(name, pod.metadata.uid);
    tokens.set(name, token);
  }
  // Phase two, halfway through the faults: each claim's fate.
  await sleep(Math.max(0, options.windowMs / 2 - (performance.now() - started)));
  for (const [i, name] of names.entries()) {
    const fate = fates[i]!;
    if (fate === "snapshot") {
      const snapshot = `${name}-snap`;
      if (await tolerant(() => client.create(GVR.volumeSnapshots, snapshotOf(snapshot, name))))
        intent.keptSnapshots.push(snapshot);
    } else if (fate === "grow") {
      const grown = await tolerant(() =>
        client.patch(
          GVR.persistentVolumeClaims,
          name,
          { spec: { resources: { requests: { storage: GROWN } } } },
          { namespace: NAMESPACE },
        ),
      );
      if (grown) intent.grown.set(name, 2 * 1024 * 1024);
    } else if (fate === "delete") {
      await tolerant(() => client.delete(GVR.pods, name, { namespace: NAMESPACE }));
      await tolerant(() => client.delete(GVR.persistentVolumeClaims, name, { namespace: NAMESPACE }));
      intent.keptClaims.delete(name);
      intent.keptPods.delete(name);
      tokens.delete(name);
      intent.deletedClaims.push(name);
      intent.deletedPods.push(name);
    }
  }
  await killer;
  await sleep(Math.max(0, options.windowMs - (performance.now() - started)));
  // The faults stop: what each proxy injected, then no rules.
  for (const url of cluster.proxies) {
    const status = (await tolerant(() => proxyRequest(url, "GET"), 10)) as
      { rules?: { injected?: number }[] } | undefined;
    report.injected += (status?.rules ?? []).reduce((sum, rule) => sum + (rule.injected ?? 0), 0);
    await tolerant(() => proxyRequest(url, "DELETE"), 10);
  }

  const settling = performance.now();
  let violations: Violation[] = [];
  while (performance.now() - settling < options.settleMs) {
    try {
      const mounts = await clusterMounts(cluster.stateDir, cluster.stateDir);
      violations = checkInvariants(await collectState(client, cluster.csi, mounts), intent);
    } catch (error) {
      violations = [{ kind: "stuck", what: `cluster not readable: ${(error as Error).message}` }];
    }
    if (violations.length === 0) {
      report.settledMs = performance.now() - settling;
      break;
    }
    await sleep(2000);
  }
  report.violations = violations;
  if (report.settledMs !== undefined && cluster.podsRun) {
    // Settling ends when the data reads back too, within the same bound.
    const data = await readBack(cluster, tokens, settling + options.settleMs);
    report.violations.push(...data.violations);
    report.dataChecked = data.checked;
    report.settledMs = performance.now() - settling;
  }
  return report;
}

/** The end of a series: everything deleted, and nothing may be left behind anywhere. */
export async function cleanUpAll(cluster: ChaosCluster, settleMs: number): Promise<RunReport> {
  const client = cluster.client;
  const report: RunReport = {
    seed: 0,
    kills: [],
    rules: [],
    injected: 0,
    settledMs: undefined,
    violations: [],
    dataChecked: 0,
  };
  const intent: RunIntent = {
    namespace: NAMESPACE,
    keptClaims: new Map(),
    keptPods: new Map(),
    keptSnapshots: [],
    grown: new Map(),
    deletedClaims: [],
    deletedPods: [],
    deletedSnapshots: [],
  };
  for (const snapshot of (await client.list<VolumeSnapshot>(GVR.volumeSnapshots, { namespace: NAMESPACE }))
    .items)
    await tolerant(() =>
      client.delete(GVR.volumeSnapshots, snapshot.metadata.name!, { namespace: NAMESPACE }),
    );
  for (const pod of (await client.list<Pod>(GVR.pods, { namespace: NAMESPACE })).items)
    await tolerant(() => client.delete(GVR.pods, pod.metadata.name!, { namespace: NAMESPACE }));
  for (const claim of (
    await client.list<PersistentVolumeClaim>(GVR.persistentVolumeClaims, { namespace: NAMESPACE })
  ).items)
    await tolerant(() =>
      client.delete(GVR.persistentVolumeClaims, claim.metadata.name!, { namespace: NAMESPACE }),
    );
  const started = performance.now();
  let violations: Violation[] = [];
  while (performance.now() - started < settleMs) {
    const mounts = (await clusterMounts(cluster.stateDir, cluster.stateDir)).filter((point) =>
      VOLUME_MOUNT.test(point),
    );
    const state = await collectState(client, cluster.csi, mounts);
    violations = checkInvariants(state, intent);
    const left =
      state.claims.length +
      state.volumes.length +
      state.attachments.length +
      state.pods.length +
      state.snapshots.length +
      state.contents.length +
      state.backendVolumes.length +
      state.backendSnapshots.length +
      state.mounts.length;
    if (left > 0)
      violations.push({
        kind: "stuck",
        what: `left after deleting everything: ${state.claims.length} claims, ${state.volumes.length} PVs, ${state.attachments.length} attachments, ${state.pods.length} pods, ${state.snapshots.length} snapshots, ${state.contents.length} contents, ${state.backendVolumes.length} backend volumes, ${state.backendSnapshots.length} backend snapshots, ${state.mounts.length} mounts`,
      });
    if (violations.length === 0) {
      report.settledMs = performance.now() - started;
      break;
    }
    await sleep(2000);
  }
  report.violations = violations;
  return report;
}
