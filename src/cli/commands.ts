// The list of subcommands, in the order `csikit --help` shows them. Each is loaded only when it
// runs (a dynamic import), so a process pays for its own dependencies alone: `csikit hostpath`
// never loads @kubernetes/client-node or the API server. `summary` is the one line the command
// list shows without loading anything; it must equal the loaded command's own summary.
import type { Command } from "./command.ts";

export interface CommandEntry {
  name: string;
  summary: string;
  load: () => Promise<Command>;
}

export const commands: readonly CommandEntry[] = [
  {
    name: "apiserver",
    summary: "Run the embedded Kubernetes-compatible API server (HTTPS, SQLite state)",
    load: async () => (await import("./apiserver.ts")).apiserverCommand,
  },
  {
    name: "attacher",
    summary:
      "Run the external-attacher sidecar: ControllerPublish/Unpublish for VolumeAttachments of one CSI driver",
    load: async () => (await import("./attacher.ts")).attacherCommand,
  },
  {
    name: "controllers",
    summary:
      "Run the cluster's loops (PV binder, protection, GC, attach/detach, scheduler, statefulset, replicaset, deployment, daemonset, job, ephemeral volumes) like kube-controller-manager",
    load: async () => (await import("./controllers.ts")).controllersCommand,
  },
  {
    name: "csi",
    summary:
      "Call any CSI RPC on a driver's socket from the command line (a raw CSI client, like gocsi's csc)",
    load: async () => (await import("./csi.ts")).csiCommand,
  },
  {
    name: "dashboard",
    summary:
      "Serve the live dashboard (claims' journeys, nodes, events, CSI metrics) for any cluster on loopback",
    load: async () => (await import("./dashboard.ts")).dashboardCommand,
  },
  {
    name: "doctor",
    summary:
      "Find what is left over or stuck (leaked volumes, stuck finalizers, stale attachments, orphan mounts) and fix it on request",
    load: async () => (await import("./doctor.ts")).doctorCommand,
  },
  {
    name: "e2e",
    summary:
      "Run Kubernetes' external storage e2e suites against a CSI driver, on a csikit up cluster started around it or on a real cluster",
    load: async () => (await import("./e2e.ts")).e2eCommand,
  },
  {
    name: "fault-proxy",
    summary:
      "Run a CSI proxy between a CO and a driver that injects faults (latency, codes, timeouts, hangs, drops) by rule",
    load: async () => (await import("./fault-proxy.ts")).faultProxyCommand,
  },
  {
    name: "health-monitor",
    summary:
      "Run the external-health-monitor-controller sidecar: volume conditions as VolumeConditionAbnormal events on claims",
    load: async () => (await import("./health-monitor.ts")).healthMonitorCommand,
  },
  {
    name: "hostpath",
    summary: "Run the hostpath reference CSI driver (controller and/or node service) on a Unix socket",
    load: async () => (await import("./hostpath.ts")).hostpathCommand,
  },
  {
    name: "livenessprobe",
    summary: "Run the livenessprobe sidecar: /healthz answers from the CSI driver's Probe",
    load: async () => (await import("./livenessprobe.ts")).livenessprobeCommand,
  },
  {
    name: "migrate",
    summary:
      "Translate in-tree volume objects in manifests to their CSI form (or back), as CSI migration does",
    load: async () => (await import("./migrate.ts")).migrateCommand,
  },
  {
    name: "node",
    summary: "Run a virtual node: the kubelet's volume role (plugin registration, CSINode, stage/publish)",
    load: async () => (await import("./node.ts")).nodeCommand,
  },
  {
    name: "node-sidecars",
    summary: "Run the node's registrar and livenessprobe in one process (the node DaemonSet's combined form)",
    load: async () => (await import("./node-sidecars.ts")).nodeSidecarsCommand,
  },
  {
    name: "provisioner",
    summary: "Run the external-provisioner sidecar: CreateVolume/DeleteVolume for claims of one CSI driver",
    load: async () => (await import("./provisioner.ts")).provisionerCommand,
  },
  {
    name: "registrar",
    summary: "Run the node-driver-registrar sidecar: register a CSI driver with the kubelet's plugin watcher",
    load: async () => (await import("./registrar.ts")).registrarCommand,
  },
  {
    name: "resizer",
    summary:
      "Run the external-resizer sidecar: ControllerExpandVolume/ControllerModifyVolume for claims of one CSI driver",
    load: async () => (await import("./resizer.ts")).resizerCommand,
  },
  {
    name: "sanity",
    summary: "Run the CSI conformance suite against a driver's socket",
    load: async () => (await import("./sanity.ts")).sanityCommand,
  },
  {
    name: "sidecars",
    summary:
      "Run several controller sidecars (provisioner, attacher, resizer, snapshotter, health-monitor) in one process with one CSI connection and one watch per resource",
    load: async () => (await import("./sidecars.ts")).sidecarsCommand,
  },
  {
    name: "snapshot-controller",
    summary:
      "Run the snapshot controller: bind VolumeSnapshots to contents, default classes, finalizers, group snapshots",
    load: async () => (await import("./snapshot-controller.ts")).snapshotControllerCommand,
  },
  {
    name: "snapshotter",
    summary:
      "Run the csi-snapshotter sidecar: CreateSnapshot/DeleteSnapshot for VolumeSnapshotContents of one CSI driver",
    load: async () => (await import("./snapshotter.ts")).snapshotterCommand,
  },
  {
    name: "snapshot-metadata",
    summary:
      "Run the external-snapshot-metadata sidecar: the Kubernetes SnapshotMetadata API (changed-block tracking) over TLS",
    load: async () => (await import("./snapshot-metadata.ts")).snapshotMetadataCommand,
  },
  {
    name: "snapshot-metadata list",
    summary:
      "List a VolumeSnapshot's allocated blocks, or those changed since a base snapshot (SnapshotMetadata API)",
    load: async () => (await import("./snapshot-metadata.ts")).snapshotMetadataListCommand,
  },
  {
    name: "why",
    summary:
      "Explain why a pod, claim, volume, attachment or snapshot is stuck: the first link not done, its cause and who acts",
    load: async () => (await import("./why.ts")).whyCommand,
  },
  {
    name: "up",
    summary: "Run the whole CSI cluster on one machine: API server, controllers, nodes, driver and sidecars",
    load: async () => (await import("./up.ts")).upCommand,
  },
];
