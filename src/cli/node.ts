// `csikit node`: a virtual kubelet for volumes. Flags keep the kubelet's names where the
// kubelet has one (--root-dir, --node-labels, --hostname-override, --kube-api-qps|burst with
// the kubelet's defaults 50/100, --node-lease-duration-seconds, --node-status-report-frequency,
// --volume-stats-agg-period); this file only turns them into options for startNode.

import { resolve } from "node:path";
import { FlagError, type Flags } from "../base/index.ts";
import { TLS_SERVING_FLAGS } from "../kube/diagnostics.ts";
import type { NodeOptions } from "../node/index.ts";
import type { Command } from "./command.ts";
import { FEATURE_GATES_FLAG, featureGates, KUBERNETES_VERSION_FLAG } from "./feature-gates.ts";

/** The kubelet's --root-dir default (startNode's too). */
const DEFAULT_ROOT_DIR = "/var/lib/kubelet";

function positive(flags: Flags, name: string): number {
  const value = flags.number(name);
  if (!(value > 0)) throw new FlagError(`invalid value for flag -${name}: want a positive value`);
  return value;
}

function secureServingOf(flags: Flags): NonNullable<NodeOptions["secureServing"]> {
  const mode = flags.string("authorization-mode");
  if (mode !== "AlwaysAllow" && mode !== "Webhook")
    throw new FlagError(
      `invalid value ${JSON.stringify(mode)} for flag -authorization-mode: want AlwaysAllow or Webhook`,
    );
  const webhook = mode === "Webhook";
  if (webhook && !flags.bool("authentication-token-webhook"))
    throw new FlagError("--authorization-mode=Webhook needs --authentication-token-webhook to know who asks");
  return {
    address: flags.string("address"),
    port: flags.number("port"),
    certFile: flags.string("tls-cert-file"),
    keyFile: flags.string("tls-private-key-file"),
    webhookAuthorization: webhook,
  };
}

export function nodeOptions(flags: Flags): Omit<NodeOptions, "client"> {
  const nodeName = flags.string("node-name") || flags.string("hostname-override");
  if (nodeName === "") throw new FlagError("flag -node-name is required");
  const labels = { ...flags.map("labels"), ...flags.map("node-labels") };
  const httpEndpoint = flags.string("http-endpoint");
  return {
    nodeName,
    rootDir: flags.string("root-dir"),
    hostname: flags.string("hostname-override") || nodeName,
    labels,
    leaseDurationSeconds: positive(flags, "node-lease-duration-seconds"),
    leaseRenewIntervalMs: positive(flags, "node-lease-renew-interval"),
    nodeStatusReportFrequencyMs: positive(flags, "node-status-report-frequency"),
    volumeStatsAggPeriodMs: positive(flags, "volume-stats-agg-period"),
    syncFrequencyMs: positive(flags, "sync-frequency"),
    reconcileIntervalMs: positive(flags, "reconcile-interval"),
    pluginRescanIntervalMs: positive(flags, "plugin-rescan-interval"),
    ...(httpEndpoint !== "" ? { httpEndpoint } : {}),
    secureServing: secureServingOf(flags),
    metricsPath: flags.string("metrics-path"),
    featureGates: featureGates(flags),
    podProcesses: flags.bool("pod-processes"),
    podHiddenPaths: flags.strings("pod-hidden-paths").map((path) => resolve(path)),
  };
}

export const nodeCommand: Command = {
  name: "node",
  summary: "Run a virtual node: the kubelet's volume role (plugin registration, CSINode, stage/publish)",
  usage: "csikit node --node-name=NAME [--root-dir=DIR] [--node-labels=k=v,...] [--kubeconfig=FILE] [flags]",
  description:
    "Registers a Node (Ready, with a Lease in kube-node-lease) and its CSINode, registers CSI drivers " +
    "whose registrar puts a socket in <root-dir>/plugins_registry/, and mounts the CSI volumes of pods " +
    "bound to the node with the kubelet's layout under <root-dir>; a pod is Running once its volumes are " +
    "published, and its containers' commands run sandboxed (logs under <root-dir>/logs/pods). A hostpath node plugin serving this node needs <root-dir> in its " +
    "--allowed-path-roots.",
  flags: {
    "feature-gates": FEATURE_GATES_FLAG,
    "kubernetes-version": KUBERNETES_VERSION_FLAG,
    "node-name": {
      type: "string",
      help: "Name of the Node object (required unless --hostname-override is given).",
    },
    "hostname-override": {
      type: "string",
      help: "As the kubelet: the node's name and kubernetes.io/hostname label when --node-name is not given.",
    },
    "root-dir": {
      type: "string",
      default: DEFAULT_ROOT_DIR,
      help: "Directory for the kubelet's files (volume mounts, plugin sockets).",
    },
    "node-labels": {
      type: "map",
      help: "Labels to add when registering the node, key=value pairs separated by ','.",
    },
    labels: { type: "map", help: "Alias of --node-labels." },
    kubeconfig: {
      type: "string",
      help: "Path to a kubeconfig file. Required only when running out of cluster.",
    },
    master: {
      type: "string",
      help: "The address of the Kubernetes API server (overrides any value in kubeconfig).",
    },
    "kube-api-qps": {
      type: "float",
      default: "50",
      help: "QPS to use while talking with the Kubernetes API server.",
    },
    "kube-api-burst": {
      type: "int",
      default: "100",
      help: "Burst to use while talking with the Kubernetes API server.",
    },
    "node-lease-duration-seconds": {
      type: "int",
      default: "40",
      help: "Duration of the node Lease, in seconds.",
    },
    "node-lease-renew-interval": {
      type: "duration",
      default: "10s",
      help: "How often the node Lease is renewed (the kubelet: a quarter of the lease duration).",
    },
    "node-status-report-frequency": {
      type: "duration",
      default: "5m",
      help: "How often node status (the Ready heartbeat) is posted when nothing changed.",
    },
    "sync-frequency": {
      type: "duration",
      default: "1m",
      help: "Max period between pod syncs: volumes of a CSIDriver with requiresRepublish are published again, and running pods' configMap, secret, downwardAPI and projected volumes written again from their sources, at this period (the kubelet's --sync-frequency; a watched ConfigMap or Secret change is applied at once).",
    },
    "volume-stats-agg-period": {
      type: "duration",
      default: "1m",
      help: "How often NodeGetVolumeStats is called for the kubelet_volume_stats_* metrics.",
    },
    "reconcile-interval": {
      type: "duration",
      default: "100ms",
      help: "Fallback period of the volume reconciler (it also runs on every change it watches).",
    },
    "plugin-rescan-interval": {
      type: "duration",
      default: "5s",
      help: "How often plugins_registry/ is rescanned besides file-system notifications.",
    },
    "http-endpoint": {
      type: "string",
      help: 'TCP address ("host:port", ":port") of the HTTP server for /metrics and /healthz. Empty disables it.',
    },
    "metrics-path": {
      type: "string",
      default: "/metrics",
      help: "The HTTP path where prometheus metrics are exposed.",
    },
    port: {
      type: "int",
      default: "10250",
      help: "The port for the kubelet's secure server (/metrics with kubelet_volume_stats_* and storage_operation_duration_seconds, /healthz). 0 disables it (csikit's; the kubelet always serves it).",
    },
    address: {
      type: "string",
      default: "127.0.0.1",
      help: "The IP address for the kubelet to serve on. The kubelet's default is 0.0.0.0 (all interfaces); csikit serves loopback unless told otherwise.",
    },
    "pod-processes": {
      type: "bool",
      default: "true",
      help:
        "Run each container's command as a host process in a bubblewrap sandbox (own mount, PID, IPC and UTS namespaces, " +
        "read-only host root, the pod's volumes bound in, no capabilities); the image is not pulled. A container " +
        "without a command runs nothing. false: no pod command runs (csikit's).",
    },
    "pod-hidden-paths": {
      type: "strings",
      help: "Host directories pods' sandboxes must not see (each shown as an empty read-only dir), besides --root-dir, which is always hidden. `csikit up` passes its state dir.",
    },
    ...TLS_SERVING_FLAGS,
    "authentication-token-webhook": {
      type: "bool",
      default: "true",
      help: "Use the TokenReview API to determine authentication for bearer tokens. The kubelet's command-line default is false (kubeadm turns it on); csikit's is true, with --authorization-mode=Webhook.",
    },
    "authorization-mode": {
      type: "string",
      default: "Webhook",
      help: "Authorization mode for the kubelet server: AlwaysAllow or Webhook (SubjectAccessReview for nodes/metrics, nodes/stats, nodes/proxy). The kubelet's command-line default is AlwaysAllow; csikit's is Webhook.",
    },
  },
  async run({ flags, logger, signal }) {
    const options = nodeOptions(flags);
    // Loaded here so other subcommands never load the Kubernetes client (lean processes).
    const { kubeClientFromOptions } = await import("../kube/index.ts");
    const { startNode } = await import("../node/index.ts");
    const client = kubeClientFromOptions({
      kubeconfig: flags.string("kubeconfig"),
      master: flags.string("master"),
      kubeApiQps: flags.number("kube-api-qps"),
      kubeApiBurst: flags.number("kube-api-burst"),
      userAgent: "kubelet",
    });
    try {
      await startNode({ ...options, client, logger }, signal);
    } finally {
      client.close();
    }
    return 0;
  },
};
