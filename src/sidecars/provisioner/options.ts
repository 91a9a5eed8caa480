// The provisioner's options: what `csikit provisioner` parses from upstream's flags (see
// src/cli/provisioner.ts) and what `csikit up` passes in-process. Every field documents its
// flag; defaults are upstream's (external-provisioner v5.2 code).

import type { Clock, Logger } from "../../base/index.ts";
import type { SharedSidecarRuntime, CommonSidecarOptions } from "../../kube/index.ts";

export interface ProvisionerFeatures {
  /** Topology (GA, default true). */
  topology: boolean;
  /**
   * HonorPVReclaimPolicy (GA; the gate is gone upstream since v6.2 and still accepted here so
   * older manifests start; default true): PV finalizer until DeleteVolume succeeded.
   */
  honorPVReclaimPolicy: boolean;
  /**
   * VolumeAttributesClass (GA in v6, default true): mutable_parameters from the claim's class,
   * read from storage.k8s.io/v1, else v1beta1; off when the server serves neither (vac-api.ts).
   */
  volumeAttributesClass: boolean;
  /** CrossNamespaceVolumeDataSource (alpha, default false). */
  crossNamespaceVolumeDataSource: boolean;
  /** ReleaseLeaderElectionOnExit (alpha, default false). */
  releaseLeaderElectionOnExit: boolean;
}

export const FEATURE_GATE_DEFAULTS: Readonly<Record<string, boolean>> = {
  Topology: true,
  HonorPVReclaimPolicy: true,
  VolumeAttributesClass: true,
  CrossNamespaceVolumeDataSource: false,
  ReleaseLeaderElectionOnExit: false,
  // Accepted because upstream's --help lists them (GA, locked on).
  CSINodeExpandSecret: true,
  ReadWriteOncePod: true,
  CSIStorageCapacity: true,
};

export interface NodeDeploymentOptions {
  /** --node-deployment. */
  enabled: boolean;
  /** NODE_NAME environment variable (required with --node-deployment). */
  nodeName: string;
  /** --node-deployment-immediate-binding (true). */
  immediateBinding: boolean;
  /** --node-deployment-base-delay (20s). */
  baseDelayMs: number;
  /** --node-deployment-max-delay (60s). */
  maxDelayMs: number;
}

/** Everything capacity tracking (src/sidecars/provisioner/capacity) needs. */
export interface CapacityOptions {
  /** --enable-capacity (false). */
  enabled: boolean;
  /** --capacity-ownerref-level (1). */
  ownerrefLevel: number;
  /** --capacity-threads (1). */
  threads: number;
  /** --capacity-poll-interval (1m). */
  pollIntervalMs: number;
  /** --capacity-for-immediate-binding (false). */
  forImmediateBinding: boolean;
  /** --kube-api-capacity-qps (1). */
  kubeApiQps: number;
  /** --kube-api-capacity-burst (5). */
  kubeApiBurst: number;
  /** NAMESPACE environment variable. */
  namespace: string;
  /** POD_NAME environment variable. */
  podName: string;
}

export interface ProvisionerOptions extends CommonSidecarOptions {
  /** --timeout (10s): deadline of every CSI call. */
  timeoutMs: number;
  /** --worker-threads (100): concurrent provisions, and separately concurrent deletes. */
  workerThreads: number;
  /** --volume-name-prefix ("pvc"). */
  volumeNamePrefix: string;
  /** --volume-name-uuid-length (-1 = whole UID). */
  volumeNameUuidLength: number;
  /** --extra-create-metadata (false). */
  extraCreateMetadata: boolean;
  /** --controller-publish-readonly (false). */
  controllerPublishReadonly: boolean;
  /** --strict-topology (false). */
  strictTopology: boolean;
  /** --immediate-topology (true). */
  immediateTopology: boolean;
  /** --enable-pprof (false): /debug/pprof/ profiles on the HTTP endpoint. */
  enablePprof: boolean;
  /** --default-fstype (""). */
  defaultFsType: string;
  /** --cloning-protection-threads (1). */
  cloningProtectionThreads: number;
  /** --prevent-volume-mode-conversion (true). */
  preventVolumeModeConversion: boolean;
  /** --snapshot-orphan-sweep-interval (5m). */
  snapshotOrphanSweepIntervalMs: number;
  /** --in-flight-record (finalizer): claim finalizer, or the group-committed ledger (ledger.ts). */
  inFlightRecord: "finalizer" | "ledger";
  features: ProvisionerFeatures;
  nodeDeployment: NodeDeploymentOptions;
  capacity: CapacityOptions;
  logger?: Logger;
  clock?: Clock;
  /** Called once the HTTP endpoint listens (tests use port 0). */
  onHttpEndpoint?: (url: string) => void;
  /** Set by `csikit sidecars`: the CSI connection, informers and endpoint shared in the process. */
  shared?: SharedSidecarRuntime;
}
