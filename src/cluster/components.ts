// The component table of `csikit up`: every process of the cluster, with the command line an
// upstream manifest would give it (the controller Deployment: driver + provisioner + attacher;
// the node DaemonSet: driver + registrar + livenessprobe; the control plane: API server and
// controllers; one virtual kubelet per node), its identity, and its place in the shutdown
// order. Adding a sidecar (e.g. the resizer) is one entry here plus its deploy/rbac/ file.

import { basename, dirname, join } from "node:path";
import type { KubernetesMinor } from "../api/index.ts";
import { pluginByDriverName } from "../migration/index.ts";
import {
  distributedHostpathArgs,
  NOT_IN_DISTRIBUTED,
  nodeProvisioner,
  nodeProvisionerName,
  nodeSnapshotter,
  nodeSnapshotterName,
} from "./distributed.ts";
import type { ClusterLayout, NodeSpec } from "./layout.ts";
import { ZONE_LABEL } from "./layout.ts";
import { SNAPSHOT_METADATA, SNAPSHOT_METADATA_GRPC, snapshotMetadataKeyPair } from "./snapshot-metadata.ts";

/** Who a component is towards the API server (none: it never talks to it). */
export type Identity =
  | { kind: "serviceAccount"; namespace: string; name: string }
  | { kind: "user"; user: string; groups: string[] };

/**
 * Shutdown stages, stopped in this order after the volumes were torn down: registrars first
 * (their sockets going away deregisters the driver), then node agents and probes, sidecars and
 * controllers, the drivers, and the API server last.
 */
export const STOP_ORDER = ["registration", "node", "sidecar", "controllers", "driver", "apiserver"] as const;
export type Stage = (typeof STOP_ORDER)[number];

export interface ClusterPlan {
  layout: ClusterLayout;
  nodes: readonly NodeSpec[];
  driverName: string;
  /** csikit subcommands this checkout has (optional components run only when theirs exists). */
  commands: ReadonlySet<string>;
  /** A user driver's socket (none of the driver processes run then). */
  driverSocket?: string;
  /** A user driver's command line, with {endpoint}, {nodeid} and {mode} replaced per instance. */
  driverCommand?: string;
  /** One driver instance per node with its own provisioner, no controller instance (distributed.ts). */
  distributed?: boolean;
  /** -v passed to every csikit component. */
  verbosity: number;
  /**
   * --feature-gates of the components whose upstream twins read CSI migration's gates
   * (kube-controller-manager → controllers, kubelet → node agents), as `Name=true,…`; empty:
   * none passed (1.32's defaults). The sidecars have their own gate sets upstream, with no
   * migration gate (they follow the driver being a migration target), so they get none.
   */
  featureGates: string;
  /**
   * The release the controllers and node agents act as (their --kubernetes-version), the API
   * server's; absent: their default (1.37).
   */
  kubernetesMinor?: KubernetesMinor;
  /**
   * Free loopback ports of the diagnostics and metrics endpoints, by instance name (the
   * per-node livenessprobe is <node>-livenessprobe, the node agent <node>); see METRICS_PORTS.
   */
  ports: ReadonlyMap<string, number>;
  /** false: the node agents run no pod commands (--pod-processes=false). Default on. */
  podProcesses?: boolean;
  /**
   * A `csikit fault-proxy` in front of every driver instance (`up --driver-fault-proxy`): it
   * serves the driver's usual socket, the driver listens beside it (driverListenSocket).
   */
  driverFaultProxy?: boolean;
  /** The controller sidecars in one `csikit sidecars` process (combined-sidecars.ts). */
  combinedSidecars?: boolean;
}

export interface ComponentInstance {
  name: string;
  stage: Stage;
  /** csikit subcommand, or undefined for a user's driver command. */
  subcommand?: string;
  /** Arguments after the subcommand (or the whole command line of a user's driver). */
  args: string[];
  identity?: Identity;
  /**
   * `csikit sidecars`: the ServiceAccount of each sidecar's writes, by component; `up` writes
   * <identities>/<component>.kubeconfig for each, as for a separate sidecar.
   */
  writeIdentities?: Readonly<Record<string, { namespace: string; name: string }>>;
  /** Node it belongs to (node-level components). */
  node?: string;
  /** Environment the component's upstream manifest gives it (the downward API's values). */
  env?: Readonly<Record<string, string>>;
}

interface ComponentEntry {
  /** Per cluster, or one per node. */
  scope: "cluster" | "node";
  /** Base name; node-level instances are named <node>-<name> (the agent itself: <node>). */
  name: string;
  subcommand: string;
  stage: Stage;
  /** Runs only when the subcommand exists in this checkout (sidecars built on other branches). */
  optional?: boolean;
  /** Runs only for plans this accepts (e.g. only beside csikit's own hostpath). */
  when?: (plan: ClusterPlan) => boolean;
  identity?: (node: NodeSpec | undefined) => Identity;
  args: (plan: ClusterPlan, node: NodeSpec | undefined) => string[];
  env?: Readonly<Record<string, string>>;
}

/** Where the controller-side sidecars reach the driver. */
export function controllerSocket(plan: ClusterPlan): string {
  return plan.driverSocket ?? plan.layout.controllerSocket;
}

/** Where a node's kubelet and registrar reach the node plugin. */
export function nodeSocket(plan: ClusterPlan, node: string): string {
  return plan.driverSocket ?? plan.layout.nodeSocketOf(node, plan.driverName);
}

/**
 * Where a driver instance listens when its clients reach it at `socket`: the same path, or with
 * a fault proxy in front, `driver-<name>` beside it (the proxy serves `socket`, so the sidecars,
 * the registrar and the kubelet are unchanged).
 */
export function driverListenSocket(plan: Pick<ClusterPlan, "driverFaultProxy">, socket: string): string {
  return plan.driverFaultProxy ? join(dirname(socket), `driver-${basename(socket)}`) : socket;
}

function kubeconfig(plan: ClusterPlan, component: string): string {
  return `--kubeconfig=${plan.layout.kubeconfigOf(component)}`;
}

const v = (plan: ClusterPlan): string => `--v=${plan.verbosity}`;

/** The port `up` chose for an instance's endpoint (0 when the plan has none: the OS picks). */
function portOf(plan: Pick<ClusterPlan, "ports">, instance: string): number {
  return plan.ports.get(instance) ?? 0;
}

/** A sidecar's diagnostics endpoint (/metrics, /healthz) on loopback, as upstream's --http-endpoint. */
const httpEndpoint = (plan: ClusterPlan, instance: string): string =>
  `--http-endpoint=127.0.0.1:${portOf(plan, instance)}`;

/** Whether `up` runs the snapshot-metadata service: built here, beside hostpath's controller. */
export function runsSnapshotMetadata(
  plan: Pick<ClusterPlan, "commands" | "driverSocket" | "driverCommand" | "distributed">,
): boolean {
  return plan.commands.has("snapshot-metadata") && runsHostpath(plan) && !plan.distributed;
}

/**
 * Whether `up` runs the health monitor: built here, beside hostpath's controller (a user's
 * driver may lack VOLUME_CONDITION, and upstream's monitor exits then; a distributed plan has
 * no controller instance).
 */
export function runsHealthMonitor(
  plan: Pick<ClusterPlan, "commands" | "driverSocket" | "driverCommand" | "distributed">,
): boolean {
  return plan.commands.has("health-monitor") && runsHostpath(plan) && !plan.distributed;
}

/** Whether a distributed plan runs a snapshotter per node (both snapshot commands in this checkout). */
export function runsNodeSnapshotters(plan: Pick<ClusterPlan, "commands" | "distributed">): boolean {
  return (
    plan.distributed === true && plan.commands.has("snapshotter") && plan.commands.has("snapshot-controller")
  );
}

/** Whether the driver is csikit's hostpath, whose capabilities `up` knows before it starts. */
export function runsHostpath(plan: Pick<ClusterPlan, "driverSocket" | "driverCommand">): boolean {
  return plan.driverSocket === undefined && plan.driverCommand === undefined;
}

/** The release and gates of the components whose twins are Kubernetes' own (controllers, node agents). */
const release = (plan: ClusterPlan): string[] =>
  plan.kubernetesMinor !== undefined ? [`--kubernetes-version=${plan.kubernetesMinor}`] : [];
const gates = (plan: ClusterPlan): string[] => [
  ...release(plan),
  ...(plan.featureGates === "" ? [] : [`--feature-gates=${plan.featureGates}`]),
];

/**
 * The node agents' gates: the plan's, with CSIVolumeHealth on unless the plan sets it. `up`'s
 * own cluster turns the kubelet's volume health reporting on (alpha, off in a real kubelet) so
 * that an abnormal volume shows on its pods and in kubelet_volume_stats_health_status_abnormal.
 */
export function nodeFeatureGates(plan: Pick<ClusterPlan, "featureGates">): string {
  if (/(^|,)\s*CSIVolumeHealth\s*=/.test(plan.featureGates)) return plan.featureGates;
  return plan.featureGates === "" ? "CSIVolumeHealth=true" : `${plan.featureGates},CSIVolumeHealth=true`;
}

/**
 * Client-side rate limits `up` gives its API clients, as a deployment sizes them for its load
 * (the commands keep upstream's defaults: the sidecars' 5/10 would spend ~1 s of waiting per
 * claim when 100 claims arrive at once, each needing ~5 writes). The API server on the same
 * machine is the real limit; these only keep the clients from queueing behind a token bucket.
 */
const SIDECAR_QPS = ["--kube-api-qps=200", "--kube-api-burst=400"];
const CONTROLLERS_QPS = ["--kube-api-qps=200", "--kube-api-burst=400"];
const NODE_QPS = ["--kube-api-qps=100", "--kube-api-burst=200"];
const PV_BINDER_WORKERS = 8;

/** The table. Order within a stage is start order. */
export const COMPONENTS: readonly ComponentEntry[] = [
  {
    scope: "cluster",
    name: "controllers",
    subcommand: "controllers",
    stage: "controllers",
    identity: () => ({ kind: "user", user: "system:kube-controller-manager", groups: [] }),
    // One replica: no leader election to wait for (a resumed cluster would otherwise wait out
    // the lease of the run before).
    args: (plan) => [
      v(plan),
      kubeconfig(plan, "controllers"),
      "--leader-elect=false",
      ...CONTROLLERS_QPS,
      ...gates(plan),
      // csikit's own flag (KCM runs one binder worker per queue): a hundred claims arriving at
      // once are bound eight at a time instead of one, each bind being 3-4 sequential writes.
      `--pv-binder-workers=${PV_BINDER_WORKERS}`,
      `--secure-port=${portOf(plan, "controllers")}`,
      "--bind-address=127.0.0.1",
    ],
  },
  {
    // The cluster-wide snapshot controller (upstream: a Deployment in kube-system). It needs the
    // snapshot CRDs, which `up` installs before the components start.
    scope: "cluster",
    name: "snapshot-controller",
    subcommand: "snapshot-controller",
    stage: "controllers",
    optional: true,
    identity: () => ({ kind: "serviceAccount", namespace: "kube-system", name: "snapshot-controller" }),
    args: (plan) => [
      v(plan),
      kubeconfig(plan, "snapshot-controller"),
      // One replica: no lease to wait out on a resumed cluster.
      "--leader-election=false",
      // As upstream's deploy/kubernetes-distributed: node-deployed snapshotters pick their contents by label.
      ...(plan.distributed ? ["--enable-distributed-snapshotting"] : []),
      httpEndpoint(plan, "snapshot-controller"),
      ...CONTROLLERS_QPS,
    ],
  },
  {
    scope: "cluster",
    name: "provisioner",
    subcommand: "provisioner",
    stage: "sidecar",
    identity: () => ({ kind: "serviceAccount", namespace: "default", name: "csi-provisioner" }),
    // NAMESPACE: where CSIStorageCapacity objects live (upstream's manifest sets it from the
    // pod's namespace through the downward API).
    env: { NAMESPACE: "default" },
    args: (plan) => [
      v(plan),
      `--csi-address=${controllerSocket(plan)}`,
      kubeconfig(plan, "provisioner"),
      // Kubernetes 1.34+ defaults: VolumeAttributesClass is GA and on.
      "--feature-gates=Topology=true,VolumeAttributesClass=true",
      "--extra-create-metadata",
      // Capacity tracking needs the driver's GET_CAPACITY: csikit's hostpath has it; a user's
      // driver is not assumed to.
      ...(runsHostpath(plan) ? ["--enable-capacity", "--capacity-ownerref-level=-1"] : []),
      httpEndpoint(plan, "provisioner"),
      ...SIDECAR_QPS,
    ],
  },
  {
    scope: "cluster",
    name: "attacher",
    subcommand: "attacher",
    stage: "sidecar",
    optional: true,
    identity: () => ({ kind: "serviceAccount", namespace: "default", name: "csi-attacher" }),
    args: (plan) => [
      v(plan),
      `--csi-address=${controllerSocket(plan)}`,
      kubeconfig(plan, "attacher"),
      httpEndpoint(plan, "attacher"),
      ...SIDECAR_QPS,
    ],
  },
  {
    scope: "cluster",
    name: "resizer",
    subcommand: "resizer",
    stage: "sidecar",
    optional: true,
    identity: () => ({ kind: "serviceAccount", namespace: "default", name: "csi-resizer" }),
    args: (plan) => [
      v(plan),
      `--csi-address=${controllerSocket(plan)}`,
      kubeconfig(plan, "resizer"),
      // Kubernetes 1.34+ defaults: VolumeAttributesClass is GA and on (ControllerModifyVolume).
      "--feature-gates=VolumeAttributesClass=true",
      httpEndpoint(plan, "resizer"),
      ...SIDECAR_QPS,
    ],
  },
  {
    // csi-snapshotter beside the driver's controller, as upstream hostpath's plugin Deployment
    // runs it; the contents it serves come from the snapshot-controller.
    scope: "cluster",
    name: "snapshotter",
    subcommand: "snapshotter",
    stage: "sidecar",
    optional: true,
    identity: () => ({ kind: "serviceAccount", namespace: "default", name: "csi-snapshotter" }),
    args: (plan) => [
      v(plan),
      `--csi-address=${controllerSocket(plan)}`,
      kubeconfig(plan, "snapshotter"),
      httpEndpoint(plan, "snapshotter"),
      ...SIDECAR_QPS,
    ],
  },
  {
    // external-health-monitor-controller beside the driver's controller, as upstream hostpath's
    // plugin runs it, with the node watcher on (claims used on a deleted or NotReady node).
    // Runs only with a driver that has VOLUME_CONDITION (upstream's exits otherwise): hostpath.
    scope: "cluster",
    name: "health-monitor",
    subcommand: "health-monitor",
    stage: "sidecar",
    optional: true,
    when: (plan) => runsHealthMonitor(plan),
    identity: () => ({
      kind: "serviceAccount",
      namespace: "default",
      name: "csi-external-health-monitor-controller",
    }),
    args: (plan) => [
      v(plan),
      `--csi-address=${controllerSocket(plan)}`,
      kubeconfig(plan, "health-monitor"),
      "--enable-node-watcher",
      // A deleted volume shows within seconds on a one-machine cluster, not upstream's 5 minutes.
      "--list-volumes-interval=10s",
      "--monitor-interval=10s",
      "--node-list-add-interval=1m",
      httpEndpoint(plan, "health-monitor"),
      ...SIDECAR_QPS,
    ],
  },
  {
    // The snapshot-metadata service beside hostpath's controller (a user's driver may not serve
    // SNAPSHOT_METADATA_SERVICE), on loopback with the key pair `up` makes (snapshot-metadata.ts).
    scope: "cluster",
    name: SNAPSHOT_METADATA,
    subcommand: "snapshot-metadata",
    stage: "sidecar",
    optional: true,
    when: (plan) => runsSnapshotMetadata(plan),
    identity: () => ({ kind: "serviceAccount", namespace: "default", name: "csi-snapshot-metadata" }),
    args: (plan) => [
      v(plan),
      `--csi-address=${controllerSocket(plan)}`,
      kubeconfig(plan, SNAPSHOT_METADATA),
      `--port=${portOf(plan, SNAPSHOT_METADATA_GRPC)}`,
      "--bind-address=127.0.0.1",
      `--tls-cert=${snapshotMetadataKeyPair(plan.layout).certFile}`,
      `--tls-key=${snapshotMetadataKeyPair(plan.layout).keyFile}`,
      httpEndpoint(plan, SNAPSHOT_METADATA),
      ...SIDECAR_QPS,
    ],
  },
  {
    scope: "node",
    name: "",
    subcommand: "node",
    stage: "node",
    identity: (node) => ({ kind: "user", user: `system:node:${node?.name}`, groups: ["system:nodes"] }),
    args: (plan, node) => [
      v(plan),
      `--node-name=${node!.name}`,
      `--root-dir=${plan.layout.rootOf(node!.name)}`,
      `--node-labels=${ZONE_LABEL}=${node!.zone}`,
      kubeconfig(plan, node!.name),
      ...NODE_QPS,
      ...release(plan),
      `--feature-gates=${nodeFeatureGates(plan)}`,
      `--port=${portOf(plan, node!.name)}`,
      "--address=127.0.0.1",
      ...(plan.podProcesses === false ? ["--pod-processes=false"] : []),
      // Pods never see the cluster's state: tokens, kubeconfigs, keys, every node's volumes.
      `--pod-hidden-paths=${plan.layout.stateDir}`,
    ],
  },
  {
    scope: "node",
    name: "registrar",
    subcommand: "registrar",
    stage: "registration",
    optional: true,
    args: (plan, node) => [
      v(plan),
      `--csi-address=${nodeSocket(plan, node!.name)}`,
      // The driver socket as the kubelet sees it: the same path here (one mount namespace).
      `--kubelet-registration-path=${nodeSocket(plan, node!.name)}`,
      `--plugin-registration-path=${plan.layout.registrationDirOf(node!.name)}`,
    ],
  },
  {
    scope: "node",
    name: "livenessprobe",
    subcommand: "livenessprobe",
    stage: "node",
    optional: true,
    args: (plan, node) => [
      v(plan),
      `--csi-address=${nodeSocket(plan, node!.name)}`,
      httpEndpoint(plan, `${node!.name}-livenessprobe`),
    ],
  },
];

/**
 * hostpath standing in for an in-tree plugin's CSI driver (`--driver-name=ebs.csi.aws.com`) runs
 * without topology: its key (topology.hostpath.csi/node) is not the plugin's zone key, and the
 * translation of a provisioned PV back to its in-tree form refuses a node affinity without the
 * plugin's zones (upstream's too: "failed to translate topology: no zones specified"). Without
 * topology hostpath places a volume on its controller's node ID and publishes only to nodes it
 * knows, so that ID is the first node's: such a cluster serves its volumes on that node.
 */
export function hostpathWithoutTopology(plan: Pick<ClusterPlan, "driverName">): boolean {
  return pluginByDriverName(plan.driverName) !== undefined;
}

/** What one driver instance serves: the controller service, a node's, or (distributed) both for a node. */
export type DriverMode = "controller" | "node" | "distributed";

function hostpathArgs(plan: ClusterPlan, mode: DriverMode, node: NodeSpec | undefined): string[] {
  if (mode === "distributed")
    return distributedHostpathArgs(
      plan,
      node!,
      driverListenSocket(plan, plan.layout.nodeSocketOf(node!.name, plan.driverName)),
    );
  const standIn = hostpathWithoutTopology(plan);
  const common = [
    v(plan),
    `--drivername=${plan.driverName}`,
    `--state-dir=${plan.layout.driverStateDir}`,
    ...(standIn ? ["--enable-topology=false"] : []),
  ];
  if (mode === "controller")
    return [
      ...common,
      `--endpoint=unix://${driverListenSocket(plan, plan.layout.controllerSocket)}`,
      `--nodeid=${standIn ? (plan.nodes[0]?.name ?? "controller") : "controller"}`,
      "--node-service=false",
      "--controller-service=true",
      `--enable-attach=${plan.commands.has("attacher")}`,
      "--enable-controller-modify-volume=true",
      // hostpath's example mutable parameters (DEFAULT_MUTABLE_PARAMETERS): another key is
      // refused, as a real backend refuses one it does not know (csikit e2e's volume-modify
      // suite moves a claim to a class with an unknown key and back).
      "--accepted-mutable-parameter-names=iops,throughput",
      ...(runsSnapshotMetadata(plan) ? ["--enable-snapshot-metadata"] : []),
      `--allowed-path-roots=${plan.layout.nodesDir}`,
    ];
  return [
    ...common,
    `--endpoint=unix://${driverListenSocket(plan, plan.layout.nodeSocketOf(node!.name, plan.driverName))}`,
    `--nodeid=${node!.name}`,
    "--node-service=true",
    "--controller-service=false",
    `--allowed-path-roots=${plan.layout.rootOf(node!.name)}`,
  ];
}

function userDriverArgs(plan: ClusterPlan, mode: DriverMode, node: NodeSpec | undefined): string[] {
  const endpoint = driverListenSocket(
    plan,
    mode === "controller"
      ? plan.layout.controllerSocket
      : plan.layout.nodeSocketOf(node!.name, plan.driverName),
  );
  return (plan.driverCommand ?? "")
    .split(/\s+/)
    .filter((word) => word !== "")
    .map((word) =>
      word
        .replaceAll("{endpoint}", endpoint)
        .replaceAll("{nodeid}", node?.name ?? "controller")
        .replaceAll("{mode}", mode),
    );
}

/** The instance name of the fault proxy in front of the controller driver (`up --driver-fault-proxy`). */
export const FAULT_PROXY = "driver-fault-proxy";

/** The instance name of the fault proxy in front of a node's driver. */
export function nodeFaultProxyName(node: string): string {
  return `${node}-${FAULT_PROXY}`;
}

/**
 * The fault proxy in front of one driver instance: no rules until set over its API, which
 * listens on the port `up` chose (printed), the same after a restart.
 */
function faultProxy(plan: ClusterPlan, node: NodeSpec | undefined, socket: string): ComponentInstance {
  const name = node ? nodeFaultProxyName(node.name) : FAULT_PROXY;
  return {
    name,
    stage: "driver",
    subcommand: "fault-proxy",
    args: [
      v(plan),
      `--listen=${socket}`,
      `--csi-address=${driverListenSocket(plan, socket)}`,
      `--api-address=127.0.0.1:${portOf(plan, name)}`,
    ],
    ...(node ? { node: node.name } : {}),
  };
}

/** Each fault proxy's rules API (`up --driver-fault-proxy`), by instance. */
export function faultProxyEndpoints(
  plan: Pick<ClusterPlan, "nodes" | "ports" | "driverFaultProxy" | "distributed">,
): { instance: string; what: string; url: string }[] {
  if (plan.driverFaultProxy !== true) return [];
  const url = (instance: string) => `http://127.0.0.1:${portOf(plan, instance)}/rules`;
  return [
    ...(plan.distributed
      ? []
      : [{ instance: FAULT_PROXY, what: "controller driver", url: url(FAULT_PROXY) }]),
    ...plan.nodes.map((node) => ({
      instance: nodeFaultProxyName(node.name),
      what: `${node.name} driver`,
      url: url(nodeFaultProxyName(node.name)),
    })),
  ];
}

/** Every instance to run, drivers first (their sockets are what the others wait for). */
export function planComponents(plan: ClusterPlan): { instances: ComponentInstance[]; skipped: string[] } {
  const instances: ComponentInstance[] = [];
  const skipped: string[] = [];
  if (plan.driverSocket === undefined) {
    const driver = (mode: DriverMode, node: NodeSpec | undefined): ComponentInstance =>
      plan.driverCommand !== undefined
        ? {
            name: node ? `${node.name}-driver` : "driver",
            stage: "driver",
            args: userDriverArgs(plan, mode, node),
            ...(node ? { node: node.name } : {}),
          }
        : {
            name: node ? `${node.name}-driver` : "driver",
            stage: "driver",
            subcommand: "hostpath",
            args: hostpathArgs(plan, mode, node),
            ...(node ? { node: node.name } : {}),
          };
    if (!plan.distributed) instances.push(driver("controller", undefined));
    for (const node of plan.nodes) instances.push(driver(plan.distributed ? "distributed" : "node", node));
    if (plan.driverFaultProxy) {
      const sockets: [NodeSpec | undefined, string][] = [
        ...(plan.distributed ? [] : [[undefined, plan.layout.controllerSocket] as [undefined, string]]),
        ...plan.nodes.map((node): [NodeSpec, string] => [
          node,
          plan.layout.nodeSocketOf(node.name, plan.driverName),
        ]),
      ];
      for (const [node, socket] of sockets) instances.push(faultProxy(plan, node, socket));
    }
  }
  if (plan.distributed)
    for (const node of plan.nodes) {
      instances.push(nodeProvisioner(plan, node, nodeSocket(plan, node.name)));
      // Only where the snapshot-controller runs too (it labels the contents this one picks).
      if (runsNodeSnapshotters(plan))
        instances.push(nodeSnapshotter(plan, node, nodeSocket(plan, node.name)));
    }
  for (const entry of COMPONENTS) {
    if (plan.distributed && entry.scope === "cluster" && NOT_IN_DISTRIBUTED.has(entry.name)) continue;
    if (entry.optional && !plan.commands.has(entry.subcommand)) {
      skipped.push(entry.subcommand);
      continue;
    }
    if (entry.when && !entry.when(plan)) continue;
    if (plan.combinedSidecars && COMBINED_SIDECARS.has(entry.name)) continue;
    const targets = entry.scope === "cluster" ? [undefined] : plan.nodes;
    for (const node of targets) {
      const name = node ? (entry.name === "" ? node.name : `${node.name}-${entry.name}`) : entry.name;
      instances.push({
        name,
        stage: entry.stage,
        subcommand: entry.subcommand,
        args: entry.args(plan, node),
        ...(entry.identity ? { identity: entry.identity(node) } : {}),
        ...(node ? { node: node.name } : {}),
        ...(entry.env ? { env: entry.env } : {}),
      });
    }
  }
  if (plan.combinedSidecars) {
    const members = COMPONENTS.filter(
      (entry) =>
        COMBINED_SIDECARS.has(entry.name) &&
        !(plan.distributed && NOT_IN_DISTRIBUTED.has(entry.name)) &&
        plan.commands.has(entry.subcommand) &&
        (!entry.when || entry.when(plan)),
    ).map((entry) => ({
      component: entry.name,
      args: entry.args(plan, undefined),
      account: serviceAccountOf(entry.identity?.(undefined)),
      env: entry.env,
    }));
    if (members.length > 0) instances.push(combinedSidecarsInstance(plan, members));
  }
  return { instances, skipped };
}

function serviceAccountOf(identity: Identity | undefined): { namespace: string; name: string } {
  if (identity?.kind !== "serviceAccount") throw new Error("a combined sidecar needs a ServiceAccount");
  return { namespace: identity.namespace, name: identity.name };
}

/** The sidecars `--sidecars=combined` runs in one `csikit sidecars` process. */
const COMBINED_SIDECARS = new Set(["provisioner", "attacher", "resizer", "snapshotter", "health-monitor"]);

/** Flags of the separate command lines that are the combined process's own (shared). */
const SHARED_ARGS = new Set(["v", "csi-address", "kube-api-qps", "kube-api-burst"]);

/**
 * One `csikit sidecars` instance from the separate sidecars' command lines: their shared
 * flags once, the rest namespaced (--provisioner.feature-gates=...), each one's kubeconfig as
 * --<component>.kubeconfig (its own identity for writes), the shared reads as csikit-sidecars.
 */
function combinedSidecarsInstance(
  plan: ClusterPlan,
  members: {
    component: string;
    args: string[];
    account: { namespace: string; name: string };
    env: Readonly<Record<string, string>> | undefined;
  }[],
): ComponentInstance {
  const shared = new Map<string, string>();
  const own: string[] = [];
  for (const { component, args } of members) {
    own.push(`--${component}`);
    for (const arg of args) {
      const match = /^--?([^=]+)(?:=(.*))?$/.exec(arg);
      if (!match) continue;
      const [, name, value] = match;
      if (name === "http-endpoint") continue;
      if (SHARED_ARGS.has(name!)) shared.set(name!, arg);
      else own.push(`--${component}.${name}${value !== undefined ? `=${value}` : ""}`);
    }
  }
  return {
    name: "sidecars",
    stage: "sidecar",
    subcommand: "sidecars",
    args: [...shared.values(), kubeconfig(plan, "sidecars"), httpEndpoint(plan, "sidecars"), ...own],
    identity: { kind: "serviceAccount", namespace: "default", name: "csikit-sidecars" },
    writeIdentities: Object.fromEntries(members.map((m) => [m.component, m.account])),
    env: Object.assign({}, ...members.map((m) => m.env ?? {})) as Record<string, string>,
  };
}

/**
 * Instances that serve metrics, with what their endpoint is (the URL scheme and path), for the
 * ports `up` allocates and the lines it prints.
 */
export function metricsEndpoints(
  plan: Pick<ClusterPlan, "nodes" | "commands" | "ports" | "distributed" | "driverSocket" | "driverCommand">,
): { instance: string; what: string; url: string }[] {
  const http = (instance: string) => `http://127.0.0.1:${plan.ports.get(instance) ?? 0}/metrics`;
  const https = (instance: string) => `https://127.0.0.1:${plan.ports.get(instance) ?? 0}/metrics`;
  const endpoints = [
    { instance: "controllers", what: "kube-controller-manager (secure port)", url: https("controllers") },
  ];
  if (plan.commands.has("snapshot-controller"))
    endpoints.push({
      instance: "snapshot-controller",
      what: "snapshot-controller",
      url: http("snapshot-controller"),
    });
  if (!plan.distributed) {
    endpoints.push({ instance: "provisioner", what: "external-provisioner", url: http("provisioner") });
    for (const sidecar of ["attacher", "resizer"])
      if (plan.commands.has(sidecar))
        endpoints.push({ instance: sidecar, what: `external-${sidecar}`, url: http(sidecar) });
    if (plan.commands.has("snapshotter"))
      endpoints.push({ instance: "snapshotter", what: "csi-snapshotter", url: http("snapshotter") });
    if (runsHealthMonitor(plan))
      endpoints.push({
        instance: "health-monitor",
        what: "external-health-monitor-controller",
        url: http("health-monitor"),
      });
    if (runsSnapshotMetadata(plan))
      endpoints.push({
        instance: SNAPSHOT_METADATA,
        what: "external-snapshot-metadata",
        url: http(SNAPSHOT_METADATA),
      });
  }
  for (const node of plan.nodes) {
    if (plan.distributed) {
      const provisioner = nodeProvisionerName(node.name);
      endpoints.push({
        instance: provisioner,
        what: `external-provisioner ${node.name}`,
        url: http(provisioner),
      });
      if (runsNodeSnapshotters(plan)) {
        const snapshotter = nodeSnapshotterName(node.name);
        endpoints.push({
          instance: snapshotter,
          what: `csi-snapshotter ${node.name}`,
          url: http(snapshotter),
        });
      }
    }
    endpoints.push({
      instance: node.name,
      what: `kubelet ${node.name} (secure port)`,
      url: https(node.name),
    });
    if (plan.commands.has("livenessprobe"))
      endpoints.push({
        instance: `${node.name}-livenessprobe`,
        what: `livenessprobe ${node.name}`,
        url: http(`${node.name}-livenessprobe`),
      });
  }
  return endpoints;
}

/** The driver's socket dirs that must exist before the drivers start. */
export function socketDirs(plan: ClusterPlan): string[] {
  return [
    plan.layout.socketsDir,
    ...plan.nodes.map((node) => dirname(plan.layout.nodeSocketOf(node.name, plan.driverName))),
    ...plan.nodes.map((node) => plan.layout.registrationDirOf(node.name)),
  ];
}
