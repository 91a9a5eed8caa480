// Options of the virtual node (startNode) with the kubelet's defaults, and the pieces shared
// by its modules (the context every module receives).

import type { Clock, Logger } from "../base/index.ts";
import type { EventRecorder, KubeClient } from "../kube/index.ts";
import type { FeatureGates } from "../migration/index.ts";
import type { KubeletPaths } from "./paths.ts";
import type { ContainerStreams } from "./runtime/index.ts";

export interface NodeOptions {
  /** Name of the Node object (--node-name; kubelet: --hostname-override or the host name). */
  nodeName: string;
  /** Kubelet root dir (--root-dir). Default "/var/lib/kubelet". */
  rootDir?: string;
  /** Value of the kubernetes.io/hostname label. Default nodeName. */
  hostname?: string;
  /** Extra Node labels (--node-labels). Default none. */
  labels?: Readonly<Record<string, string>>;
  /** The client every API call goes through (rate-limited by its own bucket). */
  client: KubeClient;
  /**
   * The runtime behind the secure port's /containerLogs and /exec (tests give a stand-in).
   * Default: the node's own.
   */
  containerStreams?: ContainerStreams;
  /** Lease duration in seconds (--node-lease-duration-seconds). Default 40. */
  leaseDurationSeconds?: number;
  /** How often the Lease is renewed, in ms. Default 10000 (kubelet: 1/4 of 40s). */
  leaseRenewIntervalMs?: number;
  /** How often the Ready condition's heartbeat is written without a change, in ms. Default 300000. */
  nodeStatusReportFrequencyMs?: number;
  /** The reconciler's fallback tick in ms (it also reacts to events). Default 100. */
  reconcileIntervalMs?: number;
  /**
   * How often a PVC, PV or VolumeAttachment the node's pods use is fetched again, in ms. The
   * Node authorizer lets a node get those one by one, never list or watch them. Default 1000.
   */
  objectRefreshMs?: number;
  /** How often plugins_registry/ is rescanned besides fs.watch, in ms. Default 5000. */
  pluginRescanIntervalMs?: number;
  /**
   * Max period between pod syncs (--sync-frequency): a published volume of a CSIDriver with
   * `requiresRepublish` gets NodePublishVolume again at this period, and a running pod's
   * configMap, secret, downwardAPI and projected volumes are written again. Default 60000.
   */
  syncFrequencyMs?: number;
  /** How often NodeGetVolumeStats runs for the metrics, in ms (--volume-stats-agg-period). Default 60000. */
  volumeStatsAggPeriodMs?: number;
  /** First retry delay of a failed volume operation in ms. Default 500 (kubelet). */
  retryInitialMs?: number;
  /** Longest retry delay in ms. Default 122000 (kubelet: 2m2s). */
  retryMaxMs?: number;
  /** How long a volume waits for its VolumeAttachment before FailedMount, in ms. Default 120000. */
  attachTimeoutMs?: number;
  /** Deadline of each CSI call in ms. Default 120000 (kubelet's csiTimeout is 2m). */
  csiTimeoutMs?: number;
  /** --http-endpoint for /metrics ("" = off). Default "". */
  httpEndpoint?: string;
  /**
   * The kubelet's secure port (--port, --address, --tls-*): /metrics and /healthz over HTTPS;
   * with webhook authorization, every request is checked by TokenReview and SubjectAccessReview
   * (nodes/metrics, nodes/stats, nodes/proxy, as the kubelet). Default none.
   */
  secureServing?: {
    address: string;
    port: number;
    certFile: string;
    keyFile: string;
    webhookAuthorization: boolean;
  };
  /** Default "/metrics". */
  metricsPath?: string;
  /**
   * Run the commands of pods' containers as sandboxed host processes (--pod-processes).
   * Default true; off, every pod is Running once its volumes are published, nothing executed.
   */
  podProcesses?: boolean;
  /**
   * Host paths pods' sandboxes never see, besides the node's root dir (--pod-hidden-paths;
   * `up` hides its whole state dir: tokens, kubeconfigs, every node's volumes).
   */
  podHiddenPaths?: readonly string[];
  /** The container runtime's clock (restarts, back-off, grace periods, log stamps). Default `clock`. */
  runtimeClock?: Clock;
  /**
   * Whether the host has SELinux, which decides whether volumes of a CSIDriver with
   * seLinuxMount get `context="<label>"` mount options (KEP-1710; the kubelet asks libselinux).
   * Default: detected (selinuxfs mounted). True makes the node act as an SELinux host, so a
   * driver's handling of the option can be tried on any machine.
   */
  seLinux?: boolean;
  /** Resolved --feature-gates (the release's storage gates and CSI migration's). Default: the default release's (feature-gates.ts). */
  featureGates?: FeatureGates;
  /**
   * Called once the node is registered and serving (tests, `csikit up`); `streams` is the
   * node's container runtime as the kubelet's /containerLogs and /exec endpoints use it.
   */
  onReady?: (info: { metricsUrl?: string; streams: ContainerStreams }) => void;
  clock?: Clock;
  logger?: Logger;
}

/** What every module of a running node shares. */
export interface NodeContext {
  nodeName: string;
  paths: KubeletPaths;
  client: KubeClient;
  events: EventRecorder;
  clock: Clock;
  logger: Logger;
}
