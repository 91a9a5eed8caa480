// The provisioner's flags: upstream external-provisioner v6.3's own flags (v5.2's plus
// --automaxprocs, --leader-election-labels and --snapshot-orphan-sweep-interval) (names, types,
// defaults and meaning as its --help and README give them; --timeout is 15s as seed 003 and
// upstream's README say, where upstream's code has 10s),
// on top of the common sidecar flags and component-base's logging flags. Capacity flags are
// parsed here too and handed on as `options.capacity`. `provisionerOptionsFromFlags` validates
// ranges and names the bad flag.

import { FlagError, type FlagSpecs, type Flags } from "../../base/index.ts";
import {
  COMMON_SIDECAR_FLAGS,
  SIDECAR_LOGGING_FLAGS,
  commonSidecarOptions,
  flagAtLeast,
  sidecarFeatureGates,
} from "../../kube/index.ts";
import { FEATURE_GATE_DEFAULTS, type ProvisionerOptions } from "./options.ts";

export const PROVISIONER_FLAGS: FlagSpecs = {
  ...COMMON_SIDECAR_FLAGS,
  ...SIDECAR_LOGGING_FLAGS,
  "retry-interval-start": {
    type: "duration",
    default: "1s",
    help: "Initial retry interval of failed provisioning or deletion. It doubles with each failure, up to retry-interval-max.",
  },
  "retry-interval-max": {
    type: "duration",
    default: "5m",
    help: "Maximum retry interval of failed provisioning or deletion.",
  },
  timeout: {
    type: "duration",
    default: "15s",
    help: "Timeout of every call to the CSI driver (CreateVolume, DeleteVolume and the rest); 15 seconds by default. A CreateVolume or DeleteVolume that times out is retried with exponential backoff.",
  },
  "worker-threads": {
    type: "int",
    default: "100",
    help: "Number of provisioner worker threads, in other words nr. of simultaneous CSI calls (CreateVolume and DeleteVolume counted separately).",
  },
  "volume-name-prefix": {
    type: "string",
    default: "pvc",
    help: "Prefix to apply to the name of a created volume.",
  },
  "volume-name-uuid-length": {
    type: "int",
    default: "-1",
    help: "Truncates generated UUID of a created volume to this length. Defaults behavior is to not truncate.",
  },
  "extra-create-metadata": {
    type: "bool",
    default: "false",
    help: "If set, add pv/pvc metadata to plugin create requests as parameters (csi.storage.k8s.io/pvc/name, csi.storage.k8s.io/pvc/namespace, csi.storage.k8s.io/pv/name).",
  },
  "controller-publish-readonly": {
    type: "bool",
    default: "false",
    help: "This option enables PV to be marked as readonly at controller publish volume call if PVC accessmode has been set to ROX.",
  },
  "strict-topology": {
    type: "bool",
    default: "false",
    help: "Late binding: pass only selected node topology to CreateVolume Request, unlike default behavior of passing aggregated cluster topologies that match with topology keys of the selected node.",
  },
  "immediate-topology": {
    type: "bool",
    default: "true",
    help: "Immediate binding: pass aggregated cluster topologies for all nodes where the CSI driver is available (enabled, the default) or no topology requirements (if disabled).",
  },
  "enable-pprof": {
    type: "bool",
    default: "false",
    help: "Enable profiling on the --http-endpoint at /debug/pprof/ (Node: V8 heap snapshot at heap, CPU profile at profile?seconds=N).",
  },
  "default-fstype": {
    type: "string",
    help: "The default filesystem type of the volume to provision when fstype is unspecified in the StorageClass. If the default is not set and fstype is unset in the StorageClass, then no fstype will be set.",
  },
  "cloning-protection-threads": {
    type: "int",
    default: "1",
    help: "Number of simultaneously running threads, handling cloning finalizer removal.",
  },
  "prevent-volume-mode-conversion": {
    type: "bool",
    default: "true",
    help: "Prevents an unauthorised user from modifying the volume mode when creating a PVC from an existing VolumeSnapshot.",
  },
  "snapshot-orphan-sweep-interval": {
    type: "duration",
    default: "5m",
    help: "How often to sweep orphaned volumesnapshot-as-source-protection finalizers; 0 disables.",
  },
  "in-flight-record": {
    type: "string",
    default: "finalizer",
    help: "csikit: where the durable in-flight intent of a CreateVolume is kept. 'finalizer': a finalizer on each claim (added before CreateVolume, removed after: two claim writes per volume; a claim deleted meanwhile stays visible until settled). 'ledger': one Lease per provisioner in the leader-election namespace that group-commits the intents of a moment (one write for many claims; provisioning at the rate of the PV creates under --kube-api-qps; needs get/create/update on leases there).",
  },
  "enable-capacity": {
    type: "bool",
    default: "false",
    help: "This enables producing CSIStorageCapacity objects with capacity information from the driver's GetCapacity call.",
  },
  "capacity-ownerref-level": {
    type: "int",
    default: "1",
    help: "The level indicates the number of objects that need to be traversed starting from the pod identified by the POD_NAME and NAMESPACE environment variables to reach the owning object for CSIStorageCapacity objects: -1 for no owner, 0 for the pod itself, 1 for a StatefulSet or DaemonSet, 2 for a Deployment, etc.",
  },
  "capacity-threads": {
    type: "int",
    default: "1",
    help: "Number of simultaneously running threads, handling CSIStorageCapacity objects.",
  },
  "capacity-poll-interval": {
    type: "duration",
    default: "1m",
    help: "How long the external-provisioner waits before checking for storage capacity changes.",
  },
  "capacity-for-immediate-binding": {
    type: "bool",
    default: "false",
    help: "Enables producing capacity information for storage classes with immediate binding. Not needed for the Kubernetes scheduler, maybe useful for other consumers or for debugging.",
  },
  "kube-api-capacity-qps": {
    type: "float",
    default: "1",
    help: "QPS to use for storage capacity updates while communicating with the Kubernetes apiserver.",
  },
  "kube-api-capacity-burst": {
    type: "int",
    default: "5",
    help: "Burst to use for storage capacity updates while communicating with the Kubernetes apiserver.",
  },
  "node-deployment": {
    type: "bool",
    default: "false",
    help: "Enables deploying the external-provisioner together with a CSI driver on nodes to manage node-local volumes (needs the NODE_NAME environment variable).",
  },
  "node-deployment-immediate-binding": {
    type: "bool",
    default: "true",
    help: "Determines whether immediate binding is supported when deployed on each node.",
  },
  "node-deployment-base-delay": {
    type: "duration",
    default: "20s",
    help: "Determines how long the external-provisioner sleeps initially before trying to own a PVC with immediate binding.",
  },
  "node-deployment-max-delay": {
    type: "duration",
    default: "1m0s",
    help: "Determines how long the external-provisioner sleeps at most before trying to own a PVC with immediate binding.",
  },
  "feature-gates": {
    type: "map",
    help: "A set of key=value pairs that describe feature gates for alpha/experimental features. Options are: CrossNamespaceVolumeDataSource=true|false (ALPHA - default=false), HonorPVReclaimPolicy=true|false (GA - default=true; removed upstream in v6.2, still accepted), ReleaseLeaderElectionOnExit=true|false (ALPHA - default=false), Topology=true|false (GA - default=true), VolumeAttributesClass=true|false (GA - default=true; turned off when the API server serves no VolumeAttributesClass API).",
  },
};

/** Typed options from flags parsed with PROVISIONER_FLAGS and the environment (NODE_NAME, NAMESPACE, POD_NAME). */
export function provisionerOptionsFromFlags(
  flags: Flags,
  env: NodeJS.ProcessEnv = process.env,
): Omit<ProvisionerOptions, "logger" | "clock"> {
  const common = commonSidecarOptions(flags);
  const gates = sidecarFeatureGates(common.featureGates, FEATURE_GATE_DEFAULTS);
  const uuidLength = flags.number("volume-name-uuid-length");
  if (uuidLength < -1)
    throw new FlagError(`flag -volume-name-uuid-length must be -1 or more, got ${uuidLength}`);
  const nodeDeployment = flags.bool("node-deployment");
  const baseDelayMs = flagAtLeast(flags, "node-deployment-base-delay", 0);
  const maxDelayMs = flagAtLeast(flags, "node-deployment-max-delay", 0);
  return {
    ...common,
    featureGates: gates,
    timeoutMs: flagAtLeast(flags, "timeout", 1),
    workerThreads: flagAtLeast(flags, "worker-threads", 1),
    volumeNamePrefix: flags.string("volume-name-prefix"),
    volumeNameUuidLength: uuidLength,
    extraCreateMetadata: flags.bool("extra-create-metadata"),
    controllerPublishReadonly: flags.bool("controller-publish-readonly"),
    strictTopology: flags.bool("strict-topology"),
    immediateTopology: flags.bool("immediate-topology"),
    enablePprof: flags.bool("enable-pprof"),
    defaultFsType: flags.string("default-fstype"),
    cloningProtectionThreads: flagAtLeast(flags, "cloning-protection-threads", 1),
    preventVolumeModeConversion: flags.bool("prevent-volume-mode-conversion"),
    snapshotOrphanSweepIntervalMs: flagAtLeast(flags, "snapshot-orphan-sweep-interval", 0),
    inFlightRecord: inFlightRecord(flags.string("in-flight-record")),
    features: {
      topology: gates.Topology!,
      honorPVReclaimPolicy: gates.HonorPVReclaimPolicy!,
      volumeAttributesClass: gates.VolumeAttributesClass!,
      crossNamespaceVolumeDataSource: gates.CrossNamespaceVolumeDataSource!,
      releaseLeaderElectionOnExit: gates.ReleaseLeaderElectionOnExit!,
    },
    nodeDeployment: {
      enabled: nodeDeployment,
      nodeName: env.NODE_NAME ?? "",
      immediateBinding: flags.bool("node-deployment-immediate-binding"),
      baseDelayMs,
      maxDelayMs: Math.max(maxDelayMs, baseDelayMs),
    },
    capacity: {
      enabled: flags.bool("enable-capacity"),
      ownerrefLevel: flagAtLeast(flags, "capacity-ownerref-level", -1),
      threads: flagAtLeast(flags, "capacity-threads", 1),
      pollIntervalMs: flagAtLeast(flags, "capacity-poll-interval", 1),
      forImmediateBinding: flags.bool("capacity-for-immediate-binding"),
      kubeApiQps: flags.number("kube-api-capacity-qps"),
      kubeApiBurst: flagAtLeast(flags, "kube-api-capacity-burst", 1),
      namespace: env.NAMESPACE ?? "",
      podName: env.POD_NAME ?? "",
    },
  };
}

function inFlightRecord(value: string): "finalizer" | "ledger" {
  if (value === "finalizer" || value === "ledger") return value;
  throw new FlagError(`--in-flight-record: want finalizer or ledger, got ${JSON.stringify(value)}`);
}
