// `csikit up`: the whole cluster on one machine, each component its own supervised child
// process (supervisor.ts) with its own identity (identities.ts) under RBAC from deploy/rbac/
// (manifests.ts). Start-up: API server → RBAC, identities, CSIDriver, default StorageClass →
// drivers, sidecars, controllers and one virtual kubelet (+ registrar, livenessprobe) per node →
// ready when every node is Ready with the driver in its CSINode. Shutdown (signal): volumes
// torn down first (drain.ts), then the processes in STOP_ORDER. A second run on the same state
// dir resumes the cluster (same port, tokens and objects).

import { access, mkdir, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  GVR,
  kubeFeatureGatesAt,
  kubeRelease,
  type CSINode,
  type KubeRelease,
  type Node,
} from "../api/index.ts";
import { errorMessage, whenAborted, type Logger, CsikitError, FlagError } from "../base/index.ts";
import type { CsiServer } from "../csi/index.ts";
import { isNotFound, KubeClient, loadKubeConfig } from "../kube/index.ts";
import {
  controllerSocket,
  hostpathWithoutTopology,
  metricsEndpoints,
  FAULT_PROXY,
  faultProxyEndpoints,
  nodeFaultProxyName,
  runsHostpath,
  runsNodeSnapshotters,
  nodeSocket,
  planComponents,
  socketDirs,
  STOP_ORDER,
  type ClusterPlan,
  type ComponentInstance,
  type Stage,
} from "./components.ts";
import { drainVolumes } from "./drain.ts";
import { nodeProvisionerName, nodeSnapshotterName } from "./distributed.ts";
import {
  clusterOfAdminKubeconfig,
  requestServiceAccountToken,
  writeComponentKubeconfig,
  writeTokenAuthFile,
  type StaticUser,
} from "./identities.ts";
import { ClusterLayout, nodeSpecs, type ClusterRecord, type NodeSpec } from "./layout.ts";
import { freePort } from "./ports.ts";
import { applyManifests, RBAC_DIR, readManifests, type Manifest } from "./manifests.ts";
import { CRDS_DIR, installCrds } from "./crds.ts";
import { applySnapshotClasses } from "./snapshot-classes.ts";
import { advertiseSnapshotMetadata, SNAPSHOT_METADATA, SNAPSHOT_METADATA_GRPC } from "./snapshot-metadata.ts";
import { serveRegistration } from "./registration-fallback.ts";
import { runSecretAccess } from "./secret-access.ts";
import { killLeftovers, Supervisor } from "./supervisor.ts";
import { pollUntil } from "./poll.ts";
import { watchVolumeEvents } from "./volume-events.ts";
import { startDashboard, type Dashboard } from "../dashboard/index.ts";

export const DEFAULT_DRIVER_NAME = "hostpath.csi.k8s.io";
export const STORAGE_CLASS = "csi-hostpath";

export interface UpOptions {
  stateDir: string;
  /** Virtual nodes (first run; a resumed cluster keeps its own). */
  nodes: number;
  driverName: string;
  driverSocket?: string;
  driverCommand?: string;
  /**
   * Deploy the driver per node with its own provisioner (--node-deployment), no controller
   * instance, as upstream deploys a driver whose volumes live on one node each (distributed.ts).
   * A new state dir only: a resumed cluster keeps how it was created.
   */
  distributed?: boolean;
  /** A `csikit fault-proxy` in front of every driver instance `up` starts (`--driver-fault-proxy`). */
  driverFaultProxy?: boolean;
  /** The controller sidecars in one `csikit sidecars` process (`--sidecars=combined`). */
  combinedSidecars?: boolean;
  /** -v for the components. */
  verbosity: number;
  /** CSI migration's --feature-gates for the controllers and node agents (`A=true,B=false`; "" = defaults). */
  featureGates?: string;
  /**
   * The Kubernetes release the API server acts as (its --kubernetes-version: /version, served
   * group versions, storage gate defaults). Default: the API server's (1.37).
   */
  release?: KubeRelease;
  /** false: pods' commands are not run (`up --pod-processes=false`). Default on. */
  podProcesses?: boolean;
  /** csikit subcommands available (optional sidecars run only when present). */
  commands: ReadonlySet<string>;
  /** Path of src/cli/main.ts: every component is `node <cliMain> <subcommand> …`. */
  cliMain: string;
  /**
   * The V8 flags and environment a csikit subcommand starts with when run alone (the launcher,
   * bin/csikit.js, applies them by re-executing itself, which would lose the supervisor's pipe):
   * given to the component up starts directly. None: Node's defaults.
   */
  memorySettingsOf?: (
    subcommand: string,
  ) => { v8Flags: readonly string[]; env: Readonly<Record<string, string>> } | undefined;
  logger: Logger;
  print: (line: string) => void;
  /** Runs once the cluster is ready (the walkthrough). Its failure ends `up` with 1. */
  afterReady?: (cluster: RunningCluster, signal: AbortSignal) => Promise<void>;
  /** Tear down after afterReady instead of waiting for SIGINT/SIGTERM. */
  exit?: boolean;
  /**
   * Serve the dashboard (src/dashboard) on loopback once the API server answers and print its
   * address (`dashboard: https://127.0.0.1:<port>/?token=…`). Default true.
   */
  dashboard?: boolean;
  /** Bounds of start-up and teardown waits, ms. Default 120000 / 120000. */
  readyTimeoutMs?: number;
  drainTimeoutMs?: number;
}

export interface RunningCluster {
  admin: KubeClient;
  layout: ClusterLayout;
  plan: ClusterPlan;
  supervisor: Supervisor;
  nodes: readonly NodeSpec[];
  driverName: string;
  /** Start of `up` to every node Ready with its driver registered, ms. */
  readyMs: number;
  attachRequired: boolean;
}

/**
 * Every component is a Node process loading (and type-stripping) the same modules; on 2 cores
 * 18 of them compiling at once is most of start-up. Node's on-disk compile cache (keyed by
 * content hash and V8 version, so sharing it is safe) makes later starts reuse that work; the
 * directory is Node's own default for it, unless the user chose one with NODE_COMPILE_CACHE.
 */
export function compileCacheEnv(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  if (env.NODE_DISABLE_COMPILE_CACHE) return {};
  return { NODE_COMPILE_CACHE: env.NODE_COMPILE_CACHE ?? join(tmpdir(), "node-compile-cache") };
}

/**
 * The API server's process: RBAC with the static identities' token file, and `--component-v`
 * like every other component (at 5 it logs each request it serves).
 */
/** `--feature-gates` with the gates `up` was told to set away from the release's defaults. */
function changedGates(release: KubeRelease): string[] {
  const defaults = kubeFeatureGatesAt(release.minor);
  const changed = Object.entries(release.gates)
    .filter(([name, on]) => defaults[name]?.default !== on)
    .map(([name, on]) => `${name}=${on}`);
  return changed.length === 0 ? [] : [`--feature-gates=${changed.join(",")}`];
}

export function apiServerInstance(
  layout: ClusterLayout,
  port: number,
  verbosity: number,
  release: KubeRelease = kubeRelease(),
): ComponentInstance {
  return {
    name: "apiserver",
    stage: "apiserver",
    subcommand: "apiserver",
    args: [
      `--v=${verbosity}`,
      `--kubernetes-version=${release.minor}`,
      ...changedGates(release),
      `--state-dir=${layout.stateDir}`,
      `--port=${port}`,
      // As a kubeadm cluster: node agents confined by the Node authorizer and NodeRestriction.
      "--authorization-mode=Node,RBAC",
      "--enable-admission-plugins=NodeRestriction",
      `--token-auth-file=${layout.tokenAuthFile}`,
    ],
  };
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)}s`;

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

function csiDriverManifest(name: string, attachRequired: boolean, storageCapacity: boolean): Manifest {
  return {
    apiVersion: "storage.k8s.io/v1",
    kind: "CSIDriver",
    metadata: { name },
    spec: {
      attachRequired,
      // The scheduler places WaitForFirstConsumer claims by CSIStorageCapacity only when the
      // driver says it publishes them.
      storageCapacity,
      podInfoOnMount: true,
      volumeLifecycleModes: ["Persistent", "Ephemeral"],
      fsGroupPolicy: "File",
    },
  };
}

function storageClassManifest(driverName: string): Manifest {
  return {
    apiVersion: "storage.k8s.io/v1",
    kind: "StorageClass",
    metadata: { name: STORAGE_CLASS, annotations: { "storageclass.kubernetes.io/is-default-class": "true" } },
    provisioner: driverName,
    reclaimPolicy: "Delete",
    volumeBindingMode: "WaitForFirstConsumer",
    allowVolumeExpansion: true,
  };
}

/** True when the node is Ready with the driver in its CSINode; otherwise what it still lacks. */
async function nodeReady(admin: KubeClient, node: string, driverName: string): Promise<true | string> {
  const object = await admin.get<Node>(GVR.nodes, node).catch((error: unknown) => {
    if (isNotFound(error)) return undefined;
    throw error;
  });
  if (!object) return `${node}: no Node object yet`;
  const ready = object.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
  if (!ready) return `${node}: not Ready`;
  const csiNode = await admin.get<CSINode>(GVR.csiNodes, node).catch((error: unknown) => {
    if (isNotFound(error)) return undefined;
    throw error;
  });
  return (csiNode?.spec?.drivers ?? []).some((d) => d.name === driverName)
    ? true
    : `${node}: ${driverName} not yet in its CSINode`;
}

/** Loads or creates the cluster record; says what it resumes. */
async function resolveRecord(
  layout: ClusterLayout,
  options: UpOptions,
): Promise<{ record: ClusterRecord; resumed: boolean }> {
  const existing = await layout.readRecord();
  if (existing) {
    if (existing.nodes.length !== options.nodes)
      options.print(
        `note: the cluster in ${layout.stateDir} has ${existing.nodes.length} nodes; --nodes applies to a new state dir only`,
      );
    return { record: existing, resumed: true };
  }
  const record: ClusterRecord = {
    port: await freePort(),
    nodes: nodeSpecs(options.nodes),
    driverName: options.driverName,
    ...(options.distributed ? { distributed: true } : {}),
  };
  await layout.writeRecord(record);
  return { record, resumed: false };
}

/**
 * Where each component's metrics are. The secure ports (controllers, kubelets) check a bearer
 * token with the API server, as upstream's do: the admin token of the kubeconfig passes.
 */
function printMetricsEndpoints(
  plan: ClusterPlan,
  layout: ClusterLayout,
  print: (line: string) => void,
): void {
  print("metrics (loopback):");
  for (const endpoint of metricsEndpoints(plan)) print(`  ${endpoint.what}: ${endpoint.url}`);
  print(
    `  the https ones want a token: curl -sk -H "Authorization: Bearer $(cat ${layout.adminTokenFile})" <url>`,
  );
  const proxies = faultProxyEndpoints(plan);
  if (proxies.length > 0) {
    print("fault proxy rules (loopback; see docs/csi.md):");
    for (const endpoint of proxies) print(`  ${endpoint.what}: ${endpoint.url}`);
  }
}

export async function runCluster(options: UpOptions, signal: AbortSignal): Promise<number> {
  const started = performance.now();
  const elapsed = (): string => seconds(performance.now() - started);
  const { print, logger } = options;
  const layout = new ClusterLayout(options.stateDir);
  await layout.create();
  const leftovers = await killLeftovers(layout.pidsFile, layout.stateDir);
  if (leftovers > 0)
    print(`ended ${leftovers} process(es) left over by an earlier run on ${layout.stateDir}`);
  // Before any component reads its keys or tokens again.
  const tightened = await layout.tighten();
  if (tightened > 0)
    print(`made ${tightened} file(s) and folder(s) under ${layout.stateDir} private again (0700/0600)`);
  const { record, resumed } = await resolveRecord(layout, options);
  const driverName = record.driverName;
  if (options.driverName !== driverName)
    print(
      `note: the cluster in ${layout.stateDir} runs driver ${driverName}; --driver-name applies to a new state dir only`,
    );
  const distributed = record.distributed === true;
  if ((options.distributed ?? false) !== distributed)
    print(
      `note: the cluster in ${layout.stateDir} was created ${distributed ? "with" : "without"} --distributed; it keeps its deployment (a new state dir takes the flag)`,
    );
  if (distributed && options.driverSocket)
    throw new FlagError(
      "-distributed runs a driver instance per node; a single -driver-socket cannot be that",
    );
  if (distributed && hostpathWithoutTopology({ driverName }) && !options.driverCommand)
    throw new FlagError(
      `-distributed places each volume on its node by topology; hostpath as ${driverName} runs without topology`,
    );
  print(
    `${resumed ? "resuming" : "creating"} cluster in ${layout.stateDir} (${record.nodes.length} nodes, driver ${driverName}${distributed ? `, distributed: a driver instance and a provisioner${runsNodeSnapshotters({ commands: options.commands, distributed }) ? " and a snapshotter" : ""} per node` : ""})`,
  );
  if (
    hostpathWithoutTopology({ driverName }) &&
    !options.driverSocket &&
    !options.driverCommand &&
    !distributed
  )
    print(
      `note: hostpath runs as ${driverName} without topology (its key is not the in-tree plugin's zone key); ` +
        `its volumes live on ${record.nodes[0]?.name} and attach there only${record.nodes.length > 1 ? ": --nodes=1 suits it" : ""}`,
    );
  const release = options.release ?? kubeRelease();
  print(`Kubernetes ${release.gitVersion} (the API server's /version, group versions and gate defaults)`);
  if (options.featureGates)
    print(`feature gates of the controllers and node agents: ${options.featureGates}`);

  const ports = new Map<string, number>();
  for (const name of [
    "controllers",
    "provisioner",
    "attacher",
    "resizer",
    "snapshotter",
    "snapshot-controller",
    "health-monitor",
    SNAPSHOT_METADATA,
    SNAPSHOT_METADATA_GRPC,
    // A restarted fault proxy keeps its rules API where tools (and `npm run chaos`) found it.
    ...(options.driverFaultProxy ? [FAULT_PROXY] : []),
  ])
    ports.set(name, await freePort());
  for (const node of record.nodes)
    for (const name of [
      node.name,
      `${node.name}-livenessprobe`,
      nodeProvisionerName(node.name),
      nodeSnapshotterName(node.name),
      ...(options.driverFaultProxy ? [nodeFaultProxyName(node.name)] : []),
    ])
      ports.set(name, await freePort());
  const plan: ClusterPlan = {
    layout,
    nodes: record.nodes,
    driverName,
    commands: options.commands,
    ...(options.driverSocket !== undefined ? { driverSocket: options.driverSocket } : {}),
    ...(options.driverCommand !== undefined ? { driverCommand: options.driverCommand } : {}),
    verbosity: options.verbosity,
    featureGates: options.featureGates ?? "",
    kubernetesMinor: release.minor,
    ports,
    ...(distributed ? { distributed: true } : {}),
    ...(options.podProcesses === false ? { podProcesses: false } : {}),
    ...(options.driverFaultProxy ? { driverFaultProxy: true } : {}),
    ...(options.combinedSidecars ? { combinedSidecars: true } : {}),
  };
  // Unix socket paths end at 107 bytes: a deep state dir gets its sockets in a short dir.
  await layout.placeSockets(
    record.nodes.map((n) => n.name),
    driverName,
  );
  if (layout.socketRoot !== undefined)
    print(`sockets in ${layout.socketRoot} (the state dir is too deep for socket paths)`);
  const { instances, skipped } = planComponents(plan);
  if (skipped.length > 0) print(`not in this build (skipped): ${skipped.join(", ")}`);
  for (const dir of socketDirs(plan)) await mkdir(dir, { recursive: true, mode: 0o700 });

  // Static identities go into the API server's --token-auth-file before it starts.
  const staticUsers: StaticUser[] = instances.flatMap((i) =>
    i.identity?.kind === "user"
      ? [{ component: i.name, user: i.identity.user, groups: i.identity.groups }]
      : [],
  );
  const staticTokens = await writeTokenAuthFile(layout, staticUsers);

  const supervisor = new Supervisor({ logger, pidsFile: layout.pidsFile });
  const registrations: CsiServer[] = [];
  let admin: KubeClient | undefined;
  let exitCode = 0;
  const volumeEvents = new AbortController();
  let secretAccess: Promise<void> | undefined;
  let dashboard: Dashboard | undefined;
  const stages = new Map<string, Stage>();
  const spawnComponent = (instance: ComponentInstance): void => {
    stages.set(instance.name, instance.stage);
    const memory = instance.subcommand ? options.memorySettingsOf?.(instance.subcommand) : undefined;
    const args = instance.subcommand
      ? [...(memory?.v8Flags ?? []), options.cliMain, instance.subcommand, ...instance.args]
      : instance.args.slice(1);
    const command = instance.subcommand ? process.execPath : (instance.args[0] ?? "");
    supervisor.start({
      name: instance.name,
      command,
      args,
      logFile: layout.logOf(instance.name),
      // csikit's own commands watch for up being gone themselves (src/cli/main.ts).
      watchesSupervisor: instance.subcommand !== undefined,
      env: {
        POD_NAMESPACE: "default",
        ...(instance.node ? { NODE_NAME: instance.node } : {}),
        // what the user set for up (MALLOC_ARENA_MAX=…) wins, as with the launcher
        ...Object.fromEntries(
          Object.entries(memory?.env ?? {}).filter(([name]) => process.env[name] === undefined),
        ),
        ...instance.env,
        ...compileCacheEnv(),
      },
    });
  };

  // Components that never talk to the API server (drivers, registrars, probes) start beside it:
  // their start-up (module loading on a shared CPU) overlaps the API server's own.
  const apiless = instances.filter((i) => !i.identity);
  const apiClients = instances.filter((i) => i.identity);
  try {
    print(`starting the API server…`);
    for (const instance of apiless) spawnComponent(instance);
    spawnComponent(apiServerInstance(layout, record.port, options.verbosity, release));
    const readyTimeout = options.readyTimeoutMs ?? 120_000;
    await pollUntil("the API server", readyTimeout, signal, async () => {
      if ((supervisor.get("apiserver")?.starts ?? 0) > 3)
        throw new CsikitError(
          "CSIKIT_ERR_COMPONENT",
          `the API server keeps exiting; see ${layout.logOf("apiserver")}`,
        );
      if (!admin) {
        if (!(await exists(layout.adminKubeconfig))) return false;
        admin = new KubeClient({
          kubeConfig: loadKubeConfig({ kubeconfig: layout.adminKubeconfig }),
          qps: 200,
          burst: 400,
          userAgent: "csikit-up",
        });
      }
      await admin.list(GVR.namespaces, { limit: 1 });
      return true;
    });
    const client = admin!;
    print(`✓ API server ${record.port ? `on https://127.0.0.1:${record.port}` : ""} (${elapsed()})`);
    print("");
    print(`kubeconfig: ${layout.adminKubeconfig}`);
    print(`  export KUBECONFIG=${layout.adminKubeconfig}`);
    print(`  kubectl get nodes -L topology.kubernetes.io/zone`);
    print(`  kubectl get pv,pvc,volumeattachments,csinodes`);
    print(`  kubectl apply -f examples/dynamic-provisioning.yaml`);
    print("");

    // The CRDs before any component: the snapshot components watch their kinds from the start.
    const crds = await installCrds(client, CRDS_DIR, readyTimeout, signal);
    print(
      `✓ CRDs from deploy/crds/ (${crds.created.length} created, ${crds.updated.length} updated, ${crds.unchanged.length} unchanged) (${elapsed()})`,
    );
    // After the CRDs: the dashboard watches VolumeSnapshots where they are served.
    if (options.dashboard !== false) {
      // The API server's serving certificate (signed by the cluster's CA, naming 127.0.0.1):
      // a browser that trusts the kubeconfig's CA trusts the dashboard too.
      const pki = join(layout.stateDir, "pki");
      const [certPem, keyPem] = await Promise.all([
        readFile(join(pki, "apiserver.crt"), "utf8"),
        readFile(join(pki, "apiserver.key"), "utf8"),
      ]);
      dashboard = await startDashboard(
        {
          client,
          tls: { certPem, keyPem },
          endpoints: metricsEndpoints(plan),
          logger,
        },
        AbortSignal.any([signal, volumeEvents.signal]),
      );
      print(`dashboard: ${dashboard.loginUrl}`);
    }

    // RBAC first: the identities below mean nothing without their bindings.
    // Distributed: no attacher, as upstream's distributed deployment (its CSIDriver says so too).
    const attachRequired = options.commands.has("attacher") && !distributed;
    const manifests = await readManifests(RBAC_DIR);
    await applyManifests(client, manifests, signal);
    await applyManifests(
      client,
      [
        // Capacity objects come from up's own provisioner: none in a distributed deployment.
        csiDriverManifest(driverName, attachRequired, runsHostpath(plan) && !plan.distributed),
        storageClassManifest(driverName),
      ],
      signal,
    );
    // The default snapshot classes (where the snapshot CRDs are served).
    const snapshotClasses = await applySnapshotClasses(client, driverName, signal);
    if (snapshotClasses.skipped.length > 0)
      print(`note: no ${snapshotClasses.skipped.join(" or ")} CRD served: that default class is not created`);
    // Secrets: only those the driver's StorageClasses name, for as long as they name them.
    secretAccess = runSecretAccess(
      { client, driverName, logger },
      AbortSignal.any([signal, volumeEvents.signal]),
    ).catch((error: unknown) => print(`✗ secret access: ${errorMessage(error)}`));
    // Where backup applications find the snapshot-metadata service (before it starts: it reads
    // its key pair at start).
    if (instances.some((i) => i.name === SNAPSHOT_METADATA))
      await advertiseSnapshotMetadata(
        client,
        { layout, driverName, port: ports.get(SNAPSHOT_METADATA_GRPC) ?? 0 },
        signal,
      );
    const cluster = await clusterOfAdminKubeconfig(layout);
    await Promise.all(
      apiClients.map(async (instance) => {
        const identity = instance.identity!;
        const token =
          identity.kind === "user"
            ? staticTokens.get(instance.name)!
            : await requestServiceAccountToken(client, identity.namespace, identity.name, signal);
        await writeComponentKubeconfig(layout, instance.name, cluster, token);
        // `csikit sidecars`: each sidecar's own identity for its writes, beside the shared one.
        for (const [component, extra] of Object.entries(instance.writeIdentities ?? {}))
          await writeComponentKubeconfig(
            layout,
            component,
            cluster,
            await requestServiceAccountToken(client, extra.namespace, extra.name, signal),
          );
      }),
    );
    print(
      `✓ RBAC from deploy/rbac/, one identity per component, CSIDriver ${driverName}, default StorageClass ${STORAGE_CLASS} (${elapsed()})`,
    );

    for (const instance of apiClients) spawnComponent(instance);
    if (!options.commands.has("registrar"))
      for (const node of record.nodes)
        registrations.push(
          await serveRegistration({
            registrationDir: layout.registrationDirOf(node.name),
            driverName,
            endpoint: nodeSocket(plan, node.name),
            logger,
          }),
        );
    print(`starting ${instances.length + 1} processes (logs in ${layout.logsDir}/)…`);
    const pending = new Set(record.nodes.map((n) => n.name));
    await pollUntil("every node Ready with its driver registered", readyTimeout, signal, async () => {
      const lacking: string[] = [];
      for (const name of [...pending]) {
        const state = await nodeReady(client, name, driverName);
        if (state !== true) {
          lacking.push(state);
          continue;
        }
        pending.delete(name);
        const zone = record.nodes.find((n) => n.name === name)?.zone;
        print(`✓ ${name} (${zone}) Ready, ${driverName} registered (${elapsed()})`);
      }
      // Thrown so that a timeout names the nodes still waited for and why.
      if (lacking.length > 0) throw new Error(lacking.join("; "));
      return true;
    });
    const readyMs = performance.now() - started;
    print(
      `cluster ready in ${seconds(readyMs)} — ${distributed ? `driver sockets ${nodeSocket(plan, "<node>")}` : `controller socket ${controllerSocket(plan)}`}`,
    );
    printMetricsEndpoints(plan, layout, print);
    // Its own signal: with --exit the outer one never aborts, and a watch left running would
    // retry against the stopped API server and keep this process alive.
    await watchVolumeEvents(
      { client, driverName, print: (line) => print(`  ${line}`) },
      AbortSignal.any([signal, volumeEvents.signal]),
    );

    if (options.afterReady) {
      try {
        await options.afterReady(
          {
            admin: client,
            layout,
            plan,
            supervisor,
            nodes: record.nodes,
            driverName,
            readyMs,
            attachRequired,
          },
          signal,
        );
      } catch (error) {
        if (!signal.aborted) {
          print(`✗ ${errorMessage(error)}`);
          exitCode = 1;
        }
      }
    }
    if (!options.exit && exitCode === 0) {
      print(`running; Ctrl-C tears the cluster down (volumes first)`);
      await whenAborted(signal);
    }
  } catch (error) {
    if (!signal.aborted) {
      print(`✗ ${errorMessage(error)}`);
      exitCode = 1;
    }
  } finally {
    await teardown({
      admin,
      supervisor,
      registrations,
      record,
      layout,
      driverName,
      print,
      stages,
      drainTimeoutMs: options.drainTimeoutMs ?? 120_000,
    }).catch((error: unknown) => {
      print(`✗ teardown: ${errorMessage(error)}`);
      exitCode = 1;
    });
    volumeEvents.abort();
    await dashboard?.close();
    await secretAccess;
    admin?.close();
  }
  return exitCode;
}

async function teardown(options: {
  admin: KubeClient | undefined;
  supervisor: Supervisor;
  registrations: CsiServer[];
  record: ClusterRecord;
  layout: ClusterLayout;
  driverName: string;
  print: (line: string) => void;
  drainTimeoutMs: number;
  /** Each started process's shutdown stage. */
  stages: ReadonlyMap<string, Stage>;
}): Promise<void> {
  const { print, supervisor } = options;
  const started = performance.now();
  if (options.admin && supervisor.get("controllers")) {
    print("tearing down: ending pods, unpublishing, unstaging and detaching their volumes…");
    const result = await drainVolumes({
      client: options.admin,
      nodes: new Set(options.record.nodes.map((n) => n.name)),
      nodesDir: options.layout.nodesDir,
      driverName: options.driverName,
      timeoutMs: options.drainTimeoutMs,
    }).catch((error: unknown) => ({ ok: false, left: [errorMessage(error)] }));
    if (result.ok) print(`✓ volumes torn down (${seconds(performance.now() - started)})`);
    else print(`✗ volumes not torn down in time; left: ${result.left.join(", ")}`);
  }
  const byStage = new Map<string, string[]>();
  for (const [name, stage] of options.stages) byStage.set(stage, [...(byStage.get(stage) ?? []), name]);
  for (const stage of STOP_ORDER) {
    if (stage === "registration") await Promise.all(options.registrations.map((s) => s.close()));
    await supervisor.stop(byStage.get(stage) ?? []);
  }
  await supervisor.stopAll();
  await options.layout.removeSocketRoot();
  print(
    `✓ all processes stopped (${seconds(performance.now() - started)}); state kept in ${options.layout.stateDir}`,
  );
}
