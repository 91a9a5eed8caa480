// `up --distributed`: the driver deployed the way upstream deploys a driver whose volumes live on
// one node each (csi-driver-host-path's deploy/kubernetes-distributed): no controller instance of
// the driver and no controller-side sidecars in the middle; on every node one driver instance
// serving both the controller and the node service, with its own external-provisioner beside it
// (--node-deployment, strict topology, NODE_NAME) and its own csi-snapshotter (--node-deployment,
// NODE_NAME: it cuts the snapshots of the contents the snapshot-controller, run with
// --enable-distributed-snapshotting, labels managed-by its node). That deployment runs no attacher (its CSIDriver
// says attachRequired: false) and no resizer (external-resizer has no node deployment:
// kubernetes-csi/external-resizer#142), so neither does `up` in this mode. A driver whose state
// lives in each process (upstream hostpath) needs this: its controller instance would give its
// own node as every volume's topology, and no node instance would know the controller's volumes.

import { join } from "node:path";
import type { ClusterLayout, NodeSpec } from "./layout.ts";

/** What of the cluster's plan these need (components.ts's ClusterPlan has it). */
interface Plan {
  layout: ClusterLayout;
  driverName: string;
  verbosity: number;
  /** Loopback ports of the metrics endpoints by instance name (absent: the OS picks). */
  ports?: ReadonlyMap<string, number>;
}

/** The cluster-wide sidecars a distributed deployment does not run (provisioner and snapshotter run per node). */
export const NOT_IN_DISTRIBUTED: ReadonlySet<string> = new Set([
  "provisioner",
  "attacher",
  "resizer",
  "snapshotter",
]);

/**
 * How long a node's provisioner waits at most, at first, before trying to own a claim of an
 * Immediate class (upstream's default 20s suits hundreds of real nodes racing for a claim; a
 * handful of virtual nodes on one machine settle it at once, and the walkthrough's claim is one).
 */
const OWN_CLAIM_BASE_DELAY = "1s";
const OWN_CLAIM_MAX_DELAY = "10s";

/** The name of a node's provisioner (and of its kubeconfig and log). */
export const nodeProvisionerName = (node: string): string => `${node}-provisioner`;

/** The name of a node's snapshotter (and of its kubeconfig and log). */
export const nodeSnapshotterName = (node: string): string => `${node}-snapshotter`;

/** A sidecar of one node's driver instance, as the node DaemonSet's pod runs it. */
export interface NodeSidecar {
  name: string;
  stage: "sidecar";
  subcommand: string;
  node: string;
  identity: { kind: "serviceAccount"; namespace: string; name: string };
  args: string[];
}

/**
 * `subcommand` beside a node's driver instance under `serviceAccount` (upstream's DaemonSet pod
 * runs under that sidecar's account), its kubeconfig and metrics port by instance name, `args`
 * after the common ones. NODE_NAME comes from `node` (cluster.ts).
 */
function nodeSidecar(
  plan: Plan,
  target: { node: NodeSpec; socket: string; name: string },
  subcommand: string,
  serviceAccount: string,
  args: readonly string[],
): NodeSidecar {
  const { name } = target;
  return {
    name,
    stage: "sidecar",
    subcommand,
    node: target.node.name,
    identity: { kind: "serviceAccount", namespace: "default", name: serviceAccount },
    args: [
      `--v=${plan.verbosity}`,
      `--csi-address=${target.socket}`,
      `--kubeconfig=${plan.layout.kubeconfigOf(name)}`,
      `--http-endpoint=127.0.0.1:${plan.ports?.get(name) ?? 0}`,
      ...args,
    ],
  };
}

/** A node's external-provisioner, beside that node's driver instance. */
export function nodeProvisioner(plan: Plan, node: NodeSpec, socket: string): NodeSidecar {
  return nodeSidecar(
    plan,
    { node, socket, name: nodeProvisionerName(node.name) },
    "provisioner",
    "csi-provisioner",
    [
      "--feature-gates=Topology=true,VolumeAttributesClass=true",
      "--extra-create-metadata",
      "--node-deployment=true",
      "--strict-topology=true",
      "--immediate-topology=false",
      `--node-deployment-base-delay=${OWN_CLAIM_BASE_DELAY}`,
      `--node-deployment-max-delay=${OWN_CLAIM_MAX_DELAY}`,
      "--kube-api-qps=100",
      "--kube-api-burst=200",
    ],
  );
}

/**
 * A node's csi-snapshotter, beside that node's driver instance: only the contents whose managed-by
 * label names its node (upstream's distributed snapshotting; no leader election, as upstream
 * refuses it with --node-deployment).
 */
export function nodeSnapshotter(plan: Plan, node: NodeSpec, socket: string): NodeSidecar {
  return nodeSidecar(
    plan,
    { node, socket, name: nodeSnapshotterName(node.name) },
    "snapshotter",
    "csi-snapshotter",
    ["--node-deployment", "--kube-api-qps=100", "--kube-api-burst=200"],
  );
}

/** csikit hostpath as one node's only instance: both services, its own state (as upstream's). */
export function distributedHostpathArgs(plan: Plan, node: NodeSpec, endpoint: string): string[] {
  return [
    `--v=${plan.verbosity}`,
    `--drivername=${plan.driverName}`,
    `--state-dir=${join(plan.layout.driverStateDir, node.name)}`,
    `--endpoint=unix://${endpoint}`,
    `--nodeid=${node.name}`,
    "--node-service=true",
    "--controller-service=true",
    "--enable-attach=false",
    `--allowed-path-roots=${plan.layout.rootOf(node.name)}`,
  ];
}
