// core/v1 kinds csikit uses: Namespace, Node, Pod (volumes and enough of containers for the
// volume flow), PersistentVolume (CSI source typed; in-tree sources as generic records for the
// migration library), PersistentVolumeClaim, Secret, ConfigMap, ServiceAccount, Event.

import type { KubeResource, LabelSelector, ObjectMeta, QuantityString } from "./meta.ts";

export interface ObjectReference {
  kind?: string;
  namespace?: string;
  name?: string;
  uid?: string;
  apiVersion?: string;
  resourceVersion?: string;
  fieldPath?: string;
}

export interface LocalObjectReference {
  name?: string;
}

export interface SecretReference {
  name?: string;
  namespace?: string;
}

export interface TypedLocalObjectReference {
  apiGroup?: string;
  kind: string;
  name: string;
}

export interface TypedObjectReference extends TypedLocalObjectReference {
  namespace?: string;
}

export type ResourceList = Record<string, QuantityString>;

export interface ResourceRequirements {
  limits?: ResourceList;
  requests?: ResourceList;
}

// ---- Namespace -------------------------------------------------------------------------

export interface Namespace extends KubeResource {
  spec?: { finalizers?: string[] };
  status?: { phase?: "Active" | "Terminating"; conditions?: NamespaceCondition[] };
}

export interface NamespaceCondition {
  type: string;
  status: string;
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

// ---- Node ------------------------------------------------------------------------------

export interface Taint {
  key: string;
  value?: string;
  effect: "NoSchedule" | "PreferNoSchedule" | "NoExecute";
  timeAdded?: string;
}

export interface NodeCondition {
  type: string;
  status: "True" | "False" | "Unknown";
  lastHeartbeatTime?: string;
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

export interface NodeAddress {
  type: string;
  address: string;
}

export interface AttachedVolume {
  /** Unique volume name, e.g. "kubernetes.io/csi/<driver>^<volumeHandle>". */
  name: string;
  devicePath: string;
}

export interface NodeSystemInfo {
  machineID?: string;
  systemUUID?: string;
  bootID?: string;
  kernelVersion?: string;
  osImage?: string;
  containerRuntimeVersion?: string;
  kubeletVersion?: string;
  kubeProxyVersion?: string;
  operatingSystem?: string;
  architecture?: string;
}

export interface NodeSpec {
  podCIDR?: string;
  podCIDRs?: string[];
  providerID?: string;
  unschedulable?: boolean;
  taints?: Taint[];
}

export interface NodeStatus {
  capacity?: ResourceList;
  allocatable?: ResourceList;
  phase?: string;
  conditions?: NodeCondition[];
  addresses?: NodeAddress[];
  /** Where the kubelet listens (its secure port: kubeletEndpoint.Port, capital P as upstream). */
  daemonEndpoints?: { kubeletEndpoint?: { Port: number } };
  nodeInfo?: NodeSystemInfo;
  /** Volumes the attach/detach controller has attached to this node. */
  volumesAttached?: AttachedVolume[];
  /** Unique names of the volumes the kubelet has in use (mounted or mounting). */
  volumesInUse?: string[];
}

export interface Node extends KubeResource {
  spec?: NodeSpec;
  status?: NodeStatus;
}

// ---- Volumes (shared by Pod and PV) ----------------------------------------------------

export interface CSIPersistentVolumeSource {
  driver: string;
  volumeHandle: string;
  readOnly?: boolean;
  fsType?: string;
  volumeAttributes?: Record<string, string>;
  controllerPublishSecretRef?: SecretReference;
  nodeStageSecretRef?: SecretReference;
  nodePublishSecretRef?: SecretReference;
  controllerExpandSecretRef?: SecretReference;
  nodeExpandSecretRef?: SecretReference;
}

export interface CSIVolumeSource {
  driver: string;
  readOnly?: boolean;
  fsType?: string;
  volumeAttributes?: Record<string, string>;
  nodePublishSecretRef?: LocalObjectReference;
}

export interface PersistentVolumeClaimVolumeSource {
  claimName: string;
  readOnly?: boolean;
}

export interface PersistentVolumeClaimTemplate {
  metadata?: ObjectMeta;
  spec: PersistentVolumeClaimSpec;
}

export interface Volume {
  name: string;
  persistentVolumeClaim?: PersistentVolumeClaimVolumeSource;
  csi?: CSIVolumeSource;
  ephemeral?: { volumeClaimTemplate?: PersistentVolumeClaimTemplate };
  emptyDir?: { medium?: string; sizeLimit?: QuantityString };
  hostPath?: { path: string; type?: string };
  secret?: { secretName?: string; items?: unknown[]; defaultMode?: number; optional?: boolean };
  configMap?: { name?: string; items?: unknown[]; defaultMode?: number; optional?: boolean };
  projected?: Record<string, unknown>;
  /** In-tree sources (gcePersistentDisk, awsElasticBlockStore, …) as the migration library reads them. */
  [inTreeSource: string]: unknown;
}

// ---- Pod -------------------------------------------------------------------------------

export interface VolumeMount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
  subPath?: string;
  mountPropagation?: string;
  subPathExpr?: string;
  recursiveReadOnly?: string;
}

export interface VolumeDevice {
  name: string;
  devicePath: string;
}

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: Record<string, unknown>;
}

export interface ContainerPort {
  containerPort: number;
  name?: string;
  protocol?: string;
  hostPort?: number;
  hostIP?: string;
}

export interface Container {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  workingDir?: string;
  ports?: ContainerPort[];
  env?: EnvVar[];
  resources?: ResourceRequirements;
  volumeMounts?: VolumeMount[];
  volumeDevices?: VolumeDevice[];
  terminationMessagePath?: string;
  terminationMessagePolicy?: string;
  imagePullPolicy?: string;
  securityContext?: Record<string, unknown>;
  [field: string]: unknown;
}

export interface Toleration {
  key?: string;
  operator?: "Exists" | "Equal";
  value?: string;
  effect?: string;
  tolerationSeconds?: number;
}

export interface NodeSelectorRequirement {
  key: string;
  operator: "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt";
  values?: string[];
}

export interface NodeSelectorTerm {
  matchExpressions?: NodeSelectorRequirement[];
  matchFields?: NodeSelectorRequirement[];
}

export interface NodeSelector {
  nodeSelectorTerms: NodeSelectorTerm[];
}

export interface PodSpec {
  volumes?: Volume[];
  initContainers?: Container[];
  containers: Container[];
  restartPolicy?: "Always" | "OnFailure" | "Never";
  terminationGracePeriodSeconds?: number;
  dnsPolicy?: string;
  nodeSelector?: Record<string, string>;
  serviceAccountName?: string;
  /** Deprecated alias of serviceAccountName, still defaulted from it. */
  serviceAccount?: string;
  nodeName?: string;
  hostNetwork?: boolean;
  securityContext?: Record<string, unknown>;
  schedulerName?: string;
  affinity?: Record<string, unknown>;
  tolerations?: Toleration[];
  priority?: number;
  priorityClassName?: string;
  enableServiceLinks?: boolean;
  preemptionPolicy?: string;
  readinessGates?: { conditionType: string }[];
  [field: string]: unknown;
}

export interface PodCondition {
  type: string;
  status: "True" | "False" | "Unknown";
  lastProbeTime?: string | null;
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

export interface ContainerStatus {
  name: string;
  ready: boolean;
  restartCount: number;
  image?: string;
  imageID?: string;
  containerID?: string;
  started?: boolean;
  state?: Record<string, Record<string, unknown>>;
  lastState?: Record<string, Record<string, unknown>>;
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean; recursiveReadOnly?: string }[];
}

export interface PodStatus {
  phase?: "Pending" | "Running" | "Succeeded" | "Failed" | "Unknown";
  conditions?: PodCondition[];
  message?: string;
  reason?: string;
  nominatedNodeName?: string;
  hostIP?: string;
  podIP?: string;
  podIPs?: { ip: string }[];
  startTime?: string;
  initContainerStatuses?: ContainerStatus[];
  containerStatuses?: ContainerStatus[];
  qosClass?: string;
}

export interface Pod extends KubeResource {
  spec?: PodSpec;
  status?: PodStatus;
}

/** Body of POST pods/<name>/binding. */
export interface Binding extends KubeResource {
  target: ObjectReference;
}

// ---- PersistentVolume ------------------------------------------------------------------

export type PersistentVolumeAccessMode =
  "ReadWriteOnce" | "ReadOnlyMany" | "ReadWriteMany" | "ReadWriteOncePod";
export type PersistentVolumeReclaimPolicy = "Retain" | "Delete" | "Recycle";
export type PersistentVolumeMode = "Filesystem" | "Block";
export type PersistentVolumePhase = "Pending" | "Available" | "Bound" | "Released" | "Failed";

export interface VolumeNodeAffinity {
  required?: NodeSelector;
}

export interface PersistentVolumeSpec {
  capacity?: ResourceList;
  accessModes?: PersistentVolumeAccessMode[];
  claimRef?: ObjectReference;
  persistentVolumeReclaimPolicy?: PersistentVolumeReclaimPolicy;
  storageClassName?: string;
  mountOptions?: string[];
  volumeMode?: PersistentVolumeMode;
  nodeAffinity?: VolumeNodeAffinity;
  volumeAttributesClassName?: string;
  csi?: CSIPersistentVolumeSource;
  hostPath?: { path: string; type?: string };
  local?: { path: string; fsType?: string };
  nfs?: { server: string; path: string; readOnly?: boolean };
  /** In-tree sources (gcePersistentDisk, awsElasticBlockStore, azureDisk, …) as generic records. */
  [inTreeSource: string]: unknown;
}

export interface PersistentVolumeStatus {
  phase?: PersistentVolumePhase;
  message?: string;
  reason?: string;
  lastPhaseTransitionTime?: string;
}

export interface PersistentVolume extends KubeResource {
  spec?: PersistentVolumeSpec;
  status?: PersistentVolumeStatus;
}

// ---- PersistentVolumeClaim -------------------------------------------------------------

export interface VolumeResourceRequirements {
  limits?: ResourceList;
  requests?: ResourceList;
}

export interface PersistentVolumeClaimSpec {
  accessModes?: PersistentVolumeAccessMode[];
  selector?: LabelSelector;
  resources?: VolumeResourceRequirements;
  volumeName?: string;
  storageClassName?: string;
  volumeMode?: PersistentVolumeMode;
  dataSource?: TypedLocalObjectReference;
  dataSourceRef?: TypedObjectReference;
  volumeAttributesClassName?: string;
}

export interface PersistentVolumeClaimCondition {
  type: string;
  status: string;
  lastProbeTime?: string;
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

export interface PersistentVolumeClaimStatus {
  phase?: "Pending" | "Bound" | "Lost";
  accessModes?: PersistentVolumeAccessMode[];
  capacity?: ResourceList;
  conditions?: PersistentVolumeClaimCondition[];
  allocatedResources?: ResourceList;
  allocatedResourceStatuses?: Record<string, string>;
  currentVolumeAttributesClassName?: string;
  modifyVolumeStatus?: { targetVolumeAttributesClassName?: string; status: string };
}

export interface PersistentVolumeClaim extends KubeResource {
  spec?: PersistentVolumeClaimSpec;
  status?: PersistentVolumeClaimStatus;
}

// ---- Secret, ConfigMap, ServiceAccount -------------------------------------------------

export interface Secret extends KubeResource {
  type?: string;
  /** Base64-encoded values. */
  data?: Record<string, string>;
  /** Write-only plain values, merged into data by the server. */
  stringData?: Record<string, string>;
  immutable?: boolean;
}

export interface ConfigMap extends KubeResource {
  data?: Record<string, string>;
  binaryData?: Record<string, string>;
  immutable?: boolean;
}

export interface ServiceAccount extends KubeResource {
  secrets?: ObjectReference[];
  imagePullSecrets?: LocalObjectReference[];
  automountServiceAccountToken?: boolean;
}

// ---- Event (core/v1) -------------------------------------------------------------------

export interface EventSource {
  component?: string;
  host?: string;
}

export interface CoreEvent extends KubeResource {
  involvedObject: ObjectReference;
  reason?: string;
  message?: string;
  source?: EventSource;
  firstTimestamp?: string | null;
  lastTimestamp?: string | null;
  count?: number;
  type?: "Normal" | "Warning";
  eventTime?: string | null;
  series?: { count?: number; lastObservedTime?: string };
  action?: string;
  related?: ObjectReference;
  reportingComponent?: string;
  reportingInstance?: string;
}
